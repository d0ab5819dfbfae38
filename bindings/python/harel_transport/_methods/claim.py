"""Claims: `claim` and `claim_many`, which may wait for work, with how a wait ends (a
`Cancel`, `interrupt`, `close`, a caller that gives up), and `ack_and_claim` and
`ack_and_claim_many`, which ack and claim in one transaction."""

from __future__ import annotations

import math
from ctypes import POINTER, byref, c_int32, c_size_t, c_void_p
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from .. import _native
from .._args import ClaimArgs, _max, _seconds
from .._errors import TransportClosedError, WaitInterruptedError
from .._handle import _Handle
from .._leases import _copy_lease, _lease_arg, _lease_args, _leases_out, _outcomes
from .._tracing import finish_outcomes, lease_span
from .._values import DEFAULT_VISIBILITY, AckAndClaimResult, Lease, _leases_in
from .._waiting import BY_CALLER, BY_CLOSE, Cancel, _CallCancel, cancels_of, on_main_thread, run_interruptibly


class ClaimMethods(_Handle):
    """claim, claim_many, ack_and_claim, ack_and_claim_many, interrupt."""

    def claim(
        self,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        wait: float = 0.0,
        cancel: Optional[Cancel] = None,
    ) -> Optional[Lease]:
        """Leases the next deliverable message to `worker_id` for `visibility` seconds,
        among groups of priority >= `min_priority` and, when `routing_keys` is given, a
        routing key among them; None when nothing is deliverable.

        `wait` (seconds, finite, >= 0; 0: look once) waits that long for something
        deliverable, returning as soon as a lease is had: a commit by any transport of
        this process on the queue wakes it at once, another process's commit within a few
        ms, a lease's or park's end at that instant. It holds no lock while it waits, and
        the transport's other calls go ahead. `cancel` (a `Cancel`), `interrupt()` and
        `close()` end the wait early: `WaitInterruptedError`, nothing claimed."""
        cancels = cancels_of(cancel)
        a = ClaimArgs.read(worker_id, visibility, min_priority, routing_keys)
        lease = self._claim(a, _seconds("wait", wait), cancels)
        tracing = self._tracing
        return lease if tracing is None else tracing.consumed(lease)

    def _claim(self, a: ClaimArgs, seconds: float, cancels: Tuple[Cancel, ...]) -> Optional[Lease]:
        lib = self._lib

        def call(handle: int, seconds: float, cancel: Optional[int]) -> Optional[Lease]:
            if seconds == 0 and cancel is None:  # no wait to end: the plain claim
                return self._lease(handle, lib.harel_transport_claim, *a.c)
            return self._lease(handle, lib.harel_transport_claim_wait, *a.c, seconds, cancel)

        return self._waiting("claim", seconds, cancels, call)

    def claim_many(
        self,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        max: int,
        wait: float = 0.0,
        cancel: Optional[Cancel] = None,
    ) -> List[Lease]:
        """Leases up to `max` messages (1..MAX_CLAIM) to `worker_id` in one transaction,
        each the head of a different group, in the order `claim` would hand them out one
        after another; an empty list when nothing is deliverable (within `wait`). `wait`
        and `cancel` as for `claim`. Each lease is finished on its own (`ack`, `nack`) or
        with the others (`ack_many`, `ack_and_claim_many`)."""
        cancels = cancels_of(cancel)
        a = ClaimArgs.read(worker_id, visibility, min_priority, routing_keys)
        m = _max(max)
        leases = self._claim_many(a, m, _seconds("wait", wait), cancels)
        tracing = self._tracing
        return leases if tracing is None else tracing.consumed(leases, batch=True)

    def _claim_many(self, a: ClaimArgs, m: int, seconds: float, cancels: Tuple[Cancel, ...]) -> List[Lease]:
        lib = self._lib

        def call(handle: int, seconds: float, cancel: Optional[int]) -> List[Lease]:
            return self._leases(handle, lib.harel_transport_claim_many, m, *a.c, m, seconds, cancel)

        return self._waiting("claim_many", seconds, cancels, call)

    def _waiting(self, what: str, seconds: float, cancels: Tuple[Cancel, ...],
                 call: Callable[[int, float, Optional[int]], Any]) -> Any:
        """Runs ``call(handle, seconds, cancel)``, a claim that may wait `seconds`, with a
        harel_cancel of its own fired by `cancels` and by close (none when nothing can end
        its wait). On the main thread a call that waits runs on a helper thread, so that
        signal handlers (Ctrl-C) run meanwhile; if one raises, the wait is ended, what it
        claimed given back and the exception re-raised. A wait that close ended gives back
        what it claimed in that instant (nothing could finish it) and raises."""
        if seconds == 0 and not cancels:
            handle = self._enter(what)
            try:
                return call(handle, seconds, None)
            finally:
                self._leave()
        wait = _CallCancel(self._lib)
        # close ends waits; a call that does not wait it lets finish, as any other call.
        closes = wait if seconds != 0 else None
        try:
            handle = self._enter(what, closes)
            try:
                for cancel in cancels:
                    cancel._link(wait)
                try:
                    if 0 < seconds < math.inf and on_main_thread():  # (any other value: the library's to refuse)
                        # A look first, here: a claim that finds work at once costs no thread.
                        result = call(handle, 0.0, wait.ptr)
                        if not _leases_in(result):
                            result = run_interruptibly(
                                call, (handle, seconds, wait.ptr), wait, lambda r: self._give_back(handle, r)
                            )
                    else:
                        result = call(handle, seconds, wait.ptr)
                except WaitInterruptedError:
                    if wait.reason == BY_CLOSE:
                        raise WaitInterruptedError(
                            f"{what}: the transport was closed while the claim waited; nothing was claimed"
                        ) from None
                    raise
                finally:
                    for cancel in cancels:
                        cancel._unlink(wait)
                if wait.reason in (BY_CLOSE, BY_CALLER) and _leases_in(result):
                    # Claimed in the instant the wait was ended, for a caller that cannot
                    # finish it (closed) or has gone (a cancelled task).
                    self._give_back(handle, result)
                    why = "the transport was closed" if wait.reason == BY_CLOSE else "its caller gave up"
                    raise WaitInterruptedError(
                        f"{what}: {why} while the claim waited; what it claimed in that instant was given back"
                    )
                return result
            finally:
                self._leave(closes)
        finally:
            wait.free()

    def _give_back(self, handle: int, result: Any) -> None:
        """Nacks (delay 0) the leases of a claim whose caller gave up, on the handle the
        call still holds. Best effort: a lease that could not be nacked lapses at the end
        of its visibility, as any lease whose worker went away."""
        lib = self._lib
        for lease in _leases_in(result):
            err = c_void_p()
            lib.harel_transport_nack(handle, byref(_lease_arg(lease)), 0.0, byref(err))
            lib.harel_error_free(err)

    def ack_and_claim(
        self,
        lease: Lease,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
    ) -> Optional[Lease]:
        """Acks `lease` and claims the next message for `worker_id` in one transaction (one
        commit instead of two). None: acked, nothing deliverable. If the ack fails
        (`LeaseLostError`, ...), nothing is claimed."""
        arg = _lease_arg(lease)
        a = ClaimArgs.read(worker_id, visibility, min_priority, routing_keys)
        span = lease_span(lease)
        handle = self._enter("ack_and_claim")
        try:
            new = self._lease(handle, self._lib.harel_transport_ack_and_claim, byref(arg), *a.c)
        except BaseException as e:
            if span is not None:
                span.finished(e)
            raise
        finally:
            self._leave()
        if span is not None:
            span.finished(None)
        tracing = self._tracing
        return new if tracing is None else tracing.consumed(new)

    def ack_and_claim_many(
        self,
        leases: Iterable[Lease],
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        max: int,
    ) -> AckAndClaimResult:
        """`ack_many(leases)` and then `claim_many(worker_id, ..., max=max)` without
        waiting, in one transaction: a batch worker's loop with one commit per batch.
        Returns ``(leases, acked)`` (an `AckAndClaimResult`): the new leases (empty when
        nothing is deliverable), and `ack_many`'s outcomes (a lost lease does not stop the
        claim). On an exception nothing was acked or claimed."""
        items, _args, array = _lease_args(leases)
        a = ClaimArgs.read(worker_id, visibility, min_priority, routing_keys)
        m = _max(max)
        outcomes = (c_int32 * len(items))()
        handle = self._enter("ack_and_claim_many")
        try:
            fn = self._lib.harel_transport_ack_and_claim_many
            claimed = self._leases(handle, fn, m, array, len(items), outcomes, *a.c, m)
        finally:
            self._leave()
        acked = _outcomes(items, outcomes)
        finish_outcomes(items, acked)
        tracing = self._tracing
        if tracing is not None:
            tracing.consumed(claimed, batch=True)
        return AckAndClaimResult(claimed, acked)

    def _lease(self, handle: int, fn: Any, *args: Any) -> Optional[Lease]:
        """``fn(handle, *args, &lease, &err)`` on a handle the caller holds: the lease it
        handed out, copied and freed; None for HAREL_EMPTY."""
        out = POINTER(_native.HarelLease)()
        try:
            self._call_on(handle, fn, *args, byref(out))
            return _copy_lease(out) if out else None
        finally:
            self._lib.harel_lease_free(out)  # NULL (empty, or after an error) does nothing

    def _leases(self, handle: int, fn: Any, m: int, *args: Any) -> List[Lease]:
        """``fn(handle, *args, leases, &n, &err)`` on a handle the caller holds, a batch
        claim given the max `m` (among `args`; it sizes ``leases``): the `n` leases it
        wrote, copied and freed."""
        out = _leases_out(m)
        got = c_size_t()
        try:
            self._call_on(handle, fn, *args, out, byref(got))
            return [_copy_lease(out[i]) for i in range(got.value)]
        finally:
            for i in range(got.value):  # 0 on HAREL_EMPTY and after an error
                self._lib.harel_lease_free(out[i])

    def interrupt(self) -> None:
        """Ends every claim waiting on this transport now (`claim` and `claim_many` with a
        wait, those of the `AsyncTransport`s over it included): each raises
        `WaitInterruptedError`, having claimed nothing. Claims that start later wait as
        usual. From any thread; on a closed transport nothing."""
        try:
            handle = self._enter("interrupt")
        except TransportClosedError:
            return
        try:
            self._lib.harel_transport_interrupt(handle)
            for waits in list(self._async_waits):
                waits.interrupted()
        finally:
            self._leave()
