"""What a look inside the queue returns: `Stats` (with `PriorityStats`), pages (`Page`)
of `GroupInfo`, `MessageInfo`, `DeadLetter` and `Archived`, and the lists of `Pause` and
`LimitInfo`, copied out of the structs the library hands out (`harel_stats`,
`harel_group_page`, `harel_message_page`, `harel_dead_page`, `harel_archive_page`,
`harel_pause_list`, `harel_limit_list`).

Text with a length beside it in C (group ids, events) is read with that length (it may
hold NUL bytes) and decoded with ``surrogateescape``, as a `Lease`'s is. The ABI's -1 for
a number it does not have (an age whose writer stamped no time, a lease end of a ready
group, an archived message's unknown publish or claim time, a message's backoff under no
retry policy) is None here.
"""

from __future__ import annotations

import json
from ctypes import string_at
from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, List, Literal, Optional, Tuple, TypeVar

__all__ = [
    "Stats",
    "PriorityStats",
    "GroupInfo",
    "MessageInfo",
    "DeadLetter",
    "Archived",
    "Page",
    "Pause",
    "PauseKind",
    "LimitInfo",
    "GROUP_STATES",
    "PAUSE_KINDS",
    "MAX_PAGE",
]

#: A listing's `limit` is 1..MAX_PAGE (the header's MAX_PAGE).
MAX_PAGE = 10000

#: The group states, in the order of the ABI's harel_group_state (0..6).
GROUP_STATES = ("ready", "leased", "parked", "delayed", "paused", "held", "retrying")

#: What a pause names (`Pause.kind`): the whole queue, a group, or every group of a
#: routing key.
PauseKind = Literal["queue", "group", "routing_key"]

#: The pause kinds, in the order of the ABI's harel_pause_kind (0, 1, 2).
PAUSE_KINDS: Tuple[PauseKind, ...] = ("queue", "group", "routing_key")

T = TypeVar("T")


@dataclass(frozen=True)
class PriorityStats:
    """The group counts of one priority level (`Stats.by_priority`). A group whose head
    is delayed, that a limit holds, whose lapsed lease waits its retry backoff, or that is
    paused, is in `groups` but in none of `ready`, `leased` and `parked`; `paused` counts
    the level's paused groups (each at its own priority), so its delayed, held and retrying
    ones together are ``groups - ready - leased - parked - paused`` (the ABI's struct has
    no room for them: `Stats.delayed`, `Stats.held` and `Stats.retrying` count them over
    every level)."""

    priority: int
    #: Groups of this level.
    groups: int
    #: Groups whose head can be claimed now.
    ready: int
    #: Groups whose head is leased.
    leased: int
    #: Groups whose head is parked (a nack with a delay).
    parked: int
    #: Groups a pause names (`Transport.pause`), whatever their head. Last, with a default,
    #: so that positional construction of the fields before it keeps working.
    paused: int = 0


@dataclass(frozen=True)
class Stats:
    """Exact counts of the queue at one instant (`Transport.stats`)."""

    #: When the counts were taken, epoch seconds (the transport's clock).
    now: float
    #: Messages in the queue (the dead letters not counted).
    messages: int
    #: Groups in the queue.
    groups: int
    #: Groups whose head can be claimed now (not those a limit holds nor those waiting a
    #: retry backoff: `held`, `retrying`).
    ready: int
    #: Groups whose head is leased (a paused group's lease taken before the pause is
    #: counted in `paused` instead).
    leased: int
    #: Groups whose head is parked.
    parked: int
    #: Messages in the dead-letter table.
    dead: int
    #: Seconds since the oldest message of a ready group was published; None when no
    #: group is ready, or that message's writer does not stamp the time (harel's own
    #: Python transports).
    oldest_ready_age: Optional[float]
    #: The soonest end of a lease or a park, epoch seconds; None when nothing is in flight.
    next_release_at: Optional[float]
    #: One entry per priority level that has groups, lowest first.
    by_priority: List[PriorityStats]
    #: The seq of the oldest message of a ready group, also when its age is not known
    #: (``oldest_ready_age`` None); None when no group is ready.
    oldest_ready_seq: Optional[int]
    #: Groups whose head was published with a delay that has not passed (`publish_with`);
    #: they are in none of `ready`, `leased` and `parked`.
    delayed: int
    #: The soonest due time of such a head, epoch seconds; None when no group is delayed.
    next_due_at: Optional[float]
    #: Groups a pause names (`Transport.pause`: the group's, its routing key's or the
    #: queue's); they are in none of `ready`, `leased`, `parked` and `delayed`. Last, with a
    #: default, so that positional construction of the fields before it keeps working.
    paused: int = 0
    #: Of `dead`, the messages that expired undelivered (`publish_with`'s `ttl` or
    #: `expires_at`; their reason is "expired"). Last, with a default, as `paused`.
    expired: int = 0
    #: Groups a limit holds (`set_limit`): their routing key had no room when a claim met
    #: them; claims serve them again once it has room (README, "Limits per routing key").
    #: Not in `ready`. Last, with a default, as `paused`.
    held: int = 0
    #: Groups whose head's lease lapsed and that wait its retry policy's backoff before their
    #: next claim (README, "Retries"). Not in `ready`. `ready`, `leased`, `parked`,
    #: `delayed`, `paused`, `held` and `retrying` add up to `groups`. Last, with a default.
    retrying: int = 0


@dataclass(frozen=True)
class GroupInfo:
    """One group, as `Transport.groups` lists it."""

    group_id: str
    #: "ready", "leased", "parked" or "delayed" (its head's due time has not come): where
    #: the group's head stands; or "paused" (a pause names it: no claim takes its head,
    #: whatever the head's state), "held" (its head is free, but a limit of its routing key
    #: has no room) or "retrying" (its head's lease lapsed and waits its retry backoff).
    state: str
    #: How many messages the group holds.
    depth: int
    #: The seq of the group's head (its oldest message).
    head_seq: int
    #: Seconds since the head was published; None when its writer does not stamp the time.
    head_age: Optional[float]
    #: The worker holding the head's lease; None when the group is ready, parked or delayed
    #: (a paused group shows the holder of a lease taken before the pause).
    holder: Optional[str]
    #: When the lease or park ends, or the delayed head is due, epoch seconds; None when
    #: the group is ready.
    lock_expiry: Optional[float]
    priority: int
    #: None: the group has no routing key.
    routing_key: Optional[str]
    #: How many times the head has been claimed.
    head_attempts: int
    #: The shard the group was found on (0..shard_count-1, as `shard_of` names it); 0 when
    #: the queue is not sharded. Last, with a default, so that positional construction of
    #: the fields before it keeps working.
    shard: int = 0


@dataclass(frozen=True)
class MessageInfo:
    """One message of a group, as `Transport.peek` shows it (nothing claimed)."""

    seq: int
    #: The event: the JSON text, byte for byte as published.
    event: str
    #: How many times it has been claimed.
    attempts: int
    #: The worker holding it, ``"__parked__"``, or ``"__delayed__"`` (published with a
    #: delay that has not passed); None when it is free.
    locked_by: Optional[str]
    #: When its lease or park ends, or when it is due, epoch seconds; None when it is free.
    lock_expiry: Optional[float]
    #: When it was published, epoch seconds; None when its writer does not stamp the time.
    published_at: Optional[float]
    #: The headers it was published with, (name, value) pairs in order; empty when none.
    #: With a default, so that positional construction keeps working.
    headers: List[Tuple[str, str]] = field(default_factory=list, hash=False)
    #: The backoff its last claim drew under a retry policy (`Retry`), seconds: how long it
    #: waits after that claim's nack with delay 0, or after its lease's end, before its next
    #: delivery. None when no policy applied or it was never claimed. Last, with a default.
    retry_delay: Optional[float] = None

    def json(self) -> Any:
        """The event parsed (`json.loads`)."""
        return json.loads(self.event)

    @property
    def event_bytes(self) -> bytes:
        """The event's bytes as stored."""
        return self.event.encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class DeadLetter:
    """A message moved out of its group (`Transport.dead_letters`): by `max_attempts`, by a
    worker's `Transport.dead_letter`, or by the library."""

    #: Its seq in the queue before it died (what `redrive(seqs=...)` and
    #: `purge_dead(seqs=...)` take).
    seq: int
    group_id: str
    #: The event: the JSON text, byte for byte as published.
    event: str
    #: How many times it had been claimed.
    attempts: int
    #: The worker that held it last; None when it was parked or never claimed.
    last_worker: Optional[str]
    #: Why it died: the worker's reason, or the library's (``"... max_attempts is 3"``).
    reason: str
    #: When it was moved, epoch seconds.
    dead_at: float
    #: The shard the dead letter is on (0 when the queue is not sharded): its `seq` is that
    #: shard's. Last, with a default, so that positional construction keeps working.
    shard: int = 0
    #: The headers it was published with, (name, value) pairs in order (a redrive keeps
    #: them); empty when none.
    headers: List[Tuple[str, str]] = field(default_factory=list, hash=False)

    def json(self) -> Any:
        """The event parsed (`json.loads`)."""
        return json.loads(self.event)

    @property
    def event_bytes(self) -> bytes:
        """The event's bytes as stored."""
        return self.event.encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Archived:
    """An acked message, as the archive keeps it (`Transport.archive`): what a transport
    opened with `archive_retention` copies at each of its acks, kept that long after the
    ack. A group's archived messages read in seq order: its history."""

    #: Its seq in the queue (of its shard, when the queue is sharded).
    seq: int
    group_id: str
    #: The event: the JSON text, byte for byte as published.
    event: str
    #: The headers it was published with, (name, value) pairs in order; empty when none.
    headers: List[Tuple[str, str]] = field(hash=False)
    #: How many times it had been claimed, the acked claim included.
    attempts: int
    #: The worker that acked it (the acked lease's).
    worker_id: str
    #: When it was published, epoch seconds; None when its writer does not stamp the time
    #: (harel's own Python transports).
    published_at: Optional[float]
    #: When the acked claim took it, epoch seconds; None when unknown (a claim made before
    #: the queue recorded it, or by harel's own transports).
    claimed_at: Optional[float]
    #: When it was acked, epoch seconds (the acking transport's clock).
    acked_at: float
    #: The shard it is on (0 when the queue is not sharded).
    shard: int

    def json(self) -> Any:
        """The event parsed (`json.loads`)."""
        return json.loads(self.event)

    @property
    def event_bytes(self) -> bytes:
        """The event's bytes as stored."""
        return self.event.encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: its `items`, and `next`, the cursor of the next page (pass
    it back unchanged as ``cursor=``), None when this page is the last."""

    items: List[T]
    next: Optional[str]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class Pause:
    """A pause in force (`Transport.pauses`): what it names and since when."""

    #: "queue" (every group, and every group made while it lasts), "group" or "routing_key"
    #: (every group published with that routing key).
    kind: PauseKind
    #: The group id or routing key; "" for the queue.
    name: str
    #: When it was paused, epoch seconds (the pausing transport's clock).
    paused_at: float


@dataclass(frozen=True)
class LimitInfo:
    """A routing key's limit in force (`Transport.limits`), and its use now. A sharded
    queue's: each shard holds the limit for its own groups, and the use (`in_use`,
    `tokens`, `held`) is summed over the shards."""

    #: The routing key it limits.
    routing_key: str
    #: At most this many of the key's messages leased at once; None: no concurrency limit.
    concurrency: Optional[int]
    #: Tokens a second of the rate limit (each lease takes one); None: no rate limit.
    rate: Optional[float]
    #: The most tokens the rate limit's bucket keeps; None with `rate`.
    burst: Optional[float]
    #: Leases of the key's messages running now (counted with a concurrency limit; else 0).
    in_use: int
    #: The bucket's tokens now; None without a rate limit.
    tokens: Optional[float]
    #: How many of the key's groups claims hold (pass over) until the key has room.
    held: int


# ---------------------------------------------------------------------------------------
# Copying out of C (the caller frees the struct after)


def _bytes_text(ptr: Any, length: int) -> str:
    return string_at(ptr, length).decode("utf-8", "surrogateescape") if length else ""


def _c_text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else value.decode("utf-8", "surrogateescape")


def _optional_number(x: float) -> Optional[float]:
    """The ABI's -1 (any negative) is "none"."""
    return None if x < 0 else x


def copy_headers(items: Any, n: int) -> List[Tuple[str, str]]:
    """The (name, value) pairs of a harel_header array (`n` of them at `items`, which may
    be NULL when `n` is 0), in order. Neither holds a NUL (the library refuses one), so
    each is read to its terminator; decoded as a group id is (``surrogateescape``), though
    the library stores only UTF-8 there. A lease's and a page's alike."""
    if not n or not items:
        return []
    pairs = []
    for i in range(n):
        h = items[i]
        pairs.append((_c_text(h.name) or "", _c_text(h.value) or ""))
    return pairs


def _page_headers(headers: Any, i: int) -> List[Tuple[str, str]]:
    """``headers[i]``'s pairs of a page's header lists (a NULL array, as an empty page may
    have: none)."""
    if not headers:
        return []
    h = headers[i]
    return copy_headers(h.items, h.n)


def _next(cursor: Optional[bytes]) -> Optional[str]:
    return None if cursor is None else cursor.decode("utf-8")


def copy_stats(c: Any) -> Stats:
    """A `Stats` from a harel_stats (``ptr.contents``)."""
    by_priority, paused = c.by_priority, c.paused_by_priority  # n_priorities each
    levels = [
        PriorityStats(p.priority, p.groups, p.ready, p.leased, p.parked, paused[i])
        for i, p in ((i, by_priority[i]) for i in range(c.n_priorities))
    ]
    return Stats(
        now=c.now,
        messages=c.messages,
        groups=c.groups,
        ready=c.ready,
        leased=c.leased,
        parked=c.parked,
        dead=c.dead,
        oldest_ready_age=_optional_number(c.oldest_ready_age),
        oldest_ready_seq=None if c.oldest_ready_seq < 0 else c.oldest_ready_seq,
        next_release_at=_optional_number(c.next_release_at),
        by_priority=levels,
        delayed=c.delayed,
        next_due_at=_optional_number(c.next_due_at),
        paused=c.paused,
        expired=c.expired,
        held=c.held,
        retrying=c.retrying,
    )


def _state(value: int) -> str:
    try:
        return GROUP_STATES[value]
    except IndexError:  # a newer library's state
        return f"unknown({value})"


def _shard(shards: Any, i: int) -> int:
    """``shards[i]`` of a page's shard array (a NULL array, as an empty page may have: 0)."""
    return shards[i] if shards else 0


def copy_group_page(c: Any) -> Page[GroupInfo]:
    """A `Page` of `GroupInfo` from a harel_group_page (``ptr.contents``)."""
    items = []
    shards = c.shards
    for i in range(c.n_groups):
        g = c.groups[i]
        items.append(
            GroupInfo(
                group_id=_bytes_text(g.group_id, g.group_id_len),
                state=_state(g.state),
                depth=g.depth,
                head_seq=g.head_seq,
                head_age=_optional_number(g.head_age),
                holder=_c_text(g.holder),
                lock_expiry=_optional_number(g.lock_expiry),
                priority=g.priority,
                routing_key=_c_text(g.routing_key),
                head_attempts=g.head_attempts,
                shard=_shard(shards, i),
            )
        )
    return Page(items, _next(c.next_cursor))


def copy_message_page(c: Any) -> Page[MessageInfo]:
    """A `Page` of `MessageInfo` from a harel_message_page (``ptr.contents``)."""
    items = []
    for i in range(c.n_messages):
        m = c.messages[i]
        items.append(
            MessageInfo(
                seq=m.seq,
                event=_bytes_text(m.event, m.event_len),
                attempts=m.attempts,
                locked_by=_c_text(m.locked_by),
                lock_expiry=_optional_number(m.lock_expiry),
                published_at=_optional_number(m.published_at),
                headers=_page_headers(c.headers, i),
                retry_delay=_optional_number(c.retry_delays[i]) if c.retry_delays else None,
            )
        )
    return Page(items, _next(c.next_cursor))


def copy_dead_page(c: Any) -> Page[DeadLetter]:
    """A `Page` of `DeadLetter` from a harel_dead_page (``ptr.contents``)."""
    items = []
    shards = c.shards
    for i in range(c.n_letters):
        d = c.letters[i]
        items.append(
            DeadLetter(
                seq=d.seq,
                group_id=_bytes_text(d.group_id, d.group_id_len),
                event=_bytes_text(d.event, d.event_len),
                attempts=d.attempts,
                last_worker=_c_text(d.last_worker),
                reason=_c_text(d.reason) or "",
                dead_at=d.dead_at,
                shard=_shard(shards, i),
                headers=_page_headers(c.headers, i),
            )
        )
    return Page(items, _next(c.next_cursor))


def copy_archive_page(c: Any) -> Page[Archived]:
    """A `Page` of `Archived` from a harel_archive_page (``ptr.contents``)."""
    items = []
    for i in range(c.n_messages):
        m = c.messages[i]
        items.append(
            Archived(
                seq=m.seq,
                group_id=_bytes_text(m.group_id, m.group_id_len),
                event=_bytes_text(m.event, m.event_len),
                headers=copy_headers(m.headers.items, m.headers.n),
                attempts=m.attempts,
                worker_id=_c_text(m.worker_id) or "",
                published_at=_optional_number(m.published_at),
                claimed_at=_optional_number(m.claimed_at),
                acked_at=m.acked_at,
                shard=m.shard,
            )
        )
    return Page(items, _next(c.next_cursor))


def _pause_kind(value: int) -> Any:
    try:
        return PAUSE_KINDS[value]
    except IndexError:  # a newer library's kind
        return f"unknown({value})"


def copy_pause_list(c: Any) -> List[Pause]:
    """The `Pause` list from a harel_pause_list (``ptr.contents``), in its order (the
    queue's first, then by kind and name)."""
    items = []
    for i in range(c.n_pauses):
        p = c.pauses[i]
        items.append(Pause(kind=_pause_kind(p.kind), name=_bytes_text(p.name, p.name_len), paused_at=p.paused_at))
    return items


def copy_limit_list(c: Any) -> List[LimitInfo]:
    """The `LimitInfo` list from a harel_limit_list (``ptr.contents``), in its order (by
    routing key). The ABI's none (a concurrency of 0, a rate and burst of 0, tokens of -1)
    is None."""
    items = []
    for i in range(c.n_limits):
        x = c.limits[i]
        no_rate = x.rate == 0 and x.burst == 0
        items.append(
            LimitInfo(
                routing_key=_bytes_text(x.routing_key, x.routing_key_len),
                concurrency=x.concurrency or None,
                rate=None if no_rate else x.rate,
                burst=None if no_rate else x.burst,
                in_use=x.in_use,
                tokens=_optional_number(x.tokens),
                held=x.held,
            )
        )
    return items
