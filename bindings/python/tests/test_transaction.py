"""Publishing inside the application's transaction, sync face: `Transport.transaction()`
(`begin()`), `Transaction.execute`, `query`, `publish`, `publish_with`, `commit`,
`rollback`, the ``with`` block; each status; bad input; transactions that do not nest;
close with one open; threads. The semantics are the library's (its contract tests);
these check the mapping and what a Python application relies on."""

from __future__ import annotations

import gc
import math
import threading
import time
from decimal import Decimal

import pytest

import harel_transport as ht
from conftest import inspect_db
from harel_transport import Published, Transaction, Transport

CREATE = "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, note TEXT)"
INSERT = "INSERT INTO orders (id, note) VALUES (?, ?)"


@pytest.fixture
def t(qpath):
    transport = Transport(qpath, busy_timeout=0.3)
    with transport.transaction() as tx:
        tx.execute(CREATE)
    yield transport
    transport.close()


def rows_of(t, sql="SELECT id, note FROM orders ORDER BY id"):
    with t.transaction() as tx:
        return tx.query(sql)


def nothing_kept(t, qpath):
    assert rows_of(t) == []
    assert t.stats().messages == 0
    assert inspect_db(qpath, "SELECT count(*) FROM orders") == [[0]], "nothing on the file either"


# -- commit -----------------------------------------------------------------------------


def test_a_commit_keeps_the_rows_and_the_messages_together(t, qpath):
    with t.transaction() as tx:
        assert isinstance(tx, Transaction) and not tx.ended
        tx.execute(INSERT, (1, "first order"))
        tx.publish("order-1", '{"n":1}', priority=2, routing_key="eu")
        tx.publish_with("order-1", b'{"n":2}', key="order-1/created")
        assert tx.published == [], "nothing before the commit"
    assert tx.ended
    first, second = tx.published
    assert isinstance(first, Published) and not first.duplicate and not second.duplicate
    assert second.seq > first.seq
    assert inspect_db(qpath, "SELECT id, note FROM orders") == [[1, "first order"]]
    with Transport(qpath) as other:
        lease = other.claim("w", routing_keys=["eu"])
        assert (lease.seq, lease.event) == (first.seq, '{"n":1}')
        other.ack(lease)
        assert other.claim("w").event == '{"n":2}', "FIFO, in the order published"
        (group,) = other.groups().items
        assert (group.priority, group.routing_key) == (2, "eu")
    # A key seen before: the retried transaction's message is a duplicate, its row new.
    tx = t.begin()
    tx.execute(INSERT, (2, None))
    tx.publish_with("order-1", '{"n":2}', key="order-1/created")
    assert tx.commit() == [Published(second.seq, True)] == tx.published
    assert rows_of(t) == [(1, "first order"), (2, None)]
    # Nothing asked: a commit that does nothing.
    assert t.begin().commit() == []


def test_a_delayed_message_of_a_transaction_waits_its_time(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        with t.transaction() as tx:
            tx.publish_with("later", "{}", delay=10)
            tx.publish_with("due", "{}", not_before=clock.now + 5)
        assert t.claim("w") is None
        clock.now += 5.5
        assert t.claim("w").group_id == "due"
        clock.now += 5
        assert t.claim("w").group_id == "later"


def test_a_waiting_claim_wakes_when_a_transaction_commits(t):
    got = []
    waiter = threading.Thread(target=lambda: got.append(t.claim("w", wait=20)))
    waiter.start()
    time.sleep(0.3)
    started = time.monotonic()
    with t.transaction() as tx:
        tx.publish("g", '{"woke":true}')
    waiter.join(10)
    assert got and got[0].event == '{"woke":true}'
    assert time.monotonic() - started < 3, "woken by the commit, not by a timeout"


# -- rollback -----------------------------------------------------------------------------


def test_an_exception_rolls_back_and_propagates(t, qpath):
    with pytest.raises(KeyError, match="changed its mind"):
        with t.transaction() as tx:
            tx.execute(INSERT, (1, "a"))
            tx.publish("g", "{}")
            assert tx.query("SELECT count(*) FROM orders") == [(1,)]
            raise KeyError("changed its mind")
    assert tx.ended and tx.published == []
    nothing_kept(t, qpath)
    t.publish("g", '{"after":1}')  # the connection was let go
    assert t.claim("w").event == '{"after":1}'


def test_rollback_keeps_nothing_and_may_be_called_again(t, qpath):
    tx = t.begin()
    tx.execute(INSERT, (1, "a"))
    tx.publish("g", "{}")
    tx.rollback()
    assert tx.ended
    tx.rollback()  # again: nothing
    nothing_kept(t, qpath)
    with pytest.raises(ht.ArgumentError) as e:
        tx.commit()
    assert "commit: the transaction was rolled back: begin a new one" == e.value.message


def test_an_explicit_end_inside_the_block_is_the_end(t, qpath):
    with t.transaction() as tx:
        tx.execute(INSERT, (1, "a"))
        tx.rollback()
    nothing_kept(t, qpath)
    with pytest.raises(RuntimeError):
        with t.transaction() as tx:
            tx.execute(INSERT, (1, "kept"))
            tx.publish("g", "{}")
            tx.commit()
            raise RuntimeError("after the commit: nothing to roll back")
    assert rows_of(t) == [(1, "kept")] and t.stats().messages == 1


def test_an_unfinished_transaction_is_rolled_back_when_collected(t, qpath):
    tx = t.begin()
    tx.execute(INSERT, (1, "a"))
    tx.publish("g", "{}")
    tx.query("SELECT 1")  # holds the connection and the write lock
    del tx
    gc.collect()
    t.publish("h", "{}")  # would wait the busy timeout if the connection were still held
    assert rows_of(t) == [] and [m.group_id for m in [t.claim("w")]] == ["h"]


# -- query ----------------------------------------------------------------------------------


def test_query_returns_each_type_and_sees_the_transactions_own_writes(t, qpath):
    with t.transaction() as tx:
        tx.execute(INSERT, (1, "a"))
        tx.execute("INSERT INTO orders (id, note) VALUES (2, 'b')")
        assert tx.query("SELECT id, note FROM orders ORDER BY id") == [(1, "a"), (2, "b")]
        assert inspect_db(qpath, "SELECT count(*) FROM orders") == [[0]], "not seen outside before the commit"
        assert tx.query("UPDATE orders SET note = ? WHERE id = 2 RETURNING id, note", ["changed"]) == [(2, "changed")]
        assert tx.query("SELECT id FROM orders WHERE id > 5") == [], "no rows"
        values = (None, -(2**63), 2**63 - 1, 0.1 + 0.2, "a'\"\u00e9\U0010ffff", "", b"\x00\xff", b"")
        (row,) = tx.query("SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8", values)
        assert row == values and [type(v) for v in row] == [type(v) for v in values]
        # bool is an INTEGER 0 or 1; bytearray and memoryview are BLOBs; ? numbers in order.
        assert tx.query("SELECT ?, ?, ?, ?", [True, False, bytearray(b"ab"), memoryview(b"cd")]) == [
            (1, 0, b"ab", b"cd")
        ]
        assert tx.query("SELECT typeof(?), typeof(?), typeof(?)", (1.0, True, b"x")) == [("real", "integer", "blob")]
        # A text holding a NUL made by SQL comes back (cut at the NUL from a local file).
        assert tx.query("SELECT 'x' || char(0) || 'y'")[0][0] in ("x\0y", "x")
    assert inspect_db(qpath, "SELECT id, note FROM orders ORDER BY id") == [[1, "a"], [2, "changed"]]


def test_a_failing_statement_raises_database_error_and_ends_the_transaction(t, qpath):
    tx = t.begin()
    tx.execute(INSERT, (1, "a"))
    tx.publish("g", "{}")
    tx.execute("INSERT INTO no_such_table VALUES (1)")
    with pytest.raises(ht.DatabaseError) as e:
        tx.query("SELECT 1")
    assert e.value.status == -2 and "no_such_table" in e.value.message
    for call, what in (
        (lambda: tx.execute(INSERT, (5, None)), "execute"),
        (lambda: tx.publish("g", "{}"), "publish"),
        (lambda: tx.publish_with("g", "{}", key="k"), "publish"),
        (lambda: tx.query("SELECT 1"), "query"),
    ):
        with pytest.raises(ht.ArgumentError) as e:
            call()
        assert e.value.message.startswith(what) and "rolled back after an error: begin a new one" in e.value.message
    with pytest.raises(ht.ArgumentError, match="rolled back after an error"):
        tx.commit()
    with pytest.raises(ht.ArgumentError, match="commit: the transaction was ended by a failed commit"):
        tx.commit()
    tx.rollback()  # nothing: it ended
    nothing_kept(t, qpath)


def test_a_statement_failing_at_the_commit_keeps_nothing(t, qpath):
    with pytest.raises(ht.DatabaseError, match="UNIQUE"):
        with t.transaction() as tx:
            tx.execute(INSERT, (1, "a"))
            tx.publish("g", "{}")
            tx.execute(INSERT, (1, "again"))
    assert tx.ended and tx.published == []
    nothing_kept(t, qpath)
    with pytest.raises(ht.ArgumentError, match="execute: the transaction was ended by a failed commit"):
        tx.execute(INSERT, (2, None))


def test_an_error_caught_inside_the_block_fails_its_commit(t, qpath):
    with pytest.raises(ht.ArgumentError, match="commit: the transaction was rolled back after an error"):
        with t.transaction() as tx:
            tx.execute(INSERT, (1, "a"))
            try:
                tx.query("SELECT no_such_column FROM orders")
            except ht.DatabaseError:
                pass  # the transaction ended all the same: leaving the block must not look committed
    nothing_kept(t, qpath)


def test_every_call_after_the_commit_is_refused(t):
    tx = t.begin()
    tx.publish("g", "{}")
    published = tx.commit()
    assert tx.ended and tx.published == published and len(published) == 1
    for call, what in (
        (lambda: tx.execute("SELECT 1"), "execute"),
        (lambda: tx.query("SELECT 1"), "query"),
        (lambda: tx.publish("g", "{}"), "publish"),
        (lambda: tx.publish_with("g", "{}"), "publish"),
        (lambda: tx.commit(), "commit"),
    ):
        with pytest.raises(ht.ArgumentError) as e:
            call()
        assert e.value.message == f"{what}: the transaction was committed: begin a new one"
    tx.rollback()  # nothing
    assert tx.published == published and t.stats().messages == 1
    assert "committed" in repr(tx) and repr(t.begin()).startswith("<harel_transport.Transaction on ")


def test_the_clock_failing_in_a_commit_is_the_errors_cause(qpath):
    state = {"fail": False}

    def clock():
        if state["fail"]:
            raise RuntimeError("no time")
        return 1000.0

    with Transport(qpath, clock=clock) as t:
        tx = t.begin()
        tx.publish("g", "{}")
        state["fail"] = True
        with pytest.raises(ht.ArgumentError) as e:
            tx.commit()
        assert isinstance(e.value.__cause__, RuntimeError) and "no time" in str(e.value)
        state["fail"] = False
        assert t.stats().messages == 0


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, params, says",
    [
        (INSERT, (2**63, None), "params[0] is 9223372036854775808: an INTEGER must fit in int64"),
        (INSERT, (-(2**63) - 1, None), "params[0] is -9223372036854775809"),
        (INSERT, (1, math.nan), "params[1] is NaN"),
        (INSERT, (1, math.inf), "params[1] is inf"),
        (INSERT, (1, -math.inf), "params[1] is -inf"),
        (INSERT, (1, object()), "params[1] must be None, bool, int, float, str or bytes, got object"),
        (INSERT, (1, Decimal("1.5")), "params[1] must be None, bool, int, float, str or bytes, got Decimal"),
        (INSERT, (1, [1, 2]), "params[1] must be None, bool, int, float, str or bytes, got list"),
        (INSERT, (1, "a\0b"), "params[1] holds a NUL"),
        (INSERT, (1, "\ud800"), "params[1] is not valid Unicode"),
        (INSERT, "ab", "params must be a sequence of SQL values, not a single str"),
        (INSERT, b"ab", "params must be a sequence of SQL values, not a single bytes"),
        (INSERT, {"id": 1}, "named parameters are not taken"),
        (INSERT, 5, "params must be a sequence of SQL values, got int 5"),
        ("", (), "sql is empty"),
        (b"SELECT 1", (), "sql must be a str"),
        (None, (), "sql must be a str"),
        ("SELECT 1;\0", (), "sql holds a NUL"),
    ],
)
def test_bad_statements_are_refused_and_the_transaction_goes_on(t, qpath, sql, params, says):
    for call in ("execute", "query"):
        with t.transaction() as tx:
            with pytest.raises(ht.ArgumentError) as e:
                getattr(tx, call)(sql, params)
            assert says in e.value.message, e.value.message
            assert e.value.status == -1 and isinstance(e.value, ValueError)
            tx.execute(INSERT, (1, call))  # refused arguments queued nothing
        assert rows_of(t) == [(1, call)]
        with t.transaction() as tx:
            tx.execute("DELETE FROM orders")


@pytest.mark.parametrize(
    "kwargs, says",
    [
        (dict(group_id="g\0"), "group_id holds a NUL"),
        (dict(group_id=""), "group_id is empty"),
        (dict(group_id=7), "group_id must be a str"),
        (dict(event="not json"), "event_json is not valid JSON"),
        (dict(event={"a": 1}), "event_json must be JSON text"),
        (dict(priority=5), "priority is 5"),
        (dict(priority=True), "priority must be an int, got bool"),
        (dict(routing_key=""), "routing_key"),
        (dict(key=""), "key is empty"),
        (dict(key="k" * 257), "key"),
        (dict(delay=-1), "delay is -1"),
        (dict(delay="1"), "delay must be a number of seconds"),
        (dict(not_before=-5), "not_before is -5.0"),
        (dict(not_before=math.nan), "not_before is NaN"),
    ],
)
def test_bad_publish_arguments_are_refused_and_the_transaction_goes_on(t, kwargs, says):
    args = dict(group_id="g", event="{}")
    args.update(kwargs)
    with t.transaction() as tx:
        plain = {k: v for k, v in args.items() if k not in ("key", "delay", "not_before")}
        methods = [tx.publish_with] if len(plain) < len(args) else [tx.publish, tx.publish_with]
        for publish in methods:
            with pytest.raises(ht.ArgumentError) as e:
                publish(**(args if publish == tx.publish_with else plain))
            assert says in e.value.message, e.value.message
        tx.publish("g", '{"good":1}')
    assert len(tx.published) == 1, "only the good publish was queued"
    assert [m.event for m in t.peek("g")] == ['{"good":1}']


def test_an_unknown_column_type_is_the_librarys_bug():
    from harel_transport import _native
    from harel_transport._sql import copy_rows

    values = (_native.HarelValue * 1)()
    values[0].type = 9
    rows = _native.HarelRows(1, 1, values)
    with pytest.raises(ht.PanicError, match="type 9"):
        copy_rows(rows)


# -- one transaction at a time -----------------------------------------------------------------


def test_transactions_of_one_transport_do_not_nest(t, qpath):
    outer = t.begin()
    outer.execute(INSERT, (1, "outer"))
    outer.query("SELECT 1")  # holds the transport's connection from here
    inner = t.begin()
    inner.execute(INSERT, (2, "inner"))
    started = time.monotonic()
    with pytest.raises(ht.BusyError) as e:
        inner.query("SELECT 1")
    assert e.value.status == -3 and "do not nest" in e.value.message
    assert 0.25 < time.monotonic() - started < 3, "the busy timeout (0.3 s)"
    with pytest.raises(ht.BusyError, match="transaction's own publish"):
        t.publish("g", "{}")
    # The busy query ended it, its work dropped: a retried commit is refused, not a no-op.
    with pytest.raises(ht.ArgumentError, match="rolled back after an error"):
        inner.commit()
    assert inner.ended
    outer.publish("g", '{"outer":1}')
    assert len(outer.commit()) == 1
    assert rows_of(t) == [(1, "outer")]
    assert [m.event for m in t.peek("g")] == ['{"outer":1}'], "only the transaction's message"


def test_a_query_waits_for_the_write_lock_of_another_transport(t, qpath):
    with Transport(qpath, busy_timeout=0.3) as other:
        holder = other.begin()
        holder.query("SELECT 1")  # BEGIN IMMEDIATE: the file's write lock
        with pytest.raises(ht.BusyError):
            with t.transaction() as tx:
                tx.query("SELECT 1")
        holder.rollback()
        with t.transaction() as tx:
            assert tx.query("SELECT 1") == [(1,)]


def test_close_rolls_back_the_open_transactions(qpath):
    t = Transport(qpath)
    with t.transaction() as tx:
        tx.execute(CREATE)
    holding = t.begin()
    holding.execute(INSERT, (1, "a"))
    holding.publish("g", "{}")
    holding.query("SELECT 1")
    queued = t.begin()
    queued.execute(INSERT, (2, "b"))
    started = time.monotonic()
    t.close()
    assert time.monotonic() - started < 2, "close does not wait for a transaction that is not in a call"
    for tx in (holding, queued):
        with pytest.raises(ht.TransportClosedError) as e:
            tx.execute(INSERT, (3, None))
        assert isinstance(e.value, ht.ArgumentError) and "the transport is closed" in e.value.message
        with pytest.raises(ht.TransportClosedError):
            tx.query("SELECT 1")
        with pytest.raises(ht.TransportClosedError):
            tx.publish("g", "{}")
    with pytest.raises(ht.TransportClosedError):
        queued.commit()
    holding.rollback()  # nothing to do: the close rolled it back
    with pytest.raises(ht.TransportClosedError):
        with t.transaction():
            pass
    with Transport(qpath) as again:
        assert rows_of(again) == [] and again.stats().messages == 0


# -- threads ----------------------------------------------------------------------------------


def test_threads_each_with_a_transport_lose_no_update(qpath):
    """Read-modify-write in transactions: the first query holds the write lock to the
    commit, so no two threads read the same counter."""
    with Transport(qpath) as t:
        with t.transaction() as tx:
            tx.execute("CREATE TABLE counter (n INTEGER)")
            tx.execute("INSERT INTO counter VALUES (0)")
    threads, rounds = 4, 25
    errors = []

    def work(i):
        try:
            with Transport(qpath, busy_timeout=30) as mine:
                for r in range(rounds):
                    with mine.transaction() as tx:
                        ((n,),) = tx.query("SELECT n FROM counter")
                        tx.execute("UPDATE counter SET n = ?", (n + 1,))
                        tx.publish(f"g{i}", f'{{"n":{n}}}')
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not errors, errors
    with Transport(qpath) as t:
        assert rows_of(t, "SELECT n FROM counter") == [(threads * rounds,)]
        assert t.stats().messages == threads * rounds
        seen = sorted(int(m.event[5:-1]) for i in range(threads) for m in t.peek(f"g{i}", limit=1000))
        assert seen == list(range(threads * rounds)), "each counter value read once"
