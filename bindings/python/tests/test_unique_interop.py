"""harel 0.9's own `SqliteTransport`, in another process, on a queue file this library made
(the schema with the messages' `unique_key` column and its partial UNIQUE index) holding
pending messages with unique keys: harel publishes, claims, nacks and acks as ever (its
inserts leave the column NULL, so they never meet the index), and its ack of a keyed
message frees the key: our next publish with it is stored, not a duplicate. A key whose
message harel's worker still holds, or that is still delayed, stays held.

harel's sqlite3 never opens the file in this process (README, "The hazard")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from harel.spec.states import Event

from conftest import child_env, inspect_db
from harel_transport import DatabaseError, Message, Published, Transport

# harel's SqliteTransport in its own process: publishes its events (priority 3, groups
# "harel-*"; one into our group "keyed-0", whose priority stays ours; one at priority 0,
# which it leaves), then claims at priority 3 and up until nothing is left: nacks the first
# lease once, keeps the lease of group argv[2] (it holds it when the process ends), acks the
# rest. Prints one JSON line per lease it kept or acked.
HAREL_WORKER = """
import json, sys
from harel.engine.transport import SqliteTransport
from harel.spec.states import Event

t = SqliteTransport(sys.argv[1])
for i in range(2):
    t.publish(f"harel-{i}", Event(id=f"h{i}", kind="from-harel", data={"i": i}), 3)
t.publish("keyed-0", Event(id="h-into-keyed", kind="from-harel", data={}), 3)
t.publish("harel-low", Event(id="h-low", kind="from-harel", data={}), 0)
nacked = False
held = None
while (lease := t.claim("harel-worker", 30, 3)) is not None:
    if not nacked:
        t.nack(lease)
        nacked = True
        continue
    line = {"seq": lease.seq, "group": lease.group_id, "event": lease.event.model_dump_json()}
    if held is None and lease.group_id == sys.argv[2]:
        held = lease
        print(json.dumps(dict(line, held=True)), flush=True)
        continue
    print(json.dumps(line), flush=True)
    t.ack(lease)
t.close()
"""


def event(id, **data):
    return Event(id=id, kind="for-harel", data=data)


def test_harels_worker_on_a_file_with_unique_keys(qpath):
    with Transport(qpath) as t:  # makes the file: the schema with the unique_key column
        # priority 3: harel's worker takes these
        for i in range(3):
            assert t.publish_with(f"keyed-{i}", event(f"o{i}", i=i).model_dump_json(), priority=3,
                                  unique_key=f"job-{i}") == Published(i + 1, False, False)
        # replaced before harel sees it: harel gets the new event
        assert t.publish_with("keyed-2", event("o2-replaced", i=2).model_dump_json(), unique_key="job-2",
                              unique_mode="replace") == Published(3, True, True)
        got = t.publish_many_with(
            [
                Message("keyed-batch", event("ob").model_dump_json(), priority=3, unique_key="job-batch"),
                Message("keyed-batch", event("ob-again").model_dump_json(), unique_key="job-batch"),
                Message("keyed-held", event("oh").model_dump_json(), priority=4, unique_key="job-held"),
                # delayed an hour: harel's worker must not take it
                Message("keyed-late", event("ol").model_dump_json(), priority=3, unique_key="job-late",
                        unique_mode="debounce", debounce=(3600, 7200)),
            ]
        )
        assert got == [Published(4, False, False), Published(4, True, False), Published(5, False, False),
                       Published(6, False, False)]
        with t.transaction() as tx:
            tx.publish_with("keyed-tx", event("otx").model_dump_json(), priority=4, unique_key="job-tx")
        assert tx.published == [Published(7, False, False)]
        # priority 0: ours, which harel's worker (priority 3 and up) leaves pending
        assert t.publish_with("ours", '{"n":0}', unique_key="ours-0") == Published(8, False, False)

        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(HAREL_WORKER), qpath, "keyed-held"],
            capture_output=True, text=True, timeout=60, env=child_env(),
        )
        # harel never errors, nor warns
        assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr

        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        held = [line for line in lines if line.get("held")]
        acked = {Event.model_validate_json(line["event"]).id: line for line in lines if not line.get("held")}
        assert set(acked) == {"o0", "o1", "o2-replaced", "ob", "otx", "h0", "h1", "h-into-keyed"}
        assert acked["o2-replaced"]["seq"] == 3 and acked["o2-replaced"]["group"] == "keyed-2"
        assert [(line["seq"], line["group"]) for line in held] == [(5, "keyed-held")]

        # harel's ack freed each key: our publish with it is stored, with a new seq
        s = t.stats()
        assert (s.messages, s.leased, s.delayed) == (4, 1, 1), "held, late, ours and harel's low one"
        for key in ("job-0", "job-1", "job-2", "job-batch", "job-tx"):
            got = t.publish_with("again", '"again"', unique_key=key)
            assert not got.duplicate and got.seq > 12, (key, got)  # harel's four took 9..12
        # held by harel's worker (its lease not lapsed): kept, never replaced
        got = t.publish_with("x", '"new"', unique_key="job-held", unique_mode="replace")
        assert got == Published(5, True, False)
        # still delayed, and ours, untouched by harel: still held
        assert t.publish_with("x", '"new"', unique_key="job-late") == Published(6, True, False)
        assert t.publish_with("x", '"new"', unique_key="ours-0") == Published(8, True, False)
        got = t.publish_with("ours", '{"n":1}', unique_key="ours-0", unique_mode="replace")
        assert got == Published(8, True, True)

        # on disk: our index, our keys on our rows, NULL on harel's (read by sqlite3 in another process)
        (index,) = inspect_db(
            qpath, "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?",
            ["harel_transport_messages_by_unique_key"],
        )
        assert "UNIQUE" in index[0] and "WHERE unique_key IS NOT NULL" in index[0]
        rows = inspect_db(
            qpath, "SELECT seq, group_id, unique_key FROM harel_transport_messages WHERE seq <= 12 ORDER BY seq"
        )
        assert rows == [
            [5, "keyed-held", "job-held"], [6, "keyed-late", "job-late"], [8, "ours", "ours-0"],
            [12, "harel-low", None],
        ]

        # and ours drains the rest: harel's low one, ours (replaced), the new ones
        leases = []
        while (lease := t.claim("ours", 30)) is not None:
            leases.append(lease)
            t.ack(lease)
        by_group = {lease.group_id: lease.event for lease in leases}
        assert by_group["ours"] == '{"n":1}'
        assert Event.model_validate_json(by_group["harel-low"]).id == "h-low"
        assert t.publish_with("ours", '{"n":2}', unique_key="ours-0").duplicate is False, "our ack freed it"


# harel's SqliteTransport in its own process: "make" creates the file (harel's schema, no
# unique_key column) with one message; "drain" claims and acks everything, printing each
# group it acked.
HAREL_FILE = """
import sys
from harel.engine.transport import SqliteTransport
from harel.spec.states import Event

t = SqliteTransport(sys.argv[1])
if sys.argv[2] == "make":
    t.publish("harel-0", Event(id="h0", kind="from-harel", data={}), 0)
else:
    while (lease := t.claim("harel-worker", 30)) is not None:
        print(lease.group_id, flush=True)
        t.ack(lease)
t.close()
"""


def test_a_harel_file_gains_the_column_at_our_open(qpath):
    def harel(op):
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(HAREL_FILE), qpath, op],
            capture_output=True, text=True, timeout=60, env=child_env(),
        )
        assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
        return proc.stdout.split()

    harel("make")
    columns = [r[0] for r in inspect_db(qpath, "SELECT name FROM pragma_table_info('harel_transport_messages')")]
    assert "unique_key" not in columns, "harel 0.9's own table"
    with pytest.raises(DatabaseError) as e:
        Transport(qpath, create_schema=False)
    assert "the column harel_transport_messages.unique_key" in e.value.message
    with Transport(qpath) as t:  # create_schema on: the column and the index are added
        assert t.publish_with("ours", '{"id":"o","kind":"k","data":{}}', unique_key="job") == Published(2, False, False)
        assert t.publish_with("ours", "{}", unique_key="job") == Published(2, True, False)
        assert sorted(harel("drain")) == ["harel-0", "ours"], "harel goes on on the upgraded file"
        assert t.publish_with("ours", "{}", unique_key="job") == Published(3, False, False), "harel's ack freed it"
    assert inspect_db(qpath, "SELECT seq, unique_key FROM harel_transport_messages") == [[3, "job"]]
