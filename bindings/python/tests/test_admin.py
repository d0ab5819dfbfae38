"""When a message keeps failing, and a look inside: `lease.attempts`, the `max_attempts`
option, dead letters (`dead_letter`, `dead_letters`, `redrive`, `purge_dead`), the purges
and `release`, `stats`, `groups` and `peek`; their bad input; the async face. The
semantics are the library's (its contract tests); these check the mapping."""

from __future__ import annotations

import asyncio
import ctypes

import pytest

import harel_transport as ht
from conftest import inspect_db, run_python
from harel_transport import AsyncTransport, Lease, Transport, _native


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def test_the_structs_have_the_headers_layout():
    # What include/harel_transport.h lays out on x86_64 (tests/c/header_check.c checks
    # the header against the library): a ctypes struct shorter than C's would be read
    # past by the library.
    sizes = {
        _native.HarelLease: 80,
        _native.HarelPriorityStats: 40,
        _native.HarelStats: 152,
        _native.HarelGroupInfo: 88,
        _native.HarelGroupPage: 32,
        _native.HarelMessageInfo: 56,
        _native.HarelMessagePage: 40,
        _native.HarelDeadLetter: 72,
        _native.HarelDeadPage: 40,
        _native.HarelHeader: 16,
        _native.HarelHeaders: 16,
        _native.HarelPause: 32,
        _native.HarelPauseList: 16,
        _native.HarelDelivery: 112,
    }
    assert {s.__name__: ctypes.sizeof(s) for s in sizes} == {s.__name__: n for s, n in sizes.items()}
    assert _native.HarelLease.attempts.offset == 56
    assert _native.HarelGroupInfo.head_attempts.offset == 80
    assert _native.HarelStats.oldest_ready_seq.offset == 88, "added at the end: older fields keep their offsets"
    assert (_native.HarelStats.delayed.offset, _native.HarelStats.next_due_at.offset) == (96, 104)
    assert _native.HarelStats.paused.offset == 112, "pause and resume: added at the end"
    assert _native.HarelStats.paused_by_priority.offset == 120, "each level's paused count: at the end"
    assert _native.HarelStats.expired.offset == 128, "expiry: added at the end"
    held, retrying = _native.HarelStats.held, _native.HarelStats.retrying
    assert (held.offset, retrying.offset) == (136, 144), "limits' held and retries' retrying: added at the end"
    # harel_delivery grows at its end; the library reads `size` bytes of it.
    assert (_native.HarelDelivery.debounce_max_delay.offset, _native.HarelDelivery.ttl.offset) == (56, 64)
    assert _native.HarelDelivery.expires_at.offset == 72
    assert [f[0] for f in _native.HarelDelivery._fields_][-7:] == [
        "debounce_max_delay", "ttl", "expires_at", "retry_base", "retry_factor", "retry_cap", "retry_jitter",
    ], "retries: added at the end (test_retry.py checks their offsets)"
    assert (_native.HarelPause.name_len.offset, _native.HarelPause.paused_at.offset) == (16, 24)
    # The shards of a page (sharded queues) were added at the end of the pages.
    assert (_native.HarelGroupPage.shards.offset, _native.HarelDeadPage.shards.offset) == (24, 24)
    # The headers, added at the end of the lease and of the pages.
    assert (_native.HarelLease.headers.offset, _native.HarelLease.n_headers.offset) == (64, 72)
    assert (_native.HarelMessagePage.headers.offset, _native.HarelDeadPage.headers.offset) == (24, 32)
    from harel_transport._leases import _LeaseArg

    assert ctypes.sizeof(_LeaseArg) == 80
    assert [f[0] for f in _LeaseArg._fields_] == [f[0] for f in _native.HarelLease._fields_]


def test_attempts_count_every_claim(t, clock):
    t.publish("g", '{"n":0}')
    first = t.claim("w", 10)
    assert first.attempts == 1
    t.nack(first)
    second = t.claim("w", 10)
    assert (second.seq, second.attempts) == (first.seq, 2), "a nack(0) is a delivery"
    clock.now += 11
    third = t.claim("w2", 10)
    assert (third.seq, third.attempts) == (first.seq, 3), "a lapsed lease is a delivery"
    assert t.peek("g").items[0].attempts == 3
    assert Lease(1, "g", "{}", "w", 0.0).attempts == 0, "a Lease built by hand"


def test_max_attempts_moves_a_message_out_after_n_claims(qpath, clock):
    with Transport(qpath, clock=clock, max_attempts=2) as t:
        t.publish("g", '{"n":0}')
        t.publish("g", '{"n":1}')
        first = t.claim("w1", 10)
        t.nack(first)
        again = t.claim("w2", 10)
        assert (again.seq, again.attempts) == (first.seq, 2)
        clock.now += 11  # w2 dies holding it
        nxt = t.claim("w3", 10)
        assert nxt.event == '{"n":1}', "the third claim moved the message out; the group goes on"
        dead = t.dead_letters()
        assert dead.next is None and len(dead.items) == 1
        d = dead.items[0]
        assert (d.seq, d.group_id, d.event, d.attempts, d.last_worker) == (first.seq, "g", '{"n":0}', 2, "w2")
        assert "max_attempts is 2" in d.reason
        assert d.dead_at == clock.now
        assert d.json() == {"n": 0} and d.event_bytes == b'{"n":0}'
        with pytest.raises(ht.LeaseLostError):
            t.ack(again)
    # 0 is no limit, and is the default.
    with Transport(qpath, clock=clock, max_attempts=0) as t:
        t.publish("h", "{}")
        for n in range(1, 6):
            lease = t.claim("w", 10)
            assert lease.attempts == n
            t.nack(lease)


def test_dead_letter_moves_the_held_message_out(t):
    t.publish("g", '{"n":0}', priority=3, routing_key="k")
    t.publish("g", '{"n":1}')
    lease = t.claim("w", 10, routing_keys=["k"])
    assert t.dead_letter(lease, "cannot parse") is None
    with pytest.raises(ht.LeaseLostError):
        t.dead_letter(lease, "again")
    assert t.claim("w", 10, routing_keys=["k"]).event == '{"n":1}', "the group goes on at once"
    page = t.dead_letters(group_id="g")
    assert [(d.reason, d.last_worker, d.attempts, d.dead_at) for d in page.items] == [("cannot parse", "w", 1, 1000.0)]
    assert t.dead_letters(group_id="other").items == []
    assert t.stats().dead == 1


def dead(t, groups):
    """Publishes one message into each of `groups` (in order) and dead-letters them all."""
    for g in groups:
        t.publish(g, f'"{g}"')
    while True:
        lease = t.claim("w", 10)
        if lease is None:
            return
        t.dead_letter(lease, "poison")


def test_dead_letters_come_in_pages(t):
    dead(t, ["a", "b", "a", "c", "b"])
    first = t.dead_letters(limit=2)
    assert len(first) == 2 and isinstance(first.next, str)
    second = t.dead_letters(cursor=first.next, limit=2)
    third = t.dead_letters(cursor=second.next, limit=2)
    assert third.next is None
    everything = [d for page in (first, second, third) for d in page]
    assert [d.seq for d in everything] == sorted(d.seq for d in everything) and len(everything) == 5
    assert [d.group_id for d in t.dead_letters(group_id="b")] == ["b", "b"]


def test_redrive_by_seqs_group_and_all(t):
    dead(t, ["g", "g", "g", "h"])
    seqs = [d.seq for d in t.dead_letters(group_id="g")]
    assert t.redrive(seqs=seqs[2:] + [999_999]) == 1, "unknown seqs are passed over"
    assert t.redrive(group_id="g") == 2
    assert t.redrive(group_id="g") == 0
    assert t.redrive(all=True) == 1, "h's"
    back = t.peek("g").items
    assert [m.event for m in back] == ['"g"'] * 3 and all(m.attempts == 0 for m in back)
    assert all(m.seq > seqs[2] for m in back), "the newest messages"
    assert t.stats().dead == 0
    assert t.redrive(seqs=(s for s in [1])) == 0, "any iterable of int"


def test_purge_dead_by_seqs_group_and_all(t):
    dead(t, ["a", "a", "b", "c"])
    first = t.dead_letters(limit=1).items[0]
    assert t.purge_dead(seqs=[first.seq, 999_999]) == 1
    assert t.purge_dead(group_id="a") == 1
    assert t.purge_dead(all=True) == 2
    assert t.dead_letters().items == [] and t.stats().dead == 0


def test_purge_group_and_purge(t):
    for g in ["a", "a", "b", "c"]:
        t.publish(g, "{}")
    held = t.claim("w", 10)
    assert held.group_id == "a"
    assert t.purge_group("a") == 2
    assert t.purge_group("a") == 0
    with pytest.raises(ht.LeaseLostError):
        t.ack(held)
    lease = t.claim("w", 10)
    t.dead_letter(lease, "kept")
    assert t.purge() == 1
    s = t.stats()
    assert (s.messages, s.groups, s.dead) == (0, 0, 1), "dead letters stay"
    assert t.purge() == 0


def test_release_frees_a_stuck_group(t):
    t.publish("g", "{}")
    t.publish("p", "{}")
    stuck = t.claim("w1", 3600)
    parked = t.claim("w1", 3600)
    t.nack(parked, 3600)
    assert t.claim("w2") is None
    assert t.release(stuck.group_id) is True
    assert t.release(parked.group_id) is True
    assert t.release(stuck.group_id) is False, "nothing held any more"
    assert t.release("none") is False
    again = t.claim("w2")
    assert (again.seq, again.attempts) == (stuck.seq, 2)
    with pytest.raises(ht.LeaseLostError):
        t.ack(stuck)


def test_stats_count_every_state(t, clock):
    empty = t.stats()
    assert isinstance(empty, ht.Stats)
    assert (empty.now, empty.messages, empty.groups, empty.ready, empty.leased, empty.parked, empty.dead) == (
        1000.0, 0, 0, 0, 0, 0, 0,
    )
    assert (empty.oldest_ready_age, empty.oldest_ready_seq, empty.next_release_at, empty.by_priority) == (
        None, None, None, [],
    )
    assert (empty.delayed, empty.next_due_at) == (0, None)
    t.publish("leased", "0")
    clock.now += 1
    t.publish("parked", "1", priority=2)
    t.publish("parked", "2")
    t.publish("ready", "3", priority=2)
    t.publish("dead", "4", priority=4)
    assert t.claim("w", 10).group_id == "leased"
    parked = t.claim("w", 10)
    assert parked.group_id == "parked"
    t.nack(parked, 5)
    t.dead_letter(t.claim("w", 10, min_priority=4), "x")
    clock.now += 2
    s = t.stats()
    assert (s.now, s.messages, s.groups, s.ready, s.leased, s.parked, s.dead) == (1003.0, 4, 3, 1, 1, 1, 1)
    assert (s.delayed, s.next_due_at) == (0, None), "test_producers.py has the delayed ones"
    assert s.oldest_ready_age == 2.0
    assert s.oldest_ready_seq == 4, "the ready group's message was the fourth published"
    assert s.next_release_at == 1006.0, "the park ends before the lease"
    assert s.by_priority == [ht.PriorityStats(0, 1, 0, 1, 0), ht.PriorityStats(2, 2, 1, 0, 1)]
    clock.now += 20
    later = t.stats()
    assert (later.ready, later.leased, later.parked, later.next_release_at) == (3, 0, 0, None)


def test_groups_in_pages_and_by_state(t):
    for n, g in enumerate(["e", "d", "c", "b", "a"]):
        t.publish(g, str(n), priority=1, routing_key="key")
    t.publish("a", "9")
    held = t.claim("w1", 30)
    assert held.group_id == "e"
    parked = t.claim("w2", 30)
    t.nack(parked, 60)
    first = t.groups(limit=2)
    assert [g.group_id for g in first.items] == ["a", "b"]
    a = first.items[0]
    assert isinstance(a, ht.GroupInfo)
    assert (a.state, a.depth, a.head_seq, a.head_age, a.holder, a.lock_expiry, a.priority, a.routing_key, a.head_attempts) == (
        "ready", 2, 5, 0.0, None, None, 1, "key", 0,
    )
    rest = t.groups(cursor=first.next, limit=10)
    assert [g.group_id for g in rest] == ["c", "d", "e"] and rest.next is None
    (leased,) = t.groups("leased").items
    assert (leased.group_id, leased.state, leased.holder, leased.lock_expiry, leased.head_attempts) == ("e", "leased", "w1", 1030.0, 1)
    (p,) = t.groups(state="parked").items
    assert (p.group_id, p.state, p.holder, p.lock_expiry) == (parked.group_id, "parked", None, 1060.0)
    ready = t.groups("ready", limit=2)
    more = t.groups("ready", ready.next, 2)
    assert (len(ready), len(more), more.next) == (2, 1, None)
    assert t.groups(limit=10_000).next is None


def test_peek_shows_a_groups_messages_without_claiming(t, clock):
    for n in range(5):
        t.publish("g", f'{{"n":{n}}}')
        clock.now += 1
    lease = t.claim("w", 30)
    first = t.peek("g", limit=3)
    got = [(m.seq, m.event, m.attempts, m.locked_by, m.lock_expiry, m.published_at) for m in first.items]
    assert got == [
        (1, '{"n":0}', 1, "w", 1035.0, 1000.0),
        (2, '{"n":1}', 0, None, None, 1001.0),
        (3, '{"n":2}', 0, None, None, 1002.0),
    ]
    assert isinstance(first.items[0], ht.MessageInfo) and first.items[1].json() == {"n": 1}
    rest = t.peek("g", first.next, 3)
    assert [m.json()["n"] for m in rest] == [3, 4] and rest.next is None
    assert t.peek("none").items == []
    t.nack(lease, 10)
    assert t.peek("g", limit=1).items[0].locked_by == "__parked__"


def test_a_group_id_and_event_holding_nul_from_another_writer_in_the_looks(qpath):
    Transport(qpath).close()
    run_python(
        """
        import sqlite3, sys
        c = sqlite3.connect(sys.argv[1])
        c.execute("INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)", ("a\\x00b", '"x\\x00y"'))
        c.execute("INSERT INTO harel_transport_groups (group_id) VALUES (?)", ("a\\x00b",))
        c.commit()
        """,
        qpath,
    )
    with Transport(qpath) as t:
        (g,) = t.groups().items
        assert g.group_id == "a\0b"
        assert g.head_age is None, "harel's writers stamp no time"
        lease = t.claim("w")
        t.dead_letter(lease, "nul")  # the group id goes back whole, with its length
        (d,) = t.dead_letters().items
        assert (d.group_id, d.event) == ("a\0b", '"x\0y"')
        assert t.redrive(seqs=[d.seq]) == 1
        assert t.claim("w").event == '"x\0y"'
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_groups") == [[1]]


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, names",
    [
        # max_attempts: a uint32
        (lambda t, l, q: Transport(q, max_attempts=-1), "max_attempts must be 0..4294967295"),
        (lambda t, l, q: Transport(q, max_attempts=2**32), "max_attempts must be 0..4294967295"),
        (lambda t, l, q: Transport(q, max_attempts=True), "max_attempts must be an int, got bool"),
        (lambda t, l, q: Transport(q, max_attempts=2.0), "max_attempts must be an int, got float"),
        # dead_letter
        (lambda t, l, q: t.dead_letter(l, ""), "reason is empty"),
        (lambda t, l, q: t.dead_letter(l, "a\0b"), "reason holds a NUL"),
        (lambda t, l, q: t.dead_letter(l, None), "reason must be a str"),
        (lambda t, l, q: t.dead_letter("lease", "x"), "lease must be a Lease"),
        (lambda t, l, q: t.dead_letter(Lease(l.seq, "", "{}", "w", 0.0), "x"), "lease.group_id is empty"),
        # redrive, purge_dead: exactly one selection
        (lambda t, l, q: t.redrive(), "exactly one of all=True, group_id or seqs (got none)"),
        (lambda t, l, q: t.redrive(all=True, group_id="g"), "(got all and group_id)"),
        (lambda t, l, q: t.redrive(group_id="g", seqs=[1]), "(got group_id and seqs)"),
        (lambda t, l, q: t.purge_dead(), "exactly one of all=True, group_id or seqs"),
        (lambda t, l, q: t.purge_dead(all=True, seqs=[1]), "(got all and seqs)"),
        (lambda t, l, q: t.redrive(all=1), "all must be True or False, got int 1"),
        (lambda t, l, q: t.redrive(group_id=""), "group_id is empty"),
        (lambda t, l, q: t.purge_dead(group_id=""), "group_id is empty"),
        (lambda t, l, q: t.redrive(group_id="g\0"), "group_id holds a NUL"),
        (lambda t, l, q: t.redrive(seqs=[]), "seqs is empty"),
        (lambda t, l, q: t.purge_dead(seqs=()), "seqs is empty"),
        (lambda t, l, q: t.redrive(seqs=5), "seqs must be a sequence of int"),
        (lambda t, l, q: t.redrive(seqs="12"), "seqs must be a sequence of int"),
        (lambda t, l, q: t.redrive(seqs=[1, "2"]), "seqs[1] must be an int64"),
        (lambda t, l, q: t.purge_dead(seqs=[2**63]), "seqs[0] must be an int64"),
        (lambda t, l, q: t.redrive(seqs=[True]), "seqs[0] must be an int64"),
        # purge_group, release
        (lambda t, l, q: t.purge_group(""), "group_id is empty"),
        (lambda t, l, q: t.purge_group(None), "group_id must be a str"),
        (lambda t, l, q: t.release(""), "group_id is empty"),
        (lambda t, l, q: t.release("g\0"), "group_id holds a NUL"),
        # groups
        (lambda t, l, q: t.groups(limit=0), "limit is 0; it must be 1..10000"),
        (lambda t, l, q: t.groups(limit=10_001), "limit is 10001; it must be 1..10000"),
        (lambda t, l, q: t.groups(limit=-1), "limit is -1; it must be 1..10000"),
        (lambda t, l, q: t.groups(limit=2**64), "it must be 1..10000"),
        (lambda t, l, q: t.groups(limit=1.5), "limit must be an int, got float"),
        (lambda t, l, q: t.groups(limit=True), "limit must be an int, got bool"),
        (lambda t, l, q: t.groups(cursor="x1.00"), "is not a cursor of this listing"),
        (lambda t, l, q: t.groups(cursor="m1.00"), "is not a cursor of this listing"),
        (lambda t, l, q: t.groups(cursor=7), "cursor must be a str"),
        (lambda t, l, q: t.groups("stuck"), "state must be None, 'ready', 'leased', 'parked', 'delayed', 'paused', "),
        (lambda t, l, q: t.groups("Delayed"), "state must be None"),
        (lambda t, l, q: t.groups(1), "state must be None"),
        # peek
        (lambda t, l, q: t.peek(""), "group_id is empty"),
        (lambda t, l, q: t.peek(None), "group_id must be a str"),
        (lambda t, l, q: t.peek("g", limit=0), "limit is 0"),
        (lambda t, l, q: t.peek("g", cursor="g1.67"), "is not a cursor of this listing"),
        # dead_letters
        (lambda t, l, q: t.dead_letters(group_id=""), "group_id is empty"),
        (lambda t, l, q: t.dead_letters(limit=0), "limit is 0"),
        (lambda t, l, q: t.dead_letters(cursor="nonsense"), "is not a cursor of this listing"),
    ],
)
def test_bad_arguments(t, tmp_path, call, names):
    t.publish("g", "{}")
    lease = t.claim("w")
    with pytest.raises(ht.ArgumentError) as e:
        call(t, lease, str(tmp_path / "other.db"))
    assert names in e.value.message
    # nothing changed: the message is still held by w, nothing is dead
    assert t.peek("g").items[0].locked_by == "w"
    assert t.stats().dead == 0


def test_a_cursor_of_another_listing_is_refused(t):
    for g in "abc":
        t.publish(g, "{}")
    groups_cursor = t.groups(limit=1).next
    with pytest.raises(ht.ArgumentError):
        t.peek("a", cursor=groups_cursor)
    with pytest.raises(ht.ArgumentError):
        t.dead_letters(cursor=groups_cursor)


def test_after_close_every_new_call_fails(qpath):
    t = Transport(qpath)
    t.close()
    lease = Lease(1, "g", "{}", "w", 0.0)
    for call in (
        lambda: t.dead_letter(lease, "x"),
        lambda: t.redrive(all=True),
        lambda: t.purge_dead(all=True),
        lambda: t.purge_group("g"),
        lambda: t.purge(),
        lambda: t.release("g"),
        lambda: t.stats(),
        lambda: t.groups(),
        lambda: t.peek("g"),
        lambda: t.dead_letters(),
    ):
        with pytest.raises(ht.TransportClosedError):
            call()


# -- the async face ----------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock, max_attempts=1) as t:
            await t.publish("g", '{"n":0}')
            await t.publish("g", '{"n":1}')
            await t.publish("h", '{"n":2}')
            first = await t.claim("w", 10)
            assert (first.group_id, first.attempts) == ("g", 1)
            s = await t.stats()
            assert (s.messages, s.groups, s.leased, s.ready) == (3, 2, 1, 1)
            assert [g.group_id for g in (await t.groups(state="leased")).items] == ["g"]
            assert [m.event for m in (await t.peek("g", limit=1)).items] == ['{"n":0}']
            await t.nack(first)
            # max_attempts=1: a claim that would hand g's head out again moves it out
            leases = {lease.event: lease for lease in [await t.claim("w", 10), await t.claim("w", 10)]}
            assert sorted(leases) == ['{"n":1}', '{"n":2}']
            (d,) = (await t.dead_letters("g")).items
            assert (d.event, d.attempts) == ('{"n":0}', 1)
            assert "max_attempts is 1" in d.reason
            assert await t.release("h") is True
            assert await t.claim("w2", 10) is None, "h's head, released, is dead at its next claim"
            (h,) = (await t.dead_letters(group_id="h")).items
            assert await t.redrive(group_id="g") == 1
            assert await t.purge_dead(seqs=[h.seq]) == 1
            assert await t.purge_dead(all=True) == 0
            await t.dead_letter(leases['{"n":1}'], "no")
            assert [x.reason for x in (await t.dead_letters()).items] == ["no"]
            assert await t.redrive(seqs=iter([leases['{"n":1}'].seq])) == 1
            assert await t.purge_group("g") == 2
            assert await t.purge() == 0
            with pytest.raises(ht.ArgumentError):
                await t.redrive()
            with pytest.raises(ht.ArgumentError):
                await t.groups(limit=0)
        with pytest.raises(ht.TransportClosedError):
            await t.stats()

    asyncio.run(main())
