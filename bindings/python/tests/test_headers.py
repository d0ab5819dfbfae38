"""Message headers: every publish form takes them (sync and asyncio), every lease, peeked
message and dead letter carries them, in order and byte for byte; a redrive keeps them.
The library checks the rules; what it refuses raises `ArgumentError` and leaves the queue
as it was."""

from __future__ import annotations

import asyncio
import inspect
import typing
from typing import List, Optional, Tuple

import pytest

import harel_transport as ht
from harel_transport import AsyncTransport, Message, Transport

# Order, a repeated name, '=' in values, unicode, an empty value, control characters.
PAIRS = [
    ("content-type", "application/json"),
    ("x-eq", "a=b==c="),
    ("x-uni", "é\u2603 \U0001f600 日本"),
    ("x-dup", "1"),
    ("x-dup", "2"),
    ("x-empty", ""),
    ("x-ctl", "tab\there\nnewline"),
    ("!#$%&'*+-.^_`|~", "every visible ASCII but '=' may name one"),
]
MANY = [(f"h{i:02d}", f"value {i}") for i in range(ht.MAX_HEADERS)]
# 16 KiB of names and values exactly: the most a message carries.
BIG = [("big", "é" * ((ht.MAX_HEADERS_BYTES - 3) // 2) + "x" * ((ht.MAX_HEADERS_BYTES - 3) % 2))]
SETS = [PAIRS, MANY, BIG]


def test_the_sets_are_at_the_limits():
    assert len(MANY) == 64
    assert sum(len(n.encode()) + len(v.encode()) for n, v in BIG) == 16 * 1024


@pytest.fixture
def t(qpath):
    with Transport(qpath) as t:
        yield t


def drain(t: Transport, worker: str = "w") -> List[ht.Lease]:
    got = []
    while (lease := t.claim(worker, 30)) is not None:
        got.append(lease)
        t.ack(lease)
    return got


def test_every_publish_form_round_trips(t):
    for i, headers in enumerate(SETS):
        t.publish(f"p{i}", '{"form":"publish"}', headers=headers)
        t.publish_with(f"w{i}", '{"form":"publish_with"}', key=f"k{i}", headers=headers)
        t.publish_many([Message(f"m{i}", '{"form":"publish_many"}', headers=headers), (f"m{i}", '{"n":2}')])
        t.publish_many_with([Message(f"mw{i}", '{"form":"publish_many_with"}', key=f"mk{i}", headers=headers)])
        with t.transaction() as tx:
            tx.publish(f"t{i}", '{"form":"tx.publish"}', headers=headers)
            tx.publish_with(f"tw{i}", '{"form":"tx.publish_with"}', key=f"tk{i}", headers=headers)
    got = drain(t)
    assert len(got) == 3 * 7
    by_group = {}
    for lease in got:
        by_group.setdefault(lease.group_id, []).append(lease)
    for i, headers in enumerate(SETS):
        for group in ("p", "w", "m", "mw", "t", "tw"):
            assert by_group[f"{group}{i}"][0].headers == headers, (group, i)
        # a tuple of publish_many carries none
        assert by_group[f"m{i}"][1].headers == []


def test_no_headers_is_an_empty_list(t):
    t.publish("g", "{}")
    t.publish("g", "{}", headers=[])
    t.publish("g", "{}", headers=())
    assert [lease.headers for lease in drain(t)] == [[], [], []]


def test_pairs_may_be_lists_and_any_sequence(t):
    t.publish("g", "{}", headers=[["a", "1"], ("b", "2")])
    t.publish("g", "{}", headers=iter([("c", "3")]))
    assert [lease.headers for lease in drain(t)] == [[("a", "1"), ("b", "2")], [("c", "3")]]


def test_every_lease_returning_call_hands_them_back(t):
    for n in range(8):
        t.publish(f"g{n}", f'{{"n":{n}}}', headers=[("n", str(n)), ("x", "=")])
    want = {f"g{n}": [("n", str(n)), ("x", "=")] for n in range(8)}

    def check(leases):
        for lease in leases:
            assert lease.headers == want[lease.group_id]
        return leases

    a = check([t.claim("w")])[0]
    b = check([t.claim("w", wait=5)])[0]
    c = check([t.ack_and_claim(a, "w")])[0]
    more = check(t.claim_many("w", max=2))
    waited = check(t.claim_many("w", max=1, wait=5))
    result = t.ack_and_claim_many([b, c, *more, *waited], "w", max=10)
    assert result.acked == [None] * 5
    check(result.leases)
    assert len(result.leases) == 2
    # extend's lease keeps them
    assert t.extend(result.leases[0], 10).headers == result.leases[0].headers


def test_peek_dead_letters_and_redrive_keep_them(qpath, clock):
    with Transport(qpath, clock=clock, max_attempts=1) as t:
        t.publish("g", '{"n":1}', headers=PAIRS)
        t.publish("g", '{"n":2}', headers=MANY)
        t.publish("g", '{"n":3}')
        t.publish("h", '{"n":4}', headers=BIG)
        page = t.peek("g")
        assert [m.headers for m in page] == [PAIRS, MANY, []]
        assert t.peek("h").items[0].headers == BIG
        lease = t.claim("w", 10)
        assert lease.headers == PAIRS
        t.dead_letter(lease, "poison")
        lease = t.claim("w", 10)
        assert lease.group_id == "h" and lease.headers == BIG
        t.ack(lease)
        lease = t.claim("w", 10)
        assert lease.group_id == "g" and lease.headers == MANY
        clock.now += 20  # its lease lapses: the next claim moves it out (max_attempts 1)
        third = t.claim("w", 10)
        assert (third.event, third.headers) == ('{"n":3}', [])
        dead = t.dead_letters()
        assert [(d.seq, d.headers) for d in dead] == [(1, PAIRS), (2, MANY)]
        assert [d.headers for d in t.dead_letters(group_id="g")] == [PAIRS, MANY]
        assert t.redrive(all=True) == 2
        assert t.dead_letters().items == []
        # back in their group, after what it holds now, with their headers
        assert [m.headers for m in t.peek("g")] == [[], PAIRS, MANY]


# -- refusals: ArgumentError, and the queue unchanged --------------------------------------

BAD = [
    pytest.param([("a=b", "v")], "headers[0].name", id="name-with-equals"),
    pytest.param([("ok", "v"), ("", "v")], "headers[1].name", id="empty-name"),
    pytest.param([("bad name", "v")], "headers[0].name", id="space-in-name"),
    pytest.param([("é", "v")], "headers[0].name", id="non-ascii-name"),
    pytest.param([("n" * 129, "v")], "headers[0].name", id="name-too-long"),
    pytest.param([("ok", "a\0b")], "headers[0].value", id="nul-in-value"),
    pytest.param([("o\0k", "v")], "headers[0].name", id="nul-in-name"),
    pytest.param([(f"h{i}", "v") for i in range(65)], "headers", id="65-pairs"),
    pytest.param([("big", "x" * (16 * 1024 - 2))], "headers", id="16KiB-and-one-byte"),
    pytest.param([("ok", "\udc80")], "headers[0].value", id="lone-surrogate"),
    pytest.param([("ok",)], "headers[0]", id="not-a-pair"),
    pytest.param([("ok", 1)], "headers[0].value", id="value-not-str"),
    pytest.param("ab", "headers", id="a-str"),
    pytest.param({"a": "b"}, "headers", id="a-dict"),
    pytest.param(5, "headers", id="an-int"),
]


def _unchanged(t: Transport) -> None:
    stats = t.stats()
    assert (stats.messages, stats.groups) == (1, 1)
    assert [m.event for m in t.peek("keep")] == ['{"kept":true}']


@pytest.mark.parametrize("headers, named", BAD)
def test_each_refusal_is_an_argument_error_and_changes_nothing(t, headers, named):
    t.publish("keep", '{"kept":true}')
    forms = {
        "publish": lambda: t.publish("g", "{}", headers=headers),
        "publish_with": lambda: t.publish_with("g", "{}", key="k", headers=headers),
        "publish_many": lambda: t.publish_many([Message("ok", "{}"), Message("g", "{}", headers=headers)]),
        "publish_many_with": lambda: t.publish_many_with([Message("ok", "{}", key="k2"), Message("g", "{}", headers=headers)]),
    }
    for form, call in forms.items():
        with pytest.raises(ht.ArgumentError) as e:
            call()
        assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
        where = f"messages[1].{named}" if form.startswith("publish_many") else named
        assert where in e.value.message, (form, e.value.message)
        _unchanged(t)
    with t.transaction() as tx:
        tx.publish("in-tx", '{"ok":1}')
        with pytest.raises(ht.ArgumentError) as e:
            tx.publish("g", "{}", headers=headers)
        assert named in e.value.message
        with pytest.raises(ht.ArgumentError):
            tx.publish_with("g", "{}", key="k3", headers=headers)
        # the transaction goes on: what was queued before is committed
    assert tx.published and len(tx.published) == 1
    assert [m.event for m in t.peek("in-tx")] == ['{"ok":1}']
    assert t.peek("g").items == []
    # a key of a refused publish_with was not stored: it publishes now
    assert not t.publish_with("g", "{}", key="k").duplicate


def test_the_librarys_message_names_the_header(t):
    with pytest.raises(ht.ArgumentError) as e:
        t.publish("g", "{}", headers=[("ok", "v"), ("a", "b"), ("x=y", "v")])
    assert "headers[2].name" in e.value.message and "0x3d" in e.value.message


# -- asyncio ------------------------------------------------------------------------------


def test_async_publish_forms_and_claims(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            await t.publish("a", '{"n":1}', headers=PAIRS)
            await t.publish_with("b", '{"n":2}', key="kb", headers=MANY)
            await t.publish_many([Message("c", '{"n":3}', headers=BIG)])
            await t.publish_many_with([Message("d", '{"n":4}', key="kd", headers=PAIRS)])
            async with t.transaction() as tx:
                tx.publish("e", '{"n":5}', headers=MANY)
                tx.publish_with("f", '{"n":6}', key="kf", headers=BIG)
            async with t.transaction() as tx:  # one that waits for the commit's answer
                await tx.query("SELECT 1")
                tx.publish("g", '{"n":7}', headers=PAIRS)
            want = {"a": PAIRS, "b": MANY, "c": BIG, "d": PAIRS, "e": MANY, "f": BIG, "g": PAIRS}
            assert [m.headers for m in await t.peek("c")] == [BIG]

            got = []
            first = await t.claim("w")
            got.append(first)
            got.append(await t.claim("w", wait=5))  # the wait's path (the watch)
            got.extend(await t.claim_many("w", max=1))
            got.extend(await t.claim_many("w", max=1, wait=5))
            nxt = await t.ack_and_claim(first, "w")
            got.append(nxt)
            result = await t.ack_and_claim_many(got[1:], "w", max=5)
            got.extend(result.leases)
            assert {lease.group_id for lease in got} == set(want)
            for lease in got:
                assert lease.headers == want[lease.group_id], lease.group_id
            await t.dead_letter(result.leases[0], "no")
            dead = await t.dead_letters()
            assert dead.items[0].headers == want[result.leases[0].group_id]
            assert await t.redrive(all=True) == 1
            back = await t.claim("w2", wait=5)
            assert back.headers == want[result.leases[0].group_id]
            with pytest.raises(ht.ArgumentError):
                await t.publish("z", "{}", headers=[("a=b", "v")])
            with pytest.raises(ht.ArgumentError):
                await t.publish_with("z", "{}", headers=[(f"h{i}", "v") for i in range(65)])
            with pytest.raises(ht.ArgumentError):
                await t.publish_many([Message("z", "{}", headers=[("ok", "a\0")])])
            assert (await t.peek("z")).items == []

    asyncio.run(main())


# -- sharded, and the drop-in ---------------------------------------------------------------


def test_a_sharded_queue_carries_them(tmp_path):
    paths = [str(tmp_path / f"s{i}.db") for i in range(3)]
    with Transport.open_shards(paths) as t:
        for i in range(6):
            t.publish(f"g{i}", "{}", headers=[("i", str(i))])
        t.publish_many_with([Message(f"g{i}", "{}", headers=[("j", str(i))]) for i in range(6)])
        leases = t.claim_many("w", max=6)
        assert sorted(lease.headers for lease in leases) == sorted([("i", str(i))] for i in range(6))
        assert [m.headers for m in t.peek("g2")] == [[("i", "2")], [("j", "2")]]


def test_the_drop_in_keeps_harels_signatures(qpath):
    from harel.engine.transport import SqliteTransport as HarelOwn
    from harel.spec.states import Event

    from harel_transport.harel import AsyncSqliteTransport, SqliteTransport

    for ours, theirs in ((SqliteTransport, HarelOwn),):
        for name in ("publish", "claim", "ack", "nack"):
            assert list(inspect.signature(getattr(ours, name)).parameters) == list(
                inspect.signature(getattr(theirs, name)).parameters
            ), name
    assert "headers" not in inspect.signature(AsyncSqliteTransport.publish).parameters
    with SqliteTransport(qpath) as t:
        event = Event(id="e1", kind="k", data={})
        t.transport.publish("g", event.model_dump_json(), headers=[("via", "transport")])
        lease = t.transport.claim("w")
        assert lease.headers == [("via", "transport")]
        t.transport.nack(lease)
        harel_lease = t.claim("w", 30)  # harel's Lease: no headers of its own
        assert harel_lease.event == event and not hasattr(harel_lease, "headers")
        t.ack(harel_lease)


# -- types --------------------------------------------------------------------------------


def test_the_type_hints():
    Pairs = typing.Sequence[typing.Tuple[str, str]]
    assert ht.Headers == Pairs and ht.Header == typing.Tuple[str, str]
    for fn in (Transport.publish, Transport.publish_with, ht.Transaction.publish, ht.Transaction.publish_with,
               AsyncTransport.publish, AsyncTransport.publish_with, ht.AsyncTransaction.publish,
               ht.AsyncTransaction.publish_with):
        hints = typing.get_type_hints(fn)
        assert hints["headers"] == Optional[Pairs], fn
        assert inspect.signature(fn).parameters["headers"].default is None
        assert inspect.signature(fn).parameters["headers"].kind is inspect.Parameter.KEYWORD_ONLY
    assert typing.get_type_hints(Message)["headers"] == Optional[Pairs]
    for cls in (ht.Lease, ht.MessageInfo, ht.DeadLetter):
        assert typing.get_type_hints(cls)["headers"] == List[Tuple[str, str]], cls


def test_a_lease_with_headers_stays_hashable_and_comparable(t):
    t.publish("g", "{}", headers=[("a", "b")])
    lease = t.claim("w")
    assert hash(lease) == hash(ht.Lease(lease.seq, "g", "{}", "w", lease.lock_expiry, 1, [("x", "y")]))
    assert lease == ht.Lease(lease.seq, "g", "{}", "w", lease.lock_expiry, 1, [("a", "b")])
    assert lease != ht.Lease(lease.seq, "g", "{}", "w", lease.lock_expiry, 1)
    t.ack(ht.Lease(lease.seq, "g", "", "w", 0.0))  # a lease built by hand acks as before
    assert t.stats().messages == 0
