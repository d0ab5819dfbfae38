"""The native API: every operation and option of `Transport`, as the C ABI maps them."""

from __future__ import annotations

import json
import threading
import time

import pytest

import harel_transport as ht
from conftest import inspect_db, run_python
from harel_transport import Lease, Message, Transport


def drain(t: Transport, worker: str = "w") -> list:
    got = []
    while True:
        lease = t.claim(worker)
        if lease is None:
            return got
        got.append((lease.group_id, lease.event))
        t.ack(lease)


def test_publish_claim_ack_in_group_order(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish("g", '{"n":1}')
        t.publish("g", b'{"n":2}')
        t.publish("h", '{"n":3}')
        first = t.claim("w1", 30)
        assert isinstance(first, Lease)
        assert (first.group_id, first.event, first.worker_id) == ("g", '{"n":1}', "w1")
        assert first.lock_expiry == 1030.0
        assert first.json() == {"n": 1}
        assert first.event_bytes == b'{"n":1}'
        second = t.claim("w2", 30)
        assert (second.group_id, second.event) == ("h", '{"n":3}'), "g is in flight: h comes next"
        assert t.claim("w3", 30) is None
        t.ack(first)
        t.ack(second)
        assert drain(t) == [("g", '{"n":2}')]


def test_events_come_back_byte_for_byte(qpath):
    text = '{ "kind" : "x", "data": {"é": "\\u00e9", "big": 1e400, "list": [1, 2.50, null]} }'
    with Transport(qpath) as t:
        t.publish("g", text)
        assert t.claim("w").event == text


def test_publish_many_is_one_batch_in_order(qpath):
    with Transport(qpath) as t:
        t.publish_many([Message("a", "1"), ("a", "2"), ("b", "3", 2), ("c", "4", 0, "key")])
        t.publish_many([])
        assert t.claim("w", min_priority=2).group_id == "b"
        assert t.claim("w", routing_keys=["key"]).group_id == "c"
        lease = t.claim("w")
        assert (lease.group_id, lease.event) == ("a", "1")
        assert t.ack_and_claim(lease, "w").event == "2"


def test_publish_many_writes_all_or_nothing(qpath):
    with Transport(qpath) as t:
        with pytest.raises(ht.ArgumentError) as e:
            t.publish_many([("g", "1"), ("g", "2"), ("g", "not json")])
        assert "messages[2].event_json" in e.value.message
        assert t.claim("w") is None


def test_priority_floor_and_routing_keys(qpath):
    with Transport(qpath) as t:
        t.publish("lo", "1", priority=0)
        t.publish("hi", "2", priority=3)
        t.publish("keyed", "3", routing_key="eu")
        t.publish("keyed", "4", priority=4, routing_key="us")  # the group's key stays "eu"
        assert t.claim("w", min_priority=4) is None
        assert t.claim("w", min_priority=3).group_id == "hi"
        assert t.claim("w", routing_keys=["us"]) is None
        assert t.claim("w", routing_keys=("us", "eu")).group_id == "keyed"
        assert t.claim("w").group_id == "lo"


def test_ack_and_claim(qpath):
    with Transport(qpath) as t:
        t.publish("g", "1")
        t.publish("g", "2")
        t.publish("h", "3", priority=1)
        a = t.claim("w")
        b = t.ack_and_claim(a, "w", 30, 1)
        assert b.event == "3", "the floor applies to the claim"
        c = t.ack_and_claim(b, "w")
        assert c.event == "2"
        assert t.ack_and_claim(c, "w") is None, "acked; nothing left"
        with pytest.raises(ht.LeaseLostError):
            t.ack_and_claim(c, "w")


def test_nack_returns_or_parks(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish("g", "1")
        t.nack(t.claim("w", 30))
        lease = t.claim("w", 30)
        assert lease.event == "1"
        t.nack(lease, 5.0)
        assert t.claim("w", 30) is None, "parked"
        rows = inspect_db(qpath, "SELECT locked_by, lock_expiry FROM harel_transport_messages")
        assert rows == [["__parked__", 1005.0]]
        clock.now += 6
        assert t.claim("w", 30).event == "1"


def test_a_lapsed_lease_can_be_claimed_and_the_old_ack_is_lost(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish("g", "1")
        old = t.claim("w1", 10)
        clock.now += 11
        new = t.claim("w2", 10)
        assert (new.seq, new.worker_id) == (old.seq, "w2")
        with pytest.raises(ht.LeaseLostError) as e:
            t.ack(old)
        assert e.value.status == -4 and e.value.code == "HAREL_ERR_LEASE_LOST"
        with pytest.raises(ht.LeaseLostError):
            t.nack(old, 1.0)
        t.ack(new)
        with pytest.raises(ht.LeaseLostError):
            t.ack(new)
        assert t.claim("w3") is None


def test_every_option(tmp_path, clock):
    path = str(tmp_path / "opts.db")
    t = Transport(
        path,
        prefix="app_1",
        create_schema=True,
        busy_timeout=0.5,
        synchronous_full=False,
        clock=clock,
    )
    t.publish("g", "{}")
    lease = t.claim("w", 7)
    assert lease.lock_expiry == clock.now + 7
    t.close()
    tables = {r[0] for r in inspect_db(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"app_1_transport_messages", "app_1_transport_groups"} <= tables
    # create_schema off: the tables must be there (they are, under app_1; not under other)
    with Transport(path, prefix="app_1", create_schema=False, clock=clock) as again:
        assert again.claim("w2") is None, "still leased"
    with pytest.raises(ht.DatabaseError) as e:
        Transport(path, prefix="other", create_schema=False)
    assert "create_schema" in e.value.message


def test_server_options_are_handed_to_the_library(tmp_path):
    # Nothing listens on port 9 of loopback: a remote URL fails at once, a replica too.
    with pytest.raises(ht.ConnectError) as e:
        Transport("http://127.0.0.1:9", auth_token="secret")
    assert e.value.status == -5
    with pytest.raises(ht.ConnectError):
        Transport(str(tmp_path / "replica.db"), sync_url="http://127.0.0.1:9", auth_token="t", sync_interval=1.0)
    with pytest.raises(ht.ArgumentError, match="sync_interval"):
        Transport(str(tmp_path / "r.db"), sync_url="http://127.0.0.1:9", sync_interval=0)
    with pytest.raises(ht.ArgumentError):
        Transport(str(tmp_path / "r.db"), sync_url="")


_HOLD_LOCK = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
c.execute("COMMIT")
"""


def test_busy_timeout_gives_busy_error(qpath):
    import subprocess
    import sys
    import textwrap

    from conftest import child_env

    t = Transport(qpath, busy_timeout=0.2)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_HOLD_LOCK), qpath],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(ht.BusyError) as e:
            t.publish("g", "{}")
        assert e.value.status == -3 and "busy timeout" in e.value.message
        assert time.monotonic() - started < 3
    finally:
        holder.communicate("\n", timeout=10)
    t.publish("g", "{}")
    assert t.claim("w").group_id == "g"
    t.close()


def test_clock_errors_become_argument_errors_with_their_cause(qpath):
    state = {"fail": False}

    def clock():
        if state["fail"]:
            raise RuntimeError("no time")
        return 1000.0

    with Transport(qpath, clock=clock) as t:
        t.publish("g", "1")
        state["fail"] = True
        with pytest.raises(ht.ArgumentError) as e:
            t.claim("w")
        assert isinstance(e.value.__cause__, RuntimeError)
        assert "no time" in str(e.value)
        state["fail"] = False
        assert t.claim("w").event == "1", "nothing was leased by the failed call"

    with Transport(qpath, clock=lambda: "now") as t:
        with pytest.raises(ht.ArgumentError) as e:
            t.claim("w")
        assert isinstance(e.value.__cause__, TypeError)
    for bad in (float("nan"), -1.0):
        with Transport(qpath, clock=lambda: bad) as t:
            with pytest.raises(ht.ArgumentError):
                t.claim("w")


def test_close_is_idempotent_and_later_calls_fail(qpath):
    t = Transport(qpath)
    assert not t.closed and t.path == qpath
    t.close()
    t.close()
    assert t.closed
    for call in (
        lambda: t.publish("g", "{}"),
        lambda: t.publish_many([("g", "{}")]),
        lambda: t.claim("w"),
        lambda: t.ack(Lease(1, "g", "{}", "w", 0.0)),
        lambda: t.nack(Lease(1, "g", "{}", "w", 0.0)),
        lambda: t.ack_and_claim(Lease(1, "g", "{}", "w", 0.0), "w"),
        lambda: t.claim("w", wait=1),
        lambda: t.claim_many("w", max=2, wait=1, cancel=ht.Cancel()),
        lambda: t.ack_many([Lease(1, "g", "{}", "w", 0.0)]),
        lambda: t.ack_and_claim_many([], "w", max=2),
        lambda: t.extend(Lease(1, "g", "{}", "w", 0.0), 5),
        lambda: t.keep_alive(Lease(1, "g", "{}", "w", 0.0), 5).stop() and None,
    ):
        with pytest.raises(ht.TransportClosedError) as e:
            call()
        assert isinstance(e.value, ht.ArgumentError) and e.value.status == -1


def test_close_waits_for_a_call_in_progress(qpath):
    entered = threading.Event()

    def slow_clock():
        entered.set()
        time.sleep(0.4)
        return time.time()

    t = Transport(qpath, clock=slow_clock)
    t.publish("g", "{}")
    result = {}

    def claim():
        result["lease"] = t.claim("w")

    worker = threading.Thread(target=claim)
    worker.start()
    assert entered.wait(5)
    t.close()  # waits for the claim, which must have succeeded
    worker.join()
    assert result["lease"].group_id == "g"


def test_threads_publish_through_one_transport_and_drain_through_several(qpath):
    groups, per_thread, threads = 10, 50, 8
    with Transport(qpath) as t:

        def publish(k):
            for i in range(per_thread):
                t.publish(f"g{i % groups}", json.dumps({"thread": k, "i": i}))

        pubs = [threading.Thread(target=publish, args=(k,)) for k in range(threads)]
        for p in pubs:
            p.start()
        for p in pubs:
            p.join()

    got, lock = [], threading.Lock()

    def work(n):
        with Transport(qpath) as mine:
            lease = mine.claim(f"w{n}")
            while lease is not None:
                with lock:
                    got.append((lease.seq, lease.group_id, json.loads(lease.event)))
                lease = mine.ack_and_claim(lease, f"w{n}")

    workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(got) == threads * per_thread
    assert len({seq for seq, _, _ in got}) == len(got), "each message once"
    for g in range(groups):  # within a group, each thread's messages in its order
        mine = [e for _, gid, e in sorted(got) if gid == f"g{g}"]
        for k in range(threads):
            seen = [e["i"] for e in mine if e["thread"] == k]
            assert seen == sorted(seen)


def test_a_group_id_and_event_holding_nul_from_another_writer(qpath):
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
        lease = t.claim("w")
        assert lease.group_id == "a\0b"
        assert lease.event == '"x\0y"'
        t.ack(lease)  # the group id goes back whole, with its length
        assert t.claim("w") is None
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_groups") == [[0]]


def test_module_functions():
    assert ht.version().count(".") == 2
    assert ht.status_name(-4) == "HAREL_ERR_LEASE_LOST"
    assert ht.status_name(12345) == "HAREL_UNKNOWN"
    for status, name in ht.STATUS_NAMES.items():
        assert ht.status_name(status) == name
    sql = ht.schema_sql("app")
    assert "CREATE TABLE IF NOT EXISTS app_transport_messages" in sql
    assert all(line.endswith(";") for line in sql.splitlines())
    assert "ALTER TABLE app_transport_groups ADD COLUMN routing_key" in ht.schema_upgrade_sql("app")
    assert ht.schema_sql() == ht.schema_sql("harel")
    with pytest.raises(ht.ArgumentError):
        ht.schema_sql("1x")


def test_the_schema_sql_makes_a_queue_that_opens_with_create_schema_off(tmp_path):
    path = str(tmp_path / "migrated.db")
    run_python(
        """
        import sqlite3, sys
        c = sqlite3.connect(sys.argv[1])
        c.executescript(sys.argv[2])
        c.close()
        """,
        path,
        ht.schema_sql("mig"),
    )
    with Transport(path, prefix="mig", create_schema=False) as t:
        t.publish("g", "{}")
        assert t.claim("w").group_id == "g"
