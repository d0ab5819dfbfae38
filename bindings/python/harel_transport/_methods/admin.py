"""Administration: dead letters sent back (`redrive`) or deleted (`purge_dead`), a
group or the whole queue emptied (`purge_group`, `purge`), a stuck group freed
(`release`), a group, a routing key or the whole queue paused and resumed (`pause`,
`resume`), a routing key's limits set and removed (`set_limit`, `remove_limit`)."""

from __future__ import annotations

from ctypes import byref, c_bool, c_uint64
from typing import Iterable, Optional

from .._args import _dead_selection, _limit_values, _pause_target, _text
from .._handle import _Handle


class AdminMethods(_Handle):
    """redrive, purge_dead, purge_group, purge, release, pause, resume, set_limit,
    remove_limit."""

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

    def pause(self, *, group_id: Optional[str] = None, routing_key: Optional[str] = None) -> bool:
        """Pauses a group (`group_id`, whether or not it has messages now), every group
        published with a routing key (`routing_key`), or, with neither, the whole queue
        (every group, and every group made while the pause lasts); not both
        (`ArgumentError`). The pause is stored in the queue: every process sees it (harel
        0.9's own transports too) and it outlives restarts, until `resume`.

        A paused group keeps its messages in order and no claim takes them; a lease taken
        before the pause goes on (ack, nack, extend, dead_letter work); publishes go on,
        into paused groups too. `groups()` shows a paused group as ``"paused"``, and
        `stats().paused` counts them; `pauses()` lists the pauses. On a sharded queue, on
        every shard. Returns True when the pause is new, False when it was there already.

        ``ArgumentError``: both given, one that is not a str, empty or holding a NUL;
        ``DatabaseError``: a queue opened with ``create_schema=False`` that lacks the
        pauses table."""
        kind, name = _pause_target("pause", group_id, routing_key)
        paused = c_bool()
        self._call("pause", self._lib.harel_transport_pause, kind, name, byref(paused))
        return paused.value

    def resume(self, *, group_id: Optional[str] = None, routing_key: Optional[str] = None) -> bool:
        """Ends the pause that `pause` made with the same arguments (`group_id`,
        `routing_key`, or neither for the queue's): the groups it paused that no other pause
        names are served again at once, each from its head (a parked or delayed head stays
        held until its time). A group paused on its own stays paused when the queue is
        resumed, and the other way round. Returns True when there was such a pause, False
        when nothing changed. Refuses what `pause` refuses."""
        kind, name = _pause_target("resume", group_id, routing_key)
        resumed = c_bool()
        self._call("resume", self._lib.harel_transport_resume, kind, name, byref(resumed))
        return resumed.value

    def set_limit(
        self,
        routing_key: str,
        concurrency: Optional[int] = None,
        rate: Optional[float] = None,
        burst: Optional[float] = None,
    ) -> None:
        """Limits the groups published with `routing_key`, across every worker of every
        process: at most `concurrency` of their messages leased at once (1..MAX_LIMIT), and
        leases taken at most at `rate` a second with up to `burst` kept (a token bucket,
        full when the rate limit is set anew: rate > 0, burst >= 1, each at most MAX_LIMIT;
        given together). Either kind or both; a kind left None is off. Replaces the key's
        limits; stored in the queue, so it outlives restarts and every process sees it at
        its next claim.

        A claim passes over a group whose key has no room (it *holds* the group, serving
        the others) and gives the held groups back, the one served longest ago first, when
        the key has room again (an ack, nack, dead letter, a lapse, a token due, a larger
        limit). `limits()` lists them with their use. harel 0.9's own transports know
        nothing of limits. On a sharded queue each shard holds the limit for its own
        groups (the key's ceiling over the queue is the limit times the shards); set on
        every shard.

        ``ArgumentError``, nothing changed: `routing_key` empty, not a str or holding a
        NUL; neither limit; rate without burst or burst without rate; a number out of
        range or not a number (int for `concurrency`), NaN or inf."""
        key = _text("routing_key", routing_key)
        c, r, b = _limit_values(concurrency, rate, burst)
        self._call("set_limit", self._lib.harel_transport_set_limit, key, c, r, b)

    def remove_limit(self, routing_key: str) -> None:
        """Removes `routing_key`'s limits (`set_limit`): its held groups are served again at
        once. On a sharded queue, on every shard. ``ArgumentError``: a key without a limit
        (``routing key "k" has no limit to remove``), an empty key, one that is not a str
        or holds a NUL."""
        key = _text("routing_key", routing_key)
        self._call("remove_limit", self._lib.harel_transport_remove_limit, key)
