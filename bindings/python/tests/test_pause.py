"""Pause and resume: `pause`, `resume` and `pauses`, sync and async; the group state
"paused" (listed and filtered), `Stats.paused` and each level's; their bad input; threads and tasks pausing,
resuming and claiming at once. The semantics are the library's (its contract tests); these
check the mapping: each call and answer, each kind of pause, what the looks show, the
statuses, and that every refusal is an `ArgumentError` naming the problem, the queue
unchanged. harel 0.9's own transport on a paused file: test_pause_interop.py."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import random
import threading
import time
import typing
from concurrent.futures import ThreadPoolExecutor

import pytest

import harel_transport as ht
from conftest import LoopTicker
from harel_transport import AsyncTransport, Pause, Transport


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def states(t):
    return {g.group_id: g.state for g in t.groups()}


def drain(t, worker="w"):
    """Claims and acks until nothing is deliverable: (group, event) in the order served."""
    served = []
    while (lease := t.claim(worker, 30)) is not None:
        served.append((lease.group_id, lease.event))
        t.ack(lease)
    return served


# -- the values and the signatures -------------------------------------------------------


def test_the_values_and_the_signatures():
    assert ht.GROUP_STATES == (
        "ready", "leased", "parked", "delayed", "paused", "held", "retrying"
    ), "harel_group_state's order"
    assert ht.PAUSE_KINDS == ("queue", "group", "routing_key"), "harel_pause_kind's order"
    assert typing.get_args(ht.PauseKind) == ht.PAUSE_KINDS
    p = Pause("group", "g", 12.5)
    assert (p.kind, p.name, p.paused_at) == ("group", "g", 12.5)
    assert [f.name for f in dataclasses.fields(Pause)] == ["kind", "name", "paused_at"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.name = "h"  # type: ignore[misc]
    assert typing.get_type_hints(Pause) == {"kind": ht.PauseKind, "name": str, "paused_at": float}
    # Stats gained paused last, with a default: positional construction of the rest still works
    assert [f.name for f in dataclasses.fields(ht.Stats)][-4:] == ["paused", "expired", "held", "retrying"], (
        "expired, held and retrying came after it"
    )
    assert ht.Stats(0.0, 0, 0, 0, 0, 0, 0, None, None, [], None, 0, None).paused == 0
    # and PriorityStats too
    assert [f.name for f in dataclasses.fields(ht.PriorityStats)][-1] == "paused"
    assert ht.PriorityStats(1, 2, 1, 0, 0).paused == 0
    assert ht.PriorityStats(1, 2, 1, 0, 0, 1) == ht.PriorityStats(1, 2, 1, 0, 0, paused=1)

    for cls in (Transport, AsyncTransport):
        for name in ("pause", "resume"):
            fn = getattr(cls, name)
            params = inspect.signature(fn).parameters
            assert [(p.name, p.kind, p.default) for p in list(params.values())[1:]] == [
                ("group_id", inspect.Parameter.KEYWORD_ONLY, None),
                ("routing_key", inspect.Parameter.KEYWORD_ONLY, None),
            ], (cls, name)
            hints = typing.get_type_hints(fn)
            assert hints == {"group_id": typing.Optional[str], "routing_key": typing.Optional[str], "return": bool}
            assert fn.__doc__
        assert typing.get_type_hints(cls.pauses) == {"return": typing.List[Pause]}
        assert cls.pauses.__doc__
    for name in ("pause", "resume", "pauses"):
        assert inspect.iscoroutinefunction(getattr(AsyncTransport, name)), name
        assert not inspect.iscoroutinefunction(getattr(Transport, name)), name


# -- each kind of pause ------------------------------------------------------------------


def test_pause_and_resume_a_group(t, clock):
    t.publish_many([("a", "1"), ("b", "2"), ("a", "3"), ("b", "4")])
    assert t.pauses() == []
    clock.now = 1234.5
    assert t.pause(group_id="a") is True, "a new pause"
    clock.now = 1300
    assert t.pause(group_id="a") is False, "there already: nothing changed"
    assert t.pauses() == [Pause("group", "a", 1234.5)], "paused_at: the first pause's, by the transport's clock"
    assert states(t) == {"a": "paused", "b": "ready"}
    assert [m.seq for m in t.peek("a")] == [1, 3], "its messages stay, in order"
    assert drain(t) == [("b", "2"), ("b", "4")], "claims pass it over"
    assert t.claim_many("w", max=10) == []
    t.publish("a", "5")  # publishes go on, into the paused group too
    assert [m.seq for m in t.peek("a")] == [1, 3, 5] and states(t) == {"a": "paused"}

    assert t.resume(group_id="a") is True
    assert t.resume(group_id="a") is False, "no such pause: nothing changed"
    assert t.resume(group_id="never-paused") is False
    assert t.pauses() == [] and states(t) == {"a": "ready"}
    assert drain(t) == [("a", "1"), ("a", "3"), ("a", "5")], "served again from its head, in order"


def test_a_group_paused_before_it_has_messages(t):
    assert t.pause(group_id="later") is True, "whether or not it has messages now"
    assert states(t) == {}
    t.publish("later", "1", priority=3)
    t.publish("other", "2")
    assert states(t) == {"later": "paused", "other": "ready"}
    (later,) = t.groups("paused").items
    assert later.priority == 3, "a paused group shows its own priority"
    assert drain(t) == [("other", "2")]
    assert t.resume(group_id="later") is True
    assert drain(t) == [("later", "1")]


def test_pause_and_resume_a_routing_key(t):
    t.publish("eu-1", "1", routing_key="eu")
    t.publish("us-1", "2", routing_key="us")
    t.publish("none", "3")
    assert t.pause(routing_key="eu") is True
    assert t.pause(routing_key="eu") is False
    t.publish("eu-2", "4", routing_key="eu")  # a group made while the pause lasts
    assert states(t) == {"eu-1": "paused", "eu-2": "paused", "us-1": "ready", "none": "ready"}
    assert t.pauses() == [Pause("routing_key", "eu", 1000.0)]
    assert t.claim("w", routing_keys=["eu"]) is None, "not even by its key"
    assert sorted(drain(t)) == [("none", "3"), ("us-1", "2")]
    assert t.resume(routing_key="eu") is True and t.resume(routing_key="eu") is False
    assert sorted(drain(t)) == [("eu-1", "1"), ("eu-2", "4")]


def test_pause_and_resume_the_queue(t):
    t.publish_many([("a", "1"), ("b", "2")])
    assert t.pause() is True, "neither: the whole queue"
    assert t.pause() is False
    assert t.pause(group_id=None, routing_key=None) is False, "None is not given"
    t.publish("c", "3")  # a group made while the pause lasts
    assert states(t) == {"a": "paused", "b": "paused", "c": "paused"}
    assert t.pauses() == [Pause("queue", "", 1000.0)], 'the queue\'s name is ""'
    assert t.claim("w") is None and t.claim_many("w", max=5) == []
    assert t.resume() is True and t.resume() is False
    assert sorted(drain(t)) == [("a", "1"), ("b", "2"), ("c", "3")]


def test_pauses_are_apart_and_listed_queue_first_then_by_kind_and_name(t, clock):
    t.publish("a", "1", routing_key="k")
    t.publish("b", "2")
    for target in ({"routing_key": "z"}, {"group_id": "b"}, {"routing_key": "k"}, {"group_id": "a"}, {}):
        assert t.pause(**target) is True
        clock.now += 1
    assert t.pauses() == [
        Pause("queue", "", 1004.0),
        Pause("group", "a", 1003.0),
        Pause("group", "b", 1001.0),
        Pause("routing_key", "k", 1002.0),
        Pause("routing_key", "z", 1000.0),
    ]
    assert t.resume() is True
    assert states(t) == {"a": "paused", "b": "paused"}, "each still named by a pause of its own"
    assert t.resume(group_id="a") is True
    assert states(t) == {"a": "paused", "b": "paused"}, "a: its routing key's pause still holds it"
    assert t.resume(routing_key="k") is True
    assert states(t) == {"a": "ready", "b": "paused"}
    assert t.pause() is True and t.resume(group_id="b") is True
    assert states(t) == {"a": "paused", "b": "paused"}, "the queue's pause holds both"
    assert t.resume() is True and t.resume(routing_key="z") is True
    assert states(t) == {"a": "ready", "b": "ready"} and t.pauses() == []


def test_a_lease_taken_before_the_pause_finishes(t, clock):
    t.publish_many([("a", "1"), ("a", "2"), ("b", "3"), ("b", "4"), ("c", "5"), ("c", "6")])
    la, lb, lc = t.claim_many("w", 30, max=3)
    assert [x.group_id for x in (la, lb, lc)] == ["a", "b", "c"]
    assert t.pause() is True
    s = t.stats()
    assert (s.groups, s.ready, s.leased, s.parked, s.delayed, s.paused) == (3, 0, 0, 0, 0, 3), (
        "a paused group is in none of ready, leased, parked, delayed"
    )
    (a, b, c) = t.groups("paused").items
    assert (a.state, a.holder, a.lock_expiry, a.head_seq) == ("paused", "w", 1030.0, 1), "its holder still shows"
    assert t.groups("leased").items == [], "listed as paused only"
    longer = t.extend(la, 60)
    assert longer.lock_expiry == 1060.0
    t.ack(longer)
    t.nack(lb)
    t.dead_letter(lc, "no")
    assert [d.seq for d in t.dead_letters()] == [5]
    assert states(t) == {"a": "paused", "b": "paused", "c": "paused"}, "finishing leaves each paused"
    assert t.claim("w") is None
    assert [(g.group_id, g.head_seq, g.holder) for g in t.groups()] == [("a", 2, None), ("b", 3, None), ("c", 6, None)]
    assert t.resume() is True
    assert sorted(drain(t)) == [("a", "2"), ("b", "3"), ("b", "4"), ("c", "6")]


def test_resume_leaves_a_parked_or_delayed_head_held_until_its_time(t, clock):
    t.publish_many([("parked", "1"), ("parked", "2")])
    t.nack(t.claim("w"), 60)
    t.publish_with("delayed", "3", delay=30)
    t.pause(group_id="parked")
    t.pause(group_id="delayed")
    assert states(t) == {"parked": "paused", "delayed": "paused"}, "paused only, whatever its head"
    s = t.stats()
    assert (s.parked, s.delayed, s.paused) == (0, 0, 2)
    t.resume(group_id="parked")
    t.resume(group_id="delayed")
    assert states(t) == {"parked": "parked", "delayed": "delayed"}
    assert [(g.group_id, g.lock_expiry) for g in t.groups()] == [("delayed", 1030.0), ("parked", 1060.0)]
    clock.now = 1030.5
    assert drain(t) == [("delayed", "3")]
    clock.now = 1060.5
    assert drain(t) == [("parked", "1"), ("parked", "2")]


def test_stats_count_the_paused_groups(t):
    t.publish("low", "1", priority=0)
    t.publish("high", "2", priority=3)
    t.publish("high-2", "3", priority=3)
    t.pause(group_id="high")
    s = t.stats()
    assert (s.messages, s.groups, s.ready, s.paused) == (3, 3, 2, 1)
    assert s.by_priority == [ht.PriorityStats(0, 1, 1, 0, 0, 0), ht.PriorityStats(3, 2, 1, 0, 0, 1)], (
        "per level a paused group is in groups and paused only, at its own priority"
    )
    assert s.oldest_ready_seq == 1
    t.pause()
    s = t.stats()
    assert (s.ready, s.paused, s.oldest_ready_seq, s.oldest_ready_age) == (0, 3, None, None)
    assert [(p.priority, p.groups, p.paused) for p in s.by_priority] == [(0, 1, 1), (3, 2, 2)]
    t.resume()
    t.resume(group_id="high")
    s = t.stats()
    assert s.paused == 0 and all(p.paused == 0 for p in s.by_priority)


def _level_delayed(p):
    """A level's delayed groups: what its other counts leave."""
    return p.groups - p.ready - p.leased - p.parked - p.paused


def test_each_level_counts_its_paused_groups_apart_from_its_delayed(t):
    t.publish("plain", "1")
    t.publish("ready", "2", priority=2)
    t.publish("paused", "3", priority=2)
    t.publish_with("delayed", "4", priority=2, delay=60)
    t.publish_with("paused-delayed", "5", priority=2, delay=60)
    t.publish("top", "6", priority=4, routing_key="k")
    t.pause(group_id="paused")
    t.pause(group_id="paused-delayed")
    t.pause(routing_key="k")
    s = t.stats()
    assert (s.groups, s.ready, s.delayed, s.paused) == (6, 2, 1, 3)
    assert s.by_priority == [
        ht.PriorityStats(0, 1, 1, 0, 0, 0),
        ht.PriorityStats(2, 4, 1, 0, 0, 2),
        ht.PriorityStats(4, 1, 0, 0, 0, 1),
    ]
    assert [_level_delayed(p) for p in s.by_priority] == [0, 1, 0], "a paused delayed head counts as paused only"
    assert sum(_level_delayed(p) for p in s.by_priority) == s.delayed
    assert sum(p.paused for p in s.by_priority) == s.paused
    t.resume(group_id="paused-delayed")  # its head is not due: delayed again
    s = t.stats()
    assert s.by_priority[1] == ht.PriorityStats(2, 4, 1, 0, 0, 1)
    assert [_level_delayed(p) for p in s.by_priority] == [0, 2, 0] and s.delayed == 2


def test_the_state_filter(t):
    t.publish_many([("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")])
    for g in ("a", "c", "d"):
        t.pause(group_id=g)
    page = t.groups("paused", limit=2)
    assert [g.group_id for g in page] == ["a", "c"] and page.next is not None
    rest = t.groups("paused", cursor=page.next, limit=2)
    assert [g.group_id for g in rest] == ["d"] and rest.next is None
    assert [g.group_id for g in t.groups("ready")] == ["b"]
    assert {g.state for g in t.groups("paused")} == {"paused"}


def test_a_pause_is_stored_in_the_queue(qpath, clock):
    with Transport(qpath, clock=clock) as first:
        first.publish("a", "1")
        first.pause(group_id="a")
        with Transport(qpath) as second:  # another transport on the file sees it
            assert second.pauses() == [Pause("group", "a", 1000.0)]
            assert second.claim("w") is None
            assert second.pause(group_id="a") is False
    with Transport(qpath) as reopened:  # it outlives the transports
        assert [g.state for g in reopened.groups()] == ["paused"]
        assert reopened.resume(group_id="a") is True
        assert reopened.claim("w").event == "1"


def test_a_sharded_queue_pauses_every_shard(tmp_path, clock):
    paths = [str(tmp_path / f"shard{i}.db") for i in range(3)]
    groups = [f"g{i}" for i in range(8)]
    assert len({ht.shard_of(g, 3) for g in groups}) == 3, "the groups are spread over the shards"
    with Transport.open_shards(paths, clock=clock) as t:
        for g in groups:
            t.publish(g, json.dumps(g))
        assert t.pause() is True and t.pause(group_id="g1") is True
        assert t.pause() is False, "on every shard already"
        assert t.pauses() == [Pause("queue", "", 1000.0), Pause("group", "g1", 1000.0)], "merged, once each"
        assert t.stats().paused == 8 and {g.state for g in t.groups()} == {"paused"}
        assert t.claim("w") is None
        assert t.resume() is True
        assert sorted(g for g, _ in drain(t)) == sorted(set(groups) - {"g1"})
        assert t.resume(group_id="g1") is True and t.resume(group_id="g1") is False
        assert drain(t) == [("g1", '"g1"')]


def test_a_queue_without_the_pauses_table(qpath):
    """Opened with create_schema off, a queue whose schema lacks the pauses table (made by
    a migration tool from an older schema_sql): pause and resume are a DatabaseError saying
    what to run, pauses() is empty, the rest works."""
    with Transport(qpath) as t, t.transaction() as tx:
        for statement in ht.schema_sql("old").split(";\n"):
            if statement.strip() and "pauses" not in statement:
                tx.execute(statement)
    with Transport(qpath, prefix="old", create_schema=False) as old:
        old.publish("g", "1")
        for call in (lambda: old.pause(), lambda: old.resume(group_id="g"), lambda: old.pause(routing_key="k")):
            with pytest.raises(ht.DatabaseError) as e:
                call()
            assert "the table old_transport_pauses or its triggers are missing" in e.value.message
            assert e.value.status == -2 and e.value.code == "HAREL_ERR_DATABASE"
        assert old.pauses() == []
        assert old.stats().paused == 0 and old.claim("w").event == "1"


def test_a_closed_transport(qpath):
    t = Transport(qpath)
    t.close()
    for call in (lambda: t.pause(), lambda: t.resume(group_id="g"), lambda: t.pauses()):
        with pytest.raises(ht.TransportClosedError):
            call()


def test_every_list_and_error_is_freed(t, monkeypatch):
    """Counts what the library hands out against what is freed: each pause list (an empty
    one too), each error of a refused pause or resume."""
    lib = ht._native.lib()
    counts = {}

    def counting(name, nonnull=False):
        fn = getattr(lib, name)

        def wrapper(*args):
            status = fn(*args)
            if (not nonnull or args[0]) and (status is None or status == 0 or name == "harel_error_free"):
                counts[name] = counts.get(name, 0) + 1
            return status

        monkeypatch.setattr(lib, name, wrapper)

    counting("harel_transport_pauses")  # those that handed a list out
    counting("harel_pause_list_free", nonnull=True)
    counting("harel_error_free", nonnull=True)
    t.publish("g", "1")
    for _ in range(10):
        assert t.pause(group_id="g") and t.pause()
        assert len(t.pauses()) == 2
        for bad in (dict(group_id=""), dict(routing_key="")):
            with pytest.raises(ht.ArgumentError):
                t.resume(**bad)
        assert t.resume() and t.resume(group_id="g")
        assert t.pauses() == []
    assert counts["harel_transport_pauses"] == counts["harel_pause_list_free"] == 20, counts
    assert counts["harel_error_free"] == 20, counts


# -- bad input ---------------------------------------------------------------------------

_BAD = [
    # what the library refuses, mapped to ArgumentError with its message
    (dict(group_id=""), "group_id is empty"),
    (dict(routing_key=""), "routing_key is empty"),
    # what the binding refuses: both given, and what ctypes would change
    (dict(group_id="p", routing_key="k"), "group_id and routing_key are both given: a {call} names one"),
    (dict(group_id="", routing_key=""), "group_id and routing_key are both given"),
    (dict(group_id=5), "group_id must be a str, got int 5"),
    (dict(group_id=True), "group_id must be a str, got bool True"),
    (dict(group_id=b"p"), "group_id must be a str, got bytes b'p'"),
    (dict(group_id=["p"]), "group_id must be a str, got list"),
    (dict(routing_key=1.5), "routing_key must be a str, got float 1.5"),
    (dict(routing_key=b"k"), "routing_key must be a str, got bytes"),
    (dict(group_id="p\0"), "group_id holds a NUL character (at index 1)"),
    (dict(routing_key="k\0x"), "routing_key holds a NUL character (at index 1)"),
    (dict(group_id="p\ud800"), "group_id is not valid Unicode (a lone surrogate at index 1)"),
]


@pytest.fixture
def held(t):
    """The queue a refused call must leave as it was: two pauses in force, a lease held."""
    t.publish("g", "1")
    t.publish("g", "2")
    t.publish("k1", "3", routing_key="k")
    t.publish("free", "4")
    t.publish("p", "5")
    assert t.pause(group_id="p") and t.pause(routing_key="k")
    lease = t.claim("w")
    assert lease.group_id == "g"
    return lease


def _intact(t, lease):
    assert t.pauses() == [Pause("group", "p", 1000.0), Pause("routing_key", "k", 1000.0)]
    assert states(t) == {"g": "leased", "k1": "paused", "free": "ready", "p": "paused"}
    assert [(m.seq, m.locked_by) for m in t.peek("g")] == [(lease.seq, "w"), (2, None)]
    s = t.stats()
    assert (s.messages, s.ready, s.leased, s.paused) == (5, 1, 1, 2)


@pytest.mark.parametrize("call", ["pause", "resume"])
@pytest.mark.parametrize("kwargs, names", _BAD)
def test_bad_input(t, held, call, kwargs, names):
    with pytest.raises(ht.ArgumentError) as e:
        getattr(t, call)(**kwargs)
    assert names.format(call=call) in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    assert isinstance(e.value, ValueError)
    _intact(t, held)


@pytest.mark.parametrize("call", ["pause", "resume"])
def test_a_target_is_named_by_keyword_only(t, held, call):
    """Positionally, a group id might be read as the queue's pause: Python refuses the call."""
    with pytest.raises(TypeError):
        getattr(t, call)("p")
    with pytest.raises(TypeError):
        getattr(t, call)(group="p")  # the package's name is group_id
    _intact(t, held)


@pytest.mark.parametrize("state", ["Paused", "pause", "stopped", 4, b"paused"])
def test_a_bad_state_filter(t, held, state):
    with pytest.raises(ht.ArgumentError) as e:
        t.groups(state)
    assert "state must be None, 'ready', 'leased', 'parked', 'delayed', 'paused', 'held' or 'retrying', got" in (
        e.value.message
    )
    _intact(t, held)


# -- threads -----------------------------------------------------------------------------


def _run_threads(targets):
    """Runs each callable on a thread of its own; re-raises the first exception."""
    errors = []

    def guarded(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in targets]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
        assert not th.is_alive(), "a thread hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("target", [{}, {"group_id": "g"}, {"routing_key": "k"}])
def test_threads_racing_for_one_pause_and_one_resume(qpath, target):
    """Sixteen threads on four transports of one file pause the same target at once: one of
    them made it; then all resume it at once: one of them ended it."""
    transports = [Transport(qpath, busy_timeout=30) for _ in range(4)]
    try:
        for op, expect_after in (("pause", 1), ("resume", 0)):
            barrier = threading.Barrier(16)
            answers = []

            def call(i, op=op, barrier=barrier, answers=answers):
                barrier.wait()
                answers.append(getattr(transports[i % 4], op)(**target))

            _run_threads([lambda i=i: call(i) for i in range(16)])
            assert sorted(answers) == [False] * 15 + [True], (op, answers)
            assert len(transports[0].pauses()) == expect_after
    finally:
        for x in transports:
            x.close()


def test_threads_pausing_resuming_and_claiming(qpath):
    """Claimers (each on a transport of its own) claim and ack while togglers pause and
    resume the queue, groups and a routing key: every message is served once, each group
    in order. Then, the togglers done, g0 paused and three more published into it: the
    claimers serve every other group and leave g0's tail; resumed, g0 is served in order."""
    groups = [f"g{i}" for i in range(8)]
    per_group = 25
    with Transport(qpath, busy_timeout=30) as t:
        t.publish_many([(g, json.dumps(i)) for i in range(per_group) for g in groups])
        t.publish("keyed", json.dumps(0), routing_key="k")
        toggling = threading.Event()
        claiming = threading.Event()
        toggling.set()
        claiming.set()
        togglers_done = [threading.Event() for _ in range(3)]
        served = []  # (group, i), appended before the ack, so per group in serving order
        answers = []

        def claimer(n):
            with Transport(qpath, busy_timeout=30) as mine:
                while claiming.is_set():
                    lease = mine.claim(f"w{n}", 30, wait=0.02)
                    if lease is not None:
                        served.append((lease.group_id, json.loads(lease.event)))
                        mine.ack(lease)

        def toggler(n):
            rnd = random.Random(n)
            try:
                while toggling.is_set():
                    target = rnd.choice([{}, {"group_id": rnd.choice(groups)}, {"routing_key": "k"}])
                    answers.append(t.pause(**target))
                    t.pauses()
                    t.stats()
                    time.sleep(rnd.random() * 0.004)
                    answers.append(t.resume(**target))
            finally:
                togglers_done[n].set()

        def conductor():
            try:
                time.sleep(0.6)
                toggling.clear()
                for done in togglers_done:
                    assert done.wait(30)
                # each toggler's last call on a target is a resume: the last call on each is one
                assert t.pauses() == []
                assert t.pause(group_id="g0") is True
                for i in range(per_group, per_group + 3):
                    t.publish("g0", json.dumps(i))  # into the paused group
                deadline = time.monotonic() + 30
                while True:  # until everything else is served and g0's lease (if any) finished
                    s = t.stats()
                    (g0,) = t.groups("paused").items
                    if s.ready == 0 and s.leased == 0 and g0.holder is None and s.groups == 1:
                        break
                    assert time.monotonic() < deadline, s
                    time.sleep(0.01)
            finally:
                claiming.clear()

        _run_threads([lambda n=n: claimer(n) for n in range(4)] + [lambda n=n: toggler(n) for n in range(3)]
                     + [conductor])

        assert answers.count(True) > 0, "the togglers paused something"
        s = t.stats()
        assert (s.groups, s.paused, s.ready, s.leased) == (1, 1, 0, 0)
        left = [json.loads(m.event) for m in t.peek("g0")]
        assert left[-3:] == list(range(per_group, per_group + 3)), "paused: g0's tail stays"
        assert left == list(range(left[0], per_group + 3)), "in order"
        assert [i for g, i in served if g == "g0"] == list(range(left[0])), "what was served of g0, in order"
        for g in groups[1:]:
            assert [i for x, i in served if x == g] == list(range(per_group)), g
        assert [i for g, i in served if g == "keyed"] == [0]

        assert t.resume(group_id="g0") is True
        assert [int(e) for _, e in drain(t)] == left


def test_a_waiting_claim_wakes_at_the_resume(qpath):
    with Transport(qpath) as t:
        t.publish("g", "1")
        t.pause()
        got = {}

        def wait():
            started = time.monotonic()
            got["lease"] = t.claim("w", 30, wait=10)
            got["took"] = time.monotonic() - started

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive(), "waiting: the queue is paused"
        assert t.resume() is True
        waiter.join(10)
        assert got["lease"].event == "1"
        assert 0.25 < got["took"] < 5, got["took"]


# -- the async face ----------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            await t.publish_many([("a", "1"), ("a", "2"), ("b", "3")])
            await t.publish("eu", "4", routing_key="eu")
            assert await t.pause(group_id="a") is True
            assert await t.pause(group_id="a") is False
            assert await t.pause(routing_key="eu") is True
            assert await t.pauses() == [Pause("group", "a", 1000.0), Pause("routing_key", "eu", 1000.0)]
            assert [g.group_id for g in await t.groups("paused")] == ["a", "eu"]
            s = await t.stats()
            assert (s.paused, s.ready) == (2, 1)
            assert s.by_priority == [ht.PriorityStats(0, 3, 1, 0, 0, 2)]
            assert (await t.claim("w")).group_id == "b"
            assert await t.claim("w") is None
            assert await t.pause() is True
            assert (await t.pauses())[0] == Pause("queue", "", 1000.0)
            assert await t.resume() is True and await t.resume() is False
            assert await t.resume(routing_key="eu") is True
            assert await t.resume(group_id="a") is True
            assert await t.pauses() == [] and (await t.stats()).paused == 0
            for kwargs, names in _BAD:
                for call in (t.pause, t.resume):
                    with pytest.raises(ht.ArgumentError) as e:
                        await call(**kwargs)
                    assert names.format(call=call.__name__) in e.value.message
            with pytest.raises(ht.ArgumentError, match="'held' or 'retrying'"):
                await t.groups("Paused")
            assert await t.pauses() == []
        with pytest.raises(ht.TransportClosedError):
            await t.pause()

    asyncio.run(main())


def test_pause_and_resume_wait_for_the_lock_off_the_loop(qpath):
    """Another transport holds the write lock for 0.4 s at each call: pause and resume wait
    for it in the executor while the loop ticks."""

    async def main():
        async with await AsyncTransport.open(qpath, busy_timeout=10) as t:
            holder_transport = Transport(qpath)
            ticker = LoopTicker()
            loop = asyncio.get_running_loop()
            for call in (t.pause, t.resume):
                holder = holder_transport.begin()
                holder.query("SELECT 1")  # the write lock, until the commit
                loop.call_later(0.4, holder.commit)
                started = time.monotonic()
                before = ticker.ticks
                assert await call(group_id="g") is True
                took = time.monotonic() - started
                assert took >= 0.35, took
                assert ticker.ticks - before >= 15, f"the loop ticked {ticker.ticks - before} times in {took:.2f} s"
            await ticker.stop()
            holder_transport.close()

    asyncio.run(main())


def test_tasks_pausing_resuming_and_claiming(qpath):
    async def main():
        with ThreadPoolExecutor(16) as pool:
            async with await AsyncTransport.open(qpath, executor=pool, busy_timeout=30) as t:
                # twenty tasks pause one target at once: one made it; twenty resume it: one ended it
                for target in ({}, {"group_id": "g"}, {"routing_key": "k"}):
                    answers = await asyncio.gather(*(t.pause(**target) for _ in range(20)))
                    assert sorted(answers) == [False] * 19 + [True], target
                    answers = await asyncio.gather(*(t.resume(**target) for _ in range(20)))
                    assert sorted(answers) == [False] * 19 + [True], target

                # claims waiting on a paused queue wake at its resume, each with a group's head
                groups = [f"g{i}" for i in range(6)]
                await t.publish_many([(g, json.dumps(i)) for i in range(10) for g in groups])
                assert await t.pause() is True
                waits = [asyncio.create_task(t.claim(f"w{i}", 30, wait=10)) for i in range(3)]
                await asyncio.sleep(0.3)
                assert not any(w.done() for w in waits), "waiting: the queue is paused"
                assert await t.resume() is True
                leases = await asyncio.wait_for(asyncio.gather(*waits), 5)
                assert len({x.group_id for x in leases}) == 3 and {x.event for x in leases} == {"0"}
                served = [(x.group_id, 0) for x in leases]
                for x in leases:
                    await t.ack(x)

                # claiming tasks while toggling tasks pause and resume; then everything, in order
                stop = asyncio.Event()

                async def claimer(n):
                    while not stop.is_set():
                        lease = await t.claim(f"c{n}", 30, wait=0.02)
                        if lease is not None:
                            served.append((lease.group_id, json.loads(lease.event)))
                            await t.ack(lease)

                async def toggler(n):
                    rnd = random.Random(n)
                    for _ in range(40):
                        target = rnd.choice([{}, {"group_id": rnd.choice(groups)}])
                        await t.pause(**target)
                        await asyncio.sleep(rnd.random() * 0.004)
                        await t.resume(**target)

                claimers = [asyncio.create_task(claimer(n)) for n in range(4)]
                await asyncio.gather(*(toggler(n) for n in range(3)))
                assert await t.pauses() == []
                deadline = time.monotonic() + 30
                while (await t.stats()).messages:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.01)
                stop.set()
                await asyncio.gather(*claimers)
                for g in groups:
                    assert [i for x, i in served if x == g] == list(range(10)), g

    asyncio.run(main())
