"""Heartbeats: a lease extended periodically while its handler runs, by a thread
(`KeepAlive`, from `Transport.keep_alive`) or by a task (`AsyncKeepAlive`, from
`AsyncTransport.keep_alive`)."""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any, Awaitable, Optional, Protocol, Tuple

from ._args import _seconds
from ._errors import ArgumentError, BusyError, ConnectError, HarelError, TransportClosedError
from ._leases import _lease_arg
from ._values import Lease

# Not the end of a lease: it is still this worker's until its lock_expiry, and the next
# beat may get through.
_TRANSIENT = (BusyError, ConnectError)


# What the beats call: the transports, seen as protocols because they import this module.
class _Extends(Protocol):
    def extend(self, lease: Lease, visibility: float) -> Lease: ...


class _ExtendsAsync(Protocol):
    def extend(self, lease: Lease, visibility: float) -> Awaitable[Lease]: ...


def beats(lease: Lease, visibility: Any, every: Any, closed: bool) -> Tuple[float, float]:
    """`keep_alive`'s arguments checked, before anything starts: (the visibility, the
    seconds between beats). A closed transport is refused now, not only at the first beat."""
    _lease_arg(lease)
    v = _seconds("visibility", visibility)
    beat = period(v, every)
    if closed:
        raise TransportClosedError("keep_alive: the transport is closed")
    return v, beat


def period(visibility: float, every: Optional[float]) -> float:
    """The seconds between beats: `every`, by default a third of `visibility`; a lease
    extended less often than it lasts would lapse between beats."""
    if every is None:
        every = visibility / 3
    elif isinstance(every, bool) or not isinstance(every, (int, float)):
        raise ArgumentError(f"every must be a number of seconds (int or float), got {type(every).__name__}")
    if not (math.isfinite(every) and 0 < every < visibility):
        raise ArgumentError(
            f"every is {every} and visibility {visibility}: a lease is extended every `every` seconds, "
            "which must be > 0 and less than its visibility"
        )
    return float(every)


class KeepAlive:
    """A thread extending a lease to now + `visibility` every `every` seconds, started by
    `Transport.keep_alive` and stopped by `stop()` or at the end of its ``with`` block.

    `lease` is the lease with its latest `lock_expiry`; `error` the exception that ended
    the beats early (`LeaseLostError` when another worker has the message; the handler
    should then give up, and not ack), None while the lease is kept; `lost` an Event set
    then. `BusyError` and `ConnectError` do not end the beats: the lease is still this
    worker's until its expiry, and the next beat tries again."""

    def __init__(self, transport: _Extends, lease: Lease, visibility: float, every: float) -> None:
        self._t = transport
        self._lease = lease
        self._visibility = visibility
        self._every = every
        self._stop = threading.Event()
        #: Set when the beats ended on an error (see `error`).
        self.lost = threading.Event()
        #: What ended the beats early; None while the lease is kept.
        self.error: Optional[HarelError] = None
        self._thread = threading.Thread(target=self._beat, name="harel_transport keep_alive", daemon=True)
        self._thread.start()

    @property
    def lease(self) -> Lease:
        """The lease, with the `lock_expiry` of its latest extension."""
        return self._lease

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._lease = self._t.extend(self._lease, self._visibility)
            except _TRANSIENT:
                continue
            except HarelError as e:
                self.error = e
                self.lost.set()
                return

    def stop(self) -> Optional[HarelError]:
        """Stops the beats, waiting for an extension in progress; returns `error`. Again:
        the same."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        return self.error

    def __enter__(self) -> "KeepAlive":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "lost" if self.error else ("stopped" if self._stop.is_set() else "beating")
        return f"<harel_transport.KeepAlive seq={self._lease.seq} {state}>"


class AsyncKeepAlive:
    """`KeepAlive` as a task of the running loop, started by `AsyncTransport.keep_alive`:
    ``async with transport.keep_alive(lease, 30) as alive:``, or ``await alive.stop()``.
    `lost` is an `asyncio.Event`."""

    def __init__(self, transport: _ExtendsAsync, lease: Lease, visibility: float, every: float) -> None:
        self._t = transport
        self._lease = lease
        self._visibility = visibility
        self._every = every
        self._stop = asyncio.Event()
        #: Set when the beats ended on an error (see `error`).
        self.lost = asyncio.Event()
        #: What ended the beats early; None while the lease is kept.
        self.error: Optional[HarelError] = None
        self._task = asyncio.get_running_loop().create_task(self._beat())

    @property
    def lease(self) -> Lease:
        """The lease, with the `lock_expiry` of its latest extension."""
        return self._lease

    async def _beat(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), self._every)
                return
            except asyncio.TimeoutError:
                pass
            try:
                self._lease = await self._t.extend(self._lease, self._visibility)
            except _TRANSIENT:
                continue
            except HarelError as e:
                self.error = e
                self.lost.set()
                return

    async def stop(self) -> Optional[HarelError]:
        """Stops the beats, waiting for an extension in progress; returns `error`."""
        self._stop.set()
        await self._task
        return self.error

    async def __aenter__(self) -> "AsyncKeepAlive":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    def __repr__(self) -> str:
        state = "lost" if self.error else ("stopped" if self._stop.is_set() else "beating")
        return f"<harel_transport.AsyncKeepAlive seq={self._lease.seq} {state}>"
