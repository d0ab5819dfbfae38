"""Administration: dead letters sent back (`redrive`) or deleted (`purge_dead`), a
group or the whole queue emptied (`purge_group`, `purge`), a stuck group freed
(`release`)."""

from __future__ import annotations

from ctypes import byref, c_bool, c_uint64
from typing import Iterable, Optional

from .._args import _dead_selection, _text
from .._handle import _Handle


class AdminMethods(_Handle):
    """redrive, purge_dead, purge_group, purge, release."""

    def redrive(
        self, *, all: bool = False, group_id: Optional[str] = None, seqs: Optional[Iterable[int]] = None
    ) -> int:
        """Moves dead letters back into their groups as the newest messages, in the order
        they had, claimed 0 times (a group they bring back gets its old priority and
        routing key); returns how many moved. Say which with exactly one of ``all=True``,
        `group_id` (that group's) or `seqs` (`DeadLetter.seq` values; unknown ones are
        passed over); otherwise `ArgumentError`."""
        a, g, array, n = _dead_selection(all, group_id, seqs)
        moved = c_uint64()
        self._call("redrive", self._lib.harel_transport_redrive, a, g, array, n, byref(moved))
        return moved.value

    def purge_dead(
        self, *, all: bool = False, group_id: Optional[str] = None, seqs: Optional[Iterable[int]] = None
    ) -> int:
        """Deletes dead letters, chosen as for `redrive` (exactly one of ``all=True``,
        `group_id`, `seqs`); returns how many."""
        a, g, array, n = _dead_selection(all, group_id, seqs)
        purged = c_uint64()
        self._call("purge_dead", self._lib.harel_transport_purge_dead, a, g, array, n, byref(purged))
        return purged.value

    def purge_group(self, group_id: str) -> int:
        """Deletes `group_id`'s messages and the group (a lease on one of them is lost);
        returns how many messages. An unknown group: 0."""
        g = _text("group_id", group_id)
        purged = c_uint64()
        self._call("purge_group", self._lib.harel_transport_purge_group, g, byref(purged))
        return purged.value

    def purge(self) -> int:
        """Deletes every message and group (the dead letters stay); returns how many
        messages."""
        purged = c_uint64()
        self._call("purge", self._lib.harel_transport_purge, byref(purged))
        return purged.value

    def release(self, group_id: str) -> bool:
        """Ends the lease or park on `group_id`'s head now, so a stuck group is served at
        once (its holder's ack or nack then raises `LeaseLostError`); False when nothing
        was held (an unknown group included)."""
        g = _text("group_id", group_id)
        released = c_bool()
        self._call("release", self._lib.harel_transport_release, g, byref(released))
        return released.value
