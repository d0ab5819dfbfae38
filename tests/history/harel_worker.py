"""The history harness's harel 0.9 worker: harel's own SqliteTransport (Python's sqlite3,
another SQLite than the library's, so this process never loads the library) publishing,
claiming, acking and nacking on the queue file the other clients use, each call logged as
tests/history/hist/record.go describes (lang "harel").

    python harel_worker.py -db FILE -log FILE -id ID -seconds S [-seed N] [-groups N]

harel's claim reads its clock once, before it takes the write lock; the clock given to the
transport records that instant, so the lease's end (now + visibility) is logged exactly.
harel's ack and nack check nothing (they act on the seq): the checker knows (lang "harel").
harel's publish is two autocommit statements (message, then group row): a failure
between them leaves the message stored, so a failed publish is logged as unknown.
"""

import random
import sqlite3
import time

from harel.engine.transport import SqliteTransport
from harel.spec.states import Event

import histlog

VISIBILITY = 10.0  # long: harel's ack deletes by seq, so its leases must not lapse


def main():
    a = histlog.parser().parse_args()
    rng = random.Random(a.seed or None)
    last_now = [0.0]

    def clock():
        last_now[0] = time.time()
        return last_now[0]

    t = SqliteTransport(a.db, clock=clock)
    log = histlog.Log(a.log, a.id, "harel")
    held = []  # (lease, ref)
    n = 0
    deadline = time.time() + a.seconds

    def ref(lease, e):
        return {"s": lease.seq, "g": lease.group_id, "w": a.id, "e": e}

    def finish(kind, entry):
        lease, r = entry
        if kind == "ack":
            i = log.invoke("ack", leases=[r])
            try:
                t.ack(lease)
                log.complete(i, "ok")
            except sqlite3.Error as e:
                log.complete(i, "fail", status="sqlite3", err=str(e))
        else:
            delay = 0.0 if kind == "nack" else rng.uniform(0.05, 0.3)
            i = log.invoke("nack", leases=[r], **({"delay": delay} if delay else {}))
            try:
                t.nack(lease, delay)
                log.complete(i, "ok", **({"exp": last_now[0] + delay} if delay else {}))
            except sqlite3.Error as e:
                log.complete(i, "fail", status="sqlite3", err=str(e))

    while time.time() < deadline:
        r = rng.random()
        if (not held and r < 0.25) or (held and r < 0.1):
            n += 1
            eid = f"{a.id}-e{n}"
            g = f"g{rng.randrange(a.groups)}"
            i = log.invoke("publish", msgs=[{"g": g, "e": eid}])
            try:
                t.publish(g, Event(id=eid, kind="h", data={}))
                log.complete(i, "ok")
            except sqlite3.Error as e:
                log.complete(i, "info", status="sqlite3", err=str(e))
        elif not held or (len(held) < 2 and r < 0.5):
            i = log.invoke("claim", worker=a.id, vis=VISIBILITY, max=1)
            try:
                lease = t.claim(a.id, VISIBILITY)
            except sqlite3.Error as e:
                log.complete(i, "fail", status="sqlite3", err=str(e))
                continue
            got = []
            if lease is not None:
                e = lease.event.id
                got = [{"s": lease.seq, "g": lease.group_id, "e": e, "w": a.id, "exp": last_now[0] + VISIBILITY}]
                held.append((lease, ref(lease, e)))
            log.complete(i, "ok", got=got)
        else:
            entry = held.pop(rng.randrange(len(held)))
            r = rng.random()
            finish("ack" if r < 0.7 else "nack" if r < 0.85 else "park", entry)
        time.sleep(rng.uniform(0, 0.01))
    while held:
        finish("ack", held.pop())
    t.close()


if __name__ == "__main__":
    main()
