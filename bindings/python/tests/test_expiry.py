"""Expiry: `publish_with`, `publish_many_with` and a transaction's `publish_with` with `ttl`
and `expires_at`, sync and async; the dead letter's reason "expired"; `Stats.expired`;
their bad input. The semantics are the library's (its contract tests); these check the
mapping (each option reaches the library, by the transport's clock and by the system's),
and that every refusal is an `ArgumentError` naming the argument (and in a batch the
message), the queue unchanged."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import math
import time
import typing

import pytest

import harel_transport as ht
from harel_transport import AsyncTransport, Message, Published, Transport

TEN_YEARS = 315_360_000


def stored(seq):
    return Published(seq, False, False)


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def sweep(t):
    """A claim that takes nothing (no group has its routing key): it sweeps the expired."""
    assert t.claim("w", 30, routing_keys=["none"]) is None


def expired(t):
    """(seq, group_id, event, reason) of every dead letter."""
    return [(d.seq, d.group_id, d.event, d.reason) for d in t.dead_letters().items]


# -- the values --------------------------------------------------------------------------


def test_message_and_the_signatures_take_ttl_and_expires_at():
    m = Message("g", "{}")
    assert (m.ttl, m.expires_at) == (None, None)
    m = Message("g", "{}", ttl=30, expires_at=2000.5)
    assert (m.ttl, m.expires_at) == (30, 2000.5)
    assert [f.name for f in dataclasses.fields(Message)][-3:-1] == ["ttl", "expires_at"], "added last (then retry)"
    for fn in (Transport.publish_with, AsyncTransport.publish_with, ht.Transaction.publish_with,
               ht.AsyncTransaction.publish_with):
        hints = typing.get_type_hints(fn)
        assert hints["ttl"] == hints["expires_at"] == typing.Optional[float], fn
    assert [f.name for f in dataclasses.fields(ht.Stats)][-3:] == ["expired", "held", "retrying"], "then held, retrying"
    assert ht.Stats(0.0, 0, 0, 0, 0, 0, 0, None, None, [], None, 0, None).expired == 0, "a default, last"
    assert ht.Stats(0.0, 0, 0, 0, 0, 0, 0, None, None, [], None, 0, None, 0, 3).expired == 3


# -- the options reach the library -------------------------------------------------------


def test_a_ttl_expires_the_message_into_the_dead_letters(t, clock):
    assert t.publish_with("g", '{"n":1}', ttl=10) == stored(1)
    assert t.publish_with("g", '{"n":2}') == stored(2)
    s = t.stats()
    assert (s.messages, s.dead, s.expired) == (2, 0, 0)
    clock.now = 1009.5
    assert t.stats().expired == 0, "a look expires nothing"
    clock.now = 1010.5
    assert t.stats().messages == 2, "nothing happens until a claim"
    lease = t.claim("w", 30)
    assert (lease.seq, lease.event) == (2, '{"n":2}'), "the claim buried the head; its group went on"
    assert expired(t) == [(1, "g", '{"n":1}', "expired")]
    (letter,) = t.dead_letters().items
    assert (letter.attempts, letter.last_worker, letter.dead_at) == (0, None, 1010.5)
    s = t.stats()
    assert (s.messages, s.dead, s.expired) == (1, 1, 1), "expired counts dead letters; they are in dead too"


def test_expires_at_and_the_earlier_of_the_two(t, clock):
    t.publish_with("a", '"at"', expires_at=1020)
    t.publish_with("b", '"ttl first"', ttl=15, expires_at=1100)
    t.publish_with("c", '"instant first"', ttl=100, expires_at=1016)
    t.publish_with("d", '"later"', ttl=40)
    clock.now = 1017
    sweep(t)
    assert sorted(e[2] for e in expired(t)) == ['"instant first"', '"ttl first"']
    clock.now = 1021
    sweep(t)
    assert sorted(e[2] for e in expired(t)) == ['"at"', '"instant first"', '"ttl first"']
    assert {e[3] for e in expired(t)} == {"expired"}
    assert t.stats().expired == 3
    assert t.claim("w", 30).event == '"later"'


def test_a_worker_holding_it_finishes_it(t, clock):
    t.publish_with("g", '"held"', ttl=5)
    lease = t.claim("w", 30)
    clock.now += 20
    assert t.claim("w", 30) is None
    t.ack(lease)
    s = t.stats()
    assert (s.messages, s.dead, s.expired) == (0, 0, 0), "acked past its expiry: never a dead letter"


def test_a_lapsed_lease_and_a_delayed_message_expire(t, clock):
    t.publish_with("g", '"lapsed"', ttl=20)
    t.publish_with("d", '"delayed"', delay=10, ttl=15)
    lease = t.claim("w", 5)
    assert lease.event == '"lapsed"'
    clock.now += 21
    assert t.claim("w", 30) is None
    assert sorted(e[2] for e in expired(t)) == ['"delayed"', '"lapsed"']
    with pytest.raises(ht.LeaseLostError):
        t.ack(lease)
    assert t.stats().expired == 2


def test_it_frees_its_unique_key_and_can_be_redriven(t, clock):
    assert t.publish_with("g", '"first"', unique_key="u", ttl=5) == stored(1)
    assert t.publish_with("g", '"again"', unique_key="u").duplicate
    clock.now += 6
    assert t.claim("w") is None
    assert t.publish_with("g", '"second"', unique_key="u", ttl=60) == stored(2), "the expired one freed its key"
    assert t.redrive(all=True) == 1
    s = t.stats()
    assert (s.messages, s.dead, s.expired) == (2, 0, 0)
    clock.now += 30  # past the first's expiry (1005), not the second's (1066)
    lease = t.claim("w")
    assert lease.event == '"second"', "the redriven one came back behind it, as the newest"
    t.ack(lease)
    assert t.claim("w").event == '"first"', "redriven: it expires no more"


def test_the_real_clock(qpath):
    # No test clock: the library reads the system's. A short ttl and a long sleep, so
    # that a loaded machine makes it no less certain.
    with Transport(qpath) as t:
        assert t.publish_with("g", '"short"', ttl=0.2) == stored(1)
        assert t.publish_with("g", '"long"', expires_at=time.time() + 3600) == stored(2)
        time.sleep(1)
        lease = t.claim("w", 30)
        assert lease is not None and lease.event == '"long"'
        assert expired(t) == [(1, "g", '"short"', "expired")]
        assert t.stats().expired == 1


# -- batches and transactions ------------------------------------------------------------


def test_publish_many_with_expiry(t, clock):
    got = t.publish_many_with(
        [
            Message("a", '"a"', ttl=10),
            ("b", '"b"'),  # a tuple: no delivery options
            Message("c", '"c"', expires_at=1030),
            Message("d", '"d"', ttl=5, unique_key="u", delay=2),
        ]
    )
    assert got == [stored(1), stored(2), stored(3), stored(4)]
    clock.now = 1012
    assert t.claim("w", 30).event == '"b"'
    assert sorted(e[2] for e in expired(t)) == ['"a"', '"d"']
    clock.now = 1031
    assert t.claim("w", 30) is None
    assert t.stats().expired == 3


def test_a_batch_is_all_or_none(t):
    t.publish("g", "0")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("g", "1", ttl=10), Message("h", "2", expires_at=999)])
    assert "messages[1].expires_at is 999: not after now (1000)" in e.value.message, e.value.message
    assert t.stats().messages == 1


def test_in_a_transaction(t, clock):
    with t.transaction() as tx:
        tx.publish_with("g", '"tx"', ttl=10)
        tx.publish_with("h", '"tx at"', expires_at=1005, unique_key="u")
        tx.publish("g", '"plain"')
    assert tx.published == [stored(1), stored(2), stored(3)]
    clock.now = 1011
    assert t.claim("w", 30).event == '"plain"'
    assert sorted(e[2] for e in expired(t)) == ['"tx at"', '"tx"']
    assert t.stats().expired == 2


def test_an_expiry_not_after_now_in_a_transaction_keeps_nothing(t, qpath):
    # The library checks it against its own "now" at the latest at the commit: either
    # publish_with refuses it (the transaction goes on) or the commit does (nothing kept).
    tx = t.begin()
    tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    try:
        tx.publish_with("g", "1", expires_at=999)
    except ht.ArgumentError as e:
        assert "expires_at is 999: not after now (1000)" in e.message, e.message
        tx.rollback()
    else:
        with pytest.raises(ht.ArgumentError, match=r"expires_at is 999: not after now \(1000\)"):
            tx.commit()
    assert t.stats().messages == 0
    with t.transaction() as again:  # the table was not kept either way
        again.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")


# -- bad input ---------------------------------------------------------------------------

_BAD = [
    # what the binding refuses: not a number, and 0 (which C reads as never)
    (dict(ttl="5"), "ttl must be a number of seconds (int or float) or None, got the str '5'"),
    (dict(ttl=True), "ttl must be a number of seconds (int or float) or None, got bool True"),
    (
        dict(ttl=datetime.timedelta(seconds=5)),
        "ttl must be a number of seconds (int or float) or None, got timedelta; pass td.total_seconds()",
    ),
    (dict(ttl=0), "ttl is 0; it must be a finite number of seconds > 0, at most 315360000 (ten years)"),
    (dict(ttl=-0.0), "ttl is -0.0; it must be a finite number of seconds > 0"),
    (dict(ttl=10**400), "ttl is too large"),
    (dict(expires_at="soon"), "expires_at must be epoch seconds (int or float) or None, got the str 'soon'"),
    (dict(expires_at=False), "expires_at must be epoch seconds (int or float) or None, got bool False"),
    (
        dict(expires_at=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)),
        "expires_at must be epoch seconds (int or float) or None, got datetime; pass dt.timestamp()",
    ),
    (dict(expires_at=0), "expires_at is 0: not after now"),
    (dict(expires_at=0.0), "expires_at is 0.0: not after now"),
    (dict(expires_at=10**400), "expires_at is too large"),
    # what the library refuses, mapped to ArgumentError with its message
    (dict(ttl=math.nan), "ttl is NaN; it must be a finite number of seconds > 0, at most 315360000 (ten years)"),
    (dict(ttl=math.inf), "ttl is inf; it must be a finite number of seconds > 0"),
    (dict(ttl=-1), "ttl is -1; it must be a finite number of seconds > 0"),
    (dict(ttl=TEN_YEARS + 1), f"ttl is {TEN_YEARS + 1}; it must be a finite number of seconds > 0"),
    (dict(expires_at=math.nan), "expires_at is NaN; it must be finite epoch seconds >= 0"),
    (dict(expires_at=math.inf), "expires_at is inf; it must be finite epoch seconds >= 0"),
    (dict(expires_at=-math.inf), "expires_at is -inf; it must be finite epoch seconds >= 0"),
    (dict(expires_at=-5), "expires_at is -5; it must be finite epoch seconds >= 0"),
]

# Refused against the library's "now" (the test clock's 1000): in a transaction, checked
# by the commit at the latest (test_an_expiry_not_after_now_in_a_transaction_keeps_nothing).
_NOT_AFTER = [
    (dict(expires_at=1000), "expires_at is 1000: not after now (1000)"),
    (dict(expires_at=999.5), "expires_at is 999.5: not after now (1000)"),
    (dict(ttl=30, delay=60), "expires_at is 1030: not after the message is due (1060), so it could never be"),
    (dict(expires_at=1030, not_before=1060), "expires_at is 1030: not after the message is due (1060)"),
    (dict(expires_at=1060, delay=60), "expires_at is 1060: not after the message is due (1060)"),
    (dict(ttl=100, expires_at=1010, delay=20), "expires_at is 1010: not after the message is due (1020)"),
]


def _intact(t, lease):
    """The queue as the test left it: the one message, still leased, nothing dead."""
    assert [(m.seq, m.locked_by) for m in t.peek("g")] == [(lease.seq, "w")]
    s = t.stats()
    assert (s.messages, s.groups, s.dead, s.expired) == (1, 1, 0, 0)


@pytest.mark.parametrize("kwargs, names", _BAD + _NOT_AFTER)
def test_bad_expiry_of_publish_with(t, kwargs, names):
    t.publish("g", "0")
    lease = t.claim("w")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_with("g", "1", **kwargs)
    assert names in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    _intact(t, lease)


@pytest.mark.parametrize("kwargs, names", _BAD + _NOT_AFTER)
def test_bad_expiry_of_a_batch(t, kwargs, names):
    t.publish("g", "0")
    lease = t.claim("w")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("h", "1", ttl=60), Message("h", "2", **kwargs)])
    assert f"messages[1].{names}" in e.value.message, e.value.message
    _intact(t, lease)


@pytest.mark.parametrize("kwargs, names", _BAD)
def test_bad_expiry_in_a_transaction(t, kwargs, names):
    t.publish("g", "0")
    lease = t.claim("w")
    tx = t.begin()
    with pytest.raises(ht.ArgumentError) as e:
        tx.publish_with("g", "1", **kwargs)
    assert names in e.value.message, e.value.message
    assert tx.commit() == [], "nothing was queued; the transaction went on to commit"
    _intact(t, lease)


def test_publish_many_refuses_expiry_it_would_drop(t):
    for m in (Message("g", "1", ttl=5), Message("g", "1", expires_at=2000)):
        with pytest.raises(ht.ArgumentError, match=r"messages\[0\] has a .*ttl, expires_at or retry, which publish_"):
            t.publish_many([m])
    assert t.stats().messages == 0


# -- the async face ----------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            assert await t.publish_with("a", '"a"', ttl=10) == stored(1)
            assert await t.publish_with("b", '"b"', expires_at=1010, key="k") == stored(2)
            got = await t.publish_many_with([Message("c", '"c"', ttl=5), ("d", '"d"')])
            assert got == [stored(3), stored(4)]
            async with t.transaction() as tx:
                tx.publish_with("e", '"e"', ttl=8)
            assert tx.published == [stored(5)]
            clock.now = 1011
            assert (await t.claim("w", 30)).event == '"d"'
            assert await t.claim("w", 30) is None
            s = await t.stats()
            assert (s.messages, s.dead, s.expired) == (1, 4, 4)
            assert {d.reason for d in (await t.dead_letters()).items} == {"expired"}
            with pytest.raises(ht.ArgumentError, match="ttl is NaN"):
                await t.publish_with("g", "{}", ttl=math.nan)
            with pytest.raises(ht.ArgumentError, match=r"expires_at is 1011: not after now \(1011\)"):
                await t.publish_with("g", "{}", expires_at=1011)
            with pytest.raises(ht.ArgumentError, match=r"messages\[0\]\.ttl is -1"):
                await t.publish_many_with([Message("g", "{}", ttl=-1)])
            assert (await t.stats()).messages == 1

    asyncio.run(main())
