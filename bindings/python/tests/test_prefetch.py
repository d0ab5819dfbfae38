"""The harel drop-in's prefetch (`prefetch=`, off by default): a claim that finds nothing
held takes a batch of heads of distinct groups in one transaction, with the acks deferred
since (`defer_ack=True`), and holds the rest for the worker's next claims. harel's Worker
runs on it in test_worker.py; what another transport sees of it, in
test_harel_options.py; here, a fixed prefetch, its rules and its failures."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import defaultdict

import pytest
from harel.spec.states import Event
from harel.testing import assert_async_transport_contract, assert_transport_contract

import harel_transport as ht
from conftest import inspect_db
from harel_transport._prefetch import AUTO_MAX, adaptive_size
from harel_transport.harel import AsyncSqliteTransport, SqliteTransport, _harel_lease


def publish(t, groups, per_group=1):
    for k in range(per_group):
        for g in groups:
            t.publish(g, Event(kind=f"{g}-{k}"))


def leased_to(path):
    return dict(inspect_db(path, "SELECT group_id, locked_by FROM harel_transport_messages WHERE locked_by IS NOT NULL"))


def test_harels_contract_with_a_fixed_prefetch(tmp_path):
    n = itertools.count()
    fresh = lambda: str(tmp_path / f"c-{next(n)}.db")  # noqa: E731
    assert_transport_contract(lambda clock: SqliteTransport(fresh(), clock=clock, prefetch=10), timing=True)
    asyncio.run(
        assert_async_transport_contract(
            lambda clock: AsyncSqliteTransport.create(fresh(), clock=clock, prefetch=10), timing=True
        )
    )


def test_a_claim_takes_a_batch_and_holds_it_for_the_workers_next_claims(qpath):
    with SqliteTransport(qpath, prefetch=10, defer_ack=True) as t:
        publish(t, ["a", "b", "c", "d"], per_group=2)
        first = t.claim("w", 30)
        assert t.held == 3, "one transaction leased the heads of all four groups"
        assert leased_to(qpath) == {"a": "w", "b": "w", "c": "w", "d": "w"}
        with ht.Transport(qpath) as other:
            assert other.claim("other", 30) is None, "held leases are leases"
        got = [first] + [t.claim("w", 30) for _ in range(3)]
        assert [lease.event.kind for lease in got] == ["a-0", "b-0", "c-0", "d-0"], "in serving order"
        assert t.held == 0
        for lease in got:
            t.ack(lease)
        # The four acks wait for the next batch's transaction.
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[8]]
        second = t.claim("w", 30)
        assert second.event.kind == "a-1" and t.held == 3
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[4]]


def test_batches_keep_each_groups_order_and_serve_every_group_in_turn(qpath):
    with SqliteTransport(qpath, prefetch=7) as t:
        groups = [f"g{i}" for i in range(12)]
        publish(t, groups, per_group=3)
        order = []
        while (lease := t.claim("w", 30)) is not None:
            order.append(lease.event.kind)
            t.ack(lease)
    assert sorted(order) == sorted(f"{g}-{k}" for g in groups for k in range(3))
    for g in groups:
        assert [kind for kind in order if kind.startswith(f"{g}-")] == [f"{g}-{k}" for k in range(3)]
    assert {kind.split("-")[0] for kind in order[:12]} == set(groups), "no group twice before each had a turn"


def test_a_held_lease_older_than_a_tenth_of_its_visibility_is_extended_first(qpath, clock):
    with SqliteTransport(qpath, clock=clock, prefetch=10) as t:
        publish(t, ["a", "b", "c"])
        t.claim("w", 30)
        clock.now += 2  # b still has 28 s of 30: handed out as it is
        assert t.claim("w", 30).group_id == "b"
        assert inspect_db(qpath, "SELECT lock_expiry FROM harel_transport_messages WHERE group_id = 'c'") == [[1030.0]]
        clock.now += 2  # c has 26 s left
        assert t.claim("w", 30).group_id == "c"
        assert inspect_db(qpath, "SELECT lock_expiry FROM harel_transport_messages WHERE group_id = 'c'") == [[1034.0]]


def test_a_held_lease_another_worker_took_over_is_skipped(qpath, clock):
    with SqliteTransport(qpath, clock=clock, prefetch=10) as t, ht.Transport(qpath, clock=clock) as other:
        publish(t, ["a", "b", "c"])
        t.claim("w", 10)
        clock.now += 11  # b and c lapse while held; another worker takes b
        taken = other.claim_many("other", 30, max=3)
        assert sorted(lease.group_id for lease in taken) == ["a", "b", "c"]
        assert t.claim("w", 30) is None, "both held leases were lost: nothing to hand out"
        assert t.held == 0
        assert leased_to(qpath) == {"a": "other", "b": "other", "c": "other"}


def test_another_worker_on_the_same_transport_gets_what_a_worker_holds(qpath):
    with SqliteTransport(qpath, prefetch=10) as t:
        publish(t, ["a", "b"])
        assert t.claim("w1", 30).group_id == "a"
        b = t.claim("w2", 30)
        assert b.group_id == "b" and b.token == "w2", "given back by w1, claimed for w2"
        assert leased_to(qpath) == {"a": "w1", "b": "w2"}
        assert t.claim("w3", 30) is None


def test_a_held_lease_serves_claims_at_or_below_the_floor_it_was_claimed_under(qpath):
    with SqliteTransport(qpath, prefetch=10) as t:
        t.publish("lo", Event(kind="lo"), priority=0)
        t.publish("hi", Event(kind="hi"), priority=3)
        t.publish("top", Event(kind="top"), priority=3)
        first = t.claim("w", 30, min_priority=3)
        assert first.group_id in ("hi", "top") and t.held == 1
        assert t.claim("w", 30).group_id in ("hi", "top"), "claimed above 3: serves a claim at 0"
        assert t.claim("w", 30, min_priority=1) is None, "lo is below 1"
        assert t.claim("w", 30).group_id == "lo"
    with SqliteTransport(qpath, prefetch=10) as t:
        t.publish("hi2", Event(kind="hi2"), priority=3)
        t.publish("lo2", Event(kind="lo2"), priority=0)
        assert t.claim("w", 30).group_id == "hi2" and t.held == 1
        assert t.claim("w", 30, min_priority=3) is None, "lo2, held from a claim at 0, is below 3"
        assert t.claim("w", 30).group_id == "lo2"


def test_close_gives_back_what_is_held_and_applies_the_acks(qpath):
    t = SqliteTransport(qpath, prefetch=10)
    publish(t, ["a", "b", "c"])
    a = t.claim("w", 30)
    t.ack(a)
    t.close()
    with ht.Transport(qpath) as other:
        got = other.claim_many("other", 30, max=3)
        assert sorted(lease.group_id for lease in got) == ["b", "c"], "claimable at once, a acked"
        attempts = {lease.group_id: lease.attempts for lease in got}
        assert attempts == {"b": 2, "c": 2}, "a held lease counts as a claim"


def test_deferred_acks_wait_at_most_a_batch(qpath):
    with SqliteTransport(qpath, prefetch=3, defer_ack=True) as t, ht.Transport(qpath) as native:
        publish(t, [f"g{i}" for i in range(4)])
        leases = native.claim_many("w", 30, max=4)
        harel_leases = [_harel_lease(lease) for lease in leases]
        for lease in harel_leases[:3]:
            t.ack(lease)
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[4]]
        t.ack(harel_leases[3])  # a fourth: the three before are applied now, alone
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[1]]
        t.flush()
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]


def test_a_failed_claim_keeps_the_deferred_acks_and_a_failed_extend_the_held_lease(qpath, clock):
    with SqliteTransport(qpath, clock=clock, prefetch=10, defer_ack=True) as t:
        publish(t, ["a", "b"])
        a = t.claim("w", 30)
        t.ack(a)
        with pytest.raises(ht.ArgumentError, match="visibility"):
            t.claim("w", -1)  # b is held: extending it for -1 s is refused
        assert t.held == 1
        b = t.claim("w", 30)
        assert b.group_id == "b"
        t.ack(b)
        with pytest.raises(ht.ArgumentError, match="visibility"):
            t.claim("w", 0)  # nothing held: the batch's claim is refused, the acks kept
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[2]]
        assert t.claim("w", 30) is None
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]


def test_bad_arguments_are_refused_while_leases_are_held(qpath):
    with SqliteTransport(qpath, prefetch=10) as t:
        publish(t, ["a", "b"])
        t.claim("w", 30)
        with pytest.raises(ht.ArgumentError, match="worker_id must be a str"):
            t.claim(17, 30)
        with pytest.raises(ht.ArgumentError, match="worker_id holds a NUL"):
            t.claim("w\0x", 30)
        with pytest.raises(ht.ArgumentError, match="visibility must be a number"):
            t.claim("w", "30")
        with pytest.raises(ht.ArgumentError, match="min_priority must be an int"):
            t.claim("w", 30, "1")
        with pytest.raises(ht.ArgumentError, match="visibility"):
            t.claim("w", float("nan"))
        assert t.held == 1
        assert t.claim("w", 30).group_id == "b"


@pytest.mark.parametrize("bad", [0, -1, ht.MAX_CLAIM + 1, "all", 2.5, True, None])
def test_a_bad_prefetch_is_refused_before_the_file_is_opened(tmp_path, bad):
    path = tmp_path / "never.db"
    with pytest.raises(ht.ArgumentError, match="prefetch"):
        SqliteTransport(str(path), prefetch=bad)
    with pytest.raises(ht.ArgumentError, match="prefetch"):
        asyncio.run(AsyncSqliteTransport.create(str(path), prefetch=bad))
    assert not path.exists()


def test_the_adaptive_size():
    assert adaptive_size(None, None) == 1 and adaptive_size(0.001, None) == 1, "nothing measured yet"
    assert adaptive_size(0.001, 0.1) == 1, "a handler slower than a claim: no prefetch"
    assert adaptive_size(0.001, 0.001) == 4, "a batch is handed out in about four claims' time"
    assert adaptive_size(0.001, 0.00001) == AUTO_MAX and adaptive_size(0.001, 0.0) == AUTO_MAX


def test_auto_holds_nothing_for_a_slow_handler(qpath):
    with SqliteTransport(qpath, synchronous_full=False, prefetch="auto") as t:
        publish(t, ["a", "b", "c"], per_group=2)
        for _ in range(4):
            lease = t.claim("w", 30)
            assert lease is not None and t.held == 0
            threading.Event().wait(0.05)  # the handler: far slower than a claim
            t.ack(lease)


def test_threads_with_their_own_worker_ids_share_one_transport(qpath):
    with SqliteTransport(qpath, prefetch=5) as t:
        publish(t, [f"g{i}" for i in range(10)], per_group=20)
        seen, in_flight, errors = defaultdict(list), set(), []
        lock = threading.Lock()

        def work(worker_id):
            try:
                while (lease := t.claim(worker_id, 30)) is not None:
                    with lock:
                        assert lease.group_id not in in_flight, "two in flight in one group"
                        in_flight.add(lease.group_id)
                        seen[lease.group_id].append(int(lease.event.kind.split("-")[1]))
                    with lock:
                        in_flight.discard(lease.group_id)
                    t.ack(lease)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(f"w{k}",)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert not errors, errors
        assert {g: order for g, order in seen.items()} == {f"g{i}": list(range(20)) for i in range(10)}


def test_concurrent_async_claims_of_one_worker(qpath):
    async def main():
        t = await AsyncSqliteTransport.create(qpath, prefetch=8)
        for k in range(10):
            for i in range(12):
                await t.publish(f"g{i}", Event(kind=f"g{i}-{k}"))
        seen, in_flight = defaultdict(list), set()

        async def work():
            while (lease := await t.claim("w", 30)) is not None:
                assert lease.group_id not in in_flight, "two in flight in one group"
                in_flight.add(lease.group_id)
                seen[lease.group_id].append(int(lease.event.kind.split("-")[1]))
                await asyncio.sleep(0)
                in_flight.discard(lease.group_id)
                await t.ack(lease)

        await asyncio.gather(*(work() for _ in range(6)))
        await t.close()
        return seen

    seen = asyncio.run(main())
    assert dict(seen) == {f"g{i}": list(range(10)) for i in range(12)}
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]
