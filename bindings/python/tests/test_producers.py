"""Producer options: `publish_with` and `publish_many_with` (idempotency keys, delays and
due instants, each message's `Published`), the `key_retention` option, the delayed state
in `stats` and the listings; their bad input; the async face. The semantics are the
library's (its contract tests); these check the mapping, and the semantics a Python
producer relies on."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import math
import time

import pytest

import harel_transport as ht
from conftest import inspect_db, run_python
from harel_transport import AsyncTransport, Message, Published, Transport

TEN_YEARS = 315_360_000


@pytest.fixture
def t(qpath, clock):
    transport = Transport(qpath, clock=clock)
    yield transport
    transport.close()


def keys_of(path):
    return inspect_db(path, "SELECT key, seq FROM harel_transport_keys ORDER BY seq")


# -- idempotency keys ------------------------------------------------------------------


def test_publish_with_returns_the_seq_and_whether_it_was_a_duplicate(t, qpath):
    first = t.publish_with("g", '{"n":0}', key="order-42/paid")
    assert first == Published(1, False) and isinstance(first, Published)
    seq, duplicate, replaced = first
    assert (seq, duplicate, replaced) == (first.seq, first.duplicate, first.replaced) == (1, False, False)
    assert isinstance(first.duplicate, bool) and isinstance(first.replaced, bool)
    again = t.publish_with("g", '{"n":"retry"}', key="order-42/paid")
    assert again == Published(1, True), "the first message's seq; nothing stored"
    assert [m.event for m in t.peek("g")] == ['{"n":0}']
    other = t.publish_with("g", '{"n":1}', key="order-42/shipped", priority=3, routing_key="eu")
    assert other == Published(2, False)
    plain = t.publish_with("h", '{"n":2}')
    assert plain == Published(3, False), "no key, no delay: a plain publish that says its seq"
    (g, h) = t.groups().items
    assert (g.priority, g.routing_key) == (0, None), "g's first publish fixed them"
    assert (h.group_id, h.depth) == ("h", 1)
    assert keys_of(qpath) == [["order-42/paid", 1], ["order-42/shipped", 2]]


def test_a_key_stays_a_duplicate_after_its_message_was_acked(t):
    assert t.publish_with("g", "1", key="k") == Published(1, False)
    lease = t.claim("w")
    t.ack(lease)
    assert t.stats().messages == 0
    assert t.publish_with("g", "1", key="k") == Published(1, True), "the retry after the ack stores nothing"
    assert t.claim("w") is None


def test_key_retention_forgets_a_key_after_it(qpath, clock):
    with Transport(qpath, clock=clock, key_retention=60) as t:
        assert t.publish_with("g", "1", key="k") == Published(1, False)
        clock.now += 59
        assert t.publish_with("g", "1", key="k") == Published(1, True)
        clock.now += 2
        assert t.publish_with("g", "1", key="k") == Published(2, False), "forgotten after 60 s: stored again"
    with Transport(qpath, clock=clock) as t:  # the default, a day
        assert t.publish_with("g", "2", key="k2") == Published(3, False)
        clock.now += 86_399
        assert t.publish_with("g", "2", key="k2") == Published(3, True)
        clock.now += 2
        assert t.publish_with("g", "2", key="k2") == Published(4, False)


def test_publish_many_with_keys_in_a_batch(t, qpath):
    assert t.publish_with("a", "0", key="seen") == Published(1, False)
    got = t.publish_many_with(
        [
            Message("a", "1", key="new"),
            ("b", "2"),  # a tuple: no delivery options
            Message("a", "3", key="new"),  # a duplicate of the batch's first
            Message("c", "4", key="seen"),  # a duplicate of an earlier publish
            Message("c", "5", priority=2, routing_key="eu"),
        ]
    )
    assert got == [Published(2, False), Published(3, False), Published(2, True), Published(1, True), Published(4, False)]
    assert all(isinstance(p, Published) for p in got)
    assert [(m.seq, m.event) for m in t.peek("a")] == [(1, "0"), (2, "1")]
    assert [(m.seq, m.event) for m in t.peek("c")] == [(4, "5")], "c made by its first stored message"
    (c,) = t.groups(limit=10).items[2:]
    assert (c.group_id, c.priority, c.routing_key) == ("c", 2, "eu")
    assert keys_of(qpath) == [["seen", 1], ["new", 2]]
    assert t.publish_many_with([]) == []
    assert t.publish_many_with(iter([Message("d", "6")])) == [Published(5, False)]


def test_publish_many_with_is_all_or_none(t, qpath):
    t.publish_with("g", "0", key="k0")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("g", "1", key="k1"), Message("h", "2", delay=-1)])
    assert "messages[1].delay is -1" in e.value.message
    assert t.stats().messages == 1 and keys_of(qpath) == [["k0", 1]]
    assert t.publish_with("g", "1", key="k1") == Published(2, False), "k1 was not kept"


def test_publish_many_refuses_delivery_options_it_would_drop(t):
    for m in (
        Message("g", "1", key="k"),
        Message("g", "1", delay=5),
        Message("g", "1", not_before=2000.0),
        Message("g", "1", unique_key="u"),
        Message("g", "1", unique_mode="replace"),
        Message("g", "1", unique_mode="debounce", debounce=(1, 2)),
        Message("g", "1", ttl=60),
        Message("g", "1", expires_at=2000.0),
    ):
        with pytest.raises(ht.ArgumentError) as e:
            t.publish_many([("g", "0"), m])
        assert (
            "messages[1] has a key, delay, not_before, unique_key, unique_mode, debounce, ttl, expires_at or retry, "
            "which publish_many would drop; use publish_many_with" in e.value.message
        )
    t.publish_many([Message("g", "1", delay=0), Message("g", "2", delay=0.0)])
    assert t.stats().messages == 2


def test_message_keeps_its_old_shape():
    m = Message("g", "{}", 2, "eu")
    assert (m.group_id, m.event, m.priority, m.routing_key) == ("g", "{}", 2, "eu")
    assert (m.key, m.delay, m.not_before) == (None, 0.0, None)
    assert Message("g", "{}") == Message(group_id="g", event="{}", priority=0, routing_key=None)


# -- delayed delivery --------------------------------------------------------------------


def test_a_delayed_message_is_not_claimable_before_its_time(t, clock):
    assert t.publish_with("g", '{"n":0}', delay=10) == Published(1, False)
    assert t.claim("w") is None
    clock.now += 9.9
    assert t.claim("w") is None
    assert t.claim_many("w", max=10) == []
    clock.now = 1010.0
    assert t.claim("w") is None, "at its due instant it is still delayed, as a park at its end"
    clock.now = 1010.001
    lease = t.claim("w")
    assert (lease.seq, lease.event, lease.attempts) == (1, '{"n":0}', 1)
    t.ack(lease)


def test_not_before_and_delay_the_later_of_the_two(t, clock):
    t.publish_with("a", "1", not_before=1020)
    t.publish_with("b", "2", delay=5, not_before=1010)
    t.publish_with("c", "3", delay=30, not_before=1010)
    t.publish_with("d", "4", not_before=500)  # in the past: due at once
    t.publish_with("e", "5", not_before=1000)  # now: due at once
    assert {g.group_id: g.lock_expiry for g in t.groups("delayed")} == {"a": 1020.0, "b": 1010.0, "c": 1030.0}
    now_due = t.claim_many("w", max=10)
    assert sorted(x.group_id for x in now_due) == ["d", "e"]
    t.ack_many(now_due)
    clock.now = 1010.5
    assert [x.group_id for x in t.claim_many("w", max=10)] == ["b"]
    clock.now = 1020.5
    assert [x.group_id for x in t.claim_many("w", max=10)] == ["a"]
    clock.now = 1030.5
    assert [x.group_id for x in t.claim_many("w", max=10)] == ["c"]


def test_a_later_message_waits_behind_a_delayed_one(t, clock):
    t.publish("g", '"first"')
    t.publish_with("g", '"delayed"', delay=10)
    t.publish("g", '"after"')
    t.publish("other", '"x"')
    first = t.claim("w")
    assert first.event == '"first"'
    t.ack(first)
    other = t.claim("w")
    assert other.group_id == "other", "other groups are served meanwhile"
    t.ack(other)
    assert t.claim("w") is None, "g's later message waits behind its delayed head"
    clock.now += 10.5
    assert [(x.event, x.group_id) for x in t.claim_many("w", max=10)] == [('"delayed"', "g")], "one in flight"
    assert t.peek("g").items[1].event == '"after"'


def test_the_delayed_state_in_stats_and_listings(t, clock):
    assert ht.GROUP_STATES[:5] == ("ready", "leased", "parked", "delayed", "paused")
    t.publish("held", "0")
    t.publish_with("later", "1", delay=30, priority=2)
    t.publish("later", "2")
    t.publish_with("soon", "3", delay=10)
    t.publish("free", "4")
    assert t.claim("w", 60).group_id == "held"
    s = t.stats()
    assert (s.messages, s.groups, s.ready, s.leased, s.parked, s.delayed) == (5, 4, 1, 1, 0, 2)
    assert s.next_due_at == 1010.0
    assert s.next_release_at == 1010.0, "the soonest end of a lease, park or delay"
    assert s.by_priority == [ht.PriorityStats(0, 3, 1, 1, 0), ht.PriorityStats(2, 1, 0, 0, 0)], (
        "a delayed group is in groups, in none of ready, leased, parked"
    )
    delayed = t.groups("delayed")
    assert [(g.group_id, g.state, g.depth, g.holder, g.lock_expiry) for g in delayed] == [
        ("later", "delayed", 2, None, 1030.0),
        ("soon", "delayed", 1, None, 1010.0),
    ]
    assert {g.group_id: g.state for g in t.groups()} == {
        "free": "ready", "held": "leased", "later": "delayed", "soon": "delayed",
    }
    head, behind = t.peek("later").items
    assert (head.locked_by, head.lock_expiry, head.attempts) == ("__delayed__", 1030.0, 0)
    assert (behind.locked_by, behind.lock_expiry) == (None, None)
    clock.now += 10.5
    s = t.stats()
    assert (s.delayed, s.next_due_at, s.ready) == (1, 1030.0, 2)
    assert [g.group_id for g in t.groups(state="delayed")] == ["later"]
    clock.now += 20
    s = t.stats()
    assert (s.delayed, s.next_due_at) == (0, None)
    assert t.groups("delayed").items == []
    empty = Transport(":memory:").stats()
    assert (empty.delayed, empty.next_due_at) == (0, None)


def test_release_delivers_a_delayed_head_now(t):
    t.publish_with("g", "1", delay=100)
    assert t.release("g") is True
    assert t.claim("w").event == "1"


def test_a_waiting_claim_wakes_at_the_due_time(qpath):
    with Transport(qpath) as t:
        t.publish_with("g", "1", delay=0.5)
        started = time.monotonic()
        lease = t.claim("w", wait=10)
        took = time.monotonic() - started
        assert lease.event == "1" and 0.4 < took < 1.5, f"the due time woke it after {took:.3f} s"
        t.publish_with("g", "2", not_before=time.time() + 0.5)
        t.ack(lease)
        started = time.monotonic()
        batch = t.claim_many("w", max=5, wait=10)
        took = time.monotonic() - started
        assert [x.event for x in batch] == ["2"] and 0.4 < took < 1.5, f"woke after {took:.3f} s"


def test_harel_in_another_process_does_not_deliver_a_delayed_message_early(qpath):
    def event(n):  # harel's Event JSON: harel parses what it claims
        return '{"id":"e%d","kind":"k","data":{}}' % n

    with Transport(qpath) as t:
        t.publish_with("g", event(0), delay=600)
        t.publish("g", event(1))
        t.publish("h", event(2))
    out = run_python(
        """
        import sys
        from harel.engine.transport import SqliteTransport
        t = SqliteTransport(sys.argv[1])
        got = []
        while (lease := t.claim("harel", 30)) is not None:
            got.append(lease.group_id)
            t.ack(lease)
        print(",".join(got))
        t.close()
        """,
        qpath,
    )
    assert out.strip() == "h", "g's delayed head and the message behind it stay"


def test_the_harel_drop_in_keeps_harels_publish_and_honours_delays(qpath, clock):
    from harel.spec.states import Event

    from harel_transport.harel import SqliteTransport

    assert "key" not in inspect.signature(SqliteTransport.publish).parameters, "harel's publish, as harel has it"
    with SqliteTransport(qpath, clock=clock) as t:
        event = Event(id="e1", kind="reminder", data={})
        native = t.transport
        assert native.publish_with("g", event.model_dump_json(), key="e1", delay=10) == Published(1, False)
        assert native.publish_with("g", event.model_dump_json(), key="e1", delay=10) == Published(1, True)
        t.publish("g", Event(id="e2", kind="after", data={}))
        assert t.claim("w", 30) is None
        clock.now += 10.5
        lease = t.claim("w", 30)
        assert (lease.seq, lease.event) == (1, event)
        t.ack(lease)
        assert t.claim("w", 30).event.id == "e2"


def test_a_clock_failure_in_publish_with_is_the_errors_cause(qpath):
    def broken():
        raise RuntimeError("no time")

    with Transport(qpath, clock=broken) as t:
        with pytest.raises(ht.ArgumentError) as e:
            t.publish_with("g", "1", delay=5)
        assert isinstance(e.value.__cause__, RuntimeError)
        with pytest.raises(ht.ArgumentError) as e:
            t.publish_many_with([Message("g", "1", key="k")])
        assert isinstance(e.value.__cause__, RuntimeError)


# -- bad input ---------------------------------------------------------------------------

_BAD_DELIVERY = [
    (dict(key=""), "key is empty"),
    (dict(key="k" * 257), "key is 257 bytes; at most 256"),
    (dict(key="é" * 129), "key is 258 bytes; at most 256"),
    (dict(key="k\0"), "key holds a NUL"),
    (dict(key="k\ud800"), "key is not valid Unicode"),
    (dict(key=5), "key must be a str, got int 5"),
    (dict(key=b"k"), "key must be a str, got bytes"),
    (dict(delay=math.nan), "delay is NaN"),
    (dict(delay=math.inf), "delay is inf"),
    (dict(delay=-math.inf), "delay is -inf"),
    (dict(delay=-1), "delay is -1"),
    (dict(delay=-0.001), "delay is -0.001"),
    (dict(delay=TEN_YEARS + 1), f"delay is {TEN_YEARS + 1}; it must be a finite number of seconds, 0..{TEN_YEARS}"),
    (dict(delay=1e300), "delay is 1"),
    (dict(delay=10**400), "delay is too large"),
    (dict(delay="5"), "delay must be a number of seconds"),
    (dict(delay=None), "delay must be a number of seconds"),
    (dict(delay=True), "delay must be a number of seconds"),
    (dict(not_before=math.nan), "not_before is NaN"),
    (dict(not_before=math.inf), "not_before is inf"),
    (dict(not_before=-math.inf), "not_before is -inf; it must be finite epoch seconds >= 0"),
    (dict(not_before=-1), "not_before is -1.0; it must be finite epoch seconds >= 0"),
    (dict(not_before=1000 + TEN_YEARS + 1), "more than ten years after now"),
    (dict(delay=TEN_YEARS, not_before=1000 + TEN_YEARS + 1), "more than ten years after now"),
    (dict(not_before=10**400), "not_before is too large"),
    (dict(not_before="1000"), "not_before must be epoch seconds (int or float) or None, got the str"),
    (dict(not_before=False), "not_before must be epoch seconds"),
    (
        dict(not_before=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)),
        "got datetime; pass dt.timestamp()",
    ),
]


@pytest.mark.parametrize("kwargs, names", _BAD_DELIVERY)
def test_bad_publish_with_arguments(t, qpath, kwargs, names):
    t.publish_with("g", "0", key="k0")
    lease = t.claim("w")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_with("g", "1", **kwargs)
    assert names in e.value.message, e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    # the queue intact: the one message, still leased; the one key
    assert [(m.seq, m.locked_by) for m in t.peek("g")] == [(lease.seq, "w")]
    assert keys_of(qpath) == [["k0", 1]]
    t.ack(lease)


@pytest.mark.parametrize("kwargs, names", _BAD_DELIVERY)
def test_bad_publish_many_with_messages(t, qpath, kwargs, names):
    t.publish_with("g", "0", key="k0")
    with pytest.raises(ht.ArgumentError) as e:
        t.publish_many_with([Message("g", "1", key="k1"), Message("h", "2", **kwargs)])
    assert names in e.value.message and "messages[1]." in e.value.message, e.value.message
    assert t.stats().messages == 1 and keys_of(qpath) == [["k0", 1]], "nothing of the batch written"


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda t: t.publish_with("", "{}"), "group_id is empty"),
        (lambda t: t.publish_with("g\0", "{}"), "group_id holds a NUL"),
        (lambda t: t.publish_with(None, "{}"), "group_id must be a str"),
        (lambda t: t.publish_with("g", "not json"), "event_json is not valid JSON"),
        (lambda t: t.publish_with("g", {"n": 1}), "event_json must be JSON text"),
        (lambda t: t.publish_with("g", "{}", priority=5), "priority is 5; it must be 0..4"),
        (lambda t: t.publish_with("g", "{}", priority=1.0), "priority must be an int"),
        (lambda t: t.publish_with("g", "{}", routing_key=""), "routing_key is empty"),
        (lambda t: t.publish_with("g", "{}", routing_key=3), "routing_key must be a str"),
        (lambda t: t.publish_many_with("gg"), "messages must be an iterable of Message"),
        (lambda t: t.publish_many_with(5), "messages must be an iterable of Message"),
        (lambda t: t.publish_many_with([["g", "{}"]]), "messages[0] must be a Message or a tuple"),
        (lambda t: t.publish_many_with([("g", "{}", 0, None, "key")]), "messages[0] must be a Message or a tuple"),
        (lambda t: t.publish_many_with([Message("g", "{}"), Message("", "{}")]), "messages[1].group_id is empty"),
        (lambda t: t.publish_many_with([Message("g", "x", key="k")]), "messages[0].event_json is not valid JSON"),
    ],
)
def test_bad_publish_with_messages_and_batches(t, qpath, call, names):
    with pytest.raises(ht.ArgumentError) as e:
        call(t)
    assert names in e.value.message, e.value.message
    assert t.stats().messages == 0 and keys_of(qpath) == []


def test_the_options_are_keyword_only(t):
    with pytest.raises(TypeError):
        t.publish_with("g", "{}", 0)
    with pytest.raises(TypeError):
        t.publish_with("g", "{}", key="k", no_such_option=1)


@pytest.mark.parametrize(
    "value, names",
    [
        (0, "key_retention is 0"),
        (-1, "key_retention is -1"),
        (math.nan, "key_retention is NaN"),
        (math.inf, "key_retention is inf"),
        (TEN_YEARS + 1, "key_retention is 315360001"),
        ("60", "key_retention must be a number of seconds"),
        (True, "key_retention must be a number of seconds"),
        (10**400, "key_retention is too large"),
    ],
)
def test_bad_key_retention(tmp_path, value, names):
    path = tmp_path / "q.db"
    with pytest.raises(ht.ArgumentError) as e:
        Transport(str(path), key_retention=value)
    assert names in e.value.message, e.value.message
    assert not path.exists(), "refused before the file was opened"


def test_key_retention_bounds_that_open(tmp_path):
    with Transport(str(tmp_path / "a.db"), key_retention=TEN_YEARS):
        pass
    with Transport(str(tmp_path / "b.db"), key_retention=0.5):
        pass


def test_after_close_the_new_calls_fail(qpath):
    t = Transport(qpath)
    t.close()
    with pytest.raises(ht.TransportClosedError):
        t.publish_with("g", "{}", key="k")
    with pytest.raises(ht.TransportClosedError):
        t.publish_many_with([Message("g", "{}")])


# -- the async face ----------------------------------------------------------------------


def test_the_async_face(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock, key_retention=60) as t:
            assert await t.publish_with("g", '{"n":0}', key="k", priority=1, routing_key="eu") == Published(1, False)
            assert await t.publish_with("g", '{"n":0}', key="k") == Published(1, True)
            assert await t.publish_with("d", '{"n":1}', delay=10) == Published(2, False)
            assert await t.publish_with("d", '{"n":2}', not_before=1005) == Published(3, False)
            got = await t.publish_many_with(
                [Message("e", '{"n":3}', key="k"), Message("e", '{"n":4}', key="k2", delay=20), ("f", '{"n":5}')]
            )
            assert got == [Published(1, True), Published(4, False), Published(5, False)]
            assert await t.publish_many_with([]) == []
            s = await t.stats()
            assert (s.messages, s.ready, s.delayed, s.next_due_at) == (5, 2, 2, 1010.0)
            assert [g.group_id for g in (await t.groups("delayed")).items] == ["d", "e"]
            a, b = await t.claim("w", 30), await t.claim("w", 30)
            assert {a.group_id, b.group_id} == {"g", "f"}
            assert await t.ack_many([a, b]) == [None, None]
            assert await t.claim("w", 30) is None, "d and e are delayed"
            assert await t.publish_with("g", "{}", key="k") == Published(1, True), "after the ack too"
            clock.now += 10.5
            assert (await t.claim("w", 30)).event == '{"n":1}'
            clock.now += 10
            assert (await t.claim("w", 30)).event == '{"n":4}'
            clock.now += 40
            assert (await t.publish_with("g", "{}", key="k")).duplicate is False, "past the retention"
            with pytest.raises(ht.ArgumentError, match="key is empty"):
                await t.publish_with("g", "{}", key="")
            with pytest.raises(ht.ArgumentError, match="delay is NaN"):
                await t.publish_with("g", "{}", delay=math.nan)
            with pytest.raises(ht.ArgumentError, match="not_before must be epoch seconds"):
                await t.publish_with("g", "{}", not_before="soon")
            with pytest.raises(ht.ArgumentError, match=r"messages\[0\]\.key is 257 bytes"):
                await t.publish_many_with([Message("g", "{}", key="k" * 257)])
            assert (await t.stats()).messages == 4
        with pytest.raises(ht.TransportClosedError):
            await t.publish_with("g", "{}")
        with pytest.raises(ht.ArgumentError, match="key_retention is 0"):
            await AsyncTransport.open(qpath, key_retention=0)

    asyncio.run(main())


def test_an_async_waiting_claim_wakes_at_the_due_time(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            await t.publish_with("g", "1", delay=0.5)
            started = time.monotonic()
            lease = await t.claim("w", wait=10)
            took = time.monotonic() - started
            assert lease.event == "1" and 0.4 < took < 1.5, f"the due time woke it after {took:.3f} s"

    asyncio.run(main())
