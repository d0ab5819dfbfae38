"""harel 0.9's own transport in another process, driven line by line, holding its leases
between our calls: harel's SQLite never opens a queue file in the tests' process (README,
"The hazard"). Used by the interop tests."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap

from conftest import child_env

# harel's transport (argv[2]: SqliteTransport or LibsqlTransport) on argv[1], one JSON
# command a line on stdin, one JSON answer a line on stdout: publish (group, id, priority);
# claim (its lease kept by seq, or null); nack and ack (a kept lease, by seq); drain
# (claims and acks until nothing is deliverable).
HAREL_PEER = """
import json, sys
from harel.engine import transport
from harel.spec.states import Event

t = getattr(transport, sys.argv[2])(sys.argv[1])
held = {}

def leased(lease):
    return {"seq": lease.seq, "group": lease.group_id, "id": lease.event.id}

print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    op = cmd["op"]
    out = None
    if op == "publish":
        t.publish(cmd["group"], Event(id=cmd["id"], kind="from-harel", data={}), cmd.get("priority", 0))
    elif op == "claim":
        lease = t.claim("harel-worker", 30)
        if lease is not None:
            held[lease.seq] = lease
            out = leased(lease)
    elif op == "nack":
        t.nack(held.pop(cmd["seq"]))
    elif op == "ack":
        t.ack(held.pop(cmd["seq"]))
    elif op == "drain":
        out = []
        while (lease := t.claim("harel-worker", 30)) is not None:
            out.append(leased(lease))
            t.ack(lease)
    print(json.dumps({"out": out}), flush=True)
t.close()
"""

HAREL_TRANSPORTS = ("SqliteTransport", "LibsqlTransport")


class HarelPeer:
    """harel's `kind` transport in a subprocess, on `path`."""

    def __init__(self, path: str, kind: str = "SqliteTransport") -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(HAREL_PEER), path, kind],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=child_env(),
        )
        assert self._read() == {"ready": True}

    def _read(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            self._stderr.seek(0)
            raise AssertionError(f"harel's process ended:\n{self._stderr.read()}")
        return json.loads(line)

    def call(self, op: str, **args):
        self._proc.stdin.write(json.dumps(dict(args, op=op)) + "\n")
        self._proc.stdin.flush()
        return self._read()["out"]

    def publish(self, group: str, id: str, priority: int = 0) -> None:
        self.call("publish", group=group, id=id, priority=priority)

    def claim(self):
        """harel's lease as {"seq", "group", "id"}, or None."""
        return self.call("claim")

    def nack(self, lease) -> None:
        self.call("nack", seq=lease["seq"])

    def ack(self, lease) -> None:
        self.call("ack", seq=lease["seq"])

    def drain(self):
        """[(group, event id), ...] in the order harel served them."""
        return [(x["group"], x["id"]) for x in self.call("drain")]

    def close(self) -> str:
        """Ends the process; returns what it wrote to stderr."""
        self._proc.stdin.close()
        assert self._proc.wait(60) == 0
        self._proc.stdout.close()
        self._stderr.seek(0)
        err = self._stderr.read()
        self._stderr.close()
        return err
