"""`harel_transport.harel`: harel's own contract checks (sync and async, timing on), and
where the classes follow harel's semantics rather than the library's."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time

import pytest
from harel.engine.transport.base import AsyncTransport, Lease, Transport
from harel.spec.states import Event
from harel.testing import assert_async_transport_contract, assert_transport_contract

import harel_transport as ht
from conftest import inspect_db
from harel_transport.harel import (
    AsyncHarelTransport,
    AsyncLibsqlTransport,
    AsyncSqliteTransport,
    HarelTransport,
    LibsqlTransport,
    SqliteTransport,
)


@pytest.fixture
def fresh_path(tmp_path):
    n = itertools.count()
    return lambda: str(tmp_path / f"contract-{next(n)}.db")


def test_harels_contract_sync_on_files(fresh_path):
    assert_transport_contract(lambda clock: SqliteTransport(fresh_path(), clock=clock), timing=True, priorities=True)


def test_harels_contract_sync_in_memory_and_as_libsql():
    assert_transport_contract(lambda clock: SqliteTransport(":memory:", clock=clock), timing=True)
    assert_transport_contract(lambda clock: LibsqlTransport(":memory:", clock=clock), timing=True)


def test_harels_contract_async(fresh_path):
    asyncio.run(
        assert_async_transport_contract(
            lambda clock: AsyncSqliteTransport.create(fresh_path(), clock=clock), timing=True, priorities=True
        )
    )
    asyncio.run(
        assert_async_transport_contract(lambda clock: AsyncLibsqlTransport.create(fresh_path(), clock=clock), timing=True)
    )


def test_the_classes_meet_harels_protocols(qpath):
    t = SqliteTransport(qpath)
    assert isinstance(t, Transport)
    assert SqliteTransport is HarelTransport
    t.close()

    async def main():
        a = await AsyncSqliteTransport.create(qpath)
        assert isinstance(a, AsyncTransport)
        assert AsyncSqliteTransport is AsyncHarelTransport
        await a.close()

    asyncio.run(main())


def test_leases_are_harels_with_harels_event(qpath, clock):
    with SqliteTransport(qpath, clock=clock) as t:
        event = Event(id="e1", kind="paid", data={"total": 12})
        t.publish("order-1", event, priority=1)
        lease = t.claim("w1", 30)
        assert type(lease) is Lease and type(lease.event) is Event
        assert lease.event == event and lease.group_id == "order-1"
        assert lease.token == "w1", "the token carries the worker id"
        t.ack(lease)
        assert t.claim("w1", 30) is None


def test_events_are_stored_as_harels_sqlite_transport_stores_them(qpath):
    event = Event(id="e1", kind="paid", data={"total": 12, "note": "é"})
    with SqliteTransport(qpath) as t:
        t.publish("order-1", event)
    assert inspect_db(qpath, "SELECT event FROM harel_transport_messages") == [[event.model_dump_json()]]


def test_a_lost_lease_ack_or_nack_is_logged_and_dropped(qpath, clock, caplog):
    with SqliteTransport(qpath, clock=clock) as t:
        t.publish("g", Event(kind="e1"))
        old = t.claim("w1", 10)
        clock.now += 11
        new = t.claim("w2", 10)
        with caplog.at_level(logging.WARNING, logger="harel_transport.harel"):
            t.ack(old)  # harel's transports drop it; the library would raise
            t.nack(old, 5.0)
        dropped = [r for r in caplog.records if r.name == "harel_transport.harel"]
        assert len(dropped) == 2
        assert dropped[0].getMessage().startswith("ack of message")
        assert dropped[1].getMessage().startswith("nack of message")
        assert "'w1'" in dropped[0].getMessage()
        # The new holder's lease is untouched: it acks, and the group is free.
        assert inspect_db(qpath, "SELECT locked_by FROM harel_transport_messages") == [["w2"]]
        t.ack(new)
        assert t.claim("w3", 10) is None
        # The native API, on the same handle, raises.
        t.publish("g", Event(kind="e2"))
        lease = t.claim("w1", 10)
        t.ack(lease)
        with pytest.raises(ht.LeaseLostError):
            t.transport.ack(ht.Lease(lease.seq, lease.group_id, "", lease.token, 0.0))


def test_a_deferred_ack_of_a_lost_lease_is_dropped_when_it_is_applied(qpath, clock, caplog):
    with SqliteTransport(qpath, clock=clock, defer_ack=True) as t:
        t.publish("g", Event(kind="e1"))
        old = t.claim("w1", 10)
        clock.now += 11
        new = t.claim("w2", 10)
        with caplog.at_level(logging.WARNING, logger="harel_transport.harel"):
            t.ack(old)  # deferred: nothing yet
            assert not [r for r in caplog.records if r.name == "harel_transport.harel"]
            assert t.claim("w3", 10) is None  # applies it: lost, dropped; claims alone
        assert len([r for r in caplog.records if r.name == "harel_transport.harel"]) == 1
        t.ack(new)
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]], "close applied the ack"


def test_a_deferred_ack_rides_on_the_next_claim(qpath):
    t = SqliteTransport(qpath, defer_ack=True)  # one lease per claim: test_prefetch.py has batches
    other = ht.Transport(qpath)
    for i in range(3):
        t.publish("g", Event(kind=f"e{i}"))
    t.publish("h", Event(kind="h0"))
    first = t.claim("w", 30)
    assert first.group_id == "g"
    t.ack(first)
    # Not applied yet: still leased to w, so g gives nobody anything.
    assert inspect_db(qpath, "SELECT locked_by FROM harel_transport_messages WHERE seq = ?", [first.seq]) == [["w"]]
    h = other.claim("other", 30)
    assert h.group_id == "h" and other.claim("other", 30) is None
    # The next claim applies it in its own transaction, and may take g's next message.
    second = t.claim("w", 30)
    assert second.event.kind == "e1"
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages WHERE seq = ?", [first.seq]) == [[0]]
    # A second ack applies the first one alone; flush applies what is left.
    t.ack(second)
    other.ack(h)
    third = other.claim("other", 30)
    assert third is None, "g is still held by the deferred ack of e1"
    t.flush()
    third = other.claim("other", 30)
    assert json.loads(third.event)["kind"] == "e2"
    other.ack(third)
    # The default: at once.
    immediate = SqliteTransport(qpath)
    immediate.publish("k", Event(kind="k0"))
    k = immediate.claim("w", 30)
    immediate.ack(k)
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]
    immediate.close()
    other.close()
    t.close()


def test_the_async_class_defers_acks_too(qpath):
    async def main():
        t = await AsyncSqliteTransport.create(qpath, defer_ack=True)
        await t.publish("g", Event(kind="e0"))
        await t.publish("g", Event(kind="e1"))
        a = await t.claim("w", 30)
        await t.ack(a)
        b = await t.claim("w", 30)  # acked a, claimed b: one transaction
        assert (a.event.kind, b.event.kind) == ("e0", "e1")
        await t.ack(b)
        await t.close()  # applies b's ack

    asyncio.run(main())
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]


def test_a_lost_lease_is_dropped_by_the_async_class_too(qpath, clock, caplog):
    async def main():
        t = await AsyncSqliteTransport.create(qpath, clock=clock)
        await t.publish("g", Event(kind="e1"))
        old = await t.claim("w1", 10)
        await t.ack(old)
        with caplog.at_level(logging.WARNING, logger="harel_transport.harel"):
            await t.ack(old)
            await t.nack(old)
        await t.close()

    asyncio.run(main())
    assert len([r for r in caplog.records if r.name == "harel_transport.harel"]) == 2


def test_priorities_are_clamped_as_harels_redis_transport_does(qpath):
    with SqliteTransport(qpath) as t:
        t.publish("high", Event(kind="x"), priority=9)
        t.publish("low", Event(kind="y"), priority=-3)
        rows = inspect_db(qpath, "SELECT group_id, priority FROM harel_transport_groups ORDER BY group_id")
        assert rows == [["high", 4], ["low", 0]]
        assert t.claim("w", 30, min_priority=5) is None, "no group of ours is above 4"
        assert t.claim("w", 30, min_priority=4).group_id == "high"
        assert t.claim("w", 30, min_priority=-1).group_id == "low"


def test_bad_input_is_our_argument_error(qpath):
    with SqliteTransport(qpath) as t:
        with pytest.raises(ht.ArgumentError, match="group_id holds a NUL"):
            t.publish("exec\0-1", Event(kind="x"))
        with pytest.raises(ht.ArgumentError, match="event must be a harel Event"):
            t.publish("g", {"kind": "x"})
        with pytest.raises(ht.ArgumentError, match="group_id must be a str"):
            t.publish(17, Event(kind="x"))
        with pytest.raises(ht.ArgumentError, match="visibility is 0"):
            t.claim("w", 0)
        with pytest.raises(ht.ArgumentError, match="lease.token is empty"):
            t.ack(Lease(1, "g", Event(kind="x")))
        with pytest.raises(ht.ArgumentError, match="must be a harel Lease"):
            t.nack("lease")
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]


def test_constructors_take_harels_arguments(tmp_path):
    """Every constructor and factory of harel 0.9's four classes, with its arguments,
    positionally and by name (harel passes a Path where its tests do)."""
    t = SqliteTransport(tmp_path / "a.db", time.time, prefix="app", create_schema=True)
    t.close()
    t = SqliteTransport(path=str(tmp_path / "a.db"), clock=time.time, prefix="app", create_schema=False)
    t.close()
    t = LibsqlTransport(
        database=str(tmp_path / "b.db"),
        clock=time.time,
        auth_token="",
        sync_url=None,
        sync_interval=None,
        prefix="app",
        create_schema=True,
    )
    t.close()
    # As harel's: without sync_url, the token and the interval are ignored.
    t = LibsqlTransport(str(tmp_path / "b.db"), auth_token="token", sync_interval=0)
    t.close()

    async def main():
        a = await AsyncSqliteTransport.create(str(tmp_path / "c.db"), time.time, prefix="app", create_schema=True)
        await a.close()
        a = await AsyncLibsqlTransport.create(
            database=str(tmp_path / "d.db"), auth_token="", sync_url=None, sync_interval=None, prefix="app",
            create_schema=True,
        )
        await a.close()
        a = AsyncLibsqlTransport(LibsqlTransport(str(tmp_path / "e.db"), clock=time.time))
        assert isinstance(a, AsyncTransport)
        await a.close()

    asyncio.run(main())


def test_the_async_libsql_class_runs_on_a_sync_transport_as_harels_does(fresh_path, qpath):
    """harel's `AsyncLibsqlTransport(LibsqlTransport(path, clock=clock))`: harel's async
    contract (its own test_async_libsql), and the sync transport's options and handle."""
    asyncio.run(
        assert_async_transport_contract(
            lambda clock: AsyncLibsqlTransport(LibsqlTransport(fresh_path(), clock=clock)), timing=True
        )
    )

    async def main():
        sync = LibsqlTransport(qpath, defer_ack=True)
        t = AsyncLibsqlTransport(sync)
        await t.publish("g", Event(kind="e0"))
        await t.publish("g", Event(kind="e1"))
        await t.ack(await t.claim("w", 30))
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[2]], "the sync's defer_ack"
        await t.close()
        assert sync.transport.closed, "closing it closes the transport it runs on, as harel's does"

    asyncio.run(main())
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[1]], "close applied the ack"


def test_what_the_async_classes_cannot_run_on_is_refused_at_construction(qpath):
    from harel.engine.transport import LibsqlTransport as HarelsLibsqlTransport

    async def main():
        import aiosqlite

        conn = await aiosqlite.connect(":memory:")
        try:
            with pytest.raises(
                ht.ArgumentError,
                match=r"harel's AsyncSqliteTransport\(conn\) runs on an aiosqlite connection.*"
                r"AsyncSqliteTransport\.create\(path",
            ):
                AsyncSqliteTransport(conn)
        finally:
            await conn.close()

    asyncio.run(main())
    theirs = HarelsLibsqlTransport(":memory:")  # in memory: no file shared by two SQLites
    with pytest.raises(
        ht.ArgumentError,
        match=r"harel\.engine\.transport\.libsql\.LibsqlTransport is harel's own transport: build the sync one "
        r"from harel_transport\.harel",
    ):
        AsyncLibsqlTransport(theirs)
    theirs.close()
    with pytest.raises(ht.ArgumentError, match="got builtins.str"):
        AsyncLibsqlTransport(qpath)
    with LibsqlTransport(qpath) as sync:
        with pytest.raises(
            ht.ArgumentError, match="defer_ack, prefetch: an AsyncLibsqlTransport over a LibsqlTransport takes"
        ):
            AsyncLibsqlTransport(sync, defer_ack=True, prefetch=4)
        with pytest.raises(ht.ArgumentError, match="clock: an AsyncLibsqlTransport over"):
            AsyncLibsqlTransport(sync, time.time)
