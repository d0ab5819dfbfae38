"""The benchmark's Python peers (issue #6): harel 0.9.0's LibsqlTransport (the seed of
this project) and SqliteTransport, each at its own defaults, doing the cases the Rust
harness (bench/main.rs) gives it in a JSON plan, on copies of the same states.
Prints one JSON line: {"peers": {peer: {"settings": {...}, "results": {case id: figure}}}}.

A figure is {"per_s", "ops", "secs", "complete"} for a rate, {"median_us", "p90_us",
"iters"} for a claim latency (claim timed, then nack(0) untimed), {"error": ...} or
{"n/a": ...}. Run by `make bench` with the venv's python; not meant to be run alone."""

import json
import os
import shutil
import sys
import time


def remove_db(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def open_peer(peer, path):
    if peer == "libsql":
        from harel.engine.transport.libsql import LibsqlTransport

        return LibsqlTransport(path)  # its defaults: libsql.connect, no WAL pragma, no busy timeout set
    from harel.engine.transport.sqlite import SqliteTransport

    return SqliteTransport(path)  # its defaults: WAL, busy_timeout 5000


def settings(t):
    q = lambda p: t._conn.execute(f"PRAGMA {p}").fetchone()[0]
    return {"journal_mode": q("journal_mode"), "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(q("synchronous")),
            "busy_timeout_ms": q("busy_timeout")}


def group_id(i):
    return f"g-{i:07d}"


def publish(peer, case, out):
    from harel.spec.states import Event

    remove_db(case["path"])
    t = open_peer(peer, case["path"])
    out["settings"] = settings(t)
    n, groups, cap = case["n"], case["groups"], case["cap_s"]
    work = [(group_id(i % groups), Event(id=f"ev-{i}", kind="bench", data={"n": i})) for i in range(n)]
    started = time.perf_counter()
    done = 0
    for g, e in work:
        t.publish(g, e)
        done += 1
        if done % 16 == 0 and time.perf_counter() - started > cap:
            break
    secs = time.perf_counter() - started
    t.close()
    remove_db(case["path"])
    return {"per_s": done / secs, "ops": done, "secs": secs, "complete": done == n}


def drain(peer, case, out):
    remove_db(case["path"])
    shutil.copyfile(case["template"], case["path"])
    t = open_peer(peer, case["path"])
    cap = case["cap_s"]
    started = time.perf_counter()
    done = 0
    complete = False
    while True:
        lease = t.claim("drainer", 30.0)
        if lease is None:
            complete = True
            break
        t.ack(lease)
        done += 1
        if done % 16 == 0 and time.perf_counter() - started > cap:
            break
    secs = time.perf_counter() - started
    t.close()
    remove_db(case["path"])
    return {"per_s": done / secs, "ops": done, "secs": secs, "complete": complete}


WARMUP = 2
MIN_ITERS = 3


def claim(peer, case, out):
    remove_db(case["path"])
    shutil.copyfile(case["template"], case["path"])
    t = open_peer(peer, case["path"])
    expect, budget, max_iters = case["expect"], case["budget_s"], case["max_iters"]
    times = []
    started = time.perf_counter()
    i = 0
    while True:
        t0 = time.perf_counter()
        lease = t.claim("bench-worker", 30.0, case["min_priority"])
        took = time.perf_counter() - t0
        got = None if lease is None else lease.group_id
        ok = (got is None) if expect is None else (got is not None and (expect == "*" or got == expect))
        if not ok:
            raise RuntimeError(f"the state is not what was meant: expected {expect!r}, claim returned {got!r}")
        if lease is not None:
            t.nack(lease, 0.0)
        if i >= WARMUP:
            times.append(took * 1e6)
        i += 1
        if len(times) >= max_iters or (len(times) >= MIN_ITERS and time.perf_counter() - started > budget):
            break
    t.close()
    remove_db(case["path"])
    times.sort()
    at = lambda q: times[round((len(times) - 1) * q)]
    return {"median_us": at(0.5), "p90_us": at(0.9), "iters": len(times)}


def main():
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    ops = {"publish": publish, "drain": drain, "claim": claim}
    result = {"peers": {}}
    for peer in plan["peers"]:
        out = {"settings": None, "results": {}}
        for case in plan["cases"]:
            if case["op"] == "n/a":
                out["results"][case["id"]] = {"n/a": case["why"]}
                continue
            print(f"  python {peer}: {case['id']}", file=sys.stderr, flush=True)
            try:
                out["results"][case["id"]] = ops[case["op"]](peer, case, out)
            except Exception as e:  # a peer's failure is a figure too
                out["results"][case["id"]] = {"error": f"{type(e).__name__}: {e}"}
        result["peers"][peer] = out
    print(json.dumps(result))


if __name__ == "__main__":
    main()
