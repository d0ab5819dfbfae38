"""A harel 0.9 Python transport driven by tests/interop.rs, one JSON command per line.

    python peer.py sqlite|libsql DATABASE NOW

opens harel's SqliteTransport or LibsqlTransport on DATABASE with a clock that stands at
NOW until a "clock" command moves it, then answers each command on stdin with one JSON
line on stdout ({"error": ...} when harel raised). Commands:

    {"op": "clock", "now": 1010.0}
    {"op": "publish", "group": "g", "id": "e1", "kind": "tick", "data": {...}, "priority": 0}
        -> {"event": <the event JSON harel stored>}
    {"op": "claim", "worker": "py", "visibility": 30.0, "min_priority": 0}
        -> {"lease": null} or {"lease": {"seq", "group", "id", "kind", "data", "event"}}
    {"op": "ack", "seq": 1, "group": "g"}
    {"op": "nack", "seq": 1, "group": "g", "delay": 0.0}
"""

import json
import sys

from harel.engine.transport import Lease, LibsqlTransport, SqliteTransport
from harel.spec.states import Event


def main() -> None:
    kind, database, now = sys.argv[1], sys.argv[2], [float(sys.argv[3])]
    cls = {"sqlite": SqliteTransport, "libsql": LibsqlTransport}[kind]
    transport = cls(database, clock=lambda: now[0])
    for line in sys.stdin:
        command = json.loads(line)
        try:
            answer = run(transport, now, command)
        except Exception as e:  # the test reports it
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    transport.close()


def run(transport, now, command: dict) -> dict:
    op = command["op"]
    if op == "clock":
        now[0] = float(command["now"])
        return {}
    if op == "publish":
        event = Event(id=command["id"], kind=command["kind"], data=command.get("data", {}))
        transport.publish(command["group"], event, command.get("priority", 0))
        return {"event": event.model_dump_json()}
    if op == "claim":
        lease = transport.claim(command["worker"], command["visibility"], command.get("min_priority", 0))
        if lease is None:
            return {"lease": None}
        e = lease.event
        return {
            "lease": {
                "seq": lease.seq,
                "group": lease.group_id,
                "id": e.id,
                "kind": e.kind,
                "data": e.data,
                "event": e.model_dump_json(),
            }
        }
    # harel's ack and nack read only the lease's seq (and group_id)
    lease = Lease(command["seq"], command["group"], Event(kind="-"))
    if op == "ack":
        transport.ack(lease)
        return {}
    if op == "nack":
        transport.nack(lease, command.get("delay", 0.0))
        return {}
    raise ValueError(f"unknown op {op!r}")


if __name__ == "__main__":
    main()
