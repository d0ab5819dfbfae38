"""harel 0.9's own `SqliteTransport`, in another process, on a queue file this library made
and on which it stored messages with headers: harel publishes, claims, nacks and acks as
ever (it neither writes nor reads the headers column), and our claims get our headers back
(and none on harel's messages)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from harel.spec.states import Event

from conftest import child_env
from harel_transport import Message, Transport

# harel's SqliteTransport in its own process: publishes its events (priority 3, groups
# "harel-*", and one into our group "ours-0", whose priority stays ours), then claims at
# priority 3 and up until nothing is left, nacking the first lease once; prints one JSON
# line per event it acked.
HAREL_WORKER = """
import json, sys
from harel.engine.transport import SqliteTransport
from harel.spec.states import Event

t = SqliteTransport(sys.argv[1])
for i in range(3):
    t.publish(f"harel-{i}", Event(id=f"h{i}", kind="from-harel", data={"i": i}), 3)
t.publish("ours-0", Event(id="h-into-ours", kind="from-harel", data={}), 3)
nacked = False
while (lease := t.claim("harel-worker", 30, 3)) is not None:
    if not nacked:
        t.nack(lease)
        nacked = True
        continue
    print(json.dumps({"group": lease.group_id, "event": lease.event.model_dump_json()}), flush=True)
    t.ack(lease)
t.close()
"""


def test_harels_worker_on_a_file_with_our_headers(qpath):
    for_harel = [Event(id=f"o{i}", kind="for-harel", data={"i": i, "t": "é"}) for i in range(4)]
    for_ours = [Event(id=f"p{i}", kind="for-ours", data={"i": i}) for i in range(4)]
    headers = [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("x", "a=b"), ("u", "é")]
    with Transport(qpath) as t:  # makes the file: the schema with the headers column
        for i, e in enumerate(for_harel):  # priority 3: harel's worker takes these
            t.publish(f"for-harel-{i}", e.model_dump_json(), priority=3, headers=headers + [("i", str(i))])
        t.publish_many_with(
            [Message(f"ours-{i % 2}", e.model_dump_json(), headers=headers + [("i", str(i))]) for i, e in enumerate(for_ours)]
        )
        with t.transaction() as tx:
            tx.publish("for-harel-tx", for_harel[0].model_copy(update={"id": "otx"}).model_dump_json(), priority=4,
                       headers=[("from", "tx")])

        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(HAREL_WORKER), qpath],
            capture_output=True, text=True, timeout=60, env=child_env(),
        )
        # harel never errors, nor warns
        assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr

        handled = [json.loads(line) for line in proc.stdout.splitlines()]
        events = {Event.model_validate_json(h["event"]).id: h for h in handled}
        # harel got every event at priority 3 and up: ours with headers, and its own
        assert set(events) == {"o0", "o1", "o2", "o3", "otx", "h0", "h1", "h2"}
        for e in for_harel:
            assert events[e.id]["event"] == e.model_dump_json() and events[e.id]["group"] == f"for-harel-{e.data['i']}"
        assert t.stats().messages == len(for_ours) + 1

        got = []
        while (lease := t.claim("ours", 30)) is not None:
            got.append(lease)
            t.ack(lease)
    by_event = {Event.model_validate_json(lease.event).id: lease for lease in got}
    assert set(by_event) == {"p0", "p1", "p2", "p3", "h-into-ours"}
    for e in for_ours:
        assert by_event[e.id].headers == headers + [("i", str(e.data["i"]))]
        assert by_event[e.id].event == e.model_dump_json()
    # harel's message in our group: after ours, with no headers
    assert by_event["h-into-ours"].headers == [] and by_event["h-into-ours"].group_id == "ours-0"
    ours0 = [Event.model_validate_json(lease.event).id for lease in got if lease.group_id == "ours-0"]
    assert ours0 == ["p0", "p2", "h-into-ours"]
