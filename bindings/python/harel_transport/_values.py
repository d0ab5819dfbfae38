"""The values of the native API: `Lease`, `Message`, `Retry`, `Published`,
`AckAndClaimResult`, the limits, and the types of what its calls take. How a lease crosses
into C and back is `_leases`'s."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, List, Literal, NamedTuple, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import HarelError

#: The visibility a claim uses when none is given, in seconds (as the Node binding's).
DEFAULT_VISIBILITY = 30.0
#: Priorities are 0..MAX_PRIORITY (HAREL_MAX_PRIORITY).
MAX_PRIORITY = 4
#: A table prefix is at most this many characters (HAREL_MAX_PREFIX_LEN).
MAX_PREFIX_LEN = 30

#: The most leases one `claim_many` or `ack_and_claim_many` hands out (HAREL_MAX_CLAIM).
MAX_CLAIM = _native.MAX_CLAIM

#: The most databases one queue is sharded over (`Transport.open_shards`; MAX_SHARDS).
MAX_SHARDS = _native.MAX_SHARDS

#: The most of a routing key's limit's numbers (`Transport.set_limit`: a concurrency, a
#: rate, a burst; MAX_LIMIT): far above any real fleet's, low enough to catch a typo.
MAX_LIMIT = _native.MAX_LIMIT

#: The largest `max_attempts` (a uint32_t in C); 0 is "no limit".
MAX_ATTEMPTS_MAX = 2**32 - 1

#: An idempotency key, and a unique key, is 1..MAX_KEY_LEN bytes of UTF-8 (the library checks it).
MAX_KEY_LEN = 256
#: The longest `delay`, and how far ahead a `not_before` may be: ten years, in seconds.
MAX_DELAY = 315_360_000

Clock = Callable[[], float]
PathType = Union[str, "os.PathLike[str]"]
EventType = Union[str, bytes, bytearray, memoryview]
#: One header of a message: (name, value). A name is 1..128 bytes of visible ASCII
#: (0x21..0x7e) without '='; a value is any text without NUL.
Header = Tuple[str, str]
#: A message's headers as a publish takes them: (name, value) pairs, in order, a name may
#: repeat; at most MAX_HEADERS pairs and MAX_HEADERS_BYTES bytes of names and values in all
#: (the library checks the rules, and refuses a bad one with `ArgumentError` naming it).
Headers = Sequence[Header]

#: What a publish with a unique key does when a message with that key is pending:
#: ``"keep"`` it (the publish is a duplicate), ``"replace"`` its event and headers, or
#: ``"debounce"``: replace them and push its due time back (`Debounce`).
UniqueMode = Literal["keep", "replace", "debounce"]
#: ``unique_mode="debounce"``'s ``(delay, max_delay)``, seconds: the message is due `delay`
#: after the latest publish with its key, and never later than `max_delay` after the first
#: (each 0..ten years, max_delay >= delay).
Debounce = Tuple[float, float]

#: How a retry policy spreads its backoff ``d`` (`Retry.jitter`): ``"full"``, uniform in
#: [0, d) (the widest spread); ``"equal"``, uniform in [d/2, d); ``"none"``, d exactly.
Jitter = Literal["full", "equal", "none"]
#: A retry policy's shortest first backoff, seconds (HAREL_MIN_RETRY_BASE).
MIN_RETRY_BASE = _native.MIN_RETRY_BASE
#: A retry policy's largest growth factor (HAREL_MAX_RETRY_FACTOR).
MAX_RETRY_FACTOR = _native.MAX_RETRY_FACTOR

#: The most headers a message carries.
MAX_HEADERS = 64
#: The most bytes of names and values (UTF-8), all of a message's headers together.
MAX_HEADERS_BYTES = 16 * 1024
#: The longest header name, in bytes.
MAX_HEADER_NAME_LEN = 128


@dataclass(frozen=True)
class Lease:
    """A claimed message, copied out of the library.

    `group_id` and `event` are decoded from UTF-8 with ``surrogateescape``, so bytes that
    another writer stored (NUL bytes included, even invalid UTF-8) come back whole, and an
    ack re-encodes the group id to exactly the bytes the library handed out."""

    #: The message's seq: its FIFO position and the lease's handle.
    seq: int
    #: The group the message belongs to.
    group_id: str
    #: The event: the JSON text, byte for byte as published.
    event: str
    #: Who holds the lease.
    worker_id: str
    #: Epoch seconds the lease runs to.
    lock_expiry: float
    #: How many times the message has been claimed, this claim included (1 on its first).
    #: A `Lease` built by hand may leave it 0: ack, nack and dead_letter do not read it.
    attempts: int = 0
    #: The headers it was published with, in order, byte for byte (names may repeat);
    #: empty when it has none. Ack, nack and dead_letter do not read them.
    headers: List[Header] = field(default_factory=list, hash=False)

    def json(self) -> Any:
        """The event parsed (`json.loads`)."""
        return json.loads(self.event)

    @property
    def event_bytes(self) -> bytes:
        """The event's bytes as stored."""
        return self.event.encode("utf-8", "surrogateescape")


class AckAndClaimResult(NamedTuple):
    """What `Transport.ack_and_claim_many` returns: ``leases, acked = ...``."""

    #: The new leases, at most `max`; empty when nothing was deliverable.
    leases: List[Lease]
    #: One element per lease given, in order: None (acked) or the `LeaseLostError` of a
    #: lease that was lost (nothing of it changed); sharded, a lease of a shard whose
    #: transaction failed has that error (a `BusyError`, ...: not acked, still held).
    acked: List[Optional[HarelError]]


class Published(NamedTuple):
    """What `Transport.publish_with` returns for a message (and `publish_many_with` for each
    of its messages, a transaction's commit for each of its publishes): ``seq, duplicate,
    replaced = ...``."""

    #: The message's seq; for a duplicate, the seq of the first message published with
    #: its key (which may have been delivered and acked since), or of the pending message
    #: with its unique key.
    seq: int
    #: True when nothing new was stored: its idempotency key was seen within the retention,
    #: or a message with its unique key is pending (True also when `replaced`).
    duplicate: bool
    #: True when the pending message with its unique key took this publish's event and
    #: headers (``unique_mode`` "replace" or "debounce", and no worker held its lease).
    replaced: bool = False


def published_of(seq: int, outcome: int) -> Published:
    """A `Published` from a seq and a harel_published (0 stored, 1 duplicate, 2 replaced)."""
    return Published(seq, outcome != _native.PUBLISHED_STORED, outcome == _native.PUBLISHED_REPLACED)


@dataclass(frozen=True)
class Retry:
    """A retry policy (README, "Retries"): how long a message whose claim failed waits
    before its next delivery. Its claim number n draws the backoff
    ``d = min(cap, base * factor**(n-1))``, spread by `jitter`, at the claim (`peek` shows
    it: `MessageInfo.retry_delay`); if that claim ends in a nack with delay 0, the message
    is parked for ``d``, and if its lease lapses, it waits ``d`` after the lease's end. A
    nack with a delay > 0 waits the worker's delay instead. Every claim counts toward
    `max_attempts`.

    The queue's policy is the open option ``Transport(path, retry=Retry(...))`` (the
    claiming transport's applies); a message's own, ``publish_with(..., retry=Retry(...))``
    (or `Message.retry`), wins over it. The values are checked where the policy is used
    (`ArgumentError` naming the field: ``retry.factor is 17; it must be finite, 1..16``)."""

    #: The first backoff, seconds: MIN_RETRY_BASE (0.001) .. MAX_DELAY (ten years).
    base: float
    #: Each next backoff's growth: 1 (constant) .. MAX_RETRY_FACTOR (16).
    factor: float = 2.0
    #: The longest backoff, seconds: `base` .. MAX_DELAY; None: an hour, or `base` if longer.
    cap: Optional[float] = None
    #: How the backoff is spread: ``"full"`` (the default), ``"equal"`` or ``"none"``.
    jitter: Jitter = "full"


@dataclass(frozen=True)
class Message:
    """One message for `Transport.publish_many`: what `publish` takes; and, with its
    delivery options (`key`, `delay`, `not_before`, `unique_key` with `unique_mode` and
    `debounce`, `ttl`, `expires_at`, `retry`), for `Transport.publish_many_with`
    (`publish_many` refuses a message that has any: it would drop them)."""

    group_id: str
    event: EventType
    priority: int = 0
    routing_key: Optional[str] = None
    #: An idempotency key (1..256 bytes of UTF-8); None: none.
    key: Optional[str] = None
    #: Seconds from the publish before which the message is not delivered; 0: at once.
    delay: float = 0.0
    #: Epoch seconds (the transport's clock) before which the message is not delivered;
    #: None: none. With `delay`, the later of the two.
    not_before: Optional[float] = None
    #: Its headers, (name, value) pairs in order (`Transport.publish`'s `headers`); None: none.
    #: Not a delivery option: `publish_many` takes them too.
    headers: Optional[Headers] = field(default=None, hash=False)
    #: A unique key (1..256 bytes of UTF-8; not with `key`); None: none. See `Transport.publish_with`.
    unique_key: Optional[str] = None
    #: What the publish does when a message with `unique_key` is pending.
    unique_mode: UniqueMode = "keep"
    #: ``(delay, max_delay)``, seconds: `unique_mode` "debounce"'s (and only its).
    debounce: Optional[Debounce] = None
    #: Seconds from the publish after which the message, if no worker has it by then,
    #: expires (a dead letter with the reason "expired"); None: never. See `Transport.publish_with`.
    ttl: Optional[float] = None
    #: Epoch seconds (the transport's clock) at which it expires; None: never. With `ttl`, the earlier.
    expires_at: Optional[float] = None
    #: Its own retry policy, in place of the queue's (the open option `retry`); None: the
    #: queue's. See `Retry`.
    retry: Optional[Retry] = None


def _leases_in(result: Any) -> List[Lease]:
    """The leases a claiming call returned (a Lease or None, a list, an AckAndClaimResult)."""
    if result is None:
        return []
    if isinstance(result, Lease):
        return [result]
    if isinstance(result, AckAndClaimResult):
        return result.leases
    return list(result)
