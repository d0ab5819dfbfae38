"""Unique keys: `publish_with`, `publish_many_with` and a transaction's `publish_with` with
`unique_key`, `unique_mode` ("keep", "replace", "debounce") and `debounce`, sync and async;
`Published.replaced`; their bad input. The semantics are the library's (its contract
tests); these check the mapping (each outcome, each mode, the key's life as a Python
producer sees it), and that every refusal is an `ArgumentError` naming the argument, the
queue unchanged."""

from __future__ import annotations

import asyncio
import math
import typing

import pytest

import harel_transport as ht
from conftest import inspect_db
from harel_transport import AsyncTransport, Message, Published, Transport

TEN_YEARS = 315_360_000

def stored(seq):
    return Published(seq, False, False)


def duplicate(seq):
    return Published(seq, True, False)


def replaced(seq):
    return Published(seq, True, True)


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def events(t, group):
    return [(m.seq, m.event) for m in t.peek(group).items]


def unique_keys(path):
    """(seq, unique_key) of every message, read by sqlite3 in another process."""
    return inspect_db(path, "SELECT seq, unique_key FROM harel_transport_messages ORDER BY seq")


# -- the values --------------------------------------------------------------------------


def test_published_has_replaced_beside_duplicate():
    p = Published(7, True, True)
    seq, dup, rep = p
    assert (seq, dup, rep) == (p.seq, p.duplicate, p.replaced) == (7, True, True)
    assert Published(7, True) == Published(7, True, False), "replaced defaults to False"
    assert Published._fields == ("seq", "duplicate", "replaced")


def test_message_and_the_signatures_take_the_unique_options():
    m = Message("g", "{}")
    assert (m.unique_key, m.unique_mode, m.debounce) == (None, "keep", None)
    m = Message("g", "{}", unique_key="u", unique_mode="debounce", debounce=(1, 2))
    assert (m.unique_key, m.unique_mode, m.debounce) == ("u", "debounce", (1, 2))
    assert typing.get_args(ht.UniqueMode) == ("keep", "replace", "debounce")
    for fn in (Transport.publish_with, AsyncTransport.publish_with, ht.Transaction.publish_with,
               ht.AsyncTransaction.publish_with):
        hints = typing.get_type_hints(fn)
        assert hints["unique_key"] == typing.Optional[str], fn
        assert hints["unique_mode"] == ht.UniqueMode, fn
        assert hints["debounce"] == typing.Optional[typing.Tuple[float, float]], fn


# -- the outcomes ------------------------------------------------------------------------


def test_stored_then_a_duplicate_while_pending(t, qpath):
    assert t.publish_with("g", '{"n":1}', unique_key="invoice-42") == stored(1)
    got = t.publish_with("g", '{"n":2}', unique_key="invoice-42")
    assert got == duplicate(1) and isinstance(got.replaced, bool)
    assert t.publish_with("h", '{"n":3}', unique_key="invoice-42") == duplicate(1), "the queue's key, any group"
    assert t.publish_with("g", '{"n":4}', unique_key="invoice-43") == stored(2)
    assert t.publish_with("g", '{"n":5}') == stored(3), "no key"
    assert events(t, "g") == [(1, '{"n":1}'), (2, '{"n":4}'), (3, '{"n":5}')]
    assert [g.group_id for g in t.groups().items] == ["g"], "a duplicate makes no group"
    assert unique_keys(qpath) == [[1, "invoice-42"], [2, "invoice-43"], [3, None]]


def test_the_key_is_held_while_delayed_leased_or_parked_and_freed_at_the_ack(t, clock):
    assert t.publish_with("g", "1", unique_key="u", delay=10) == stored(1)
    assert t.publish_with("g", "2", unique_key="u") == duplicate(1), "delayed"
    clock.now += 10.5
    lease = t.claim("w", 30)
    assert lease.seq == 1
    assert t.publish_with("g", "3", unique_key="u") == duplicate(1), "leased"
    t.nack(lease, 60)
    assert t.publish_with("g", "4", unique_key="u") == duplicate(1), "parked"
    clock.now += 60.5
    lease = t.claim("w", 30)
    t.ack(lease)
    assert t.publish_with("g", "5", unique_key="u") == stored(2), "acked: the key is free again"
    # an idempotency key, by contrast, stays a duplicate after the ack
    assert t.publish_with("k", "6", key="u") == stored(3), "the two kinds of key are apart"


def test_the_key_is_freed_by_a_dead_letter_and_a_purge_and_a_redrive_has_none(t):
    assert t.publish_with("g", "1", unique_key="u") == stored(1)
    t.dead_letter(t.claim("w", 30), "bad")
    assert t.publish_with("g", "2", unique_key="u") == stored(2), "dead-lettered: freed"
    assert t.redrive(all=True) == 1
    assert t.publish_with("g", "3", unique_key="u") == duplicate(2), "the redriven one holds no key"
    assert t.purge_group("g") == 2
    assert t.publish_with("g", "4", unique_key="u") == stored(4), "purged: freed"
    assert t.purge() == 1
    assert t.publish_with("g", "5", unique_key="u") == stored(5)


def test_replace_takes_the_event_and_headers_in_place(t):
    assert t.publish_with("a", '{"v":1}', unique_key="u", priority=2, routing_key="eu",
                          headers=[("x", "1")]) == stored(1)
    assert t.publish_with("a", '{"after":1}') == stored(2)
    got = t.publish_with("b", '{"v":2}', unique_key="u", unique_mode="replace", priority=4, headers=[("y", "2")])
    assert got == replaced(1)
    assert events(t, "a") == [(1, '{"v":2}'), (2, '{"after":1}')], "in its place, its group's"
    assert t.peek("a").items[0].headers == [("y", "2")]
    (a,) = t.groups().items
    assert (a.group_id, a.priority, a.routing_key) == ("a", 2, "eu"), "its group, priority and routing key stay"
    assert t.publish_with("a", '{"v":3}', unique_key="u", unique_mode="replace") == replaced(1)
    assert t.peek("a").items[0].headers == [], "the new publish's headers: none"
    # the first publish with a key in mode replace: stored
    assert t.publish_with("c", '{"v":1}', unique_key="new", unique_mode="replace") == stored(3)
    lease = t.claim("w", 30)
    assert (lease.seq, lease.event) == (1, '{"v":3}')


def test_replace_never_touches_a_message_a_worker_holds(t, clock):
    t.publish_with("g", '"first"', unique_key="u")
    lease = t.claim("w", 30)
    assert t.publish_with("g", '"second"', unique_key="u", unique_mode="replace") == duplicate(1), "kept"
    assert t.publish_with("g", '"third"', unique_key="u", unique_mode="debounce", debounce=(5, 10)) == duplicate(1)
    assert events(t, "g") == [(1, '"first"')]
    clock.now += 31  # the lease lapsed: no worker holds it now
    assert t.publish_with("g", '"fourth"', unique_key="u", unique_mode="replace") == replaced(1)
    with pytest.raises(ht.LeaseLostError):
        t.ack(lease)
    again = t.claim("w", 30)
    assert (again.seq, again.event) == (1, '"fourth"')


def test_replace_keeps_a_parked_message_parked(t, clock):
    t.publish_with("g", '"first"', unique_key="u")
    t.nack(t.claim("w", 30), 100)
    assert t.publish_with("g", '"second"', unique_key="u", unique_mode="replace") == replaced(1)
    (g,) = t.groups().items
    assert (g.state, g.lock_expiry) == ("parked", 1100.0)
    clock.now += 100.5
    assert t.claim("w", 30).event == '"second"'


# -- debounce ----------------------------------------------------------------------------


def test_debounce_moves_the_due_time_up_to_its_cap(t, clock):
    got = t.publish_with("g", '{"n":1}', unique_key="d", unique_mode="debounce", debounce=(10, 25))
    assert got == stored(1), "a new message"
    s = t.stats()
    assert (s.delayed, s.ready, s.next_due_at) == (1, 0, 1010.0), "due delay seconds from now"
    assert t.groups().items[0].state == "delayed"
    clock.now += 8
    assert t.publish_with("g", '{"n":2}', unique_key="d", unique_mode="debounce", debounce=(10, 25)) == replaced(1)
    assert (t.stats().delayed, t.stats().next_due_at) == (1, 1018.0), "moved to now + delay"
    clock.now += 9  # 1017
    assert t.claim("w", 30) is None
    assert t.publish_with("g", '{"n":3}', unique_key="d", unique_mode="debounce", debounce=(10, 25)) == replaced(1)
    assert t.stats().next_due_at == 1025.0, "never past the first publish + max_delay"
    assert t.publish_with("g", '{"n":4}', unique_key="d") == duplicate(1), "keep: nothing changes"
    clock.now = 1025
    assert t.claim("w", 30) is None and t.stats().delayed == 1, "not at its due time: after it"
    clock.now = 1025.1
    lease = t.claim("w", 30)
    assert (lease.seq, lease.event) == (1, '{"n":3}')
    assert t.stats().delayed == 0
    t.ack(lease)
    assert t.publish_with("g", "5", unique_key="d", unique_mode="debounce", debounce=(0, 0)) == stored(2)
    assert t.stats().delayed == 0, "a debounce of 0 s: due now"
    assert t.claim("w", 30).event == "5"


def test_debounce_in_a_batch(t, clock):
    got = t.publish_many_with(
        [Message("g", str(i), unique_key="d", unique_mode="debounce", debounce=(5 * (i + 1), 60)) for i in range(3)]
    )
    assert got == [stored(1), replaced(1), replaced(1)], "a key met earlier in the batch finds it pending"
    s = t.stats()
    assert (s.messages, s.delayed, s.next_due_at) == (1, 1, 1015.0)
    assert events(t, "g") == [(1, "2")]


# -- batches -----------------------------------------------------------------------------


def test_publish_many_with_unique_keys(t, qpath):
    assert t.publish_with("a", "0", unique_key="pending") == stored(1)
    got = t.publish_many_with(
        [
            Message("a", "1", unique_key="new"),
            ("b", "2"),  # a tuple: no delivery options
            Message("b", "3", unique_key="new"),  # the batch's first is pending
            Message("c", "4", unique_key="pending"),  # pending from before
            Message("c", "5", unique_key="pending", unique_mode="replace", headers=[("h", "v")]),
            Message("c", "6", key="idem"),
            Message("c", "7", unique_key="new", unique_mode="replace"),  # the batch's own, replaced
        ]
    )
    assert got == [stored(2), stored(3), duplicate(2), duplicate(1), replaced(1), stored(4), replaced(2)]
    assert events(t, "a") == [(1, "5"), (2, "7")]
    assert t.peek("a").items[0].headers == [("h", "v")]
    assert events(t, "b") == [(3, "2")] and events(t, "c") == [(4, "6")]
    assert unique_keys(qpath) == [[1, "pending"], [2, "new"], [3, None], [4, None]]


def test_a_batch_is_all_or_none(t, qpath):
    t.publish_with("g", "0", unique_key="u0")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("g", "1", unique_key="u1"), Message("h", "2", unique_key="")])
    assert "messages[1].unique_key is empty" in e.value.message
    assert unique_keys(qpath) == [[1, "u0"]]
    assert t.publish_with("g", "1", unique_key="u1") == stored(2), "u1 was not kept"


# -- transactions ------------------------------------------------------------------------


def test_in_a_transaction_a_duplicate_is_an_answer(t, qpath):
    assert t.publish_with("g", '"pending"', unique_key="u") == stored(1)
    with t.transaction() as tx:
        tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        tx.execute("INSERT INTO orders (id) VALUES (7)")
        tx.publish_with("g", '"again"', unique_key="u")
        tx.publish_with("g", '"replacing"', unique_key="u", unique_mode="replace", headers=[("x", "y")])
        tx.publish_with("h", '"new"', unique_key="v", unique_mode="debounce", debounce=(30, 60))
        tx.publish_with("h", '"new again"', unique_key="v")
        tx.publish("h", '"plain"')
    assert tx.published == [duplicate(1), replaced(1), stored(2), duplicate(2), stored(3)]
    assert inspect_db(qpath, "SELECT id FROM orders") == [[7]], "the statements committed with the duplicates"
    assert events(t, "g") == [(1, '"replacing"')] and t.peek("g").items[0].headers == [("x", "y")]
    s = t.stats()
    assert (s.messages, s.delayed, s.next_due_at) == (3, 1, 1030.0)

    tx = t.begin()
    tx.publish_with("r", "1", unique_key="rolled-back")
    tx.rollback()
    assert t.publish_with("r", "1", unique_key="rolled-back") == stored(4), "a rollback holds no key"


def test_a_refused_unique_option_in_a_transaction_queues_nothing_and_it_goes_on(t, qpath):
    with t.transaction() as tx:
        tx.publish_with("g", "1", unique_key="u")
        with pytest.raises(ht.ArgumentError, match="unique_key is empty"):
            tx.publish_with("g", "2", unique_key="")
        with pytest.raises(ht.ArgumentError, match="key and unique_key are both given"):
            tx.publish_with("g", "2", key="k", unique_key="u2")
        with pytest.raises(ht.ArgumentError, match=r"debounce max_delay is 5; it must be >= its delay \(10\)"):
            tx.publish_with("g", "2", unique_key="u2", unique_mode="debounce", debounce=(10, 5))
        with pytest.raises(ht.ArgumentError, match="unique_mode must be 'keep', 'replace' or 'debounce'"):
            tx.publish_with("g", "2", unique_key="u2", unique_mode="merge")
        tx.publish_with("g", "3", unique_key="u3")
    assert tx.published == [stored(1), stored(2)]
    assert unique_keys(qpath) == [[1, "u"], [2, "u3"]]


# -- bad input ---------------------------------------------------------------------------

_BAD_UNIQUE = [
    # what the binding refuses: what ctypes would change, the names of the modes, the pair
    (dict(unique_key=5), "unique_key must be a str, got int 5"),
    (dict(unique_key=b"u"), "unique_key must be a str, got bytes"),
    (dict(unique_key="u\0"), "unique_key holds a NUL"),
    (dict(unique_key="u\ud800"), "unique_key is not valid Unicode"),
    (dict(unique_key="u", unique_mode="merge"), "unique_mode must be 'keep', 'replace' or 'debounce', got the str"),
    (dict(unique_key="u", unique_mode="KEEP"), "unique_mode must be 'keep', 'replace' or 'debounce'"),
    (dict(unique_key="u", unique_mode=1), "unique_mode must be 'keep', 'replace' or 'debounce', got int 1"),
    (dict(unique_key="u", unique_mode=None), "unique_mode must be 'keep', 'replace' or 'debounce', got NoneType"),
    (dict(unique_key="u", unique_mode="debounce"), "unique_mode is 'debounce', which needs debounce=(delay, max_"),
    (dict(unique_key="u", debounce=(1, 2)), "debounce is given with unique_mode 'keep', which would ignore it"),
    (dict(unique_key="u", unique_mode="replace", debounce=(1, 2)), "debounce is given with unique_mode 'replace'"),
    (dict(unique_key="u", unique_mode="debounce", debounce=5), "debounce must be a (delay, max_delay) pair"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(1, 2, 3)), "debounce must be a (delay, max_delay) pair"),
    (dict(unique_key="u", unique_mode="debounce", debounce="12"), "debounce must be a (delay, max_delay) pair"),
    (dict(unique_key="u", unique_mode="debounce", debounce=("1", 2)), "debounce delay must be a number of seconds"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(True, 2)), "debounce delay must be a number of seconds"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(1, None)), "debounce max_delay must be a number"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(10**400, 1)), "debounce delay is too large"),
    # what the library refuses, mapped to ArgumentError with its message
    (dict(unique_key=""), "unique_key is empty"),
    (dict(unique_key="u" * 257), "unique_key is 257 bytes; at most 256"),
    (dict(unique_key="é" * 129), "unique_key is 258 bytes; at most 256"),
    (dict(key="k", unique_key="u"), "unique_key are both given: a publish takes one"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(math.nan, 1)), "debounce delay is NaN"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(1, math.nan)), "debounce max_delay is NaN"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(math.inf, math.inf)), "debounce delay is inf"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(-1, 5)), "debounce delay is -1"),
    (dict(unique_key="u", unique_mode="debounce", debounce=(0, -1)), "debounce max_delay is -1"),
    (
        dict(unique_key="u", unique_mode="debounce", debounce=(0, TEN_YEARS + 1)),
        f"debounce max_delay is {TEN_YEARS + 1}; it must be a finite number of seconds, 0..{TEN_YEARS}",
    ),
    (
        dict(unique_key="u", unique_mode="debounce", debounce=(10, 5)),
        "debounce max_delay is 5; it must be >= its delay (10)",
    ),
]


def _intact(t, qpath, lease):
    """The queue as the test left it: the one message, still leased, its key still held."""
    assert [(m.seq, m.locked_by) for m in t.peek("g")] == [(lease.seq, "w")]
    assert t.stats().messages == 1 and t.groups().items[0].group_id == "g"
    assert unique_keys(qpath) == [[1, "u0"]]


@pytest.mark.parametrize("kwargs, names", _BAD_UNIQUE)
def test_bad_unique_options_of_publish_with(t, qpath, kwargs, names):
    t.publish_with("g", "0", unique_key="u0")
    lease = t.claim("w")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_with("g", "1", **kwargs)
    assert names in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    _intact(t, qpath, lease)


@pytest.mark.parametrize("kwargs, names", _BAD_UNIQUE)
def test_bad_unique_options_of_a_batch(t, qpath, kwargs, names):
    t.publish_with("g", "0", unique_key="u0")
    lease = t.claim("w")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("h", "1", unique_key="u1"), Message("h", "2", **kwargs)])
    assert names in e.value.message and "messages[1]." in e.value.message, e.value.message
    _intact(t, qpath, lease)


@pytest.mark.parametrize("kwargs, names", _BAD_UNIQUE)
def test_bad_unique_options_in_a_transaction(t, qpath, kwargs, names):
    t.publish_with("g", "0", unique_key="u0")
    lease = t.claim("w")
    tx = t.begin()
    with pytest.raises(ht.ArgumentError) as e:
        tx.publish_with("g", "1", **kwargs)
    assert names in e.value.message, e.value.message
    assert tx.commit() == [], "nothing was queued; the transaction went on to commit"
    _intact(t, qpath, lease)


def test_publish_many_refuses_unique_options_it_would_drop(t):
    with pytest.raises(ht.ArgumentError, match=r"messages\[0\] has a key, delay, not_before, unique_key"):
        t.publish_many([Message("g", "1", unique_key="u")])
    assert t.stats().messages == 0


def test_a_mode_without_a_unique_key_is_a_plain_publish(t):
    assert t.publish_with("g", "1", unique_mode="replace") == stored(1)
    assert t.publish_with("g", "2", unique_mode="debounce", debounce=(10, 20)) == stored(2)
    assert t.stats().delayed == 0, "no key: nothing to debounce"


# -- the async face ----------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            assert await t.publish_with("g", '"a"', unique_key="u") == stored(1)
            assert await t.publish_with("g", '"b"', unique_key="u") == duplicate(1)
            assert await t.publish_with("g", '"c"', unique_key="u", unique_mode="replace",
                                        headers=[("k", "v")]) == replaced(1)
            got = await t.publish_with("d", '"d"', unique_key="d", unique_mode="debounce", debounce=(10, 20))
            assert got == stored(2)
            got = await t.publish_many_with(
                [
                    Message("g", '"e"', unique_key="u"),
                    Message("d", '"f"', unique_key="d", unique_mode="debounce", debounce=(15, 20)),
                    ("x", '"g"'),
                ]
            )
            assert got == [duplicate(1), replaced(2), stored(3)]
            s = await t.stats()
            assert (s.messages, s.delayed, s.next_due_at) == (3, 1, 1015.0)
            async with t.transaction() as tx:
                tx.publish_with("g", '"h"', unique_key="u", unique_mode="replace")
                tx.publish_with("t", '"i"', unique_key="t")
                tx.publish_with("t", '"j"', unique_key="t")
            assert tx.published == [replaced(1), stored(4), duplicate(4)]
            lease = await t.claim("w", 30)
            assert (lease.seq, lease.event, lease.headers) == (1, '"h"', [])
            await t.ack(lease)
            assert await t.publish_with("g", '"k"', unique_key="u") == stored(5), "freed by the ack"
            with pytest.raises(ht.ArgumentError, match="unique_key is empty"):
                await t.publish_with("g", "{}", unique_key="")
            with pytest.raises(ht.ArgumentError, match="unique_mode must be 'keep', 'replace' or 'debounce'"):
                await t.publish_with("g", "{}", unique_key="u", unique_mode="later")
            with pytest.raises(ht.ArgumentError, match=r"messages\[0\]\.debounce max_delay is 1"):
                await t.publish_many_with([Message("g", "{}", unique_key="u", unique_mode="debounce", debounce=(2, 1))])
            async with t.transaction() as tx:
                with pytest.raises(ht.ArgumentError, match="key and unique_key are both given"):
                    tx.publish_with("g", "{}", key="k", unique_key="u")
            assert tx.published == []
            assert (await t.stats()).messages == 4

    asyncio.run(main())
