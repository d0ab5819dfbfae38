"""What ends or keeps a lease: `ack`, `ack_many`, `nack`, `dead_letter`, and `extend`,
which `keep_alive` calls periodically. Each ends (or marks) the span a lease of a tracing
transport carries (`_tracing`): a lease built by hand, or of a transport that does not
trace, carries none."""

from __future__ import annotations

from ctypes import byref, c_int32
from dataclasses import replace
from typing import Iterable, List, Optional

from .._args import _seconds, _text
from .._errors import HarelError
from .._handle import _Handle
from .._keepalive import KeepAlive, beats
from .._leases import _lease_arg, _lease_args, _outcomes
from .._tracing import DEAD_LETTER_REASON, NACK_DELAY, finish_lost, finish_outcomes, keep_span, lease_span
from .._values import DEFAULT_VISIBILITY, Lease


class FinishMethods(_Handle):
    """ack, ack_many, nack, dead_letter, extend, keep_alive."""

    def ack(self, lease: Lease) -> None:
        """Finishes `lease`: deletes its message. `LeaseLostError` if the message is gone or
        held by another worker (nothing changed)."""
        arg = _lease_arg(lease)
        span = lease_span(lease)
        if span is None:
            self._call("ack", self._lib.harel_transport_ack, byref(arg))
            return
        try:
            self._call("ack", self._lib.harel_transport_ack, byref(arg))
        except BaseException as e:
            span.finished(e)
            raise
        span.finished(None)

    def ack_many(self, leases: Iterable[Lease]) -> List[Optional[HarelError]]:
        """Acks `leases` in one transaction (one commit), in order. Returns one element per
        lease: None when it was acked, or the `LeaseLostError` of a lease that was lost
        (acked or nacked already, or it lapsed and another worker claimed it; nothing of
        it changed) while the others were acked all the same; on a sharded queue, a lease
        of a shard whose transaction failed has that error (a `BusyError`, ...: not acked,
        still held). An exception is the whole call's, and then nothing was acked: `ArgumentError` for a lease that is not one
        (naming it, ``leases[2]``), `BusyError`, `DatabaseError`, `ConnectError`."""
        items, _args, array = _lease_args(leases)
        outcomes = (c_int32 * len(items))()
        self._call("ack_many", self._lib.harel_transport_ack_many, array, len(items), outcomes)
        acked = _outcomes(items, outcomes)
        finish_outcomes(items, acked)
        return acked

    def nack(self, lease: Lease, delay: float = 0.0) -> None:
        """Gives `lease` back: claimable at once (`delay` 0) or parked, its group blocked,
        for `delay` seconds. `LeaseLostError` as for `ack`."""
        arg = _lease_arg(lease)
        d = _seconds("delay", delay)
        span = lease_span(lease)
        if span is None:
            self._call("nack", self._lib.harel_transport_nack, byref(arg), d)
            return
        try:
            self._call("nack", self._lib.harel_transport_nack, byref(arg), d)
        except BaseException as e:
            finish_lost(lease, e)
            raise
        span.end("nacked", "nack", {NACK_DELAY: d})

    def dead_letter(self, lease: Lease, reason: str) -> None:
        """Moves the leased message to the dead letters with `reason` (not empty), for a
        worker that knows it will never succeed; its group goes on with its next message
        at once. The lease is over, as after `ack`; `LeaseLostError` as for `ack`."""
        arg = _lease_arg(lease)
        r = _text("reason", reason)
        span = lease_span(lease)
        if span is None:
            self._call("dead_letter", self._lib.harel_transport_dead_letter, byref(arg), r)
            return
        try:
            self._call("dead_letter", self._lib.harel_transport_dead_letter, byref(arg), r)
        except BaseException as e:
            finish_lost(lease, e)
            raise
        span.end(reason, "dead_letter", {DEAD_LETTER_REASON: reason})

    def extend(self, lease: Lease, visibility: float) -> Lease:
        """Makes `lease` run to now + `visibility` seconds, so a handler that runs longer
        than its visibility keeps its message (`keep_alive` does it periodically).
        Returns the lease with its new `lock_expiry` (a new `Lease`: leases are frozen;
        the one given still acks and nacks as well). A lease that lapsed but that no other
        worker claimed since is still this worker's, and is extended. `LeaseLostError`
        when it was acked or nacked already, or lapsed and another worker claimed it
        (nothing changed)."""
        arg = _lease_arg(lease)
        v = _seconds("visibility", visibility)
        span = lease_span(lease)
        if span is None:
            self._call("extend", self._lib.harel_transport_extend, byref(arg), v)
            return replace(lease, lock_expiry=arg.lock_expiry)
        try:
            self._call("extend", self._lib.harel_transport_extend, byref(arg), v)
        except BaseException as e:
            finish_lost(lease, e)
            raise
        span.event("extend")
        return keep_span(lease, replace(lease, lock_expiry=arg.lock_expiry))

    def keep_alive(self, lease: Lease, visibility: float = DEFAULT_VISIBILITY, *,
                   every: Optional[float] = None) -> KeepAlive:
        """Extends `lease` to now + `visibility` every `every` seconds (by default a third
        of `visibility`) on a thread of its own, from now until `stop()` or the end of its
        ``with`` block; see `KeepAlive`::

            with transport.keep_alive(lease, 30) as alive:
                handle(lease)
            if alive.error is None:
                transport.ack(alive.lease)
        """
        v, beat = beats(lease, visibility, every, self._closed)
        return KeepAlive(self, lease, v, beat)
