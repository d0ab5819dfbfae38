"""Publishing inside the application's transaction: `Transaction` (a ``harel_tx``) and its
asyncio face, `AsyncTransaction`. The application's own statements and its publishes, on
the queue's connection, committed together or not at all.

`execute` and `publish` queue (no I/O); `query` sends what was queued with its read, the
first one beginning the transaction and holding the transport's connection and write lock
until the end; `commit` sends the rest and commits. Each call holds the transport, as any
call does (so `close` waits for it), and the transaction's own lock, so that its handle is
never freed under a call of another thread. `commit` and `rollback` free the handle (so
does the garbage collector, rolling back a transaction never ended).

`AsyncTransaction` runs query, commit and rollback off the loop: in the executor until
the first query, then on a thread of the transaction's own, because from then on it may
hold the connection that other calls wait for in the executor's threads.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from ctypes import POINTER, byref, c_int, c_int64, c_size_t, c_void_p
from typing import Any, Callable, List, Optional, TypeVar

from . import _native
from ._args import _delivery, _event, _header_array, _headers, _int32, _optional_text, _text
from ._errors import ArgumentError
from ._handle import _Handle
from ._sql import Params, Row, _params, copy_rows
from ._tracing import Producer
from ._values import Debounce, EventType, Headers, Published, Retry, UniqueMode, published_of

__all__ = ["Transaction", "AsyncTransaction"]

T = TypeVar("T")


class Transaction:
    """An application's transaction on the queue's database (`Transport.transaction()`):
    its own statements (`execute`, `query`) and its messages (`publish`, `publish_with`),
    committed together or not at all::

        with queue.transaction() as tx:
            tx.execute("INSERT INTO orders (id, total) VALUES (?, ?)", (order_id, total))
            tx.publish(f"order-{order_id}", json.dumps({"kind": "created"}))
        seq, duplicate, replaced = tx.published[0]

    Leaving the ``with`` block normally commits; an exception rolls back and propagates.
    After `commit()` or `rollback()` the block's end does nothing more.

    `execute` and `publish` only queue: nothing is sent, and no lock taken, before the
    first `query` or the commit. A transaction with no query is one write transaction made
    by its commit. The first `query` begins it, and from then it holds the transport's
    connection and the database's write lock until it ends: keep it short (on a libSQL
    server the lock is held across the network, and the server rolls back a transaction
    that holds it for 5 s while another writer waits: the next call raises
    `DatabaseError`). Any error of a statement, a publish or the commit ends it, rolled
    back; once ended, every call but `rollback` raises `ArgumentError` saying why.

    A transport runs one transaction at a time: while one holds its connection, the
    transport's other calls (a second transaction's query or commit included) wait for it
    up to the busy timeout, then raise `BusyError`. So publish with the transaction's own
    `publish`, and do not nest transactions of one transport. Use a transaction from one
    thread at a time."""

    def __init__(self, transport: _Handle) -> None:
        """Begins a transaction on `transport` (prefer `Transport.transaction()`)."""
        self._handle: Optional[int] = None  # set last: __del__ of a failed begin has nothing to free
        self._t = transport
        self._lib = transport._lib
        self._lock = threading.Lock()
        self._publishes = 0
        self._published: List[Published] = []
        #: The PRODUCER span of each publish queued, in order, on a transport that traces:
        #: the commit ends them.
        self._spans: List[Producer] = []
        #: Why it ended, once commit() or rollback() freed it.
        self._ended: Optional[str] = None
        #: A query was sent: from then it may hold the transport's connection (AsyncTransaction).
        self._began = False
        out = c_void_p()
        transport._call("transaction", self._lib.harel_transport_begin, byref(out))
        self._handle = out.value

    @property
    def published(self) -> List[Published]:
        """What became of each `publish` and `publish_with`, in order, once committed
        (`Published(seq, duplicate, replaced)`, as `Transport.publish_with` returns); empty
        before the commit, and after a rollback or a failed commit."""
        return list(self._published)

    @property
    def ended(self) -> bool:
        """True once `commit()` or `rollback()` was called (the ``with`` block's end calls
        one of them)."""
        return self._handle is None

    def _live(self, what: str) -> int:
        if self._handle is None:
            raise ArgumentError(f"{what}: the transaction was {self._ended}: begin a new one")
        return self._handle

    def _call(self, what: str, fn: Any, *args: Any, publishing: bool = False) -> None:
        """``fn(tx, *args, &err)`` holding the transaction and the transport; raises on a
        negative status. `publishing`: a publish, whose `Published` the commit returns."""
        with self._lock:
            tx = self._live(what)
            self._t._enter(what)
            try:
                self._t._call_on(tx, fn, *args)
            finally:
                self._t._leave()
            if publishing:
                self._publishes += 1

    def execute(self, sql: str, params: Params = ()) -> None:
        """Queues `sql`, one statement whose rows are not wanted, with `params` (the values
        of ``?1``, ``?2``, ... or ``?``: None, bool, int (int64), float (finite), str,
        bytes). It runs, in order, with the next `query` or the commit; its error (a
        constraint, a syntax error) is raised by that call and ends the transaction. Its
        rows-changed count is not reported: use `query` with RETURNING when it matters.
        A refused argument queues nothing, and the transaction goes on."""
        s = _text("sql", sql)
        array, n = _params(params)
        self._call("execute", self._lib.harel_tx_execute, s, array, n)

    def query(self, sql: str, params: Params = ()) -> List[Row]:
        """Sends what was queued and runs `sql` (a SELECT, or a write with RETURNING), which
        sees the transaction's own writes; returns its rows, each a tuple of None, int,
        float, str and bytes. The first query begins the transaction (BEGIN IMMEDIATE):
        from then it holds the transport's connection and the write lock until it ends.
        `DatabaseError` (this or a queued statement failed), `BusyError` (the lock, or the
        connection held by another transaction of the transport, not had within the busy
        timeout) and `ConnectError` end the transaction, rolled back."""
        s = _text("sql", sql)
        array, n = _params(params)
        out = POINTER(_native.HarelRows)()
        self._began = True
        try:
            self._call("query", self._lib.harel_tx_query, s, array, n, byref(out))
            return copy_rows(out.contents)
        finally:
            self._lib.harel_rows_free(out)  # NULL (after an error) does nothing

    def publish(
        self,
        group_id: str,
        event: EventType,
        *,
        priority: int = 0,
        routing_key: Optional[str] = None,
        headers: Optional[Headers] = None,
    ) -> None:
        """Queues `Transport.publish`'s message, with its `headers`; it is committed with
        the transaction (its `Published` is in `published` after the commit). Its
        arguments are checked now."""
        self.publish_with(group_id, event, priority=priority, routing_key=routing_key, headers=headers)

    def publish_with(
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
    ) -> None:
        """Queues `Transport.publish_with`'s message, with its delivery options (an
        idempotency key, a delay, a due instant, a unique key with its mode, an expiry:
        `ttl` counts from the commit's clock reading, as `delay` does; a retry policy) and its
        `headers`, checked now (an option or a header the library refuses raises
        `ArgumentError`, nothing queued, and the transaction goes on); what became of it
        (its seq, whether it was a duplicate or replaced the pending message with its
        unique key: an answer, never an error) is in `published` after the commit. On a
        transport that traces, its PRODUCER span starts now and ends when the commit
        returns."""
        g = _text("group_id", group_id)
        e = _event("event_json", event)
        p = _int32("priority", priority)
        r = _optional_text("routing_key", routing_key)
        options = _delivery("", key, delay, not_before, unique_key, unique_mode, debounce, ttl, expires_at, retry)
        h = _headers("headers", headers)
        tracing = self._t._tracing
        if tracing is None:
            self._publish(g, e, p, r, h, options)
            return
        producer = tracing.producer([group_id])
        try:
            self._publish(g, e, p, r, producer.inject(h), options)
        except BaseException as exc:
            producer.failed(exc)
            raise
        self._spans.append(producer)

    def _publish(self, g: bytes, e: bytes, p: int, r: Any, h: Any, options: _native.HarelDelivery) -> None:
        array, n = _header_array(h)
        self._call(
            "publish", self._lib.harel_tx_publish_delivery, g, e, p, r, array, n, byref(options), publishing=True
        )

    def _end_spans(self, published: Optional[List[Published]], exc: Optional[BaseException] = None,
                   why: Optional[str] = None) -> None:
        """Ends the publishes' spans: with each message's seq after a commit (`published`),
        or with an error status (`exc`, or `why`)."""
        spans, self._spans = self._spans, []
        for i, producer in enumerate(spans):
            if published is not None:
                producer.ok(published[i].seq if i < len(published) else None)
            else:
                producer.failed(exc, why)

    def commit(self) -> List[Published]:
        """Sends what was queued and commits the statements and the messages, all of them
        or (on any error) none; returns `published`. The transaction is ended either way.
        `ConnectError` on a libSQL server may mean the commit was applied and its answer
        lost (the message says so): publish with keys to make a retry safe. After the
        commit, this process's waiting claims wake for the new messages."""
        with self._lock:
            tx = self._live("commit")
            n = self._publishes
            seqs = (c_int64 * n)() if n else None
            duplicates = (c_int * n)() if n else None
            count = c_size_t()
            self._ended = "ended by a failed commit"
            try:
                self._t._enter("commit")
                try:
                    self._t._call_on(tx, self._lib.harel_tx_commit, seqs, duplicates, n, byref(count))
                finally:
                    self._t._leave()
            except BaseException as e:
                self._end_spans(None, e)
                raise
            finally:
                self._handle = None
                self._lib.harel_tx_free(tx)
            self._ended = "committed"
            self._published = [
                published_of(seqs[i], duplicates[i]) for i in range(min(count.value, n))  # type: ignore[index]
            ]
            self._end_spans(self._published)
            return list(self._published)

    def rollback(self) -> None:
        """Ends the transaction keeping nothing of it, and frees it. On a transaction
        ended already (committed, rolled back, failed, its transport closed) it does
        nothing, so a cleanup path may always call it."""
        with self._lock:
            tx, self._handle = self._handle, None
            self._end_spans(None, why="rolled back")
            if tx is None:
                return
            self._ended = "rolled back"
            # harel_tx_free rolls back a transaction that has not ended (closing the
            # transport rolled it back already): no transport to hold, nothing to fail.
            self._lib.harel_tx_free(tx)

    def _exit(self, failed: bool) -> None:
        """The ``with`` block's end: commit, or roll back after an exception; nothing after
        an explicit commit or rollback."""
        if self._handle is None:
            return
        if failed:
            self.rollback()
        else:
            self.commit()

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._exit(exc_type is not None)

    def __del__(self) -> None:
        # Unreachable, never ended: rolled back and freed.
        try:
            handle = getattr(self, "_handle", None)
            if handle is not None:
                self._handle = None
                self._lib.harel_tx_free(handle)
                self._end_spans(None, why="rolled back")
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = f" {self._ended}" if self._handle is None else ""
        return f"<harel_transport.Transaction on {self._t.path!r}{state}>"


class AsyncTransaction:
    """`Transaction` for asyncio (`AsyncTransport.transaction()`)::

        async with queue.transaction() as tx:
            rows = await tx.query("SELECT stock FROM items WHERE id = ?", (item_id,))
            tx.execute("UPDATE items SET stock = stock - 1 WHERE id = ?", (item_id,))
            tx.publish(f"item-{item_id}", '{"kind": "sold"}')

    `execute`, `publish` and `publish_with` only queue, so they are plain methods; `query`,
    `commit` and `rollback` (which may wait for the write lock, the connection or a
    server) run off the loop. The ``async with`` block commits at its end, or rolls back
    after an exception (a cancelled task included). Use a transaction from one task at a
    time: `execute` and the publishes raise `ArgumentError` while a query, commit or
    rollback of the same transaction is still running, rather than block the loop.

    Where the calls run: until its first query, in the transport's executor, as every
    other call. From its first query on, the transaction may hold the transport's
    connection and the write lock, which the calls of other tasks wait for in the
    executor's threads; so its own calls run on a thread of its own (made then, ended with
    it), and never wait for a thread of the executor that its waiters fill."""

    def __init__(self, tx: Transaction, executor: Optional[Executor] = None) -> None:
        self._tx = tx
        self._executor = executor
        self._own: Optional[ThreadPoolExecutor] = None  # its thread, from its first query on
        self._running = 0  # its calls off the loop; touched on the loop only

    @property
    def published(self) -> List[Published]:
        """`Transaction.published`: each publish's `Published`, in order, once committed."""
        return self._tx.published

    @property
    def ended(self) -> bool:
        """`Transaction.ended`."""
        return self._tx.ended

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` off the loop. A cancelled task does not cancel the call, which
        holds the transaction until it returns; it is counted until then, and a call
        made meanwhile (the rollback of the task's ``async with``) runs on the
        transaction's own thread, as the call may have begun it."""
        if self._tx._began or self._running:
            if self._own is None:
                self._own = ThreadPoolExecutor(1, thread_name_prefix="harel_transport transaction")
            where: Optional[Executor] = self._own
        else:
            where = self._executor
        future = asyncio.get_running_loop().run_in_executor(where, fn, *args)
        self._running += 1
        future.add_done_callback(self._ran)
        return await asyncio.shield(future)

    def _ran(self, future: "asyncio.Future[Any]") -> None:
        self._running -= 1
        if not future.cancelled():
            future.exception()  # retrieved: a task cancelled meanwhile no longer awaits it
        if self._own is not None and self._tx.ended and not self._running:
            self._own.shutdown(wait=False)
            self._own = None

    def _queue(self, what: str) -> None:
        if self._running:
            raise ArgumentError(
                f"{what}: a query, commit or rollback of this transaction is still running: await it first "
                "(use a transaction from one task at a time)"
            )

    def execute(self, sql: str, params: Params = ()) -> None:
        """`Transaction.execute`: queues the statement (no I/O, no coroutine)."""
        self._queue("execute")
        self._tx.execute(sql, params)

    async def query(self, sql: str, params: Params = ()) -> List[Row]:
        """`Transaction.query`, off the loop."""
        return await self._run(self._tx.query, sql, params)

    def publish(
        self,
        group_id: str,
        event: EventType,
        *,
        priority: int = 0,
        routing_key: Optional[str] = None,
        headers: Optional[Headers] = None,
    ) -> None:
        """`Transaction.publish`: queues the message (no I/O, no coroutine)."""
        self._queue("publish")
        self._tx.publish(group_id, event, priority=priority, routing_key=routing_key, headers=headers)

    def publish_with(
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
    ) -> None:
        """`Transaction.publish_with`: queues the message (no I/O, no coroutine)."""
        self._queue("publish")
        self._tx.publish_with(
            group_id, event, priority=priority, routing_key=routing_key, key=key, delay=delay, not_before=not_before,
            headers=headers, unique_key=unique_key, unique_mode=unique_mode, debounce=debounce, ttl=ttl,
            expires_at=expires_at, retry=retry,
        )

    async def commit(self) -> List[Published]:
        """`Transaction.commit`, off the loop."""
        return await self._run(self._tx.commit)

    async def rollback(self) -> None:
        """`Transaction.rollback`, off the loop."""
        await self._run(self._tx.rollback)

    async def __aenter__(self) -> "AsyncTransaction":
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        if not self._tx.ended:
            await self._run(self._tx._exit, exc_type is not None)

    def __repr__(self) -> str:
        return repr(self._tx).replace("Transaction", "AsyncTransaction", 1)
