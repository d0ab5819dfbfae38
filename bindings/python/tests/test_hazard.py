"""The in-process hazard: Python's sqlite3 (another copy of SQLite) on the queue file in
a process that has it open through this package. Each case runs in a subprocess, so a
failure cannot corrupt another test's file; the file is then inspected from yet another
process.

What the library detects (README, "The hazard"): at open, the other copy already holding
the file open; later, the WAL deleted or replaced under our connection (the other copy
closed the file, believing itself its last user), before each write transaction and after
each commit. What it cannot: the other copy opening the file while ours has it open (until
it closes it), and a connection of the other copy that has not read the file yet (it holds
no lock). The last two tests pin those limits down as the README states them."""

from __future__ import annotations

import json

from conftest import inspect_db, run_python

DETECTED = "another SQLite library in this process has this file open"
WAL_GONE = "was deleted or replaced while this connection was writing to it"

CASE = """
import json, os, sqlite3, sys
import harel_transport as ht
from harel_transport.harel import SqliteTransport as OurHarelTransport

path, case = sys.argv[1], sys.argv[2]
out = {}

def attempt(name, call):
    try:
        call()
        out[name] = "ok"
    except ht.HarelError as e:
        out[name] = {"class": type(e).__name__, "status": e.status, "message": e.message}

def sqlite3_reads():
    c = sqlite3.connect(path)
    out["sqlite3_count"] = c.execute("SELECT count(*) FROM harel_transport_messages").fetchone()[0]
    return c

if case == "sqlite3-first":
    other = sqlite3_reads()  # holds its locks from here on
    attempt("open", lambda: ht.Transport(path))
    attempt("open_harel_class", lambda: OurHarelTransport(path))
    other.close()
    attempt("open_after_it_closed", lambda: ht.Transport(path).close())

elif case == "harel-sqlite-first":
    from harel.engine.transport import SqliteTransport as HarelsSqliteTransport
    from harel.spec.states import Event
    harels = HarelsSqliteTransport(path)
    harels.publish("g", Event(kind="by-harel"))
    attempt("open_harel_class", lambda: OurHarelTransport(path))
    harels.close()

elif case == "ours-first":
    t = ht.Transport(path)
    t.publish("g", '"kept"')
    sqlite3_reads().close()  # the last user, it thinks: checkpoints and deletes the WAL
    out["wal_exists"] = os.path.exists(path + "-wal")
    attempt("publish", lambda: t.publish("g", '"refused"'))
    attempt("claim", lambda: t.claim("w"))
    t.close()

elif case == "ours-first-harel-sqlite-after":
    from harel.engine.transport import SqliteTransport as HarelsSqliteTransport
    ours = OurHarelTransport(path)
    from harel.spec.states import Event
    ours.publish("g", Event(id="e1", kind="kept"))
    harels = HarelsSqliteTransport(path)
    harels.close()
    attempt("publish", lambda: ours.publish("g", Event(id="e2", kind="refused")))
    ours.close()

elif case == "unread-connection-first":
    c = sqlite3.connect(path)  # sqlite3 opens lazily: no lock until its first statement
    attempt("open", lambda: ht.Transport(path).close())
    c.close()

elif case == "sqlite3-while-ours-open":
    t = ht.Transport(path)
    t.publish("g", '"before"')
    c = sqlite3.connect(path)
    c.execute("SELECT count(*) FROM harel_transport_messages").fetchone()
    attempt("publish_while_both_open", lambda: t.publish("g", '"while"'))
    c.close()
    attempt("publish_after_it_closed", lambda: t.publish("g", '"after"'))
    t.close()

print(json.dumps(out))
"""


def case(path, name):
    from harel_transport import Transport

    Transport(path).close()  # a queue file with its schema, closed again
    return json.loads(run_python(CASE, path, name).strip().splitlines()[-1])


def assert_intact(path):
    assert inspect_db(path, "PRAGMA integrity_check") == [["ok"]]


def test_sqlite3_first_then_ours_is_refused_at_open(qpath):
    out = case(qpath, "sqlite3-first")
    for name in ("open", "open_harel_class"):
        assert out[name]["class"] == "DatabaseError" and out[name]["status"] == -2, out
        assert DETECTED in out[name]["message"]
    assert out["open_after_it_closed"] == "ok", "once the other copy closed the file, ours opens"
    assert_intact(qpath)


def test_harels_own_sqlite_transport_first_then_ours_is_refused(qpath):
    out = case(qpath, "harel-sqlite-first")
    assert out["open_harel_class"]["class"] == "DatabaseError", out
    assert DETECTED in out["open_harel_class"]["message"]
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[1]]
    assert_intact(qpath)


def test_ours_first_then_sqlite3_closing_makes_our_writes_fail(qpath):
    out = case(qpath, "ours-first")
    assert out["sqlite3_count"] == 1
    assert out["wal_exists"] is False, "the other copy deleted the WAL ours was writing to"
    for name in ("publish", "claim"):
        assert out[name]["class"] == "DatabaseError" and out[name]["status"] == -2, out
        assert WAL_GONE in out[name]["message"] and "nothing was written" in out[name]["message"]
    # What was committed before is in the file (the other copy checkpointed it); what was
    # refused is not; the file is sound and opens again.
    assert inspect_db(qpath, "SELECT event FROM harel_transport_messages") == [['"kept"']]
    assert_intact(qpath)
    run_python(
        "import sys, harel_transport as ht\nt = ht.Transport(sys.argv[1])\nassert t.claim('w').event == '\"kept\"'\n",
        qpath,
    )


def test_ours_first_then_harels_sqlite_transport_closing_makes_our_writes_fail(qpath):
    out = case(qpath, "ours-first-harel-sqlite-after")
    assert out["publish"]["class"] == "DatabaseError", out
    assert WAL_GONE in out["publish"]["message"]
    events = [json.loads(r[0])["kind"] for r in inspect_db(qpath, "SELECT event FROM harel_transport_messages")]
    assert events == ["kept"]
    assert_intact(qpath)


def test_not_detected_a_connection_that_has_not_read_the_file(qpath):
    """README: an sqlite3 connection that has not run a statement holds no lock: nothing to
    see at our open."""
    out = case(qpath, "unread-connection-first")
    assert out["open"] == "ok"


def test_not_detected_until_it_closes_the_other_copy_opening_while_ours_is_open(qpath):
    """README: the other copy opening the file while ours has it open is not seen; both
    write unguarded against each other until it closes, and then our writes fail."""
    out = case(qpath, "sqlite3-while-ours-open")
    assert out["publish_while_both_open"] == "ok", out
    assert out["publish_after_it_closed"]["class"] == "DatabaseError", out
    assert WAL_GONE in out["publish_after_it_closed"]["message"]
    assert_intact(qpath)
