"""A queue sharded over several databases: `Transport.open_shards` and
`AsyncTransport.open_shards`, `shard_count`, `shard_of`, the `shard` of `GroupInfo` and
`DeadLetter`; the refusals (a list that does not match the databases' records, a bad list,
a transaction, a redrive by seq), each the library's `ArgumentError` with its message; and
that nothing leaks. The semantics are the library's (its contract tests run on three
files); these check the mapping."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Dict, List

import pytest

import harel_transport as ht
from harel_transport import AsyncTransport, DeadLetter, GroupInfo, Transport, shard_of

N = 3


@pytest.fixture
def dbs(tmp_path: Path) -> List[str]:
    """Three fresh files, in shard order."""
    return [str(tmp_path / f"shard{i}.db") for i in range(N)]


@pytest.fixture
def t(dbs):
    transport = Transport.open_shards(dbs, busy_timeout=2)
    yield transport
    transport.close()


def groups_by_shard(per_shard: int = 2, n: int = N) -> Dict[int, List[str]]:
    """`per_shard` group ids on each of the `n` shards, picked with `shard_of`."""
    found: Dict[int, List[str]] = {s: [] for s in range(n)}
    i = 0
    while any(len(g) < per_shard for g in found.values()):
        g = f"order-{i}"
        if len(found[shard_of(g, n)]) < per_shard:
            found[shard_of(g, n)].append(g)
        i += 1
    return found


def refused(fn, *says: str) -> ht.ArgumentError:
    """`fn()` raises the library's ArgumentError, its message holding each of `says`."""
    with pytest.raises(ht.ArgumentError) as e:
        fn()
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    for text in says:
        assert text in e.value.message, (text, e.value.message)
    return e.value


# -- shard_of ------------------------------------------------------------------------------


def test_shard_of_gives_the_librarys_known_values():
    assert shard_of("order-42", 3) == 2
    assert shard_of("order-42", 4) == 0
    assert shard_of("order-42", 1) == 0
    assert ht.MAX_SHARDS == 256
    assert 0 <= shard_of("order-42", ht.MAX_SHARDS) < ht.MAX_SHARDS
    spread = {shard_of(f"g{i}", N) for i in range(100)}
    assert spread == {0, 1, 2}


def test_shard_of_refuses_bad_input():
    refused(lambda: shard_of("", 3), "group_id is empty")
    refused(lambda: shard_of("g", 0), "n_shards is 0; it must be 1..256")
    refused(lambda: shard_of("g", 257), "n_shards is 257; it must be 1..256")
    # What ctypes would change is refused before the call.
    refused(lambda: shard_of("g", -1), "shards is -1; it must be 1..256")
    refused(lambda: shard_of("g", 2**64), "it must be 1..256")
    refused(lambda: shard_of("g", True), "shards must be an int")
    refused(lambda: shard_of("g", 3.0), "shards must be an int")
    refused(lambda: shard_of(None, 3), "group_id must be a str")  # type: ignore[arg-type]
    refused(lambda: shard_of("a\0b", 3), "group_id holds a NUL")


# -- a sharded queue -----------------------------------------------------------------------


def test_every_group_is_served_exactly_once_through_the_handle(t):
    assert t.shard_count == N
    assert t.path == t._shards[0] and "shards=" in repr(t)
    by_shard = groups_by_shard()
    groups = [g for gs in by_shard.values() for g in gs]
    for g in groups:
        t.publish(g, f'{{"g":"{g}","n":0}}')
    # A batch over every shard: one transaction per shard.
    t.publish_many([(g, f'{{"g":"{g}","n":1}}') for g in groups])
    assert t.stats().messages == 2 * len(groups)

    listed = t.groups().items
    assert sorted(x.group_id for x in listed) == sorted(groups)
    for x in listed:
        assert x.shard == shard_of(x.group_id, N), x
    assert {x.shard for x in listed} == set(range(N))

    got: Dict[str, List[int]] = {g: [] for g in groups}
    one = t.claim("w", 30)
    batch = t.claim_many("w", 30, max=100)
    leases = [one] + batch
    while leases:
        for lease in leases:
            got[lease.group_id].append(lease.json()["n"])
        more, acked = t.ack_and_claim_many(leases, "w", 30, max=100)
        assert acked == [None] * len(leases)
        leases = more
    assert got == {g: [0, 1] for g in groups}, "each message once, in its group's order"
    assert t.claim("w") is None and t.stats().messages == 0


def test_a_waiting_claim_is_woken_by_a_publish_to_any_shard(t):
    last = groups_by_shard(1)[N - 1][0]
    out: List = []
    waiter = threading.Thread(target=lambda: out.append(t.claim("w", 30, wait=10)))
    waiter.start()
    time.sleep(0.2)
    start = time.monotonic()
    t.publish(last, "1")
    waiter.join(10)
    assert out and out[0].group_id == last and time.monotonic() - start < 5
    t.ack(out[0])


def test_dead_letters_carry_their_shard(t):
    by_shard = groups_by_shard(1)
    for s, (g,) in by_shard.items():
        t.publish(g, str(s))
    for _ in range(N):
        lease = t.claim("w", 30)
        t.dead_letter(lease, "bad")
    letters = t.dead_letters().items
    assert len(letters) == N
    for d in letters:
        assert d.shard == shard_of(d.group_id, N) == int(d.event), d
    assert t.stats().dead == N

    # A seq names one shard's letter: by seq is refused; by group or all works.
    refused(lambda: t.redrive(seqs=[letters[0].seq]), "a seq names a dead letter of one shard")
    refused(lambda: t.purge_dead(seqs=[letters[0].seq]), "a seq names a dead letter of one shard")
    assert t.dead_letters().items == letters, "nothing changed"
    assert t.redrive(group_id=by_shard[N - 1][0]) == 1
    assert [x.shard for x in t.groups().items] == [N - 1]
    assert t.purge_dead(all=True) == N - 1
    assert t.dead_letters().items == []


def test_reopening_with_the_same_list_works(dbs):
    g = groups_by_shard(1)[2][0]
    with Transport.open_shards(dbs) as t:
        t.publish(g, "1")
    # The same list (as Path objects, and as a tuple): the same queue.
    with Transport.open_shards(tuple(Path(d) for d in dbs), synchronous_full=False) as t:
        assert t.shard_count == N
        assert [(x.group_id, x.shard) for x in t.groups()] == [(g, 2)]
        t.ack(t.claim("w"))
    # A generator is a sequence read once.
    with Transport.open_shards(d for d in dbs) as t:
        assert t.stats().messages == 0


def test_a_list_that_does_not_match_the_records_is_refused(dbs, tmp_path):
    with Transport.open_shards(dbs) as t:
        t.publish(groups_by_shard(1)[1][0], "1")
    refused(lambda: Transport.open_shards(dbs[::-1]), "databases[0] (", "reordered")
    refused(lambda: Transport.open_shards(dbs[:2]), "databases[0] (", "missing")
    refused(lambda: Transport.open_shards(dbs + [str(tmp_path / "extra.db")]), "extra")
    # One member alone is refused, by either open.
    refused(lambda: Transport(dbs[1]), "shard 1 of 3")
    refused(lambda: Transport.open_shards([dbs[0]]), "database ", "shard 0 of 3")
    # Nothing was left open, nothing changed: the right list opens the queue as it was.
    with Transport.open_shards(dbs) as t:
        assert t.stats().messages == 1


def test_a_bad_list_is_refused(dbs):
    refused(lambda: Transport.open_shards([]), "databases has 0 entries; it must have 1..256")
    refused(lambda: Transport.open_shards([dbs[0], dbs[1], dbs[0]]), "databases[2] repeats databases[0]")
    refused(lambda: Transport.open_shards([dbs[0], "", dbs[2]]), "databases[1] is empty")
    # Python refuses what it cannot pass as it is: None (C's NULL), a NUL, a single path.
    refused(lambda: Transport.open_shards([dbs[0], None]), "databases[1] must be a str")  # type: ignore[list-item]
    refused(lambda: Transport.open_shards([dbs[0], "a\0b"]), "databases[1] holds a NUL")
    refused(lambda: Transport.open_shards(dbs[0]), "databases must be a sequence of paths")
    refused(lambda: Transport.open_shards(Path(dbs[0])), "databases must be a sequence of paths")  # type: ignore[arg-type]
    refused(lambda: Transport.open_shards(3), "databases must be a sequence of paths")  # type: ignore[arg-type]
    # The options are checked as for an ordinary open.
    refused(lambda: Transport.open_shards(dbs, prefix="no way"), "prefix")
    with pytest.raises(TypeError):
        Transport.open_shards(dbs, no_such_option=1)  # type: ignore[call-arg]
    assert not any(os.path.exists(d) for d in dbs), "a refused list created nothing"


def test_replica_shards_take_one_primary_each(dbs):
    urls = ["http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "http://127.0.0.1:1/c"]
    refused(lambda: Transport.open_shards(dbs, sync_urls=urls[:1]), "sync_urls has 1 URLs and databases 3 paths")
    refused(lambda: Transport.open_shards(dbs, sync_urls=[urls[0]] * 3), "urls[1] repeats urls[0]")
    refused(lambda: Transport.open_shards(dbs, sync_urls=urls, sync_url=urls[0]), "sync_url and sync_urls are both set")
    refused(lambda: Transport.open_shards(dbs, sync_url=urls[0]), "sync_url names one primary")
    refused(lambda: Transport.open_shards(dbs, sync_urls=urls[0]), "sync_urls must be a sequence of str")
    refused(lambda: Transport.open_shards(dbs, sync_urls=[urls[0], 7]), "sync_urls[1] must be a str")  # type: ignore[list-item]
    refused(lambda: Transport.open_shards(dbs, sync_urls=[urls[0], "a\0b", urls[2]]), "sync_urls[1] holds a NUL")
    # Servers that are not there fail to connect: the URLs reached the shards.
    with pytest.raises(ht.ConnectError, match=r"databases\[0\]"):
        Transport.open_shards(dbs, sync_urls=urls)


def test_async_replica_shards_take_the_same_option(dbs):
    async def main():
        with pytest.raises(ht.ArgumentError, match="sync_urls has 2 URLs"):
            await AsyncTransport.open_shards(dbs, sync_urls=["http://127.0.0.1:1/a", "http://127.0.0.1:1/b"])

    asyncio.run(main())


def test_a_transaction_on_a_sharded_queue_is_refused(t):
    g = groups_by_shard(1)[0][0]
    with pytest.raises(ht.ArgumentError) as e:
        with t.transaction() as tx:
            tx.publish(g, "1")
    assert "a transaction runs on one database" in e.value.message
    tx = t.begin()
    refused(lambda: tx.query("SELECT 1"), "a transaction runs on one database", "sharded over 3")
    tx.rollback()
    assert t.stats().messages == 0


def test_an_ordinary_queue_has_one_shard(qpath):
    with Transport(qpath) as t:
        assert t.shard_count == 1 and "shards=" not in repr(t)
        t.publish("g", "1")
        t.dead_letter(t.claim("w"), "bad")
        t.publish("h", "2")
        assert [x.shard for x in t.groups()] == [0]
        assert [x.shard for x in t.dead_letters()] == [0]
    # A list of one is a queue that is not sharded.
    with Transport.open_shards([qpath]) as t:
        assert t.shard_count == 1 and t.stats().messages == 1
    with Transport(qpath) as t:
        assert t.stats().messages == 1
    closed = Transport(qpath)
    closed.close()
    with pytest.raises(ht.TransportClosedError):
        closed.shard_count


def test_the_shard_field_is_last_so_positional_construction_keeps_working():
    g = GroupInfo("g", "ready", 1, 7, None, None, None, 0, None, 0)
    assert g.shard == 0 and GroupInfo("g", "ready", 1, 7, None, None, None, 0, None, 0, 2).shard == 2
    d = DeadLetter(7, "g", "1", 1, None, "bad", 1000.0)
    assert d.shard == 0 and DeadLetter(7, "g", "1", 1, None, "bad", 1000.0, 1).shard == 1
    assert list(GroupInfo.__dataclass_fields__)[-1] == "shard"
    # the headers came after it, last in turn
    assert list(DeadLetter.__dataclass_fields__)[-2:] == ["shard", "headers"]


# -- the async face ------------------------------------------------------------------------


def test_the_async_face(dbs):
    by_shard = groups_by_shard(1)
    groups = [gs[0] for gs in by_shard.values()]

    async def main():
        async with await AsyncTransport.open_shards(dbs, busy_timeout=2) as t:
            assert t.shard_count == N and "shards=" in repr(t)
            # A waiting claim (on the loop, the watch of every shard) woken by the last shard.
            waiting = asyncio.ensure_future(t.claim("w", 30, wait=10))
            await asyncio.sleep(0.2)
            await t.publish(groups[-1], "0")
            lease = await asyncio.wait_for(waiting, 5)
            assert lease.group_id == groups[-1]
            await t.ack(lease)
            await t.publish_many([(g, "1") for g in groups])
            assert [(x.group_id, x.shard) for x in await t.groups()] == sorted(
                (g, shard_of(g, N)) for g in groups
            )
            leases = await t.claim_many("w", 30, max=10)
            assert sorted(x.group_id for x in leases) == sorted(groups)
            await t.dead_letter(leases[0], "bad")
            assert [(d.group_id, d.shard) for d in await t.dead_letters()] == [
                (leases[0].group_id, shard_of(leases[0].group_id, N))
            ]
            assert await t.ack_many(leases[1:]) == [None] * (N - 1)
            with pytest.raises(ht.ArgumentError, match="a seq names a dead letter of one shard"):
                await t.redrive(seqs=[1])
            with pytest.raises(ht.ArgumentError, match="a transaction runs on one database"):
                async with t.transaction() as tx:
                    tx.publish(groups[0], "2")
        assert t.closed
        with pytest.raises(ht.TransportClosedError):
            t.shard_count
        with pytest.raises(ht.ArgumentError, match="reordered"):
            await AsyncTransport.open_shards(dbs[::-1])
        with pytest.raises(ht.ArgumentError, match="databases has 0 entries"):
            await AsyncTransport.open_shards([])
        async with await AsyncTransport.open_shards(dbs) as again:
            assert again.shard_count == N and (await again.stats()).dead == 1

    asyncio.run(main())


# -- leaks ---------------------------------------------------------------------------------


def test_every_handle_page_and_error_is_freed(dbs, monkeypatch):
    """Counts what the library hands out against what is freed, over opens that succeed and
    opens that are refused: options, transports, pages, errors."""
    lib = ht._native.lib()
    counts: Dict[str, int] = {}

    def counting(name, key=None, nonnull=False):
        fn = getattr(lib, name)

        def wrapper(*args):
            if not nonnull or args[0]:
                counts[key or name] = counts.get(key or name, 0) + 1
            return fn(*args)

        monkeypatch.setattr(lib, name, wrapper)

    def opened(*args):
        status = open_shards(*args)
        if status == 0:
            counts["opened"] = counts.get("opened", 0) + 1
        return status

    open_shards = lib.harel_transport_open_shards
    monkeypatch.setattr(lib, "harel_transport_open_shards", opened)
    for name in ("harel_options_new", "harel_options_free", "harel_transport_close", "harel_transport_groups",
                 "harel_group_page_free", "harel_transport_dead_letters", "harel_dead_page_free"):
        counting(name)
    counting("harel_error_free", nonnull=True)

    errors = 0
    g = groups_by_shard(1)[1][0]
    for round in range(10):
        with Transport.open_shards(dbs) as t:
            t.publish(g, "1")
            t.dead_letter(t.claim("w"), "bad")
            assert [x.shard for x in t.dead_letters()] == [1]
            assert t.groups().items == []
            assert t.purge_dead(all=True) == 1
            assert t.shard_count == N
        for bad in (dbs[::-1], dbs[:2], [], [dbs[0], dbs[0]], [dbs[0], ""]):
            with pytest.raises(ht.ArgumentError):
                Transport.open_shards(bad)
            errors += 1
        with pytest.raises(ht.ArgumentError):
            shard_of("g", 0)
        errors += 1
    assert counts["opened"] == counts["harel_transport_close"] == 10, counts
    assert counts["harel_options_new"] == counts["harel_options_free"] == 60, counts
    assert counts["harel_transport_groups"] == counts["harel_group_page_free"] == 10, counts
    assert counts["harel_transport_dead_letters"] == counts["harel_dead_page_free"] == 10, counts
    assert counts["harel_error_free"] == errors, counts


def test_no_memory_grows_over_many_sharded_opens(dbs):
    """The process's resident memory over 150 rounds (a sharded open, a publish to each
    shard, claims, listings, a refused open, close), after 50 to warm up."""

    def rss_kib() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    groups = [gs[0] for gs in groups_by_shard(1).values()]
    payload = '"' + "x" * 2000 + '"'

    def rounds(n):
        for _ in range(n):
            with Transport.open_shards(dbs, synchronous_full=False) as t:
                t.publish_many([(g, payload) for g in groups])
                t.dead_letter(t.claim("w"), "bad")
                assert len(t.groups()) == N - 1 and len(t.dead_letters()) == 1
                t.ack_many(t.claim_many("w", max=N))
                t.purge_dead(all=True)
            with pytest.raises(ht.ArgumentError):
                Transport.open_shards(dbs[::-1])

    rounds(50)
    before = rss_kib()
    rounds(150)
    grew = rss_kib() - before
    assert grew < 4096, f"resident memory grew by {grew} KiB over 150 rounds"
