"""The harel drop-in's prefetch: what a transport holds between its calls (leases claimed
but not yet handed out, acks not yet applied) and how many leases a claim takes. No I/O
here: `harel.HarelTransport` and `AsyncHarelTransport` make the calls, this decides.

harel's protocol claims one message per call. A claim that finds nothing held for its
worker claims up to `size` heads of distinct groups in one transaction, applying the acks
deferred since (the library's ``ack_and_claim_many``), hands out the first and holds the
rest for the worker's next claims: one commit per batch instead of one per message.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional, Tuple, Union

from ._errors import ArgumentError
from ._values import MAX_CLAIM
from ._values import Lease as NativeLease

#: The most an adaptive prefetch (``prefetch="auto"``) claims at once.
AUTO_MAX = 16
#: An adaptive prefetch sizes a batch so that its last lease waits about this many of the
#: batch's own claims before it is handed out: a held group waits a few commits' time,
#: about what a commit per message would have cost it.
_HOLD_IN_CLAIMS = 4
#: A held lease is handed out as it is while it has at least this share of the claim's
#: visibility left; below it, it is extended first (one commit), so a handler always
#: starts with nearly the visibility it asked for.
_FRESH = 0.9
#: Weight of the newest sample in the moving averages the adaptive size reads.
_EMA = 0.25

Pending = Tuple[Any, NativeLease]  # (harel's Lease, the native lease it acks)


def prefetch_size(value: Any) -> Union[int, str]:
    """The `prefetch` argument checked: "auto" or an int 1..MAX_CLAIM (1: no prefetch)."""
    if value == "auto" and isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f'prefetch must be "auto" or an int 1..{MAX_CLAIM}, got {value!r}')
    if not 1 <= value <= MAX_CLAIM:
        raise ArgumentError(f"prefetch is {value}; it must be 1..{MAX_CLAIM} (1: no prefetch)")
    return value


def adaptive_size(claim_s: Optional[float], gap_s: Optional[float], most: int = AUTO_MAX) -> int:
    """How many leases an adaptive prefetch claims: enough that the batch is handed out in
    about `_HOLD_IN_CLAIMS` claims' time, given a claim's duration (`claim_s`) and the time
    the worker takes between two leases (`gap_s`, its handling). 1 until both are known,
    and for a handler slower than that: prefetching then saves little and would keep
    groups from the other workers."""
    if claim_s is None or gap_s is None:
        return 1
    if gap_s <= 0:
        return most
    return max(1, min(most, math.ceil(_HOLD_IN_CLAIMS * claim_s / gap_s)))


def fresh(lease: NativeLease, visibility: float, now: float) -> bool:
    """Whether a held lease can be handed out for `visibility` without extending it first.
    Not for a visibility that is not positive and finite: `extend`, the library, judges
    that one."""
    return 0 < visibility < math.inf and lease.lock_expiry - now >= _FRESH * visibility


def _ema(old: Optional[float], sample: float) -> float:
    return sample if old is None else old + _EMA * (sample - old)


@dataclass
class _Worker:
    """What one worker id has on this transport."""

    #: Leases claimed for it and not handed out yet, in serving order, each with the floor
    #: it was claimed under (it serves a claim whose floor is that or lower).
    held: Deque[Tuple[NativeLease, int]] = field(default_factory=deque)
    claim_s: Optional[float] = None
    gap_s: Optional[float] = None
    handed_at: Optional[float] = None  # monotonic time its last lease was handed out


class Prefetch:
    """A transport's held leases and deferred acks; safe from several threads."""

    def __init__(self, size: Union[int, str]) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._workers: Dict[str, _Worker] = {}
        self._pending: List[Pending] = []

    def take(self, worker_id: str, floor: int) -> Optional[NativeLease]:
        """The next held lease for a claim of `worker_id` with `floor`, taken out; None
        when none serves it. Counts the time since the worker's last lease as its
        handling time."""
        with self._lock:
            w = self._workers.setdefault(worker_id, _Worker())
            if w.handed_at is not None:
                w.gap_s = _ema(w.gap_s, time.monotonic() - w.handed_at)
                w.handed_at = None
            for i, (lease, claimed_floor) in enumerate(w.held):
                if claimed_floor >= floor:
                    del w.held[i]
                    return lease
            return None

    def put_back(self, worker_id: str, lease: NativeLease, floor: int) -> None:
        """A lease `take` gave whose handing out failed: first in line again."""
        with self._lock:
            self._workers.setdefault(worker_id, _Worker()).held.appendleft((lease, floor))

    def batch(self, worker_id: str) -> int:
        """How many leases the worker's next claim takes."""
        if self.size != "auto":
            return int(self.size)
        with self._lock:
            w = self._workers.setdefault(worker_id, _Worker())
            return adaptive_size(w.claim_s, w.gap_s)

    def claimed(
        self, worker_id: str, floor: int, leases: List[NativeLease], seconds: Optional[float]
    ) -> Optional[NativeLease]:
        """Holds what a claim of `seconds` returned (None: a claim that waited, which does
        not count in the adaptive size), but its first lease, which it returns (None:
        nothing was claimed)."""
        with self._lock:
            w = self._workers.setdefault(worker_id, _Worker())
            if seconds is not None:
                w.claim_s = _ema(w.claim_s, seconds)
            w.held.extend((lease, floor) for lease in leases[1:])
            return leases[0] if leases else None

    def handed(self, worker_id: str) -> None:
        """The worker got a lease now: its handling time runs from here."""
        with self._lock:
            self._workers.setdefault(worker_id, _Worker()).handed_at = time.monotonic()

    def defer(self, pending: Pending) -> List[Pending]:
        """Defers an ack to the next claim. Returns the earlier deferred acks to apply now
        when there are as many as a batch can hold: a deferred ack keeps its group from
        everyone, so no more wait than one batch's (one with no prefetch)."""
        most = AUTO_MAX if self.size == "auto" else int(self.size)
        with self._lock:
            earlier: List[Pending] = []
            if len(self._pending) >= most:
                earlier, self._pending = self._pending, []
            self._pending.append(pending)
            return earlier

    def take_pending(self) -> List[Pending]:
        with self._lock:
            pending, self._pending = self._pending, []
            return pending

    def give_back_pending(self, pending: List[Pending]) -> None:
        """Deferred acks a failed call did not apply: the next claim tries them again."""
        with self._lock:
            self._pending[:0] = pending

    def release_others(self, worker_id: str) -> List[NativeLease]:
        """Takes out every lease held for a worker other than `worker_id` (for a claim of
        `worker_id` that found nothing: no held lease hides a message from a claim on
        the same transport)."""
        return self._release(lambda w: w != worker_id)

    def holds_others(self, worker_id: str) -> bool:
        """Whether leases are held for a worker other than `worker_id`."""
        with self._lock:
            return any(w.held for other, w in self._workers.items() if other != worker_id)

    def release_all(self) -> List[NativeLease]:
        return self._release(lambda w: True)

    def _release(self, which: Any) -> List[NativeLease]:
        with self._lock:
            out: List[NativeLease] = []
            for worker_id, w in self._workers.items():
                if which(worker_id):
                    out.extend(lease for lease, _ in w.held)
                    w.held.clear()
            return out

    def held(self) -> int:
        """How many leases are held, not yet handed out."""
        with self._lock:
            return sum(len(w.held) for w in self._workers.values())
