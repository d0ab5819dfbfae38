"""Transports for harel 0.9: our queue behind harel's `Transport` and `AsyncTransport`
protocols (`harel.engine.transport.base`), built the way harel's own are.

The one-line swap in a harel program::

    from harel.engine.transport import SqliteTransport      # before
    from harel_transport.harel import SqliteTransport       # after

    from harel.engine.aio_transport import AsyncSqliteTransport   # before
    from harel_transport.harel import AsyncSqliteTransport        # after

The constructors take harel's arguments, with harel's meaning (``SqliteTransport(path,
clock=..., prefix=..., create_schema=...)``, ``await AsyncSqliteTransport.create(path,
clock=..., ...)``, ``LibsqlTransport(database, clock=..., auth_token=..., sync_url=...,
sync_interval=...)``, ``AsyncLibsqlTransport(LibsqlTransport(...))``), and this
library's options besides (`busy_timeout`, `synchronous_full`, and the two below); what
they cannot honour is refused at construction, naming it. The leases are harel's `Lease`, with harel's `Event`, and
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

By default every call leaves the queue as harel's own transport's call would, so what
another transport or process observes after each call is what harel's transport leaves:
a claim leases one message (a commit), an ack deletes it and frees its group before it
returns (a commit), a nack frees or parks it. Two options are this package's own, each
trading part of that for fewer commits (at synchronous FULL, each commit is a sync of the
disk) under a protocol that claims one message a call:

- ``defer_ack=True``: **acks are deferred** onto the transport's next claim and applied in
  its transaction (the library's ``ack_and_claim_many``). `ack` checks its lease and
  returns at once; the message is deleted by the next claim that claims (not one served by
  `prefetch`), by an `ack` that finds a batch's worth deferred already (it applies those
  first), by `flush` or by `close`. The difference another transport sees: after `ack`
  returns, the message stays leased to its worker and its group gives nobody else
  anything until then; a process that dies in between leaves it to be delivered again
  when its lease lapses, as any lost ack does (harel's workers mark each event handled in
  the store, and skip it).
- ``prefetch="auto"`` or an int above 1: **claims prefetch**. A claim that finds nothing
  held for its worker claims up to a batch of heads of distinct groups in one
  transaction, hands out the first and holds the others for the worker's next claims, so
  a fast loop makes one commit per batch of claims (its acks stay a commit each unless
  `defer_ack`). "auto" sizes each batch from what it measures, so that a batch is handed
  out in about four claims' time (at most 16): a handler that takes four claims' time or
  more gets one lease a claim; an int is a fixed batch (1, the default: no prefetch). The
  difference another transport sees: a held lease is a lease, so the groups of the leases
  held and not yet handed out give nobody else anything until this transport's claims
  hand them out and they are acked (or `close` gives them back); a worker that dies
  leaves its held leases to lapse. Handed out with less than 90% of the claim's
  visibility left, a held lease is extended first (one commit); one that lapsed while
  held and was claimed by another worker is skipped. A held lease serves a claim whose
  floor is at or below the one it was claimed under (the lease does not say its group's
  priority). Another worker id claiming on the same transport and finding nothing gets
  what is held for the others (given back, then claimed), and `close` gives back what is
  held (a nack each, delay 0: claimable at once; each counted in the message's
  ``attempts``, as every claim is).
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from typing import Any, Callable, List, Optional, Union

from harel.engine.transport.base import Lease
from harel.spec.states import Event

from ._aio import AsyncTransport as _NativeAsyncTransport
from ._args import ClaimArgs, _seconds
from ._errors import ArgumentError, HarelError, LeaseLostError
from ._prefetch import Pending as _Pending
from ._prefetch import Prefetch, fresh, prefetch_size
from ._tracing import keep_span
from ._transport import Transport as _NativeTransport
from ._values import MAX_PRIORITY, PathType
from ._values import Lease as _NativeLease
from ._watching import waits_for

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
    # As harel's LibsqlTransport: the token and the interval are the replica's, and
    # ignored without a sync_url; auth_token="" is none.
    if sync_url is not None:
        options["sync_url"] = sync_url
        if auth_token:
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
    harel_lease = Lease(lease.seq, lease.group_id, Event.model_validate_json(lease.event), token=lease.worker_id)
    # The span of a lease of a tracing transport (an AsyncHarelTransport over a native
    # AsyncTransport opened with tracer_provider) goes with harel's Lease, for its ack.
    keep_span(lease, harel_lease)
    return harel_lease


def _native_lease(lease: Any) -> _NativeLease:
    if not isinstance(lease, Lease):
        raise ArgumentError(f"lease must be a harel Lease from claim(), got {type(lease).__name__}")
    if not lease.token:
        raise ArgumentError(
            "lease.token is empty: it must carry the worker id the lease was claimed for "
            "(pass the Lease that claim() returned)"
        )
    return keep_span(lease, _NativeLease(lease.seq, lease.group_id, "", lease.token, 0.0))


def _dropped(op: str, lease: Lease, e: HarelError) -> None:
    logger.warning(
        "%s of message %s of execution %r dropped: the lease of worker %r was lost (%s); "
        "delivery is at least once, so the message is delivered again or was handled already",
        op,
        lease.seq,
        lease.group_id,
        lease.token,
        e.message,
    )


def _plain(held: Prefetch, defer_ack: bool) -> bool:
    """Neither option: nothing is ever held or deferred, and each call is one native call."""
    return held.size == 1 and not defer_ack


def _claim_args(worker_id: Any, visibility: Any, floor: Any) -> None:
    """The types a held lease is matched by (its worker, floor and visibility), checked as
    the native claim checks them; the values are the library's to judge."""
    ClaimArgs.read(worker_id, visibility, floor, None)


def _report(pending: List[_Pending], acked: List[Optional[HarelError]]) -> None:
    """Logs the deferred acks a batch found lost (the others were applied)."""
    for (lease, _), lost in zip(pending, acked):
        if lost is not None:
            _dropped("ack", lease, lost)


def _not_wrappable(cls: str, transport: Any) -> str:
    """Why `transport` is not something an async class of this module can run on."""
    kind = f"{type(transport).__module__}.{type(transport).__qualname__}"
    if type(transport).__module__.startswith("aiosqlite"):
        why = (
            "harel's AsyncSqliteTransport(conn) runs on an aiosqlite connection, which this library cannot use "
            "(it opens the file with its own SQLite): use `await AsyncSqliteTransport.create(path, ...)`"
        )
    elif type(transport).__module__.startswith("harel."):
        why = f"{kind} is harel's own transport: build the sync one from harel_transport.harel instead"
    else:
        why = f"got {kind}"
    return (
        f"{cls} runs on a sync transport of harel_transport.harel (as harel's AsyncLibsqlTransport on its "
        f"LibsqlTransport) or a native harel_transport.AsyncTransport; {why}"
    )


class HarelTransport:
    """harel's sync `Transport` on this library (alias: `SqliteTransport`).
    ``HarelTransport(path, clock=time.time, *, prefix="harel", create_schema=True, ...)``,
    as harel's `SqliteTransport`, plus this library's options, `defer_ack` and `prefetch`
    (see the module).

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
        defer_ack: bool = False,
        prefetch: Union[int, str] = 1,
    ) -> None:
        held = Prefetch(prefetch_size(prefetch))  # checked before the file is opened
        self._t = _NativeTransport(
            path,
            **_options(clock, prefix, create_schema, busy_timeout, synchronous_full, sync_url, auth_token, sync_interval),
        )
        self._clock = clock
        self._defer_ack = bool(defer_ack)
        self._held = held
        self._plain = _plain(held, self._defer_ack)

    @property
    def transport(self) -> _NativeTransport:
        """The native `harel_transport.Transport` underneath (the same handle). Its calls
        do not apply a deferred ack: call `flush()` first."""
        return self._t

    @property
    def held(self) -> int:
        """How many prefetched leases wait to be handed out by this transport's claims."""
        return self._held.held()

    def publish(self, group_id: str, event: Event, priority: int = 0) -> None:
        self._t.publish(group_id, _event_json(event), priority=_priority(priority))

    def claim(self, worker_id: str, visibility: float, min_priority: int = 0) -> Optional[Lease]:
        floor = _floor(min_priority)
        if floor is None:  # nothing can match: only the deferred acks to apply
            self.flush()
            return None
        if self._plain:
            return _harel_lease(self._t.claim(worker_id, visibility, floor))
        _claim_args(worker_id, visibility, floor)
        while True:
            lease = self._held.take(worker_id, floor)
            if lease is None:
                break
            if fresh(lease, visibility, self._clock()):
                return self._handed(worker_id, lease)
            try:
                return self._handed(worker_id, self._t.extend(lease, visibility))
            except LeaseLostError:
                continue  # it lapsed while held and another worker claimed it: theirs now
            except BaseException:
                self._held.put_back(worker_id, lease, floor)
                raise
        lease = self._claim(worker_id, visibility, floor)
        if lease is None:
            others = self._held.release_others(worker_id)
            if not others:
                return None
            self._give_back(others)
            lease = self._claim(worker_id, visibility, floor)
        return None if lease is None else self._handed(worker_id, lease)

    def ack(self, lease: Lease) -> None:
        if self._plain:
            try:
                self._t.ack(_native_lease(lease))
            except LeaseLostError as e:
                _dropped("ack", lease, e)
            return
        pending = (lease, _native_lease(lease))  # checked now: a bad lease raises here
        if not self._defer_ack:
            self._ack_now([pending])
            return
        earlier = self._held.defer(pending)
        if earlier:
            self._ack_now(earlier)

    def nack(self, lease: Lease, delay: float = 0.0) -> None:
        try:
            self._t.nack(_native_lease(lease), delay)
        except LeaseLostError as e:
            _dropped("nack", lease, e)

    def flush(self) -> None:
        """Applies the deferred acks now, in a commit of their own (close does it too)."""
        pending = self._held.take_pending()
        if pending:
            self._ack_now(pending)

    def close(self) -> None:
        """Applies the deferred acks, gives back the prefetched leases not handed out (a
        nack each, delay 0: claimable at once) and closes."""
        if not self._t.closed:
            try:
                self.flush()
                self._give_back(self._held.release_all())
            finally:
                self._t.close()

    def _claim(self, worker_id: str, visibility: float, floor: int) -> Optional[_NativeLease]:
        """A batch for `worker_id`, the deferred acks applied in its transaction: holds all
        but the first, which it returns (None: nothing deliverable)."""
        pending = self._held.take_pending()
        most = self._held.batch(worker_id)
        began = time.monotonic()
        try:
            if pending:
                leases, acked = self._t.ack_and_claim_many(
                    [p[1] for p in pending], worker_id, visibility, floor, max=most
                )
                _report(pending, acked)
            else:
                leases = self._t.claim_many(worker_id, visibility, floor, max=most)
        except BaseException:
            self._held.give_back_pending(pending)  # nothing was done: tried again next time
            raise
        return self._held.claimed(worker_id, floor, leases, time.monotonic() - began)

    def _handed(self, worker_id: str, lease: _NativeLease) -> Lease:
        self._held.handed(worker_id)
        return _harel_lease(lease)

    def _ack_now(self, pending: List[_Pending]) -> None:
        try:
            acked = self._t.ack_many([p[1] for p in pending])
        except BaseException:
            self._held.give_back_pending(pending)
            raise
        _report(pending, acked)

    def _give_back(self, leases: List[_NativeLease]) -> None:
        for lease in leases:
            try:
                self._t.nack(lease, 0.0)
            except LeaseLostError:
                pass  # it lapsed while held and another worker claimed it

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
    options, `defer_ack` and `prefetch` (as for `HarelTransport`) and `executor`; or over a
    sync transport of this module, as harel's `AsyncLibsqlTransport(LibsqlTransport(...))`.
    Every call runs off the event loop; calls may overlap (harel's `AsyncWorker` has many
    in flight), each with its own error."""

    def __init__(
        self,
        transport: Union[HarelTransport, _NativeAsyncTransport],
        clock: Optional[Callable[[], float]] = None,
        *,
        defer_ack: Optional[bool] = None,
        prefetch: Union[int, str, None] = None,
    ) -> None:
        """Over a sync `HarelTransport` (`SqliteTransport`, `LibsqlTransport`), as harel's
        `AsyncLibsqlTransport(sync_transport)`: its calls, off the loop, on the same
        handle, with its clock, `defer_ack` and `prefetch`; closing this closes it.

        Or over an open native `AsyncTransport` (whose clock `clock` is, time.time if
        None; `defer_ack` and `prefetch` as in `create`, off and 1 if None): what
        `create` does."""
        if isinstance(transport, HarelTransport):
            given = [n for n, v in (("clock", clock), ("defer_ack", defer_ack), ("prefetch", prefetch)) if v is not None]
            if given:
                raise ArgumentError(
                    f"{', '.join(given)}: an {type(self).__name__} over a {type(transport).__name__} takes that "
                    "transport's; pass them to its constructor"
                )
            self._t = _NativeAsyncTransport(transport.transport)
            self._held = transport._held  # one transport: what it holds is held here
            self._defer_ack = transport._defer_ack
            self._clock = transport._clock
            return
        if not isinstance(transport, _NativeAsyncTransport):
            raise ArgumentError(_not_wrappable(type(self).__name__, transport))
        self._held = Prefetch(prefetch_size(1 if prefetch is None else prefetch))
        self._t = transport
        self._defer_ack = bool(defer_ack)
        self._clock = time.time if clock is None else clock

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
        defer_ack: bool = False,
        prefetch: Union[int, str] = 1,
        executor: Optional[Executor] = None,
    ) -> "AsyncHarelTransport":
        prefetch = prefetch_size(prefetch)
        options = _options(clock, prefix, create_schema, busy_timeout, synchronous_full, sync_url, auth_token, sync_interval)
        native = await _NativeAsyncTransport.open(path, executor=executor, **options)
        return cls(native, clock, defer_ack=defer_ack, prefetch=prefetch)

    @property
    def transport(self) -> _NativeAsyncTransport:
        """The native `harel_transport.AsyncTransport` underneath. Its calls do not apply
        a deferred ack: await `flush()` first."""
        return self._t

    @property
    def held(self) -> int:
        """How many prefetched leases wait to be handed out by this transport's claims."""
        return self._held.held()

    async def publish(self, group_id: str, event: Event, priority: int = 0) -> None:
        await self._t.publish(group_id, _event_json(event), priority=_priority(priority))

    async def claim(
        self, worker_id: str, visibility: float, min_priority: int = 0, *, wait: float = 0.0
    ) -> Optional[Lease]:
        """harel's claim. `wait` (this package's, keyword-only: seconds, finite, >= 0) waits
        up to that long for a message when none is deliverable, holding no thread: the
        native `AsyncTransport`'s wait (a cancelled task leaves no lease behind)."""
        seconds = _seconds("wait", wait)
        floor = _floor(min_priority)
        if floor is None:
            await self.flush()
            if seconds != 0:  # nothing can come: the whole wait
                if not waits_for(seconds):
                    raise ArgumentError(f"wait is {seconds}; it must be a finite number of seconds >= 0")
                await asyncio.sleep(seconds)
            return None
        _claim_args(worker_id, visibility, floor)
        while True:
            lease = self._held.take(worker_id, floor)  # taken on the loop: no other claim gets it
            if lease is None:
                break
            if fresh(lease, visibility, self._clock()):
                return self._handed(worker_id, lease)
            try:
                return self._handed(worker_id, await self._t.extend(lease, visibility))
            except LeaseLostError:
                continue
            except BaseException:
                self._held.put_back(worker_id, lease, floor)
                raise
        if seconds != 0 and not self._held.holds_others(worker_id):
            # The wait's own first claim looks at once: no claim before it.
            lease = await self._claim(worker_id, visibility, floor, seconds)
            return None if lease is None else self._handed(worker_id, lease)
        lease = await self._claim(worker_id, visibility, floor)
        if lease is None:
            others = self._held.release_others(worker_id)
            if others:
                await self._give_back(others)
                lease = await self._claim(worker_id, visibility, floor)
        if lease is None and seconds != 0:
            lease = await self._claim(worker_id, visibility, floor, seconds)
        return None if lease is None else self._handed(worker_id, lease)

    async def ack(self, lease: Lease) -> None:
        if _plain(self._held, self._defer_ack):
            try:
                await self._t.ack(_native_lease(lease))
            except LeaseLostError as e:
                _dropped("ack", lease, e)
            return
        pending = (lease, _native_lease(lease))
        if not self._defer_ack:
            await self._ack_now([pending])
            return
        earlier = self._held.defer(pending)
        if earlier:
            await self._ack_now(earlier)

    async def nack(self, lease: Lease, delay: float = 0.0) -> None:
        try:
            await self._t.nack(_native_lease(lease), delay)
        except LeaseLostError as e:
            _dropped("nack", lease, e)

    async def flush(self) -> None:
        """Applies the deferred acks now, in a commit of their own (close does it too)."""
        pending = self._held.take_pending()
        if pending:
            await self._ack_now(pending)

    async def close(self) -> None:
        """As `HarelTransport.close`."""
        if not self._t.closed:
            try:
                await self.flush()
                await self._give_back(self._held.release_all())
            finally:
                await self._t.close()

    async def _claim(self, worker_id: str, visibility: float, floor: int, wait: float = 0.0) -> Optional[_NativeLease]:
        """As `HarelTransport._claim`; with `wait`, the claim waits (deferred acks are
        applied first, by a claim that does not)."""
        pending = self._held.take_pending()
        most = self._held.batch(worker_id)
        began = time.monotonic()
        try:
            if pending:
                leases, acked = await self._t.ack_and_claim_many(
                    [p[1] for p in pending], worker_id, visibility, floor, max=most
                )
            else:
                leases = await self._t.claim_many(worker_id, visibility, floor, max=most, wait=wait)
        except BaseException:
            self._held.give_back_pending(pending)
            raise
        if pending:
            _report(pending, acked)
            if not leases and wait:
                leases = await self._t.claim_many(worker_id, visibility, floor, max=most, wait=wait)
        # A claim that waited says nothing of a claim's time: the adaptive size skips it.
        took = None if wait else time.monotonic() - began
        return self._held.claimed(worker_id, floor, leases, took)

    def _handed(self, worker_id: str, lease: _NativeLease) -> Lease:
        self._held.handed(worker_id)
        return _harel_lease(lease)

    async def _ack_now(self, pending: List[_Pending]) -> None:
        try:
            acked = await self._t.ack_many([p[1] for p in pending])
        except BaseException:
            self._held.give_back_pending(pending)
            raise
        _report(pending, acked)

    async def _give_back(self, leases: List[_NativeLease]) -> None:
        for lease in leases:
            try:
                await self._t.nack(lease, 0.0)
            except LeaseLostError:
                pass

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
        defer_ack: bool = False,
        prefetch: Union[int, str] = 1,
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
            prefetch=prefetch,
        )


class AsyncLibsqlTransport(AsyncHarelTransport):
    """The one-line swap for harel's `AsyncLibsqlTransport`, built as harel's is: over a
    sync transport, ``AsyncLibsqlTransport(LibsqlTransport(database, clock=...))``, or
    ``await AsyncLibsqlTransport.create(database, *, auth_token="", sync_url=None,
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
        defer_ack: bool = False,
        prefetch: Union[int, str] = 1,
        executor: Optional[Executor] = None,
    ) -> "AsyncLibsqlTransport":
        prefetch = prefetch_size(prefetch)
        options = _options(clock, prefix, create_schema, busy_timeout, synchronous_full, sync_url, auth_token, sync_interval)
        native = await _NativeAsyncTransport.open(database, executor=executor, **options)
        return cls(native, clock, defer_ack=defer_ack, prefetch=prefetch)
