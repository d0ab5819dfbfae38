"""Transports for harel 0.9: our queue behind harel's `Transport` and `AsyncTransport`
protocols (`harel.engine.transport.base`), built the way harel's own are.

The one-line swap in a harel program::

    from harel.engine.transport import SqliteTransport      # before
    from harel_transport.harel import SqliteTransport       # after

    from harel.engine.aio_transport import AsyncSqliteTransport   # before
    from harel_transport.harel import AsyncSqliteTransport        # after

The constructors take harel's arguments (``SqliteTransport(path, clock=..., prefix=...,
create_schema=...)``, ``await AsyncSqliteTransport.create(path, clock=..., ...)``) and
this library's options besides (`busy_timeout`, `synchronous_full`, `sync_url`,
`auth_token`, `sync_interval`). The leases are harel's `Lease`, with harel's `Event`, and
events are stored as harel's `SqliteTransport` stores them (``event.model_dump_json()``),
so one file is served by both, in both directions.

Where harel's semantics differ from this library's, these classes follow harel's:

- An ack or nack of a lease that was lost (its lease lapsed and another worker claimed
  the message, or it was acked or nacked already) is logged as a warning on the logger
  ``harel_transport.harel`` and dropped, as harel's transports drop it, instead of
  raising `LeaseLostError`: the message is delivered again or already handled (delivery is
  at least once). Nothing of the other worker's is touched (harel's `SqliteTransport`
  would delete the message by its seq alone).
- `publish` clamps a priority to 0..4, as harel's `RedisTransport` does (this library
  refuses one outside it); a claim's `min_priority` below 0 is 0, and above 4 finds
  nothing (no group of ours is above 4).
- The lease's `token` carries the worker id the library leased it to (harel's SQL
  transports leave it empty): ack and nack need it to check who holds the message.

One thing is this package's own: an ack is applied with the transport's next claim, in
the same transaction (the library's ``ack_and_claim``), so a worker's loop of claim,
handle, ack costs one commit per message instead of two (at synchronous FULL, one fsync
instead of two). `ack` checks its lease and returns at once; the message is deleted by the
next `claim` on this transport, or by the next `ack` (which applies the earlier one
alone), or by `close`. Until then the message stays leased to this worker, so its group
takes nothing else; a process that dies in between leaves the message to be delivered
again when its lease lapses, as any lost ack does; harel's workers mark each event
handled in the store, and skip it. ``defer_ack=False`` acks at once, in a commit of its
own.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Executor
from typing import Any, Callable, Optional, Tuple, Union

from harel.engine.transport.base import Lease
from harel.spec.states import Event

from ._aio import AsyncTransport as _NativeAsyncTransport
from ._errors import ArgumentError, LeaseLostError
from ._transport import MAX_PRIORITY, PathType
from ._transport import Lease as _NativeLease
from ._transport import Transport as _NativeTransport

__all__ = [
    "HarelTransport",
    "AsyncHarelTransport",
    "SqliteTransport",
    "AsyncSqliteTransport",
    "LibsqlTransport",
    "AsyncLibsqlTransport",
    "logger",
]

#: Where lost-lease acks and nacks are reported (WARNING).
logger = logging.getLogger("harel_transport.harel")

DEFAULT_PREFIX = "harel"


def _options(
    clock: Callable[[], float],
    prefix: str,
    create_schema: bool,
    busy_timeout: Optional[float],
    synchronous_full: Optional[bool],
    sync_url: Optional[str],
    auth_token: Optional[str],
    sync_interval: Optional[float],
) -> dict:
    options: dict = {"prefix": prefix, "create_schema": create_schema}
    # harel's default clock is time.time: the library's own system clock is the same
    # time, read without a call back into Python.
    if clock is not time.time:
        options["clock"] = clock
    if busy_timeout is not None:
        options["busy_timeout"] = busy_timeout
    if synchronous_full is not None:
        options["synchronous_full"] = synchronous_full
    if sync_url is not None:
        options["sync_url"] = sync_url
        if auth_token:  # harel's LibsqlTransport takes auth_token="" for none
            options["auth_token"] = auth_token
    if sync_interval is not None:
        options["sync_interval"] = sync_interval
    return options


def _priority(priority: Any) -> Any:
    """harel's priority into 0..4 (harel's RedisTransport clamps the same way)."""
    if isinstance(priority, int) and not isinstance(priority, bool):
        return min(max(priority, 0), MAX_PRIORITY)
    return priority  # the native call refuses it with ArgumentError


def _floor(min_priority: Any) -> Any:
    """A claim's floor: None when it is above every priority we store."""
    if isinstance(min_priority, int) and not isinstance(min_priority, bool):
        if min_priority > MAX_PRIORITY:
            return None
        return max(min_priority, 0)
    return min_priority


def _event_json(event: Any) -> str:
    if not isinstance(event, Event):
        raise ArgumentError(f"event must be a harel Event, got {type(event).__name__}")
    return event.model_dump_json()  # what harel's SqliteTransport stores


def _harel_lease(lease: Optional[_NativeLease]) -> Optional[Lease]:
    if lease is None:
        return None
    return Lease(lease.seq, lease.group_id, Event.model_validate_json(lease.event), token=lease.worker_id)


def _native_lease(lease: Any) -> _NativeLease:
    if not isinstance(lease, Lease):
        raise ArgumentError(f"lease must be a harel Lease from claim(), got {type(lease).__name__}")
    if not lease.token:
        raise ArgumentError(
            "lease.token is empty: it must carry the worker id the lease was claimed for "
            "(pass the Lease that claim() returned)"
        )
    return _NativeLease(lease.seq, lease.group_id, "", lease.token, 0.0)


_Pending = Tuple[Lease, _NativeLease]


def _dropped(op: str, lease: Lease, e: LeaseLostError) -> None:
    logger.warning(
        "%s of message %s of execution %r dropped: the lease of worker %r was lost (%s); "
        "delivery is at least once, so the message is delivered again or was handled already",
        op,
        lease.seq,
        lease.group_id,
        lease.token,
        e.message,
    )


class HarelTransport:
    """harel's sync `Transport` on this library (alias: `SqliteTransport`).
    ``HarelTransport(path, clock=time.time, *, prefix="harel", create_schema=True, ...)``,
    as harel's `SqliteTransport`, plus this library's options and `defer_ack` (see the
    module: on by default, an ack rides on the next claim's commit).

    Safe to use from several threads, as harel's inline workers may."""

    def __init__(
        self,
        path: PathType = ":memory:",
        clock: Callable[[], float] = time.time,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        busy_timeout: Optional[float] = None,
        synchronous_full: Optional[bool] = None,
        sync_url: Optional[str] = None,
        auth_token: str = "",
        sync_interval: Optional[float] = None,
        defer_ack: bool = True,
    ) -> None:
        self._t = _NativeTransport(
            path,
            **_options(clock, prefix, create_schema, busy_timeout, synchronous_full, sync_url, auth_token, sync_interval),
        )
        self._clock = clock
        self._defer_ack = bool(defer_ack)
        self._pending: Optional[_Pending] = None
        self._pending_lock = threading.Lock()

    @property
    def transport(self) -> _NativeTransport:
        """The native `harel_transport.Transport` underneath (the same handle). Its calls
        do not apply a deferred ack: call `flush()` first."""
        return self._t

    def publish(self, group_id: str, event: Event, priority: int = 0) -> None:
        self._t.publish(group_id, _event_json(event), priority=_priority(priority))

    def claim(self, worker_id: str, visibility: float, min_priority: int = 0) -> Optional[Lease]:
        floor = _floor(min_priority)
        pending = self._take()
        if pending is None:
            if floor is None:
                return None
            return _harel_lease(self._t.claim(worker_id, visibility, floor))
        if floor is None:
            self._ack_now(pending)
            return None
        try:
            return _harel_lease(self._t.ack_and_claim(pending[1], worker_id, visibility, floor))
        except LeaseLostError as e:  # not acked, nothing claimed: claim alone
            _dropped("ack", pending[0], e)
        except BaseException:
            self._give_back(pending)  # nothing was done: the ack is tried again next time
            raise
        return _harel_lease(self._t.claim(worker_id, visibility, floor))

    def ack(self, lease: Lease) -> None:
        pending = (lease, _native_lease(lease))  # checked now: a bad lease raises here
        if not self._defer_ack:
            self._ack_now(pending)
            return
        with self._pending_lock:
            earlier, self._pending = self._pending, pending
        if earlier is not None:
            self._ack_now(earlier)

    def nack(self, lease: Lease, delay: float = 0.0) -> None:
        try:
            self._t.nack(_native_lease(lease), delay)
        except LeaseLostError as e:
            _dropped("nack", lease, e)

    def flush(self) -> None:
        """Applies a deferred ack now, in a commit of its own (close does it too)."""
        pending = self._take()
        if pending is not None:
            self._ack_now(pending)

    def close(self) -> None:
        if not self._t.closed:
            try:
                self.flush()
            finally:
                self._t.close()

    def _take(self) -> Optional[_Pending]:
        with self._pending_lock:
            pending, self._pending = self._pending, None
        return pending

    def _give_back(self, pending: _Pending) -> None:
        with self._pending_lock:
            if self._pending is None:
                self._pending = pending
                return
        self._ack_now(pending)

    def _ack_now(self, pending: _Pending) -> None:
        try:
            self._t.ack(pending[1])
        except LeaseLostError as e:
            _dropped("ack", pending[0], e)

    def __enter__(self) -> "HarelTransport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<harel_transport.harel.HarelTransport {self._t.path!r}>"


class AsyncHarelTransport:
    """harel's `AsyncTransport` on this library (alias: `AsyncSqliteTransport`). Build
    with ``await AsyncHarelTransport.create(path, clock=time.time, *, prefix="harel",
    create_schema=True, ...)``, as harel's `AsyncSqliteTransport`, plus this library's
    options, `defer_ack` (as for `HarelTransport`) and `executor`. Every call runs off the
    event loop; calls may overlap (harel's `AsyncWorker` has many in flight), each with its
    own error."""

    def __init__(self, transport: _NativeAsyncTransport, defer_ack: bool = True) -> None:
        """Wraps an open native `AsyncTransport`; prefer `create`."""
        self._t = transport
        self._defer_ack = bool(defer_ack)
        self._pending: Optional[_Pending] = None

    @classmethod
    async def create(
        cls,
        path: Union[str, PathType] = ":memory:",
        clock: Callable[[], float] = time.time,
        *,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        busy_timeout: Optional[float] = None,
        synchronous_full: Optional[bool] = None,
        sync_url: Optional[str] = None,
        auth_token: str = "",
        sync_interval: Optional[float] = None,
        defer_ack: bool = True,
        executor: Optional[Executor] = None,
    ) -> "AsyncHarelTransport":
        options = _options(clock, prefix, create_schema, busy_timeout, synchronous_full, sync_url, auth_token, sync_interval)
        return cls(await _NativeAsyncTransport.open(path, executor=executor, **options), defer_ack)

    @property
    def transport(self) -> _NativeAsyncTransport:
        """The native `harel_transport.AsyncTransport` underneath. Its calls do not apply
        a deferred ack: await `flush()` first."""
        return self._t

    async def publish(self, group_id: str, event: Event, priority: int = 0) -> None:
        await self._t.publish(group_id, _event_json(event), priority=_priority(priority))

    async def claim(self, worker_id: str, visibility: float, min_priority: int = 0) -> Optional[Lease]:
        floor = _floor(min_priority)
        pending, self._pending = self._pending, None  # taken on the loop: no other coroutine sees it
        if pending is None:
            if floor is None:
                return None
            return _harel_lease(await self._t.claim(worker_id, visibility, floor))
        if floor is None:
            await self._ack_now(pending)
            return None
        try:
            return _harel_lease(await self._t.ack_and_claim(pending[1], worker_id, visibility, floor))
        except LeaseLostError as e:
            _dropped("ack", pending[0], e)
        except BaseException:
            if self._pending is None:
                self._pending = pending
            else:
                await self._ack_now(pending)
            raise
        return _harel_lease(await self._t.claim(worker_id, visibility, floor))

    async def ack(self, lease: Lease) -> None:
        pending = (lease, _native_lease(lease))
        if not self._defer_ack:
            await self._ack_now(pending)
            return
        earlier, self._pending = self._pending, pending
        if earlier is not None:
            await self._ack_now(earlier)

    async def nack(self, lease: Lease, delay: float = 0.0) -> None:
        try:
            await self._t.nack(_native_lease(lease), delay)
        except LeaseLostError as e:
            _dropped("nack", lease, e)

    async def flush(self) -> None:
        """Applies a deferred ack now, in a commit of its own (close does it too)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await self._ack_now(pending)

    async def close(self) -> None:
        if not self._t.closed:
            try:
                await self.flush()
            finally:
                await self._t.close()

    async def _ack_now(self, pending: _Pending) -> None:
        try:
            await self._t.ack(pending[1])
        except LeaseLostError as e:
            _dropped("ack", pending[0], e)

    async def __aenter__(self) -> "AsyncHarelTransport":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<harel_transport.harel.AsyncHarelTransport {self._t.path!r}>"


#: The one-line swap for harel's `SqliteTransport` (the same constructor).
SqliteTransport = HarelTransport
#: The one-line swap for harel's `AsyncSqliteTransport` (the same `create`).
AsyncSqliteTransport = AsyncHarelTransport


class LibsqlTransport(HarelTransport):
    """The one-line swap for harel's `LibsqlTransport`: its constructor, ``(database,
    clock=time.time, *, auth_token="", sync_url=None, sync_interval=None, prefix="harel",
    create_schema=True)``, plus this library's options."""

    def __init__(
        self,
        database: PathType = ":memory:",
        clock: Callable[[], float] = time.time,
        *,
        auth_token: str = "",
        sync_url: Optional[str] = None,
        sync_interval: Optional[float] = None,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        busy_timeout: Optional[float] = None,
        synchronous_full: Optional[bool] = None,
        defer_ack: bool = True,
    ) -> None:
        super().__init__(
            database,
            clock,
            prefix=prefix,
            create_schema=create_schema,
            busy_timeout=busy_timeout,
            synchronous_full=synchronous_full,
            sync_url=sync_url,
            auth_token=auth_token,
            sync_interval=sync_interval,
            defer_ack=defer_ack,
        )


class AsyncLibsqlTransport(AsyncHarelTransport):
    """The one-line swap for harel's `AsyncLibsqlTransport`: ``await
    AsyncLibsqlTransport.create(database, *, auth_token="", sync_url=None,
    sync_interval=None, prefix="harel", create_schema=True)``, plus `clock` and this
    library's options."""

    @classmethod
    async def create(  # type: ignore[override]
        cls,
        database: PathType = ":memory:",
        clock: Callable[[], float] = time.time,
        *,
        auth_token: str = "",
        sync_url: Optional[str] = None,
        sync_interval: Optional[float] = None,
        prefix: str = DEFAULT_PREFIX,
        create_schema: bool = True,
        busy_timeout: Optional[float] = None,
        synchronous_full: Optional[bool] = None,
        defer_ack: bool = True,
        executor: Optional[Executor] = None,
    ) -> "AsyncLibsqlTransport":
        options = _options(clock, prefix, create_schema, busy_timeout, synchronous_full, sync_url, auth_token, sync_interval)
        return cls(await _NativeAsyncTransport.open(database, executor=executor, **options), defer_ack)
