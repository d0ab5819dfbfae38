"""Publishing inside the application's transaction, asyncio face: `AsyncTransport.transaction()`
(`begin()`) and `AsyncTransaction`: execute and the publishes queue (plain methods); query,
commit and rollback run off the loop, which keeps running while a query waits for a lock;
``async with``; each status; tasks."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import harel_transport as ht
from conftest import LoopTicker, inspect_db
from harel_transport import AsyncTransaction, AsyncTransport, Published, Transport

CREATE = "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, note TEXT)"
INSERT = "INSERT INTO orders (id, note) VALUES (?, ?)"


async def opened(path, **options):
    t = await AsyncTransport.open(path, **options)
    async with t.transaction() as tx:
        tx.execute(CREATE)
    return t


async def rows_of(t, sql="SELECT id, note FROM orders ORDER BY id"):
    async with t.transaction() as tx:
        return await tx.query(sql)


def test_every_method(qpath):
    async def main():
        async with await opened(qpath) as t:
            async with t.transaction() as tx:
                assert isinstance(tx, AsyncTransaction) and not tx.ended
                assert tx.execute(INSERT, (1, "a")) is None, "execute queues: no coroutine"
                assert tx.publish("g", '{"n":1}', priority=1, routing_key="eu") is None
                assert tx.publish_with("g", '{"n":2}', key="k") is None
                assert await tx.query("SELECT id, note FROM orders") == [(1, "a")], "its own write"
                assert await tx.query("SELECT ?, ?, ?, ?, ?", (None, 7, 0.5, "é", b"\x00")) == [
                    (None, 7, 0.5, "é", b"\x00")
                ]
                assert tx.published == []
            assert tx.ended
            first, second = tx.published
            assert second.seq > first.seq and not first.duplicate
            assert inspect_db(qpath, "SELECT id, note FROM orders") == [[1, "a"]]
            lease = await t.claim("w", routing_keys=["eu"])
            assert lease.event == '{"n":1}'

            tx = t.begin()
            tx.execute(INSERT, (2, "b"))
            tx.publish_with("g", "{}", key="k")
            assert await tx.commit() == [Published(second.seq, True)] == tx.published
            with pytest.raises(ht.ArgumentError, match="query: the transaction was committed: begin a new one"):
                await tx.query("SELECT 1")
            with pytest.raises(ht.ArgumentError, match="execute: the transaction was committed"):
                tx.execute("SELECT 1")
            with pytest.raises(ht.ArgumentError, match="publish: the transaction was committed"):
                tx.publish("g", "{}")
            with pytest.raises(ht.ArgumentError, match="commit: the transaction was committed"):
                await tx.commit()
            await tx.rollback()  # nothing

            tx = t.begin()
            tx.execute(INSERT, (3, "c"))
            tx.publish("g", "{}")
            await tx.rollback()
            await tx.rollback()
            assert tx.ended and "rolled back" in repr(tx) and repr(tx).startswith("<harel_transport.AsyncTransaction")
            assert await rows_of(t) == [(1, "a"), (2, "b")]
            assert (await t.stats()).messages == 2, "the first transaction's two, one of them leased"

    asyncio.run(main())


def test_an_exception_rolls_back_and_a_failing_statement_ends_it(qpath):
    async def main():
        async with await opened(qpath, busy_timeout=0.3) as t:
            with pytest.raises(KeyError):
                async with t.transaction() as tx:
                    tx.execute(INSERT, (1, "a"))
                    tx.publish("g", "{}")
                    await tx.query("SELECT 1")
                    raise KeyError("no")
            assert tx.ended and tx.published == []
            assert await rows_of(t) == [] and (await t.stats()).messages == 0

            tx = t.begin()
            tx.execute("INSERT INTO no_such_table VALUES (1)")
            with pytest.raises(ht.DatabaseError, match="no_such_table"):
                await tx.query("SELECT 1")
            with pytest.raises(ht.ArgumentError, match="rolled back after an error: begin a new one"):
                tx.execute(INSERT, (1, None))
            with pytest.raises(ht.ArgumentError, match="rolled back after an error"):
                await tx.query("SELECT 1")
            with pytest.raises(ht.ArgumentError, match="rolled back after an error"):
                await tx.commit()

            with pytest.raises(ht.DatabaseError, match="UNIQUE"):
                async with t.transaction() as tx:
                    tx.execute(INSERT, (1, "a"))
                    tx.execute(INSERT, (1, "b"))
            assert await rows_of(t) == []

    asyncio.run(main())


def test_bad_arguments_are_refused_before_the_call(qpath):
    async def main():
        async with await opened(qpath) as t:
            async with t.transaction() as tx:
                with pytest.raises(ht.ArgumentError, match="params\\[0\\] must be None, bool, int, float, str or bytes"):
                    tx.execute(INSERT, (object(), None))
                with pytest.raises(ht.ArgumentError, match="an INTEGER must fit in int64"):
                    await tx.query("SELECT ?", (2**64,))
                with pytest.raises(ht.ArgumentError, match="params\\[0\\] is NaN"):
                    await tx.query("SELECT ?", (float("nan"),))
                with pytest.raises(ht.ArgumentError, match="sql is empty"):
                    await tx.query("")
                with pytest.raises(ht.ArgumentError, match="priority is 9"):
                    tx.publish("g", "{}", priority=9)
                with pytest.raises(ht.ArgumentError, match="key is empty"):
                    tx.publish_with("g", "{}", key="")
                tx.execute(INSERT, (1, "good"))
            assert await rows_of(t) == [(1, "good")] and tx.published == []

    asyncio.run(main())


def test_transactions_of_one_transport_do_not_nest(qpath):
    async def main():
        async with await opened(qpath, busy_timeout=0.3) as t:
            outer = t.begin()
            await outer.query("SELECT 1")
            with pytest.raises(ht.BusyError, match="do not nest"):
                async with t.transaction() as inner:
                    await inner.query("SELECT 1")
            with pytest.raises(ht.BusyError, match="transaction's own publish"):
                await t.publish("g", "{}")
            outer.publish("g", "{}")
            assert len(await outer.commit()) == 1

    asyncio.run(main())


def test_close_rolls_back_the_open_transactions(qpath):
    async def main():
        t = await opened(qpath)
        tx = t.begin()
        tx.execute(INSERT, (1, "a"))
        await tx.query("SELECT 1")
        await t.close()
        with pytest.raises(ht.TransportClosedError):
            tx.execute(INSERT, (2, None))
        with pytest.raises(ht.TransportClosedError):
            await tx.commit()
        await tx.rollback()
        with pytest.raises(ht.TransportClosedError):
            t.transaction()
        async with await opened(qpath) as again:
            assert await rows_of(again) == []

    asyncio.run(main())


def test_the_loop_keeps_running_while_a_query_waits_for_a_lock(qpath):
    """Another transport holds the write lock for 0.5 s: the query waits for it in the
    executor while the loop ticks, and gets it when the holder commits."""

    async def main():
        async with await opened(qpath, busy_timeout=10) as t:
            holder_transport = Transport(qpath)
            holder = holder_transport.begin()
            holder.execute(INSERT, (1, "holder"))
            holder.query("SELECT 1")  # the write lock, until the commit
            loop = asyncio.get_running_loop()
            loop.call_later(0.5, holder.commit)
            ticker = LoopTicker()
            started = time.monotonic()
            async with t.transaction() as tx:
                assert await tx.query("SELECT id, note FROM orders") == [(1, "holder")], "after the holder's commit"
                tx.execute(INSERT, (2, "waiter"))
            took = time.monotonic() - started
            ticks = await ticker.stop()
            holder_transport.close()
            assert took >= 0.45, took
            assert ticks >= 20, f"the loop ticked {ticks} times in {took:.2f} s"
            assert await rows_of(t) == [(1, "holder"), (2, "waiter")]

    asyncio.run(main())


def test_one_task_at_a_time_on_a_transaction(qpath):
    """execute and the publishes, called while the same transaction's query runs in the
    executor, raise instead of blocking the loop on the transaction."""

    async def main():
        async with await opened(qpath, busy_timeout=10) as t:
            holder_transport = Transport(qpath)
            holder = holder_transport.begin()
            holder.query("SELECT 1")
            asyncio.get_running_loop().call_later(0.3, holder.rollback)
            async with t.transaction() as tx:
                querying = asyncio.create_task(tx.query("SELECT 1"))
                await asyncio.sleep(0.05)
                started = time.monotonic()
                with pytest.raises(ht.ArgumentError, match="execute: a query, commit or rollback of this transaction"):
                    tx.execute(INSERT, (1, None))
                with pytest.raises(ht.ArgumentError, match="publish: a query, commit or rollback"):
                    tx.publish("g", "{}")
                with pytest.raises(ht.ArgumentError, match="publish: a query, commit or rollback"):
                    tx.publish_with("g", "{}")
                assert time.monotonic() - started < 0.1, "refused at once"
                assert await querying == [(1,)]
                tx.execute(INSERT, (1, "after"))
            holder_transport.close()
            assert await rows_of(t) == [(1, "after")]

    asyncio.run(main())


def test_a_task_cancelled_in_its_query_rolls_back(qpath):
    async def main():
        async with await opened(qpath, busy_timeout=10) as t:
            holder_transport = Transport(qpath)
            holder = holder_transport.begin()
            holder.query("SELECT 1")

            async def work():
                async with t.transaction() as tx:
                    tx.execute(INSERT, (1, "cancelled"))
                    tx.publish("g", "{}")
                    await tx.query("SELECT 1")  # waits for the holder
                    tx.execute(INSERT, (2, "never"))

            task = asyncio.create_task(work())
            await asyncio.sleep(0.2)
            task.cancel()
            asyncio.get_running_loop().call_later(0.2, holder.rollback)
            with pytest.raises(asyncio.CancelledError):
                await task
            holder_transport.close()
            assert await rows_of(t) == [] and (await t.stats()).messages == 0, "rolled back once its query returned"
            await t.publish("h", "{}")  # the connection was let go

    asyncio.run(main())


def test_tasks_on_one_transport_and_on_their_own(qpath):
    """Read-modify-write in transactions from tasks sharing a transport (its transactions
    run one at a time) and from tasks with one each: no update lost."""

    async def main():
        async with await opened(qpath, busy_timeout=30) as t:
            async with t.transaction() as tx:
                tx.execute("CREATE TABLE counter (n INTEGER)")
                tx.execute("INSERT INTO counter VALUES (0)")
            own = [await AsyncTransport.open(qpath, busy_timeout=30) for _ in range(3)]

            async def work(transport, rounds):
                for _ in range(rounds):
                    async with transport.transaction() as tx:
                        ((n,),) = await tx.query("SELECT n FROM counter")
                        tx.execute("UPDATE counter SET n = ?", (n + 1,))
                        tx.publish("g", f'{{"n":{n}}}')

            await asyncio.gather(*[work(t, 10) for _ in range(5)], *[work(o, 10) for o in own])
            for o in own:
                await o.close()
            assert await rows_of(t, "SELECT n FROM counter") == [(80,)]
            page = await t.peek("g", limit=1000)
            assert [m.event for m in page] == [f'{{"n":{n}}}' for n in range(80)], "each value read once, in order"

    asyncio.run(main())


def test_a_transaction_that_holds_the_lock_needs_no_thread_of_the_executor(qpath):
    """Eight tasks on one transport with an executor of two threads: while one transaction
    holds the connection, the others' first queries wait for it in both threads; its
    commit runs on its own thread, so none waits out the busy timeout."""

    async def main():
        executor = ThreadPoolExecutor(2)
        async with await opened(qpath, busy_timeout=5, executor=executor) as t:
            async with t.transaction() as tx:
                tx.execute("CREATE TABLE counter (n INTEGER)")
                tx.execute("INSERT INTO counter VALUES (0)")
            threads = set()

            async def work():
                for _ in range(3):
                    async with t.transaction() as tx:
                        ((n,),) = await tx.query("SELECT n FROM counter")
                        tx.execute("UPDATE counter SET n = ?", (n + 1,))
                        threads.update(th.name for th in threading.enumerate())

            started = time.monotonic()
            await asyncio.gather(*[work() for _ in range(8)])
            assert time.monotonic() - started < 4, "no call waited out the busy timeout"
            assert await rows_of(t, "SELECT n FROM counter") == [(24,)]
            assert any(name.startswith("harel_transport transaction") for name in threads)
        executor.shutdown()
        time.sleep(0.1)
        assert not [th for th in threading.enumerate() if th.name.startswith("harel_transport transaction")], (
            "each transaction's thread ended with it"
        )

    asyncio.run(main())
