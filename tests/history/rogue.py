"""A rogue client: the planted bug that shows the history checker catches a broken queue.

It goes around the library with plain SQL (Python's sqlite3, in a process of its own) and
logs what it does as if it were an honest client (lang "rogue"; tests/history/hist):

  -mode skip-group-check  a claim that skips the group check: it leases the second message
                          of a group whose head is leased to another worker (the checker
                          must fail one-holder-per-group, and group-fifo);
  -mode redeliver         an ack that does not stick: it claims a head properly and acks
                          it, then puts the row back, so that the message is delivered
                          again (the checker must fail no-redelivery-after-ack);
  -mode stale-ack         an ack that skips the holder check: it claims a head properly,
                          lets the lease lapse, then deletes the message by seq, whoever
                          holds it now (the checker must fail stale-ack-refused).

    python rogue.py -mode MODE -db FILE -log FILE -id ID -seconds S
"""

import json
import random
import sqlite3
import time

import histlog

M, G = "harel_transport_messages", "harel_transport_groups"
VISIBILITY = 0.5
STALE_VISIBILITY = 0.2


def event_id(text):
    try:
        return json.loads(text).get("id", "")
    except ValueError:
        return ""


def lease_next(db, me, skip_group_check, visibility):
    """Leases a message in one write transaction and returns (seq, group, event, expiry)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        now = time.time()
        if skip_group_check:
            # The bug: the group's head is leased to someone else, and we take the message
            # after it anyway.
            row = db.execute(
                f"SELECT n.seq, n.group_id, n.event FROM {M} h JOIN {M} n ON n.group_id = h.group_id "
                f"WHERE h.seq = (SELECT MIN(seq) FROM {M} WHERE group_id = h.group_id) "
                f"AND h.locked_by IS NOT NULL AND h.locked_by NOT IN ('__parked__', '__delayed__') "
                f"AND h.lock_expiry >= ?1 + 0.1 AND n.seq > h.seq AND n.locked_by IS NULL "
                f"ORDER BY random() LIMIT 1",
                (now,),
            ).fetchone()
        else:
            # An honest claim: a group's head, free or lapsed, in a group nobody holds.
            row = db.execute(
                f"SELECT h.seq, h.group_id, h.event FROM {M} h "
                f"WHERE h.seq = (SELECT MIN(seq) FROM {M} WHERE group_id = h.group_id) "
                f"AND (h.locked_by IS NULL OR h.lock_expiry < ?1) ORDER BY random() LIMIT 1",
                (now,),
            ).fetchone()
        if row is None:
            db.execute("COMMIT")
            return None
        exp = now + visibility
        db.execute(f"UPDATE {M} SET locked_by = ?, lock_expiry = ?, attempts = attempts + 1 WHERE seq = ?", (me, exp, row[0]))
        db.execute("COMMIT")
        return row[0], row[1], row[2], exp
    except BaseException:
        db.execute("ROLLBACK")
        raise


def main():
    ap = histlog.parser()
    ap.add_argument("-mode", required=True, choices=["skip-group-check", "redeliver", "stale-ack"])
    a = ap.parse_args()
    rng = random.Random(a.seed or None)
    db = sqlite3.connect(a.db, isolation_level=None)
    db.execute("PRAGMA busy_timeout=10000")
    log = histlog.Log(a.log, a.id, "rogue")
    deadline = time.time() + a.seconds - 0.5
    time.sleep(min(1.0, a.seconds / 10))
    while time.time() < deadline:
        vis = STALE_VISIBILITY if a.mode == "stale-ack" else VISIBILITY
        i = log.invoke("claim", worker=a.id, vis=vis, max=1)
        got = lease_next(db, a.id, a.mode == "skip-group-check", vis)
        if got is None:
            log.complete(i, "ok", got=[])
            time.sleep(0.05)
            continue
        seq, group, event, exp = got
        ref = {"s": seq, "g": group, "w": a.id, "e": event_id(event)}
        log.complete(i, "ok", got=[dict(ref, exp=exp, att=1)])
        if a.mode == "stale-ack":
            # A slow worker: its lease lapses, and (the race lined up) another worker claims
            # the message before it acks.
            until = time.time() + STALE_VISIBILITY + 1.5
            while time.time() < until:
                row = db.execute(f"SELECT locked_by FROM {M} WHERE seq = ?", (seq,)).fetchone()
                if row is None or row[0] not in (None, a.id):
                    break
                time.sleep(0.02)
            holder = ""  # the bug: no look at who holds it
        else:
            time.sleep(rng.uniform(0.01, 0.05))
            holder = f" AND locked_by = '{a.id}'"
        i = log.invoke("ack", leases=[ref], **({"stale": True} if a.mode == "stale-ack" else {}))
        db.execute("BEGIN IMMEDIATE")
        deleted = db.execute(f"DELETE FROM {M} WHERE seq = ?{holder}", (seq,)).rowcount
        db.execute(f"DELETE FROM {G} WHERE group_id = ?1 AND NOT EXISTS (SELECT 1 FROM {M} WHERE group_id = ?1)", (group,))
        db.execute("COMMIT")
        log.complete(i, "ok" if deleted else "fail", **({} if deleted else {"status": "HAREL_ERR_LEASE_LOST"}))
        if a.mode == "redeliver" and deleted:
            # The bug: the acked message comes back (not logged: nobody knows).
            time.sleep(0.05)
            db.execute("BEGIN IMMEDIATE")
            db.execute(f"INSERT INTO {M} (seq, group_id, event) VALUES (?, ?, ?)", (seq, group, event))
            db.execute(f"INSERT OR IGNORE INTO {G} (group_id) VALUES (?)", (group,))
            db.execute("COMMIT")
        time.sleep(rng.uniform(0.1, 0.4))


if __name__ == "__main__":
    main()
