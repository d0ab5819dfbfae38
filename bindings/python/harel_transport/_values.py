"""The values of the native API: `Lease`, `Message`, `AckAndClaimResult`, the limits, and
the types of what its calls take. How a lease crosses into C and back is `_leases`'s."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, List, NamedTuple, Optional, Union

from . import _native
from ._errors import LeaseLostError

#: The visibility a claim uses when none is given, in seconds (as the Node binding's).
DEFAULT_VISIBILITY = 30.0
#: Priorities are 0..MAX_PRIORITY (HAREL_MAX_PRIORITY).
MAX_PRIORITY = 4
#: A table prefix is at most this many characters (HAREL_MAX_PREFIX_LEN).
MAX_PREFIX_LEN = 30

#: The most leases one `claim_many` or `ack_and_claim_many` hands out (HAREL_MAX_CLAIM).
MAX_CLAIM = _native.MAX_CLAIM

#: The largest `max_attempts` (a uint32_t in C); 0 is "no limit".
MAX_ATTEMPTS_MAX = 2**32 - 1

Clock = Callable[[], float]
PathType = Union[str, "os.PathLike[str]"]
EventType = Union[str, bytes, bytearray, memoryview]


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
    #: lease that was lost (nothing of it changed).
    acked: List[Optional[LeaseLostError]]


@dataclass(frozen=True)
class Message:
    """One message for `Transport.publish_many`: what `publish` takes."""

    group_id: str
    event: EventType
    priority: int = 0
    routing_key: Optional[str] = None


def _leases_in(result: Any) -> List[Lease]:
    """The leases a claiming call returned (a Lease or None, a list, an AckAndClaimResult)."""
    if result is None:
        return []
    if isinstance(result, Lease):
        return [result]
    if isinstance(result, AckAndClaimResult):
        return result.leases
    return list(result)
