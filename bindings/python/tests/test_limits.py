"""Limits per routing key: `set_limit`, `remove_limit` and `limits`, sync and async; the
`LimitInfo` listing; their bad input; a sharded queue. The semantics are the library's (its
contract tests, tests/common/contract_limits.rs); these check the mapping: each call and
answer, the ABI's "none" (a concurrency of 0, a rate and burst of 0, tokens of -1) as None
both ways, and that every refusal is an `ArgumentError` naming the problem, the queue
unchanged; `metrics().limit_holds` counting each hold."""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import inspect
import json
import math
import threading
import time
import typing

import pytest

import harel_transport as ht
from harel_transport import AsyncTransport, LimitInfo, Transport, _native


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def claim_all(t, worker="w"):
    """Every lease the claims hand out until none is left, not acked."""
    leases = []
    while (lease := t.claim(worker, 30)) is not None:
        leases.append(lease)
    return leases


def groups_of(leases):
    return sorted(lease.group_id for lease in leases)


def served(t):
    """How many leases the claims hand out until none is left, each acked."""
    leases = claim_all(t)
    for lease in leases:
        t.ack(lease)
    return len(leases)


def concurrency(key, n, in_use=0, held=0):
    """The listing of a concurrency limit alone."""
    return LimitInfo(key, n, None, None, in_use, None, held)


# -- the values and the signatures -------------------------------------------------------


def test_the_values_and_the_signatures():
    assert ht.MAX_LIMIT == 1_000_000
    x = LimitInfo("k", 2, 1.5, 3.0, 1, 2.5, 4)
    assert (x.routing_key, x.concurrency, x.rate, x.burst, x.in_use, x.tokens, x.held) == ("k", 2, 1.5, 3.0, 1, 2.5, 4)
    assert [f.name for f in dataclasses.fields(LimitInfo)] == [
        "routing_key", "concurrency", "rate", "burst", "in_use", "tokens", "held",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.held = 5  # type: ignore[misc]
    assert typing.get_type_hints(LimitInfo) == {
        "routing_key": str,
        "concurrency": typing.Optional[int],
        "rate": typing.Optional[float],
        "burst": typing.Optional[float],
        "in_use": int,
        "tokens": typing.Optional[float],
        "held": int,
    }
    assert LimitInfo.__doc__
    for name in ("LimitInfo", "MAX_LIMIT"):
        assert name in ht.__all__, name
    # Stats gained held and retrying (test_retry.py checks retrying's count) last, with defaults:
    # positional construction of the rest still works
    assert [f.name for f in dataclasses.fields(ht.Stats)][-3:] == ["expired", "held", "retrying"]
    assert typing.get_type_hints(ht.Stats)["held"] is int
    before = ht.Stats(0.0, 0, 0, 0, 0, 0, 0, None, None, [], None, 0, None, 0, 0)
    assert (before.held, before.retrying) == (0, 0)
    assert ht.Stats(0.0, 0, 0, 0, 0, 0, 0, None, None, [], None, 0, None, 0, 0, 2, 1).held == 2

    p = inspect.Parameter
    for cls in (Transport, AsyncTransport):
        params = list(inspect.signature(cls.set_limit).parameters.values())[1:]
        assert [(x.name, x.kind, x.default) for x in params] == [
            ("routing_key", p.POSITIONAL_OR_KEYWORD, p.empty),
            ("concurrency", p.POSITIONAL_OR_KEYWORD, None),
            ("rate", p.POSITIONAL_OR_KEYWORD, None),
            ("burst", p.POSITIONAL_OR_KEYWORD, None),
        ], cls
        assert typing.get_type_hints(cls.set_limit) == {
            "routing_key": str,
            "concurrency": typing.Optional[int],
            "rate": typing.Optional[float],
            "burst": typing.Optional[float],
            "return": type(None),
        }
        assert typing.get_type_hints(cls.remove_limit) == {"routing_key": str, "return": type(None)}
        assert typing.get_type_hints(cls.limits) == {"return": typing.List[LimitInfo]}
        for name in ("set_limit", "remove_limit", "limits"):
            assert getattr(cls, name).__doc__, (cls, name)
    for name in ("set_limit", "remove_limit", "limits"):
        assert inspect.iscoroutinefunction(getattr(AsyncTransport, name)), name
        assert not inspect.iscoroutinefunction(getattr(Transport, name)), name


def test_the_structs_have_the_headers_layout():
    # What include/harel_transport.h lays out on x86_64 (tests/c/header_check.c checks the
    # header against the library): a ctypes struct shorter than C's would be read past.
    assert ctypes.sizeof(_native.HarelLimitInfo) == 64
    assert ctypes.sizeof(_native.HarelLimitList) == 16
    offsets = {name: getattr(_native.HarelLimitInfo, name).offset for name, _ in _native.HarelLimitInfo._fields_}
    assert offsets == {
        "routing_key": 0,
        "routing_key_len": 8,
        "concurrency": 16,
        "rate": 24,
        "burst": 32,
        "in_use": 40,
        "tokens": 48,
        "held": 56,
    }
    assert (_native.HarelLimitList.limits.offset, _native.HarelLimitList.n_limits.offset) == (0, 8)
    # harel_metrics' limit_holds, at its end after the histograms (test_metrics.py checks its size)
    assert _native.HarelMetrics._fields_[-1] == ("limit_holds", ctypes.c_uint64)
    assert _native.HarelMetrics.limit_holds.offset == 9 * 8 + 16 * 8 + 8 * 144 == 1352
    # harel_stats' held and retrying, at its end (test_admin.py checks its size)
    assert [f[0] for f in _native.HarelStats._fields_][-3:] == ["expired", "held", "retrying"]
    assert (_native.HarelStats.held.offset, _native.HarelStats.retrying.offset) == (136, 144)
    assert _native.HarelStats.held.size == 8 and _native.HarelStats._fields_[-1][1] is ctypes.c_uint64


# -- the mapping -------------------------------------------------------------------------


def test_a_concurrency_limit_of_one_lets_one_claim_through(t):
    assert t.limits() == []
    assert t.set_limit("k", 1) is None
    assert t.limits() == [concurrency("k", 1)], "no rate: rate, burst and tokens are None"
    for g in ("k1", "k2", "k3"):
        t.publish(g, json.dumps(g), routing_key="k")
    t.publish("free", "0")
    t.publish("other", "0", routing_key="other")
    assert t.metrics().limit_holds == 0, "nothing held before a claim meets the limit"

    first = claim_all(t)
    assert groups_of(first) == ["free", "k1", "other"], "one of k; the others pass over its groups"
    assert t.limits() == [concurrency("k", 1, in_use=1, held=2)]
    assert t.metrics().limit_holds == 2, "k2 and k3 held, each counted once"
    k1 = next(x for x in first if x.group_id == "k1")

    t.ack(k1)
    (k2,) = claim_all(t)
    assert k2.group_id == "k2", "an ack lets the next through, the held group that came first"
    assert t.limits() == [concurrency("k", 1, in_use=1, held=1)]
    t.nack(k2)
    assert groups_of(claim_all(t)) == ["k3"], "a nack makes room too"
    assert t.limits() == [concurrency("k", 1, in_use=1, held=1)], "k2's message, back after the nack, is held"


def counts(s):
    """A `Stats`' group counts by state; they add up to its groups."""
    states = (s.ready, s.leased, s.parked, s.delayed, s.paused, s.held, s.retrying)
    assert sum(states) == s.groups, s
    return dict(zip(("ready", "leased", "parked", "delayed", "paused", "held", "retrying"), states))


def test_stats_count_the_held_groups_apart_from_the_ready(t):
    t.set_limit("k", 1)
    for g in ("k1", "k2", "k3"):
        t.publish(g, json.dumps(g), routing_key="k")
    s = t.stats()
    assert (s.groups, s.ready, s.held) == (3, 3, 0), "nothing held before a claim meets them"

    first = claim_all(t)
    assert groups_of(first) == ["k1"]
    s = t.stats()
    assert counts(s) == dict(ready=0, leased=1, parked=0, delayed=0, paused=0, held=2, retrying=0)
    assert s.held == t.limits()[0].held == 2, "the listing's held groups, counted"
    assert s.by_priority == [ht.PriorityStats(0, 3, 0, 1, 0, 0)], "a level's ready excludes them too"
    assert (s.oldest_ready_seq, s.oldest_ready_age) == (None, None), "no group is ready"
    t.publish("free", "0")
    s = t.stats()
    assert (s.groups, s.ready, s.held) == (4, 1, 2), "a group of no key is ready beside them"
    assert s.oldest_ready_seq == 4, "free's message: the held ones are not ready"
    assert [g.state for g in t.groups().items] == ["ready", "leased", "held", "held"], "listed as held"
    assert [g.group_id for g in t.groups("held").items] == ["k2", "k3"]
    assert [g.group_id for g in t.groups("ready").items] == ["free"], "what a claim would take"

    t.ack(first[0])
    assert groups_of(claim_all(t)) == ["free", "k2"], "an ack: the next claim gives k2 back"
    s = t.stats()
    assert (s.ready, s.leased, s.held) == (0, 2, 1)
    t.remove_limit("k")
    assert counts(t.stats()) == dict(ready=1, leased=2, parked=0, delayed=0, paused=0, held=0, retrying=0), (
        "removed: k3 is served at once, ready again"
    )


def test_a_rate_limit_reaches_the_listing(t, clock):
    t.set_limit("r", rate=2, burst=3)
    assert t.limits() == [LimitInfo("r", None, 2.0, 3.0, 0, 3.0, 0)], "no concurrency: None; the bucket starts full"
    (info,) = t.limits()
    assert isinstance(info.rate, float) and isinstance(info.tokens, float) and isinstance(info.in_use, int)
    for i in range(6):
        t.publish(f"r{i}", "0", routing_key="r")
    t.publish("free", "0")
    assert served(t) == 4, "the burst of 3, and the group without a limit"
    (info,) = t.limits()
    assert (info.tokens, info.held, info.in_use) == (pytest.approx(0.0, abs=1e-9), 3, 0)
    clock.now += 0.5
    assert t.limits()[0].tokens == pytest.approx(1.0), "two tokens a second, read at the transport's clock"
    assert served(t) == 1
    clock.now += 100
    assert t.limits()[0].tokens == pytest.approx(3.0), "an idle key keeps at most its burst"
    assert served(t) == 2


def test_both_kinds_and_setting_replaces(t, clock):
    t.set_limit("k", concurrency=5, rate=10.5, burst=20)
    assert t.limits() == [LimitInfo("k", 5, 10.5, 20.0, 0, 20.0, 0)]
    t.set_limit("k", 2)
    assert t.limits() == [concurrency("k", 2)], "replaced: the rate not given is off"
    t.set_limit("k", rate=1, burst=1.5)
    assert t.limits() == [LimitInfo("k", None, 1.0, 1.5, 0, 1.5, 0)], "replaced: the concurrency not given is off"
    t.set_limit("a", ht.MAX_LIMIT, ht.MAX_LIMIT, ht.MAX_LIMIT)
    t.set_limit("z", 1)
    assert [x.routing_key for x in t.limits()] == ["a", "k", "z"], "by routing key"
    assert t.limits()[0] == LimitInfo("a", 1_000_000, 1e6, 1e6, 0, 1e6, 0), "the most of each"


def test_remove_serves_the_held_groups(t):
    t.set_limit("k", 1)
    for i in range(4):
        t.publish(f"k{i}", "0", routing_key="k")
    assert len(claim_all(t)) == 1
    assert t.limits() == [concurrency("k", 1, in_use=1, held=3)]
    assert t.remove_limit("k") is None
    assert t.limits() == []
    assert groups_of(claim_all(t)) == ["k1", "k2", "k3"], "removed: every held group is served at once"
    with pytest.raises(ht.ArgumentError) as e:
        t.remove_limit("k")
    assert 'routing key "k" has no limit to remove' in e.value.message


def test_a_routing_key_text_round_trips(t):
    for key in ("ключ", "k ey", "a" * 300, "emoji-\U0001f600"):
        t.set_limit(key, 3)
    assert [x.routing_key for x in t.limits()] == sorted(["ключ", "k ey", "a" * 300, "emoji-\U0001f600"])
    t.remove_limit("ключ")
    assert "ключ" not in [x.routing_key for x in t.limits()]


def test_a_limit_is_stored_in_the_queue(qpath, clock):
    with Transport(qpath, clock=clock) as first:
        first.set_limit("k", 1)
        first.publish("a", "1", routing_key="k")
        first.publish("b", "2", routing_key="k")
        lease = first.claim("w")
        with Transport(qpath, clock=clock) as second:  # another transport on the file sees it
            assert second.limits() == [concurrency("k", 1, in_use=1)]
            assert second.claim("w2") is None, "the key is at its limit, whoever claims"
            first.ack(lease)
            assert second.claim("w2").group_id == "b"
    with Transport(qpath, clock=clock) as reopened:  # it outlives the transports
        assert reopened.limits() == [concurrency("k", 1, in_use=1)]
        reopened.remove_limit("k")
        assert reopened.limits() == []


def test_a_sharded_queue_sets_every_shard_and_sums_the_use(tmp_path, clock):
    paths = [str(tmp_path / f"shard{i}.db") for i in range(3)]
    groups = [f"k{i}" for i in range(24)]
    per_shard = [sum(1 for g in groups if ht.shard_of(g, 3) == s) for s in range(3)]
    assert min(per_shard) >= 4, f"the groups are spread over the shards: {per_shard}"
    with Transport.open_shards(paths, clock=clock) as t:
        t.set_limit("k", 1)
        assert t.limits() == [concurrency("k", 1)], "each key once"
        for g in groups:
            t.publish(g, json.dumps(g), routing_key="k")
        t.publish("free", "0")
        first = claim_all(t)
        keyed = [x for x in first if x.group_id != "free"]
        assert len(first) == 4 and len(keyed) == 3, "one of k per shard: the limit is each shard's"
        assert {ht.shard_of(x.group_id, 3) for x in keyed} == {0, 1, 2}
        assert t.limits() == [concurrency("k", 1, in_use=3, held=21)], "the use summed over the shards"
        s = t.stats()
        assert (s.groups, s.ready, s.leased, s.held) == (25, 0, 4, 21), "stats sum the shards' held groups"

        for x in keyed:
            t.ack(x)
        t.set_limit("k", rate=1, burst=2)
        assert t.limits() == [LimitInfo("k", None, 1.0, 2.0, 0, 6.0, 21)], "each shard's tokens, summed"
        assert len(claim_all(t)) == 6, "the burst of each shard"
        (info,) = t.limits()
        assert (info.tokens, info.held) == (pytest.approx(0.0, abs=1e-9), 15)

        t.remove_limit("k")
        assert t.limits() == []
        assert len(claim_all(t)) == 15, "removed from every shard: the held groups are served"
        with pytest.raises(ht.ArgumentError, match='routing key "k" has no limit to remove'):
            t.remove_limit("k")


def test_a_closed_transport(qpath):
    t = Transport(qpath)
    t.close()
    for call in (lambda: t.set_limit("k", 1), lambda: t.remove_limit("k"), lambda: t.limits()):
        with pytest.raises(ht.TransportClosedError):
            call()


def test_every_list_and_error_is_freed(t, monkeypatch):
    """Counts what the library hands out against what is freed: each limit list (an empty
    one too), each error of a refused set_limit or remove_limit."""
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

    counting("harel_transport_limits")  # those that handed a list out
    counting("harel_limit_list_free", nonnull=True)
    counting("harel_error_free", nonnull=True)
    for _ in range(10):
        t.set_limit("k", 1)
        t.set_limit("r", rate=1, burst=1)
        assert len(t.limits()) == 2
        with pytest.raises(ht.ArgumentError):
            t.set_limit("", 1)  # the library's refusal: an error to free
        with pytest.raises(ht.ArgumentError):
            t.set_limit("k", rate=math.nan, burst=1)
        with pytest.raises(ht.ArgumentError):
            t.set_limit("k", 0)  # the binding's: no call, no error
        t.remove_limit("k")
        t.remove_limit("r")
        with pytest.raises(ht.ArgumentError):
            t.remove_limit("k")
        assert t.limits() == []
    assert counts["harel_transport_limits"] == counts["harel_limit_list_free"] == 20, counts
    assert counts["harel_error_free"] == 30, counts


# -- bad input ---------------------------------------------------------------------------

_MUST = "it must be a finite number"
_BAD = [
    # what the library refuses, mapped to ArgumentError with its message
    (dict(routing_key="", concurrency=1), "routing_key is empty"),
    (dict(routing_key="k"), "the limit has neither a concurrency nor a rate"),
    (dict(routing_key="k", concurrency=None, rate=None, burst=None), "the limit has neither a concurrency nor a rate"),
    (dict(routing_key="k", concurrency=1_000_001), "concurrency is 1000001; it must be 1..1000000"),
    (dict(routing_key="k", concurrency=2**32 - 1), "concurrency is 4294967295; it must be 1..1000000"),
    (dict(routing_key="k", rate=math.nan, burst=1), f"rate is NaN; {_MUST} > 0, at most 1000000"),
    (dict(routing_key="k", rate=math.inf, burst=1), "rate is inf"),
    (dict(routing_key="k", rate=-math.inf, burst=1), "rate is -inf"),
    (dict(routing_key="k", rate=2_000_000, burst=1), "rate is 2000000"),
    (dict(routing_key="k", rate=-1, burst=1), "rate is -1;"),
    (dict(routing_key="k", rate=1, burst=0.5), f"burst is 0.5; {_MUST} >= 1, at most 1000000"),
    (dict(routing_key="k", rate=1, burst=math.nan), "burst is NaN"),
    (dict(routing_key="k", rate=1, burst=0), "burst is 0;"),
    (dict(routing_key="k", rate=1, burst=1e300), "burst is 1000000000000000"),
    (dict(routing_key="k", concurrency=3, rate=1, burst=0.5), "burst is 0.5"),
    # what C would read as "none", refused here with the library's words
    (dict(routing_key="k", concurrency=0), "concurrency is 0; it must be 1..1000000"),
    (dict(routing_key="k", concurrency=0, rate=1, burst=1), "concurrency is 0; it must be 1..1000000"),
    (dict(routing_key="k", rate=0, burst=0), f"rate is 0; {_MUST} > 0, at most 1000000"),
    (dict(routing_key="k", rate=0.0, burst=0.0), "rate is 0;"),
    (dict(routing_key="k", rate=-0.0, burst=0), "rate is 0;"),
    (dict(routing_key="k", rate=0, burst=5), "rate is 0;"),
    # what ctypes would change, and what the binding alone knows
    (dict(routing_key="k", concurrency=-1), "concurrency is -1; it must be 1..1000000"),
    (dict(routing_key="k", concurrency=2**32), "concurrency is 4294967296; it must be 1..1000000"),
    (dict(routing_key="k", concurrency=True), "concurrency must be an int or None, got bool True"),
    (dict(routing_key="k", concurrency=1.0), "concurrency must be an int or None, got float 1.0"),
    (dict(routing_key="k", concurrency="2"), "concurrency must be an int or None, got the str '2'"),
    (dict(routing_key="k", rate=1), "rate is given without burst: a rate limit takes both"),
    (dict(routing_key="k", concurrency=1, rate=1), "rate is given without burst"),
    (dict(routing_key="k", burst=1), "burst is given without rate: a rate limit takes both"),
    (dict(routing_key="k", rate="1", burst=1), "rate must be a number (int or float), got the str '1'"),
    (dict(routing_key="k", rate=1, burst=False), "burst must be a number (int or float), got bool False"),
    (dict(routing_key="k", rate=[1], burst=1), "rate must be a number (int or float), got list"),
    (dict(routing_key="k", rate=10**400, burst=1), f"; {_MUST} > 0, at most 1000000"),
    (dict(routing_key="k", rate=1, burst=-(10**400)), f"; {_MUST} >= 1, at most 1000000"),
    (dict(routing_key=5, concurrency=1), "routing_key must be a str, got int 5"),
    (dict(routing_key=None, concurrency=1), "routing_key must be a str, got NoneType"),
    (dict(routing_key=b"k", concurrency=1), "routing_key must be a str, got bytes b'k'"),
    (dict(routing_key="k\0x", concurrency=1), "routing_key holds a NUL character (at index 1)"),
    (dict(routing_key="k\ud800", concurrency=1), "routing_key is not valid Unicode (a lone surrogate at index 1)"),
]

_BAD_REMOVE = [
    ("nokey", 'routing key "nokey" has no limit to remove'),
    ("", "routing_key is empty"),
    (5, "routing_key must be a str, got int 5"),
    (None, "routing_key must be a str, got NoneType"),
    ("k\0", "routing_key holds a NUL character (at index 1)"),
    ("k\udc80", "routing_key is not valid Unicode (a lone surrogate at index 1)"),
]


@pytest.fixture
def held(t):
    """The queue a refused call must leave as it was: a concurrency limit at its ceiling
    holding a group, a rate limit with its tokens, a lease held."""
    t.set_limit("k", 1)
    t.set_limit("r", rate=5, burst=2)
    t.publish("k1", "1", routing_key="k")
    t.publish("k2", "2", routing_key="k")
    t.publish("free", "3")
    (k1, free) = claim_all(t)
    assert (k1.group_id, free.group_id) == ("k1", "free")
    return k1


def _intact(t, lease):
    assert t.limits() == [concurrency("k", 1, in_use=1, held=1), LimitInfo("r", None, 5.0, 2.0, 0, 2.0, 0)]
    assert [(m.seq, m.locked_by) for m in t.peek("k1")] == [(lease.seq, "w")]
    s = t.stats()
    assert (s.messages, s.leased) == (3, 2)


def _refused(e, says):
    assert says in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("kwargs, says", _BAD)
def test_bad_set_limit(t, held, kwargs, says):
    with pytest.raises(ht.ArgumentError) as e:
        t.set_limit(**kwargs)
    _refused(e, says)
    _intact(t, held)


@pytest.mark.parametrize("key, says", _BAD_REMOVE)
def test_bad_remove_limit(t, held, key, says):
    with pytest.raises(ht.ArgumentError) as e:
        t.remove_limit(key)
    _refused(e, says)
    _intact(t, held)


def test_a_key_is_named_once(t, held):
    with pytest.raises(TypeError):
        t.set_limit("k", 1, routing_key="k")  # type: ignore[misc]
    with pytest.raises(TypeError):
        t.set_limit("k", per_second=1, burst=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        t.set_limit(concurrency=1)  # type: ignore[call-arg]
    _intact(t, held)


# -- waits -------------------------------------------------------------------------------


def test_a_waiting_claim_wakes_at_the_remove(qpath):
    with Transport(qpath) as t:
        t.set_limit("k", 1)
        t.publish("a", "1", routing_key="k")
        t.publish("b", "2", routing_key="k")
        first = t.claim("w")
        got = {}

        def wait():
            started = time.monotonic()
            got["lease"] = t.claim("w2", 30, wait=10)
            got["took"] = time.monotonic() - started

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive(), "waiting: the key is at its limit"
        t.remove_limit("k")
        waiter.join(10)
        assert got["lease"].group_id == "b" and first.group_id == "a"
        assert 0.25 < got["took"] < 5, got["took"]


def test_a_waiting_claim_takes_the_group_an_ack_frees(qpath):
    """A claim waiting while the key is at its limit, its other group held: the ack that
    makes room wakes it, and it is given the held group."""
    with Transport(qpath) as t:
        t.set_limit("k", 1)
        t.publish("a", "1", routing_key="k")
        t.publish("b", "2", routing_key="k")
        first = t.claim("w")
        assert t.claim("w") is None and t.limits() == [concurrency("k", 1, in_use=1, held=1)]
        got = {}

        def wait():
            started = time.monotonic()
            got["lease"] = t.claim("w2", 30, wait=10)
            got["took"] = time.monotonic() - started

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive(), "waiting: the key is at its limit"
        t.ack(first)
        waiter.join(10)
        assert got["lease"].group_id == "b"
        assert 0.25 < got["took"] < 5, got["took"]


# -- the async face ----------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            assert await t.limits() == []
            assert await t.set_limit("k", 1) is None
            await t.set_limit("r", rate=2, burst=3)
            for g in ("k1", "k2", "k3"):
                await t.publish(g, "0", routing_key="k")
            first = await t.claim("w")
            assert first.group_id == "k1"
            assert await t.claim("w") is None, "the others pass over"
            assert await t.limits() == [
                concurrency("k", 1, in_use=1, held=2),
                LimitInfo("r", None, 2.0, 3.0, 0, 3.0, 0),
            ]
            s = await t.stats()
            assert (s.groups, s.ready, s.leased, s.held) == (3, 0, 1, 2)
            await t.ack(first)
            assert (await t.claim("w")).group_id == "k2", "an ack lets the next through"
            await t.set_limit(routing_key="k", concurrency=2)
            assert (await t.claim("w")).group_id == "k3", "a larger limit makes room"
            assert (await t.limits())[0] == concurrency("k", 2, in_use=2)
            assert await t.remove_limit("k") is None
            await t.remove_limit("r")
            assert await t.limits() == []
            for kwargs, says in _BAD:
                with pytest.raises(ht.ArgumentError) as e:
                    await t.set_limit(**kwargs)
                _refused(e, says)
            for key, says in _BAD_REMOVE:
                with pytest.raises(ht.ArgumentError) as e:
                    await t.remove_limit(key)
                _refused(e, says)
            assert await t.limits() == []
        for call in (lambda: t.set_limit("k", 1), lambda: t.remove_limit("k"), lambda: t.limits()):
            with pytest.raises(ht.TransportClosedError):
                await call()

    asyncio.run(main())


def test_async_sharded(tmp_path, clock):
    paths = [str(tmp_path / f"shard{i}.db") for i in range(2)]

    async def main():
        async with await AsyncTransport.open_shards(paths, clock=clock) as t:
            await t.set_limit("k", 1, rate=3, burst=4)
            for i in range(10):
                await t.publish(f"k{i}", "0", routing_key="k")
            leases = await t.claim_many("w", max=10)
            assert len(leases) == 2, "one per shard"
            assert await t.limits() == [LimitInfo("k", 1, 3.0, 4.0, 2, 6.0, 8)], "use and tokens summed"
            await t.remove_limit("k")
            assert len(await t.claim_many("w", max=10)) == 8

    asyncio.run(main())


def test_an_async_waiting_claim_wakes_at_the_remove(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            await t.set_limit("k", 1)
            await t.publish("a", "1", routing_key="k")
            await t.publish("b", "2", routing_key="k")
            first = await t.claim("w")
            waits = [asyncio.create_task(t.claim(f"w{i}", 30, wait=10)) for i in range(2)]
            await asyncio.sleep(0.3)
            assert not any(w.done() for w in waits), "waiting: the key is at its limit"
            started = time.monotonic()
            await t.remove_limit("k")
            done, pending = await asyncio.wait(waits, timeout=5, return_when=asyncio.FIRST_COMPLETED)
            assert time.monotonic() - started < 4
            (got,) = [w.result() for w in done]
            assert (first.group_id, got.group_id) == ("a", "b")
            for w in pending:
                w.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    asyncio.run(main())


def test_an_async_waiting_claim_takes_the_group_an_ack_frees(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            await t.set_limit("k", 1)
            await t.publish("a", "1", routing_key="k")
            await t.publish("b", "2", routing_key="k")
            first = await t.claim("w")
            assert await t.claim("w") is None, "b: held"
            waiting = asyncio.create_task(t.claim("w2", 30, wait=10))
            await asyncio.sleep(0.3)
            assert not waiting.done(), "waiting: the key is at its limit"
            await t.ack(first)
            got = await asyncio.wait_for(waiting, 5)
            assert got.group_id == "b"
            assert await t.limits() == [concurrency("k", 1, in_use=1)]

    asyncio.run(main())


def test_tasks_setting_limits_at_once(qpath):
    async def main():
        async with await AsyncTransport.open(qpath, busy_timeout=30) as t:
            keys = [f"k{i}" for i in range(20)]
            await asyncio.gather(*(t.set_limit(k, i + 1) for i, k in enumerate(keys)))
            assert await t.limits() == sorted((concurrency(k, i + 1) for i, k in enumerate(keys)),
                                              key=lambda x: x.routing_key)
            await asyncio.gather(*(t.remove_limit(k) for k in keys))
            assert await t.limits() == []

    asyncio.run(main())
