"""The archive: the `archive_retention` option and the look `archive`, sync and asyncio;
`Archived` and its type hints; every field of an archived message reaching Python; pages,
one group's history in order, a sharded queue's shard after shard; off by default, and
per transport; every bad input an `ArgumentError` naming it. The semantics are the
library's (its contract tests); these check the mapping. harel 0.9's own transports on a
file that keeps the archive: test_archive_interop.py."""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import inspect
import json
import math
import time
import typing

import pytest

import harel_transport as ht
from conftest import LoopTicker, inspect_db
from harel_transport import Archived, AsyncTransport, Message, Transport, _native, shard_of

TEN_YEARS = 315_360_000
HOUR = 3600


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock, archive_retention=HOUR)
    yield transport
    transport.close()


def drain(t, worker="w"):
    """Claims and acks until nothing is deliverable: the leases, in the order served."""
    served = []
    while (lease := t.claim(worker, 30)) is not None:
        served.append(lease)
        t.ack(lease)
    return served


def all_pages(look, **kwargs):
    """Every page of `look` (a bound `archive`), following `next`: (pages, items)."""
    pages = [look(**kwargs)]
    while pages[-1].next is not None:
        pages.append(look(cursor=pages[-1].next, **kwargs))
    return pages, [a for p in pages for a in p.items]


# -- the values and the signatures -------------------------------------------------------


def test_the_values_and_the_signatures():
    assert "Archived" in ht.__all__ and ht.Archived is Archived
    names = ["seq", "group_id", "event", "headers", "attempts", "worker_id", "published_at", "claimed_at",
             "acked_at", "shard"]
    assert [f.name for f in dataclasses.fields(Archived)] == names
    assert typing.get_type_hints(Archived) == {
        "seq": int,
        "group_id": str,
        "event": str,
        "headers": typing.List[typing.Tuple[str, str]],
        "attempts": int,
        "worker_id": str,
        "published_at": typing.Optional[float],
        "claimed_at": typing.Optional[float],
        "acked_at": float,
        "shard": int,
    }
    a = Archived(1, "g", '{"n":1}', [("k", "v")], 2, "w", None, 5.0, 6.0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.seq = 2  # type: ignore[misc]
    assert hash(a) == hash(Archived(1, "g", '{"n":1}', [], 2, "w", None, 5.0, 6.0, 0)), "headers not hashed"
    assert a.json() == {"n": 1} and a.event_bytes == b'{"n":1}'
    assert Archived.__doc__

    for cls in (Transport, AsyncTransport):
        fn = cls.archive
        params = list(inspect.signature(fn).parameters.values())[1:]
        assert [(p.name, p.kind, p.default) for p in params] == [
            ("group_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
            ("cursor", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
            ("limit", inspect.Parameter.POSITIONAL_OR_KEYWORD, 100),
        ], cls
        assert typing.get_type_hints(fn) == {
            "group_id": typing.Optional[str],
            "cursor": typing.Optional[str],
            "limit": int,
            "return": ht.Page[Archived],
        }
        assert fn.__doc__
    assert inspect.iscoroutinefunction(AsyncTransport.archive)
    assert not inspect.iscoroutinefunction(Transport.archive)

    option = inspect.signature(Transport).parameters["archive_retention"]
    assert (option.kind, option.default) == (inspect.Parameter.KEYWORD_ONLY, None)
    assert typing.get_type_hints(Transport.__init__)["archive_retention"] == typing.Optional[float]
    assert "archive_retention" in Transport.__doc__


def test_the_structs_have_the_headers_layout():
    # What include/harel_transport.h lays out on x86_64: harel_archived with its headers
    # inline and its own shard, harel_archive_page without a shards array.
    assert ctypes.sizeof(_native.HarelArchived) == 104
    assert ctypes.sizeof(_native.HarelArchivePage) == 24
    offsets = {name: getattr(_native.HarelArchived, name).offset for name, _ in _native.HarelArchived._fields_}
    assert offsets == {
        "seq": 0, "group_id": 8, "group_id_len": 16, "event": 24, "event_len": 32, "headers": 40,
        "attempts": 56, "worker_id": 64, "published_at": 72, "claimed_at": 80, "acked_at": 88, "shard": 96,
    }
    assert (_native.HarelArchivePage.n_messages.offset, _native.HarelArchivePage.next_cursor.offset) == (8, 16)


# -- what an archived message carries ----------------------------------------------------


def test_every_field_reaches_python(t, clock):
    headers = [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("k", "v=1 é")]
    t.publish("grüppe", '{"kind": "order.placed", "total": 12.5, "who": "Zoë"}', headers=headers)
    clock.now = 1001.0
    first = t.claim("worker-1", 30)
    assert first.attempts == 1
    clock.now = 1002.0
    t.nack(first)
    assert t.archive().items == [], "a nack archives nothing"
    clock.now = 1003.25
    again = t.claim("named-worker", 30)
    assert (again.attempts, again.worker_id) == (2, "named-worker")
    clock.now = 1007.5
    t.ack(again)

    page = t.archive()
    assert page.next is None and len(page) == 1
    (a,) = page
    assert a == Archived(
        seq=1,
        group_id="grüppe",
        event='{"kind": "order.placed", "total": 12.5, "who": "Zoë"}',
        headers=headers,
        attempts=2,
        worker_id="named-worker",
        published_at=1000.0,
        claimed_at=1003.25,
        acked_at=1007.5,
        shard=0,
    )
    assert a.json() == {"kind": "order.placed", "total": 12.5, "who": "Zoë"}
    assert a.event_bytes == a.event.encode()
    assert t.archive(group_id="grüppe").items == [a]
    assert t.archive(group_id="other").items == [] and t.archive(group_id="other").next is None
    assert t.stats().messages == 0 and t.peek("grüppe").items == [], "the ack deleted it from the queue"


def test_a_message_without_headers_and_once_claimed(t, clock):
    t.publish("g", "[1, 2]")
    clock.now = 1010
    lease = t.claim("w", 30)
    clock.now = 1011
    t.ack(lease)
    (a,) = t.archive()
    assert (a.headers, a.attempts, a.worker_id) == ([], 1, "w")
    assert (a.published_at, a.claimed_at, a.acked_at) == (1000.0, 1010.0, 1011.0)
    assert a.json() == [1, 2]


def test_every_ack_archives(t, clock):
    t.publish_many([("a", "1"), ("b", "2"), ("c", "3"), ("d", "4"), ("e", "5"), ("f", "6")])
    one = t.claim("w1", 30)
    t.ack(one)  # ack
    two, three = t.claim_many("w2", max=2)
    assert t.ack_many([two, three]) == [None, None]  # ack_many
    four = t.claim("w3", 30)
    five = t.ack_and_claim(four, "w4", 30)  # ack_and_claim
    assert five is not None
    got = t.ack_and_claim_many([five], "w5", max=1)  # ack_and_claim_many
    assert got.acked == [None] and len(got.leases) == 1
    t.ack(got.leases[0])
    archived = t.archive().items
    assert [a.event for a in archived] == ["1", "2", "3", "4", "5", "6"], "in seq order"
    assert [a.worker_id for a in archived] == ["w1", "w2", "w2", "w3", "w4", "w5"]


def test_only_acks_archive(t, clock):
    t.publish_many([("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")])
    t.publish_with("e", "5", ttl=1)
    t.dead_letter(t.claim("w", 30), "no")  # a's
    t.nack(t.claim("w", 30), 5)  # b's, parked
    lost = t.claim("w", 30)
    assert lost.group_id == "c" and t.release("c") is True  # its lease ended
    with pytest.raises(ht.LeaseLostError):
        t.ack(lost)  # a lost lease's ack
    assert t.purge_group("d") == 1
    clock.now += 2
    drained = []
    while (lease := t.claim("v", 30)) is not None:  # e's expired: dead-lettered by the claim
        drained.append(lease.group_id)
        t.nack(lease, 60)
    assert drained == ["c"]
    assert t.archive().items == [], "a dead letter, a park, a lost lease's ack, a purge, an expiry: nothing"
    assert t.stats().dead == 2 and t.stats().expired == 1


def test_the_retention_reaches_the_library(qpath, clock):
    with Transport(qpath, clock=clock, archive_retention=60) as t:
        t.publish("g", "1")
        t.ack(t.claim("w", 30))
        clock.now += 30
        t.publish("g", "2")
        t.ack(t.claim("w", 30))
        assert [a.event for a in t.archive()] == ["1", "2"], "within the retention"
        clock.now += 31  # the first ack is 61 s old, the second 31 s
        t.publish("g", "3")
        t.ack(t.claim("w", 30))
        assert [a.event for a in t.archive()] == ["2", "3"], "the next ack pruned what is past 60 s"


# -- pages and a group's history ----------------------------------------------------------


def test_pages_and_a_groups_history_in_order(t, clock):
    for i in range(5):
        t.publish_many([("a", json.dumps({"a": i})), ("b", json.dumps({"b": i}))])
    t.publish("c", '"c"')
    served = drain(t)
    assert len(served) == 11
    pages, items = all_pages(t.archive, limit=3)
    assert [len(p) for p in pages] == [3, 3, 3, 2]
    assert all(isinstance(p.next, str) for p in pages[:-1]) and pages[-1].next is None
    assert [a.seq for a in items] == list(range(1, 12)), "every group's, in seq order"
    assert sorted((a.group_id, a.event) for a in items) == sorted((x.group_id, x.event) for x in served)

    pages, history = all_pages(t.archive, group_id="a", limit=2)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [a.json() for a in history] == [{"a": i} for i in range(5)], "a's history, in order"
    assert [a.seq for a in history] == sorted(a.seq for a in history)
    assert [a.json() for a in t.archive("b", limit=10_000)] == [{"b": i} for i in range(5)]
    exact = t.archive(group_id="c", limit=1)
    assert [a.event for a in exact] == ['"c"'] and exact.next is None
    assert len(t.archive(limit=11)) == 11 and t.archive(limit=11).next is None, "exactly the last page"
    # the pages go on from the cursor even after more acks
    t.publish("a", '{"a": 5}')
    drain(t)
    assert [a.json() for a in t.archive("a", cursor=pages[-2].next)] == [{"a": 4}, {"a": 5}]


def test_an_empty_archive(t):
    page = t.archive()
    assert (page.items, page.next) == ([], None)
    assert t.archive(group_id="g", limit=1).items == []


# -- off by default, and per transport ------------------------------------------------------


def test_off_by_default(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish("g", "1", headers=[("k", "v")])
        t.publish("g", "2")
        t.ack(t.claim("w", 30))
        assert t.ack_and_claim_many([t.claim("w", 30)], "w", max=1).acked == [None]
        assert t.archive().items == [] and t.archive(group_id="g").items == []
        assert t.stats().messages == 0
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_archive") == [[0]], "the table is there, empty"
    assert "harel_transport_archive" in ht.schema_sql()


def test_the_option_is_per_transport_and_the_look_reads_the_table(qpath, clock):
    with Transport(qpath, clock=clock) as plain, Transport(qpath, clock=clock, archive_retention=HOUR) as keeping:
        plain.publish_many([("a", "1"), ("b", "2")])
        plain.ack(plain.claim("plain", 30))  # a transport without the option beside one with it
        assert keeping.archive().items == []
        keeping.ack(keeping.claim("keeping", 30))
        (a,) = plain.archive()  # read by the one that does not keep it
        assert (a.event, a.worker_id) == ("2", "keeping")
        assert keeping.archive().items == [a]


def test_without_the_table_and_create_schema_off(qpath, tmp_path):
    Transport(qpath).close()
    inspect_db(qpath, "DROP TABLE harel_transport_archive")
    with pytest.raises(ht.DatabaseError) as e:
        Transport(qpath, create_schema=False, archive_retention=HOUR)
    assert "the table harel_transport_archive" in e.value.message, e.value.message
    with Transport(qpath, create_schema=False) as t:
        t.publish("g", "1")
        t.ack(t.claim("w", 30))
        assert t.archive().items == [], "off: it opens, and the look is empty"


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, names",
    [
        (0, "archive_retention is 0; it must be a finite number of seconds > 0"),
        (0.0, "archive_retention is 0"),
        (-1, "archive_retention is -1; it must be a finite number of seconds > 0"),
        (math.nan, "archive_retention is NaN"),
        (math.inf, "archive_retention is inf"),
        (-math.inf, "archive_retention is -inf"),
        (TEN_YEARS + 1, "archive_retention is 315360001; at most 315360000 (ten years)"),
        (400_000_000, "archive_retention is 400000000; at most 315360000 (ten years)"),
        # the binding's: what ctypes cannot pass as a double
        ("60", "archive_retention must be a number of seconds"),
        (True, "archive_retention must be a number of seconds"),
        (b"60", "archive_retention must be a number of seconds"),
        (10**400, "archive_retention is too large"),
    ],
)
def test_bad_archive_retention(tmp_path, value, names):
    path = tmp_path / "q.db"
    with pytest.raises(ht.ArgumentError) as e:
        Transport(str(path), archive_retention=value)
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    assert names in e.value.message, e.value.message
    assert not path.exists(), "refused before the file was opened"


def test_archive_retention_bounds_that_open(tmp_path):
    with Transport(str(tmp_path / "a.db"), archive_retention=TEN_YEARS) as t:
        assert t.archive().items == []
    with Transport(str(tmp_path / "b.db"), archive_retention=0.5) as t:
        assert t.archive().items == []


def foreign_cursors(t):
    """A cursor of the dead letters' listing, of the groups' and of peek's."""
    t.publish_many([("x", "1"), ("y", "2"), ("z", "3"), ("x", "4"), ("x", "5")])
    t.dead_letter(t.claim("w", 30), "no")  # x's head
    t.dead_letter(t.claim("w", 30), "no")  # y's
    return {
        "dead_letters": t.dead_letters(limit=1).next,
        "groups": t.groups(limit=1).next,
        "peek": t.peek("x", limit=1).next,
    }


@pytest.mark.parametrize(
    "kwargs, names",
    [
        ({"group_id": ""}, "group_id is empty"),
        ({"group_id": "g\0h"}, "group_id holds a NUL"),
        ({"group_id": 5}, "group_id must be a str"),
        ({"group_id": b"g"}, "group_id must be a str"),
        ({"limit": 0}, "limit is 0; it must be 1..10000"),
        ({"limit": 10_001}, "limit is 10001; it must be 1..10000"),
        ({"limit": -1}, "limit is -1; it must be 1..10000"),
        ({"limit": 2**64}, "it must be 1..10000"),
        ({"limit": 1.5}, "limit must be an int, got float"),
        ({"limit": True}, "limit must be an int, got bool"),
        ({"cursor": "nonsense"}, "is not a cursor of this listing"),
        ({"cursor": "a1.00"}, "is not a cursor of this listing"),
        ({"cursor": 7}, "cursor must be a str"),
    ],
)
def test_bad_look_arguments(t, kwargs, names):
    t.publish("g", "{}")
    t.ack(t.claim("w", 30))
    with pytest.raises(ht.ArgumentError) as e:
        t.archive(**kwargs)
    assert e.value.code == "HAREL_ERR_ARGUMENT"
    assert names in e.value.message, e.value.message
    assert len(t.archive()) == 1, "nothing changed"


def test_a_cursor_of_another_listing_is_refused(t):
    for g in ("a", "b", "c"):
        t.publish(g, "{}")
    drain(t)
    archive_cursor = t.archive(limit=1).next
    assert archive_cursor is not None
    for listing, cursor in foreign_cursors(t).items():
        assert cursor is not None, listing
        with pytest.raises(ht.ArgumentError) as e:
            t.archive(cursor=cursor)
        assert "is not a cursor of this listing" in e.value.message, (listing, e.value.message)
    with pytest.raises(ht.ArgumentError, match="is not a cursor of this listing"):
        t.dead_letters(cursor=archive_cursor)
    with pytest.raises(ht.ArgumentError, match="is not a cursor of this listing"):
        t.groups(cursor=archive_cursor)
    assert [a.group_id for a in t.archive(cursor=archive_cursor)] == ["b", "c"], "its own is taken"


def test_after_close(qpath):
    t = Transport(qpath, archive_retention=HOUR)
    t.close()
    with pytest.raises(ht.TransportClosedError):
        t.archive()


# -- a sharded queue --------------------------------------------------------------------------


def groups_on_shards(n):
    """One group id per shard of `n`, in shard order."""
    found = {}
    i = 0
    while len(found) < n:
        found.setdefault(shard_of(f"order-{i}", n), f"order-{i}")
        i += 1
    return [found[s] for s in range(n)]


def test_a_sharded_queue_sets_shard(tmp_path, clock):
    dbs = [str(tmp_path / f"shard{i}.db") for i in range(3)]
    groups = groups_on_shards(3)
    with Transport.open_shards(dbs, clock=clock, archive_retention=HOUR) as t:
        # published last-shard first: the listing still goes shard after shard
        for g in reversed(groups):
            t.publish_many([Message(g, json.dumps([g, 0]), headers=[("shard", g)]), (g, json.dumps([g, 1]))])
        assert len(drain(t, "sharded")) == 6
        _, items = all_pages(t.archive, limit=1)
        assert [a.shard for a in items] == [0, 0, 1, 1, 2, 2]
        assert [a.group_id for a in items] == [groups[0]] * 2 + [groups[1]] * 2 + [groups[2]] * 2
        assert all(a.shard == shard_of(a.group_id, 3) for a in items)
        assert [a.seq for a in items] == [1, 2] * 3, "each shard's own seqs"
        assert [a.headers for a in items] == [h for g in groups for h in ([("shard", g)], [])]
        assert all(a.worker_id == "sharded" and a.published_at == 1000.0 for a in items)
        for shard, g in enumerate(groups):
            history = t.archive(group_id=g).items
            assert [a.json() for a in history] == [[g, 0], [g, 1]]
            assert {a.shard for a in history} == {shard}


# -- the asyncio face ---------------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock, archive_retention=HOUR) as t:
            assert (await t.archive()).items == []
            await t.publish("g", '{"n":0}', headers=[("k", "v")])
            await t.publish("g", '{"n":1}')
            clock.now = 1001
            first = await t.claim("w1", 30)
            await t.nack(first)
            clock.now = 1002
            again = await t.claim("named", 30)
            clock.now = 1004
            await t.ack(again)
            (a,) = (await t.archive()).items
            assert a == Archived(1, "g", '{"n":0}', [("k", "v")], 2, "named", 1000.0, 1002.0, 1004.0, 0)
            await t.publish("h", '{"n":2}')
            clock.now = 1005
            leases = await t.claim_many("w2", max=2)
            assert await t.ack_many(leases) == [None, None]
            first_page = await t.archive(limit=2)
            assert [x.seq for x in first_page] == [1, 2] and first_page.next
            rest = await t.archive(cursor=first_page.next, limit=2)
            assert [x.seq for x in rest] == [3] and rest.next is None
            assert [x.json() for x in (await t.archive("g"))] == [{"n": 0}, {"n": 1}]
            assert [x.json() for x in (await t.archive(group_id="h", limit=1))] == [{"n": 2}]
            for kwargs, names in [
                ({"group_id": ""}, "group_id is empty"),
                ({"limit": 0}, "limit is 0; it must be 1..10000"),
                ({"cursor": "nonsense"}, "is not a cursor of this listing"),
                ({"limit": 1.5}, "limit must be an int"),
            ]:
                with pytest.raises(ht.ArgumentError) as e:
                    await t.archive(**kwargs)
                assert names in e.value.message, (kwargs, e.value.message)
        with pytest.raises(ht.TransportClosedError):
            await t.archive()
        for value, names in [(0, "archive_retention is 0"), (-1, "archive_retention is -1"), (math.nan, "archive_retention is NaN"),
                             (TEN_YEARS + 1, "at most 315360000 (ten years)"),
                             ("1", "archive_retention must be a number")]:
            with pytest.raises(ht.ArgumentError) as e:
                await AsyncTransport.open(qpath, archive_retention=value)
            assert names in e.value.message, e.value.message
        async with await AsyncTransport.open(qpath) as off:
            await off.publish("g", "1")
            await off.ack(await off.claim("w", 30))
            assert len(await off.archive()) == 3, "off: nothing more archived; the look reads the table"

    asyncio.run(main())


def test_the_async_sharded_face(tmp_path):
    dbs = [str(tmp_path / f"shard{i}.db") for i in range(2)]
    groups = groups_on_shards(2)

    async def main():
        async with await AsyncTransport.open_shards(dbs, archive_retention=HOUR) as t:
            for g in groups:
                await t.publish(g, json.dumps(g))
            for lease in await t.claim_many("w", max=2):
                await t.ack(lease)
            items = (await t.archive()).items
            assert [(a.group_id, a.shard) for a in items] == [(groups[0], 0), (groups[1], 1)]
            now = time.time()
            assert all(now - 60 < a.published_at <= a.claimed_at <= a.acked_at <= now + 1 for a in items)

    asyncio.run(main())


def test_the_async_archive_waits_off_the_loop(qpath):
    """The transport's own transaction holds its connection for 0.4 s: the archive waits
    for it in the executor while the loop ticks."""

    async def main():
        async with await AsyncTransport.open(qpath, busy_timeout=10, archive_retention=HOUR) as t:
            await t.publish("g", "1")
            await t.ack(await t.claim("w", 30))
            holder = t.transport.begin()
            holder.query("SELECT 1")  # the connection, until the commit
            loop = asyncio.get_running_loop()
            loop.call_later(0.4, holder.commit)
            ticker = LoopTicker()
            started = time.monotonic()
            page = await t.archive()
            took = time.monotonic() - started
            ticks = await ticker.stop()
            assert [a.event for a in page] == ["1"]
            assert took >= 0.35, took
            assert ticks >= 15, f"the loop ticked {ticks} times in {took:.2f} s"

    asyncio.run(main())
