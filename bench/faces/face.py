"""The Python faces of `make bench-faces` (bench/faces/run.py): the work of face.c through
the native binding (harel_transport.Transport, ctypes) or harel 0.9's drop-in
(harel_transport.harel.SqliteTransport, synchronous_full=False), one script so that both
do the same; and the yardstick they are held to, harel 0.9's own SqliteTransport
("harel-sqlite", PRAGMA synchronous=NORMAL set on its connection). Usage:

    python face.py <python|harel|harel-sqlite> <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]

The drop-in and harel's own transport have no ack_and_claim (harel's Transport protocol has
none) and no batch publish: the drop-in's messages go in through the native transport
underneath it, harel's through its publish, one by one (both untimed; the events are
harel's Event JSON, as both store them). Its claim hands out harel's
Lease, whose Event it decodes from the JSON: that is the face."""

import json
import sys
import time


def main() -> int:
    faces = ("python", "harel", "harel-sqlite")
    if len(sys.argv) < 4 or sys.argv[1] not in faces or sys.argv[3] not in ("claim_ack", "ack_and_claim"):
        print(__doc__, file=sys.stderr)
        return 2
    face, path, mode = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 4000
    groups = int(sys.argv[5]) if len(sys.argv) > 5 else 50
    batch = [
        (f"g-{i % groups:03d}", f'{{"id":"ev-{i}","kind":"bench","created_time":null,"received_time":null,"data":{{"n":{i}}}}}')
        for i in range(n)
    ]

    if face.startswith("harel") and mode != "claim_ack":
        print("harel's Transport protocol has no ack_and_claim", file=sys.stderr)
        return 2
    if face == "harel-sqlite":
        from harel.engine.transport import SqliteTransport
        from harel.spec.states import Event

        t = SqliteTransport(path)
        t._conn.execute("PRAGMA synchronous=NORMAL")  # harel's default is FULL; the faces run at NORMAL
        for group, event in batch:
            t.publish(group, Event.model_validate_json(event))
    elif face == "harel":
        from harel_transport.harel import SqliteTransport

        t = SqliteTransport(path, synchronous_full=False)
        t.transport.publish_many(batch)
    else:
        from harel_transport import Transport

        t = Transport(path, synchronous_full=False)
        t.publish_many(batch)

    done = 0
    start = time.perf_counter()
    if mode == "ack_and_claim":
        lease = t.claim("worker", 30.0)
        while lease is not None:
            lease = t.ack_and_claim(lease, "worker", 30.0)
            done += 1
    else:
        while True:
            lease = t.claim("worker", 30.0)
            if lease is None:
                break
            t.ack(lease)
            done += 1
    elapsed = time.perf_counter() - start
    t.close()
    if done != n:
        print(f"drained {done} of {n} messages", file=sys.stderr)
        return 1
    store = "memory" if path == ":memory:" else "file"
    print(json.dumps({"face": face, "mode": mode, "store": store, "messages": done, "us_per_msg": round(elapsed * 1e6 / done, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
