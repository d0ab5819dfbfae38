"""This package and harel 0.9's own `SqliteTransport` serving one file from different
processes: harel's in a subprocess, ours in this one. Both directions, and both draining
at once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

from harel.spec.states import Event

from conftest import child_env, run_python
from harel_transport.harel import SqliteTransport

# harel's SqliteTransport, in its own process: "publish N GROUPS" publishes N events over
# GROUPS groups; "drain WORKER" claims and acks until the queue stays empty for a while,
# printing one JSON line per message it handled.
HAREL_PEER = """
import json, sys, time
from harel.engine.transport import SqliteTransport
from harel.spec.states import Event

path, op = sys.argv[1], sys.argv[2]
t = SqliteTransport(path)
if op == "publish":
    n, groups = int(sys.argv[3]), int(sys.argv[4])
    for i in range(n):
        t.publish(f"g{i % groups}", Event(id=f"h{i}", kind="from-harel", data={"i": i, "g": i % groups}), i % groups % 5)
elif op == "drain":
    worker, idle_for = sys.argv[3], float(sys.argv[4])
    print(json.dumps({"ready": True}), flush=True)
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < idle_for:
        lease = t.claim(worker, 30)
        if lease is None:
            time.sleep(0.002)
            continue
        print(json.dumps({"at": time.time(), "seq": lease.seq, "group": lease.group_id,
                          "event": lease.event.model_dump_json()}), flush=True)
        t.ack(lease)
        idle_since = time.monotonic()
t.close()
"""


def harel_peer(*args, **kwargs):
    return run_python(HAREL_PEER, *args, **kwargs)


def test_harel_publishes_and_we_drain(qpath):
    with SqliteTransport(qpath) as ours:  # opened first: ours upgrades the file, harel goes on
        harel_peer(qpath, "publish", 60, 6)
        got = []
        while (lease := ours.claim("ours", 30)) is not None:
            got.append(lease)
            ours.ack(lease)
    assert len(got) == 60
    assert all(lease.event.kind == "from-harel" and lease.event.id == f"h{lease.event.data['i']}" for lease in got)
    for g in range(6):
        order = [lease.event.data["i"] for lease in got if lease.group_id == f"g{g}"]
        assert order == sorted(order) and len(order) == 10


def test_we_publish_and_harel_drains(qpath):
    events = [Event(id=f"o{i}", kind="from-ours", data={"i": i, "text": "é\u2603"}) for i in range(40)]
    with SqliteTransport(qpath) as ours:
        for i, e in enumerate(events):
            ours.publish(f"g{i % 4}", e, priority=i % 4 % 5)
    lines = [json.loads(line) for line in harel_peer(qpath, "drain", "harel", 0.2).splitlines()[1:]]
    assert len(lines) == 40
    # harel reads back exactly the JSON harel would have written for the same Event.
    by_id = {e.id: e for e in events}
    for line in lines:
        event = Event.model_validate_json(line["event"])
        assert line["event"] == by_id[event.id].model_dump_json()
    for g in range(4):
        order = [json.loads(line["event"])["data"]["i"] for line in lines if line["group"] == f"g{g}"]
        assert order == sorted(order) and len(order) == 10


def test_both_drain_one_file_at_once(qpath):
    groups, n = 20, 300
    with SqliteTransport(qpath) as ours:
        for i in range(n):
            ours.publish(f"g{i % groups}", Event(id=f"m{i}", kind="mixed", data={"i": i}))
        peer = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(HAREL_PEER), qpath, "drain", "harel", "0.5"],
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        assert json.loads(peer.stdout.readline()) == {"ready": True}
        handled = []

        def ours_drain():
            idle_since = time.monotonic()
            while time.monotonic() - idle_since < 0.5:
                lease = ours.claim("ours", 30)
                if lease is None:
                    time.sleep(0.002)
                    continue
                handled.append({"at": time.time(), "seq": lease.seq, "group": lease.group_id, "by": "ours",
                                "i": lease.event.data["i"]})
                time.sleep(0.0005)  # a little work, so that the two interleave
                ours.ack(lease)
                idle_since = time.monotonic()

        drainer = threading.Thread(target=ours_drain)
        drainer.start()
        out, _ = peer.communicate(timeout=60)
        drainer.join()
    for line in out.splitlines():
        m = json.loads(line)
        handled.append({"at": m["at"], "seq": m["seq"], "group": m["group"], "by": "harel",
                        "i": json.loads(m["event"])["data"]["i"]})
    assert sorted(h["i"] for h in handled) == list(range(n)), "every message once"
    by = {h["by"] for h in handled}
    assert by == {"ours", "harel"}, f"both served: {by}"
    for g in range(groups):  # one at a time per group, in order, whoever served it
        served = sorted((h for h in handled if h["group"] == f"g{g}"), key=lambda h: h["at"])
        assert [h["i"] for h in served] == sorted(h["i"] for h in served)
