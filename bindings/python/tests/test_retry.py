"""Retries: the `Retry` policy as the open option `retry` and as `publish_with`'s,
`publish_many_with`'s (`Message.retry`) and a transaction's `retry`, sync and asyncio;
`MessageInfo.retry_delay`; their bad input. The semantics are the library's (its contract
tests, tests/common/contract_retry.rs); these check the mapping (base, factor, cap and
each jitter reach the library, by the transport's clock and by the system's; a nack of 0
parks; a lapsed lease waits; the message's policy wins), and that every refusal is an
`ArgumentError` naming the field (in a batch, the message), the queue unchanged."""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import datetime
import inspect
import math
import time
import typing

import pytest

import harel_transport as ht
from harel_transport import AsyncTransport, Message, MessageInfo, Published, Retry, Transport, _native, shard_of

TEN_YEARS = 315_360_000
V = 30.0  # the visibility of every claim here


def stored(seq):
    return Published(seq, False, False)


@pytest.fixture
def t(qpath, clock):
    """A transport without a queue policy."""
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def claim(t, worker="w"):
    return t.claim(worker, V)


def shown(t, group):
    """The backoff the head of `group` shows (`MessageInfo.retry_delay`)."""
    return t.peek(group, limit=1).items[0].retry_delay


def waits(t, clock, at):
    """Nothing is claimable just before `at` seconds from now; a message is just after."""
    clock.now += at - 0.01
    assert claim(t) is None, f"still waiting its backoff of {at} s"
    clock.now += 0.02
    lease = claim(t)
    assert lease is not None, f"claimable once its backoff of {at} s passed"
    return lease


def parked(t, group, until):
    """`group`'s head is parked until `until` (a nack of 0 under a policy)."""
    head = t.peek(group, limit=1).items[0]
    assert (head.locked_by, head.lock_expiry) == ("__parked__", until)
    s = t.stats()
    assert (s.ready, s.parked) == (0, 1), "parked for its backoff"


# -- the values and the signatures -------------------------------------------------------


def test_the_values_and_the_signatures():
    for name in ("Retry", "Jitter", "MIN_RETRY_BASE", "MAX_RETRY_FACTOR"):
        assert name in ht.__all__, name
    assert (ht.MIN_RETRY_BASE, ht.MAX_RETRY_FACTOR) == (0.001, 16.0)
    assert typing.get_args(ht.Jitter) == ("full", "equal", "none")
    r = Retry(1.5)
    assert (r.base, r.factor, r.cap, r.jitter) == (1.5, 2.0, None, "full")
    assert [f.name for f in dataclasses.fields(Retry)] == ["base", "factor", "cap", "jitter"]
    hints = {"base": float, "factor": float, "cap": typing.Optional[float], "jitter": ht.Jitter}
    assert typing.get_type_hints(Retry) == hints
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.base = 2  # type: ignore[misc]
    assert Retry(1, 3, 9, "none") == Retry(base=1, factor=3, cap=9, jitter="none")
    assert hash(Retry(1)) == hash(Retry(1.0)), "frozen: hashable, a Message's field"
    assert Retry.__doc__

    # Message.retry and MessageInfo.retry_delay: last, with a default
    assert [f.name for f in dataclasses.fields(Message)][-1] == "retry"
    assert Message("g", "{}").retry is None
    assert Message("g", "{}", retry=Retry(2)).retry == Retry(2)
    assert typing.get_type_hints(Message)["retry"] == typing.Optional[Retry]
    assert [f.name for f in dataclasses.fields(MessageInfo)][-1] == "retry_delay"
    assert typing.get_type_hints(MessageInfo)["retry_delay"] == typing.Optional[float]
    assert MessageInfo(1, "{}", 0, None, None, None).retry_delay is None, "positional construction as before"

    for fn in (Transport.publish_with, AsyncTransport.publish_with, ht.Transaction.publish_with,
               ht.AsyncTransaction.publish_with):
        option = inspect.signature(fn).parameters["retry"]
        assert (option.kind, option.default) == (inspect.Parameter.KEYWORD_ONLY, None), fn
        assert typing.get_type_hints(fn)["retry"] == typing.Optional[Retry], fn
        assert list(inspect.signature(fn).parameters)[-1] == "retry", "added last"
    assert "retry" in Transport.publish_with.__doc__

    option = inspect.signature(Transport).parameters["retry"]
    assert (option.kind, option.default) == (inspect.Parameter.KEYWORD_ONLY, None)
    assert typing.get_type_hints(Transport.__init__)["retry"] == typing.Optional[Retry]
    assert "`retry`" in Transport.__doc__


def test_the_structs_have_the_headers_layout():
    # What include/harel_transport.h lays out on x86_64: harel_delivery's retry fields and
    # harel_message_page's retry_delays, each added at the end.
    d = _native.HarelDelivery
    assert ctypes.sizeof(d) == 112
    assert [f[0] for f in d._fields_][-4:] == ["retry_base", "retry_factor", "retry_cap", "retry_jitter"]
    assert (d.expires_at.offset, d.retry_base.offset, d.retry_factor.offset) == (72, 80, 88)
    assert (d.retry_cap.offset, d.retry_jitter.offset) == (96, 104)
    assert [f[1] for f in d._fields_][-4:] == [ctypes.c_double] * 3 + [ctypes.c_int32]
    p = _native.HarelMessagePage
    assert (ctypes.sizeof(p), p.headers.offset, p.retry_delays.offset) == (40, 24, 32)
    assert _native.JITTERS == {"full": 0, "equal": 1, "none": 2}, "enum harel_jitter"
    # a delivery without a policy sends base 0: none (the queue's)
    empty = _native.delivery()
    assert (empty.size, empty.retry_base, empty.retry_jitter) == (112, 0.0, 0)


# -- the queue's policy (the open option) ------------------------------------------------


def test_a_nack_of_0_parks_for_the_backoff_which_grows_to_its_cap(qpath, clock):
    with Transport(qpath, clock=clock, retry=Retry(2, 3, 20, "none")) as t:
        t.publish("g", '"x"')
        lease = claim(t)
        for attempt, backoff in [(1, 2.0), (2, 6.0), (3, 18.0), (4, 20.0), (5, 20.0)]:
            assert lease.attempts == attempt
            assert shown(t, "g") == backoff, f"claim {attempt}: min(cap, base * factor^{attempt - 1})"
            t.nack(lease)
            parked(t, "g", clock.now + backoff)
            assert shown(t, "g") == backoff, "still shown while parked"
            lease = waits(t, clock, backoff)
        t.nack(lease, 1.0)
        lease = waits(t, clock, 1.0)
        assert lease.attempts == 7, "a nack with a delay of its own: the worker's delay wins"
        t.ack(lease)
        assert claim(t) is None


def test_a_lapsed_lease_waits_the_backoff_and_counts_toward_max_attempts(qpath, clock):
    with Transport(qpath, clock=clock, retry=Retry(10, 2, 100, "none"), max_attempts=3) as t:
        t.publish("g", '"x"')
        first = claim(t)
        clock.now += 20
        t.extend(first, V)
        second = waits(t, clock, V + 10)
        assert second.attempts == 2, "after the extended lease's end + 10"
        assert shown(t, "g") == 20.0
        waits(t, clock, V + 20)
        clock.now += V + 41
        assert claim(t) is None, "claimed 3 times: buried, not handed out"
        (dead,) = t.dead_letters().items
        assert "max_attempts is 3" in dead.reason


def group_counts(t):
    """`stats()`' group counts by state; they add up to its groups."""
    s = t.stats()
    states = (s.ready, s.leased, s.parked, s.delayed, s.paused, s.held, s.retrying)
    assert sum(states) == s.groups, s
    return dict(zip(("ready", "leased", "parked", "delayed", "paused", "held", "retrying"), states))


def test_stats_count_a_lapsed_lease_waiting_its_backoff_as_retrying(qpath, clock):
    with Transport(qpath, clock=clock, retry=Retry(10, 1, jitter="none")) as t:
        assert [f.name for f in dataclasses.fields(ht.Stats)][-1] == "retrying", "last, with a default"
        assert _native.HarelStats.retrying.offset == 144, "harel_stats' last field"
        t.publish("g", '"x"')
        start = clock.now
        assert t.claim("w", 2.0).group_id == "g"
        assert shown(t, "g") == 10.0
        none = dict(ready=0, leased=0, parked=0, delayed=0, paused=0, held=0, retrying=0)
        assert group_counts(t) == {**none, "leased": 1}
        clock.now = start + 2.5  # the lease lapsed; its backoff runs until start + 12
        assert group_counts(t) == {**none, "retrying": 1}, "waiting its backoff: not ready"
        s = t.stats()
        assert (s.oldest_ready_seq, s.oldest_ready_age, s.next_release_at) == (None, None, None)
        t.publish("other", '"y"')
        assert group_counts(t) == {**none, "ready": 1, "retrying": 1}, "another group is ready beside it"
        assert [(g.group_id, g.state) for g in t.groups()] == [("g", "retrying"), ("other", "ready")]
        assert [g.group_id for g in t.groups("retrying")] == ["g"], "the filter finds it"
        clock.now = start + 11.9
        assert t.stats().retrying == 1, "until the backoff's end"
        assert t.claim("w", V).group_id == "other", "a claim passes over it"
        clock.now = start + 12.1
        assert group_counts(t) == {**none, "ready": 1, "leased": 1}, "the backoff passed: ready again"
        again = t.claim("w", V)
        assert (again.group_id, again.attempts) == ("g", 2)
        t.nack(again)
        assert group_counts(t) == {**none, "leased": 1, "parked": 1}, "a nack of 0 parks: parked, not retrying"


def test_the_default_factor_and_cap(qpath, clock):
    # Retry(base) doubles up to an hour: 1000, 2000, then the cap.
    with Transport(qpath, clock=clock, retry=Retry(1000, jitter="none")) as t:
        t.publish("g", '"x"')
        lease = claim(t)
        for backoff in (1000.0, 2000.0, 3600.0, 3600.0):
            assert shown(t, "g") == backoff
            t.nack(lease)
            lease = waits(t, clock, backoff)


def test_without_a_policy_a_nack_of_0_frees_at_once(t):
    t.publish("g", '"x"')
    lease = claim(t)
    assert shown(t, "g") is None, "no policy: no backoff"
    t.nack(lease)
    lease = claim(t)
    assert lease is not None and lease.attempts == 2, "freed at once, as before"
    assert shown(t, "g") is None


def test_the_claiming_transport_s_policy_applies(qpath, clock):
    with_policy = Transport(qpath, clock=clock, retry=Retry(7, 1, 7, "none"))
    plain = Transport(qpath, clock=clock)
    with with_policy, plain:
        with_policy.publish("g", '"x"')
        lease = claim(plain)
        assert shown(plain, "g") is None, "claimed by a transport without a policy"
        plain.nack(lease)
        lease = claim(with_policy)
        assert shown(plain, "g") == 7.0, "claimed by the one with it: every transport's peek shows it"
        with_policy.nack(lease)
        parked(plain, "g", clock.now + 7)
        waits(plain, clock, 7)


def test_jitter_spreads_the_backoff_within_its_range(tmp_path, clock):
    for jitter, low in (("full", 0.0), ("equal", 5.0), ("none", 10.0)):
        with Transport(str(tmp_path / f"{jitter}.db"), clock=clock, retry=Retry(10, 1, 10, jitter)) as t:
            groups = [f"{jitter}-{i}" for i in range(20)]
            for g in groups:
                t.publish(g, '"x"')
            assert len(t.claim_many("w", V, max=20)) == 20
            drawn = [shown(t, g) for g in groups]
            if jitter == "none":
                assert drawn == [10.0] * 20
                continue
            assert all(low <= d < 10.0 for d in drawn), (jitter, drawn)
            assert len(set(drawn)) > 1, f"{jitter} draws each claim anew: {drawn}"
            if jitter == "full":
                assert any(d < 5.0 for d in drawn), f"full, not equal: {drawn}"


def test_a_base_over_an_hour_is_its_own_cap_unless_given_one(qpath, clock):
    with pytest.raises(ht.ArgumentError, match=r"retry\.cap is 3600; it must be finite seconds, from base \(7200\)"):
        Transport(qpath, clock=clock, retry=Retry(7200, cap=3600))
    with Transport(qpath, clock=clock, retry=Retry(7200, jitter="none")) as t:
        t.publish("g", '"x"')
        lease = claim(t)
        assert shown(t, "g") == 7200.0
        t.nack(lease)
        waits(t, clock, 7200.0)
        assert shown(t, "g") == 7200.0, "capped at the base"


def test_a_sharded_queue(tmp_path, clock):
    dbs = [str(tmp_path / f"shard{i}.db") for i in range(2)]
    groups = [next(f"g{i}" for i in range(100) if shard_of(f"g{i}", 2) == s) for s in range(2)]
    with Transport.open_shards(dbs, clock=clock, retry=Retry(3, jitter="none")) as t:
        for g in groups:
            t.publish_with(g, '"x"', retry=Retry(4, jitter="none") if g == groups[1] else None)
        leases = t.claim_many("w", V, max=2)
        assert len(leases) == 2
        assert [shown(t, g) for g in groups] == [3.0, 4.0], "the queue's on shard 0, the message's own on 1"
        for lease in leases:
            t.nack(lease)
        assert t.stats().parked == 2


def test_the_real_clock(qpath):
    # No test clock: the library reads the system's. A short backoff and a long sleep, so
    # that a loaded machine makes it no less certain.
    with Transport(qpath, retry=Retry(0.2, jitter="none")) as t:
        t.publish("g", '"x"')
        lease = claim(t)
        before = time.time()
        t.nack(lease)
        head = t.peek("g").items[0]
        assert (head.locked_by, head.retry_delay) == ("__parked__", 0.2)
        assert before + 0.2 - 0.01 <= head.lock_expiry <= time.time() + 0.2 + 0.01, "parked 0.2 s from the nack"
        time.sleep(1)
        lease = claim(t)
        assert lease is not None and lease.attempts == 2


# -- a message's own policy --------------------------------------------------------------


def test_a_message_s_own_policy_wins_over_the_queue_s(qpath, clock):
    own = Retry(5, 1, 5, "none")
    with Transport(qpath, clock=clock) as plain:
        assert plain.publish_with("g", '"own"', retry=own) == stored(1)
        lease = claim(plain)
        assert shown(plain, "g") == 5.0, "a plain transport claims it under its own policy"
        plain.nack(lease)
        parked(plain, "g", clock.now + 5)
        plain.ack(waits(plain, clock, 5))
    with Transport(qpath, clock=clock, retry=Retry(50, 1, 50, "none")) as queued:
        queued.publish_with("g", '"own"', retry=own)
        queued.publish_with("g", '"queue\'s"', key="k")  # delivery options, no policy: the queue's
        lease = claim(queued)
        assert (lease.event, shown(queued, "g")) == ('"own"', 5.0)
        queued.nack(lease)
        queued.ack(waits(queued, clock, 5))
        lease = claim(queued)
        assert (lease.event, shown(queued, "g")) == ('"queue\'s"', 50.0)
        queued.nack(lease)
        waits(queued, clock, 50)


def test_every_field_of_a_message_s_policy_reaches_the_library(t, clock):
    t.publish_with("g", '"x"', retry=Retry(base=1.5, factor=4, cap=10, jitter="none"))
    lease = claim(t)
    for backoff in (1.5, 6.0, 10.0, 10.0):
        assert shown(t, "g") == backoff
        t.nack(lease)
        lease = waits(t, clock, backoff)
    t.ack(lease)
    t.publish_with("e", '"x"', retry=Retry(10, 1, 10, "equal"))
    t.publish_with("f", '"x"', retry=Retry(10, 1, 10))  # full, the default
    claim(t), claim(t)
    assert 5.0 <= shown(t, "e") < 10.0 and 0.0 <= shown(t, "f") < 10.0


def test_publish_many_with_and_a_transaction(t, clock):
    got = t.publish_many_with(
        [
            Message("a", '"a"', retry=Retry(3, jitter="none")),
            ("b", '"b"'),  # a tuple: no delivery options
            Message("c", '"c"', retry=Retry(4, jitter="none"), ttl=60, unique_key="u"),
            Message("d", '"d"'),
        ]
    )
    assert got == [stored(1), stored(2), stored(3), stored(4)]
    with t.transaction() as tx:
        tx.publish_with("e", '"e"', retry=Retry(6, jitter="none"))
        tx.publish("f", '"f"')
    assert tx.published == [stored(5), stored(6)]
    leases = t.claim_many("w", V, max=6)
    assert len(leases) == 6
    backoffs = {g: shown(t, g) for g in "abcdef"}
    assert backoffs == {"a": 3.0, "b": None, "c": 4.0, "d": None, "e": 6.0, "f": None}
    for lease in leases:
        t.nack(lease)
    assert t.stats().parked == 3, "the three with a policy; the others free"
    assert {claim(t).group_id for _ in range(3)} == {"b", "d", "f"}
    assert claim(t) is None


def test_publish_many_refuses_a_policy_it_would_drop(t):
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many([("g", "0"), Message("g", "1", retry=Retry(1))])
    assert (
        "messages[1] has a key, delay, not_before, unique_key, unique_mode, debounce, ttl, expires_at or retry, "
        "which publish_many would drop; use publish_many_with" in e.value.message
    ), e.value.message
    assert t.stats().messages == 0


# -- peek --------------------------------------------------------------------------------


def test_peek_shows_each_message_s_retry_delay(t, clock):
    t.publish_with("g", '"1"', retry=Retry(2, jitter="none"))
    t.publish_with("g", '"2"', retry=Retry(3, jitter="none"))
    t.publish("g", '"3"')
    assert [m.retry_delay for m in t.peek("g").items] == [None, None, None], "never claimed"
    lease = claim(t)
    assert [m.retry_delay for m in t.peek("g").items] == [2.0, None, None]
    t.ack(lease)
    lease = claim(t)
    t.nack(lease)
    assert [m.retry_delay for m in t.peek("g").items] == [3.0, None]
    clock.now += 3.01
    lease = claim(t)
    assert lease.attempts == 2 and [m.retry_delay for m in t.peek("g").items] == [6.0, None]
    # in pages, each item its own
    first = t.peek("g", limit=1)
    second = t.peek("g", cursor=first.next, limit=1)
    assert [m.retry_delay for m in first.items + second.items] == [6.0, None]
    assert t.peek("nobody").items == [], "an empty page (a NULL array)"


# -- bad input ---------------------------------------------------------------------------

_BAD = [
    # what the binding refuses: what C would read otherwise (0: none, 2, an hour), the types
    (Retry(0), "retry.base is 0; it must be finite seconds, 0.001..315360000 (ten years)"),
    (Retry(-0.0), "retry.base is -0.0; it must be finite seconds"),
    (Retry(1, factor=0), "retry.factor is 0; it must be finite, 1..16"),
    (Retry(1, factor=0.0), "retry.factor is 0.0; it must be finite, 1..16"),
    (Retry(1, cap=0), "retry.cap is 0; it must be finite seconds, from base (1) to 315360000 (ten years)"),
    (Retry(1, jitter="fast"), "retry.jitter must be 'full', 'equal' or 'none', got the str 'fast'"),
    (Retry(1, jitter=2), "retry.jitter must be 'full', 'equal' or 'none', got int 2"),  # type: ignore[arg-type]
    (Retry(1, jitter="FULL"), "retry.jitter must be 'full', 'equal' or 'none'"),  # type: ignore[arg-type]
    (Retry("1"), "retry.base must be a number (int or float), got the str '1'"),  # type: ignore[arg-type]
    (Retry(True), "retry.base must be a number (int or float), got bool True"),
    (Retry(datetime.timedelta(seconds=5)), "retry.base must be a number (int or float), got timedelta; pass td."),
    (Retry(1, factor=None), "retry.factor must be a number (int or float), got NoneType"),  # type: ignore[arg-type]
    (Retry(1, cap=10**400), "retry.cap is too large"),
    ((1, 2, 60, "full"), "retry must be a Retry(base, factor=2.0, cap=None, jitter='full') or None, got tuple"),
    (2.0, "retry must be a Retry(base, factor=2.0, cap=None, jitter='full') or None, got float 2.0"),
    # what the library refuses, mapped to ArgumentError with its message
    (Retry(-1), "retry.base is -1; it must be finite seconds, 0.001..315360000 (ten years)"),
    (Retry(0.0005), "retry.base is 0.0005; it must be finite seconds, 0.001..315360000"),
    (Retry(math.nan), "retry.base is NaN; it must be finite seconds"),
    (Retry(math.inf), "retry.base is inf; it must be finite seconds"),
    (Retry(TEN_YEARS + 1, cap=TEN_YEARS + 1), f"retry.base is {TEN_YEARS + 1}; it must be finite seconds"),
    (Retry(1, factor=0.5), "retry.factor is 0.5; it must be finite, 1..16"),
    (Retry(1, factor=17), "retry.factor is 17; it must be finite, 1..16"),
    (Retry(1, factor=math.nan), "retry.factor is NaN; it must be finite, 1..16"),
    (Retry(1, cap=0.5), "retry.cap is 0.5; it must be finite seconds, from base (1) to 315360000 (ten years)"),
    (Retry(1, cap=-1), "retry.cap is -1; it must be finite seconds, from base (1)"),
    (Retry(1, cap=math.inf), "retry.cap is inf; it must be finite seconds"),
    (Retry(1, cap=TEN_YEARS + 1), f"retry.cap is {TEN_YEARS + 1}; it must be finite seconds"),
]


def _intact(t, lease):
    """The queue as the test left it: the one message, still leased, nothing dead."""
    assert [(m.seq, m.locked_by) for m in t.peek("g")] == [(lease.seq, "w")]
    s = t.stats()
    assert (s.messages, s.groups, s.dead) == (1, 1, 0)


@pytest.mark.parametrize("policy, names", _BAD)
def test_bad_retry_of_the_open(qpath, policy, names):
    with pytest.raises(ht.ArgumentError) as e:
        Transport(qpath, retry=policy)
    assert names in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"


@pytest.mark.parametrize("policy, names", _BAD)
def test_bad_retry_of_publish_with(t, policy, names):
    t.publish("g", "0")
    lease = claim(t)
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_with("g", "1", retry=policy)
    assert names in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    _intact(t, lease)


@pytest.mark.parametrize("policy, names", _BAD)
def test_bad_retry_of_a_batch(t, policy, names):
    t.publish("g", "0")
    lease = claim(t)
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("h", "1", retry=Retry(1)), Message("h", "2", retry=policy)])
    assert f"messages[1].{names}" in e.value.message, e.value.message
    _intact(t, lease)


@pytest.mark.parametrize("policy, names", _BAD)
def test_bad_retry_in_a_transaction(t, policy, names):
    t.publish("g", "0")
    lease = claim(t)
    tx = t.begin()
    with pytest.raises(ht.ArgumentError) as e:
        tx.publish_with("g", "1", retry=policy)
    assert names in e.value.message, e.value.message
    assert tx.commit() == [], "nothing was queued; the transaction went on to commit"
    _intact(t, lease)


# -- the asyncio face --------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock, retry=Retry(2, 1, 2, "none")) as t:
            assert await t.publish_with("a", '"a"', retry=Retry(3, jitter="none")) == stored(1)
            assert await t.publish_many_with([Message("b", '"b"', retry=Retry(4, jitter="none")), ("c", '"c"')]) == [
                stored(2),
                stored(3),
            ]
            async with t.transaction() as tx:
                tx.publish_with("d", '"d"', retry=Retry(5, jitter="none"))
            assert tx.published == [stored(4)]
            leases = await t.claim_many("w", V, max=4)
            assert len(leases) == 4
            shown_now = {g: (await t.peek(g)).items[0].retry_delay for g in "abcd"}
            assert shown_now == {"a": 3.0, "b": 4.0, "c": 2.0, "d": 5.0}, "c: the queue's"
            for lease in leases:
                await t.nack(lease)
            s = await t.stats()
            assert (s.ready, s.parked, s.retrying) == (0, 4, 0), "a nack of 0 parks each for its backoff"
            clock.now += 2.01
            assert (await t.claim("w", V)).group_id == "c"
            assert await t.claim("w", V) is None
            clock.now += V + 1  # c's lease lapsed 1 s ago: 1 s of its backoff of 2 left; the others' parks ended
            s = await t.stats()
            assert (s.ready, s.leased, s.parked, s.retrying) == (3, 0, 0, 1), s
            for policy, says in (
                (Retry(0), "retry.base is 0"),
                (Retry(1, factor=17), "retry.factor is 17"),
                (Retry(1, jitter="x"), "retry.jitter must be"),  # type: ignore[arg-type]
            ):
                with pytest.raises(ht.ArgumentError, match=says.replace(".", r"\.")):
                    await t.publish_with("g", "{}", retry=policy)
                with pytest.raises(ht.ArgumentError, match=r"messages\[0\]\." + says.replace(".", r"\.")):
                    await t.publish_many_with([Message("g", "{}", retry=policy)])
                async with t.transaction() as tx:
                    with pytest.raises(ht.ArgumentError, match=says.replace(".", r"\.")):
                        tx.publish_with("g", "{}", retry=policy)
                with pytest.raises(ht.ArgumentError, match=says.replace(".", r"\.")):
                    await AsyncTransport.open(qpath, retry=policy)
            assert (await t.stats()).messages == 4

    asyncio.run(main())
