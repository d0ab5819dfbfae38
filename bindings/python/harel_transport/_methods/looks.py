"""A look inside, claiming nothing: `stats`, pages of `groups`, `peek` (a group's
messages), `dead_letters` and `archive` (the acked messages kept), the `pauses` in force
and the `limits` with their use, copied out of what the library hands out (`_inspect`)."""

from __future__ import annotations

from ctypes import POINTER
from typing import List, Optional

from .. import _native
from .._args import _group_state, _optional_text, _page, _text
from .._handle import _Handle
from .._inspect import (
    Archived,
    DeadLetter,
    GroupInfo,
    LimitInfo,
    MessageInfo,
    Page,
    Pause,
    Stats,
    copy_archive_page,
    copy_dead_page,
    copy_group_page,
    copy_limit_list,
    copy_message_page,
    copy_pause_list,
    copy_stats,
)


class LookMethods(_Handle):
    """stats, groups, peek, dead_letters, archive, pauses, limits."""

    def stats(self) -> Stats:
        """Exact counts of the queue now: messages, groups ready, leased, parked, delayed,
        paused, held by a limit and waiting a retry backoff (`held`, `retrying`), dead
        letters (and of them the expired), the oldest ready message's age,
        the next release, the next delayed head's due time, and the same per priority level.
        One read: it takes no write lock and holds up no claim."""
        out = POINTER(_native.HarelStats)()
        lib = self._lib
        return self._call_out("stats", lib.harel_transport_stats, lib.harel_stats_free, out, copy_stats)

    def groups(
        self, state: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[GroupInfo]:
        """A page of groups in group id order, claiming nothing: every group (`state`
        None) or only those ``"ready"``, ``"leased"``, ``"parked"``, ``"delayed"``,
        ``"paused"`` (a paused group is listed as paused only, whatever its head), ``"held"``
        (by a limit) or ``"retrying"`` (a lapsed lease waiting its backoff).
        `cursor`: None for the first page, else the `Page.next` of the page before;
        `limit`: 1..10000."""
        s = _group_state(state)
        c, n = _page(cursor, limit)
        out = POINTER(_native.HarelGroupPage)()
        lib = self._lib
        return self._call_out(
            "groups", lib.harel_transport_groups, lib.harel_group_page_free, out, copy_group_page, s, c, n
        )

    def peek(self, group_id: str, cursor: Optional[str] = None, limit: int = 100) -> Page[MessageInfo]:
        """A page of `group_id`'s messages, oldest first, claiming nothing (an unknown
        group: an empty page). `cursor` and `limit` as for `groups`."""
        g = _text("group_id", group_id)
        c, n = _page(cursor, limit)
        out = POINTER(_native.HarelMessagePage)()
        lib = self._lib
        return self._call_out(
            "peek", lib.harel_transport_peek, lib.harel_message_page_free, out, copy_message_page, g, c, n
        )

    def dead_letters(
        self, group_id: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[DeadLetter]:
        """A page of dead letters in the order they had in the queue: `group_id`'s only, or
        every group's (None). `cursor` and `limit` as for `groups`."""
        g = _optional_text("group_id", group_id)
        c, n = _page(cursor, limit)
        out = POINTER(_native.HarelDeadPage)()
        lib = self._lib
        return self._call_out(
            "dead_letters", lib.harel_transport_dead_letters, lib.harel_dead_page_free, out, copy_dead_page, g, c, n
        )

    def archive(
        self, group_id: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[Archived]:
        """A page of the archive in seq order: the messages acked by a transport opened with
        `archive_retention`, kept that long after their ack; `group_id`'s only (its
        history, in order), or every group's (None; a sharded queue's shard after shard).
        Any transport reads it, whether or not it keeps the archive itself; an empty page
        when nothing is archived. `cursor` and `limit` as for `groups` (a cursor of
        another listing, the dead letters' included, is refused)."""
        g = _optional_text("group_id", group_id)
        c, n = _page(cursor, limit)
        out = POINTER(_native.HarelArchivePage)()
        lib = self._lib
        return self._call_out(
            "archive", lib.harel_transport_archive, lib.harel_archive_page_free, out, copy_archive_page, g, c, n
        )

    def pauses(self) -> List[Pause]:
        """The pauses in force (`pause`): each a `Pause` (`kind` ``"queue"``, ``"group"``
        or ``"routing_key"``, `name`, "" for the queue, `paused_at`), the queue's first,
        then by kind and name; of a sharded queue, every shard's merged. A queue opened
        with ``create_schema=False`` that lacks the pauses table has none."""
        out = POINTER(_native.HarelPauseList)()
        lib = self._lib
        return self._call_out("pauses", lib.harel_transport_pauses, lib.harel_pause_list_free, out, copy_pause_list)

    def limits(self) -> List[LimitInfo]:
        """The limits in force (`set_limit`), by routing key: each a `LimitInfo` with its
        limit (`concurrency`, `rate` and `burst`, None when off) and its use now (`in_use`:
        leases running, counted with a concurrency limit; `tokens`: the bucket's, None
        without a rate limit; `held`: groups the claims hold until the key has room). Of a
        sharded queue, each key once, its use summed over the shards."""
        out = POINTER(_native.HarelLimitList)()
        lib = self._lib
        return self._call_out("limits", lib.harel_transport_limits, lib.harel_limit_list_free, out, copy_limit_list)
