"""The async face: `AsyncTransport`, every call of `Transport` as a coroutine.

Each call runs the C function off the event loop, on a thread of an executor
(``loop.run_in_executor``; the loop's default executor unless one is given), so the loop
keeps running while a call waits for the write lock, an fsync or a server. Calls of one
transport may be in flight at once, as the ABI allows: each gets its own ``harel_error``
on its own thread, and publishes that meet in the library share a commit. `close()` waits
for the calls in flight.

A claim that waits for work (``wait`` > 0) holds no thread while it waits: it waits on the
loop, on the library's readiness descriptor, and makes non-waiting claims in the executor
only when the descriptor says one may find work (`_watching`). So no call ever queues
behind a waiting one, however many wait.

A cancelled task (``task.cancel()``, a timeout of ``asyncio.wait_for`` or
``asyncio.timeout``) never leaves a lease behind: a waiting claim leaves its wait at once,
having claimed nothing, or, if its task is cancelled while one of its claims runs, waits
for that claim and gives back (nacks, delay 0) what it got before CancelledError is
raised; any other claiming call (``ack_and_claim``, a claim without wait) is waited for
and what it claimed given back the same way.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from concurrent.futures import Executor
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

from ._args import ClaimArgs, _max, _seconds
from ._errors import HarelError
from ._inspect import Archived, DeadLetter, GroupInfo, LimitInfo, MessageInfo, Page, Pause, Stats
from ._keepalive import AsyncKeepAlive, beats
from ._metrics import Metrics
from ._transaction import AsyncTransaction, Transaction
from ._transport import Transport
from ._values import (
    DEFAULT_VISIBILITY,
    AckAndClaimResult,
    Debounce,
    EventType,
    Headers,
    Lease,
    Message,
    PathType,
    Published,
    Retry,
    UniqueMode,
    _leases_in,
)
from ._waiting import Cancel, cancels_of
from ._watching import AsyncWaits, give_back, waits_for

__all__ = ["AsyncTransport"]

T = TypeVar("T")


class AsyncTransport:
    """`Transport`'s operations as coroutines; open with ``await AsyncTransport.open(path,
    **options)`` (the options of `Transport`, plus `executor`: where the C calls run, the
    loop's default executor if None), or a queue sharded over several databases with
    ``await AsyncTransport.open_shards(databases, **options)``. ``async with`` closes it."""

    def __init__(self, transport: Transport, executor: Optional[Executor] = None) -> None:
        """Wraps an open `Transport` (prefer `AsyncTransport.open`)."""
        if not isinstance(transport, Transport):
            from ._errors import ArgumentError

            raise ArgumentError("AsyncTransport wraps a Transport; use `await AsyncTransport.open(path)`")
        self._t = transport
        self._executor = executor
        self._waits = AsyncWaits(transport, executor)

    @classmethod
    async def open(cls, path: PathType, *, executor: Optional[Executor] = None, **options: Any) -> "AsyncTransport":
        """Opens the queue at `path` off the loop (opening may wait for the write lock or a
        server); see `Transport` for the options."""
        loop = asyncio.get_running_loop()
        transport = await loop.run_in_executor(executor, functools.partial(Transport, path, **options))
        return cls(transport, executor)

    @classmethod
    async def open_shards(
        cls, databases: Sequence[PathType], *, executor: Optional[Executor] = None, **options: Any
    ) -> "AsyncTransport":
        """Opens one queue sharded over `databases` off the loop: `Transport.open_shards`
        (the same list, the same options, the same refusals), plus `executor`."""
        loop = asyncio.get_running_loop()
        transport = await loop.run_in_executor(
            executor, functools.partial(Transport.open_shards, databases, **options)
        )
        return cls(transport, executor)

    @property
    def transport(self) -> Transport:
        """The underlying sync `Transport` (the same handle)."""
        return self._t

    @property
    def path(self) -> str:
        return self._t.path

    @property
    def closed(self) -> bool:
        return self._t.closed

    @property
    def shard_count(self) -> int:
        """`Transport.shard_count` (no I/O, so no coroutine): how many databases the queue is
        sharded over; 1 when it is not sharded."""
        return self._t.shard_count

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        if self._t._tracing is not None:
            # The task's context (its current span) goes with the call, as asyncio.to_thread
            # carries it: a publish's span is a child of the caller's.
            call = functools.partial(fn, *args, **kwargs)
            return await loop.run_in_executor(self._executor, contextvars.copy_context().run, call)
        if kwargs:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        return await loop.run_in_executor(self._executor, fn, *args)

    async def publish(
        self,
        group_id: str,
        event: EventType,
        *,
        priority: int = 0,
        routing_key: Optional[str] = None,
        headers: Optional[Headers] = None,
    ) -> None:
        """`Transport.publish`, off the loop."""
        await self._run(self._t.publish, group_id, event, priority=priority, routing_key=routing_key, headers=headers)

    async def publish_many(self, messages: Iterable[Union[Message, Tuple[Any, ...]]]) -> None:
        """`Transport.publish_many`, off the loop."""
        await self._run(self._t.publish_many, messages)

    async def publish_with(
        self,
        group_id: str,
        event: EventType,
        *,
        priority: int = 0,
        routing_key: Optional[str] = None,
        key: Optional[str] = None,
        delay: float = 0.0,
        not_before: Optional[float] = None,
        headers: Optional[Headers] = None,
        unique_key: Optional[str] = None,
        unique_mode: UniqueMode = "keep",
        debounce: Optional[Debounce] = None,
        ttl: Optional[float] = None,
        expires_at: Optional[float] = None,
        retry: Optional[Retry] = None,
    ) -> Published:
        """`Transport.publish_with` (an idempotency key, a delay or a due instant, a unique
        key with its mode, an expiry, a retry policy; headers), off the loop."""
        return await self._run(
            self._t.publish_with,
            group_id,
            event,
            priority=priority,
            routing_key=routing_key,
            key=key,
            delay=delay,
            not_before=not_before,
            headers=headers,
            unique_key=unique_key,
            unique_mode=unique_mode,
            debounce=debounce,
            ttl=ttl,
            expires_at=expires_at,
            retry=retry,
        )

    async def publish_many_with(self, messages: Iterable[Union[Message, Tuple[Any, ...]]]) -> List[Published]:
        """`Transport.publish_many_with`, off the loop."""
        return await self._run(self._t.publish_many_with, messages)

    def transaction(self) -> AsyncTransaction:
        """`Transport.transaction`: an `AsyncTransaction`, for ``async with`` (beginning
        sends nothing, so this is no coroutine)::

            async with queue.transaction() as tx:
                tx.execute("INSERT INTO orders (id) VALUES (?)", (order_id,))
                tx.publish(f"order-{order_id}", '{"kind": "created"}')
        """
        return AsyncTransaction(Transaction(self._t), self._executor)

    def begin(self) -> AsyncTransaction:
        """The same as `transaction()`, for a transaction ended by hand (``await
        tx.commit()`` or ``await tx.rollback()``)."""
        return AsyncTransaction(Transaction(self._t), self._executor)

    async def _claiming(self, fn: Callable[..., T], *args: Any, caller: Optional[Cancel] = None) -> T:
        """``fn(*args)``, a call that claims, off the loop. If the task is cancelled
        meanwhile, `caller` (the Cancel the call was given for this) is fired to end its
        wait, the call is waited for, what it claimed is given back (nack, delay 0), and
        the CancelledError re-raised."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, functools.partial(fn, *args))
        try:
            # shield: a cancelled task must not cancel the future, which would drop its
            # result (leases) while the thread still runs the call.
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if caller is not None:
                caller.fire()
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    continue  # cancelled again: the call is ending; wait for it all the same
                except BaseException:  # noqa: BLE001 - read below
                    break
            if future.exception() is None:
                await give_back(loop, self._executor, self._t, _leases_in(future.result()))
            raise

    async def claim(
        self,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        wait: float = 0.0,
        cancel: Optional[Cancel] = None,
    ) -> Optional[Lease]:
        """`Transport.claim`: a wait holds no thread, only the task (see the module).
        Cancelling the task ends the wait, leaving no lease behind."""
        cancels = cancels_of(cancel)
        a = ClaimArgs.read(worker_id, visibility, min_priority, routing_keys)
        seconds = _seconds("wait", wait)
        if waits_for(seconds):
            t, fn, never = self._t, self._t._lib.harel_transport_claim_wait, self._waits.cancel

            def call(handle: int) -> Optional[Lease]:  # a look, and a claim if it found work
                return t._lease(handle, fn, *a.c, 0.0, never)

            lease = await self._waits.claim("claim", call, None, a, seconds, cancels)
        else:
            caller = Cancel._for_caller()
            lease = await self._claiming(self._t._claim, a, seconds, cancels + (caller,), caller=caller)
        tracing = self._t._tracing
        return lease if tracing is None else tracing.consumed(lease)

    async def claim_many(
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
        """`Transport.claim_many`: a wait holds no thread, only the task (see the module).
        Cancelling the task ends the wait, leaving no lease behind."""
        cancels = cancels_of(cancel)
        a = ClaimArgs.read(worker_id, visibility, min_priority, routing_keys)
        m = _max(max)
        seconds = _seconds("wait", wait)
        if waits_for(seconds):
            t, fn, never = self._t, self._t._lib.harel_transport_claim_many, self._waits.cancel

            def call(handle: int) -> List[Lease]:  # a look, and a claim if it found work
                return t._leases(handle, fn, m, *a.c, m, 0.0, never)

            leases = await self._waits.claim("claim_many", call, [], a, seconds, cancels)
        else:
            caller = Cancel._for_caller()
            leases = await self._claiming(self._t._claim_many, a, m, seconds, cancels + (caller,), caller=caller)
        tracing = self._t._tracing
        return leases if tracing is None else tracing.consumed(leases, batch=True)

    async def ack_and_claim(
        self,
        lease: Lease,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
    ) -> Optional[Lease]:
        """`Transport.ack_and_claim`, off the loop."""
        return await self._claiming(self._t.ack_and_claim, lease, worker_id, visibility, min_priority, routing_keys)

    async def ack_many(self, leases: Iterable[Lease]) -> List[Optional[HarelError]]:
        """`Transport.ack_many`, off the loop."""
        return await self._run(self._t.ack_many, leases)

    async def ack_and_claim_many(
        self,
        leases: Iterable[Lease],
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        max: int,
    ) -> AckAndClaimResult:
        """`Transport.ack_and_claim_many`, off the loop."""
        return await self._claiming(
            functools.partial(self._t.ack_and_claim_many, max=max), leases, worker_id, visibility, min_priority,
            routing_keys,
        )

    async def extend(self, lease: Lease, visibility: float) -> Lease:
        """`Transport.extend`, off the loop: the lease with its new `lock_expiry`."""
        return await self._run(self._t.extend, lease, visibility)

    def keep_alive(self, lease: Lease, visibility: float = DEFAULT_VISIBILITY, *,
                   every: Optional[float] = None) -> AsyncKeepAlive:
        """Extends `lease` to now + `visibility` every `every` seconds (by default a third
        of `visibility`) from a task of the running loop, until ``await alive.stop()`` or
        the end of its ``async with`` block; see `KeepAlive`::

            async with transport.keep_alive(lease, 30) as alive:
                await handle(lease)
            if alive.error is None:
                await transport.ack(alive.lease)
        """
        v, beat = beats(lease, visibility, every, self._t.closed)
        return AsyncKeepAlive(self, lease, v, beat)

    def interrupt(self) -> None:
        """`Transport.interrupt` (it does not block: called on the loop): every claim
        waiting on this transport raises `WaitInterruptedError`, having claimed nothing."""
        self._t.interrupt()

    async def ack(self, lease: Lease) -> None:
        """`Transport.ack`, off the loop."""
        await self._run(self._t.ack, lease)

    async def nack(self, lease: Lease, delay: float = 0.0) -> None:
        """`Transport.nack`, off the loop."""
        await self._run(self._t.nack, lease, delay)

    async def dead_letter(self, lease: Lease, reason: str) -> None:
        """`Transport.dead_letter`, off the loop."""
        await self._run(self._t.dead_letter, lease, reason)

    async def redrive(
        self, *, all: bool = False, group_id: Optional[str] = None, seqs: Optional[Iterable[int]] = None
    ) -> int:
        """`Transport.redrive`, off the loop: exactly one of ``all=True``, `group_id` or
        `seqs`; how many moved."""
        return await self._run(self._t.redrive, all=all, group_id=group_id, seqs=seqs)

    async def purge_dead(
        self, *, all: bool = False, group_id: Optional[str] = None, seqs: Optional[Iterable[int]] = None
    ) -> int:
        """`Transport.purge_dead`, off the loop; how many were deleted."""
        return await self._run(self._t.purge_dead, all=all, group_id=group_id, seqs=seqs)

    async def purge_group(self, group_id: str) -> int:
        """`Transport.purge_group`, off the loop; how many messages were deleted."""
        return await self._run(self._t.purge_group, group_id)

    async def purge(self) -> int:
        """`Transport.purge`, off the loop; how many messages were deleted."""
        return await self._run(self._t.purge)

    async def release(self, group_id: str) -> bool:
        """`Transport.release`, off the loop; False when nothing was held."""
        return await self._run(self._t.release, group_id)

    async def pause(self, *, group_id: Optional[str] = None, routing_key: Optional[str] = None) -> bool:
        """`Transport.pause`, off the loop: a group (`group_id`), every group of a routing
        key (`routing_key`), or with neither the whole queue; True when the pause is new."""
        return await self._run(self._t.pause, group_id=group_id, routing_key=routing_key)

    async def resume(self, *, group_id: Optional[str] = None, routing_key: Optional[str] = None) -> bool:
        """`Transport.resume`, off the loop: ends the pause `pause` made with the same
        arguments; True when there was one. A claim waiting on this process's transports
        wakes for the groups it frees."""
        return await self._run(self._t.resume, group_id=group_id, routing_key=routing_key)

    async def pauses(self) -> List[Pause]:
        """`Transport.pauses`, off the loop: the pauses in force, the queue's first."""
        return await self._run(self._t.pauses)

    async def set_limit(
        self,
        routing_key: str,
        concurrency: Optional[int] = None,
        rate: Optional[float] = None,
        burst: Optional[float] = None,
    ) -> None:
        """`Transport.set_limit`, off the loop: at most `concurrency` of the key's messages
        leased at once, and/or leases at `rate` a second with up to `burst` kept (given
        together); replaces the key's limits."""
        await self._run(self._t.set_limit, routing_key, concurrency, rate, burst)

    async def remove_limit(self, routing_key: str) -> None:
        """`Transport.remove_limit`, off the loop: the key's held groups are served again
        at once. A claim waiting on this process's transports wakes for them."""
        await self._run(self._t.remove_limit, routing_key)

    async def limits(self) -> List[LimitInfo]:
        """`Transport.limits`, off the loop: the limits in force by routing key, with their
        use now."""
        return await self._run(self._t.limits)

    async def stats(self) -> Stats:
        """`Transport.stats`, off the loop."""
        return await self._run(self._t.stats)

    def metrics(self) -> Metrics:
        """`Transport.metrics`: it reads memory only, so it is no coroutine (a metrics
        client's collect callback can call it)."""
        return self._t.metrics()

    async def groups(
        self, state: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[GroupInfo]:
        """`Transport.groups`, off the loop."""
        return await self._run(self._t.groups, state, cursor, limit)

    async def peek(self, group_id: str, cursor: Optional[str] = None, limit: int = 100) -> Page[MessageInfo]:
        """`Transport.peek`, off the loop."""
        return await self._run(self._t.peek, group_id, cursor, limit)

    async def dead_letters(
        self, group_id: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[DeadLetter]:
        """`Transport.dead_letters`, off the loop."""
        return await self._run(self._t.dead_letters, group_id, cursor, limit)

    async def archive(
        self, group_id: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[Archived]:
        """`Transport.archive`, off the loop: a page of the acked messages kept."""
        return await self._run(self._t.archive, group_id, cursor, limit)

    async def close(self) -> None:
        """Closes the transport once the calls in flight have returned (waiting off the
        loop), ending the waiting claims first (`WaitInterruptedError`) and freeing their
        watches, and rolling back its transactions still open; closing again does nothing."""
        await self._run(self._t.close)

    async def __aenter__(self) -> "AsyncTransport":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        shards = self._t._shards
        where = repr(self._t.path) if shards is None else f"shards={list(shards)!r}"
        return f"<harel_transport.AsyncTransport {where}{' closed' if self._t.closed else ''}>"

