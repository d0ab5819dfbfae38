"""The Python-level benchmark (`make bench-python`): this package against harel 0.9.0's
own transports, through one harness, with one event size, in one run.

Peers, each behind harel's sync `Transport` protocol (publish, claim, ack):

- ours: `harel_transport.harel.SqliteTransport` on a local file, at synchronous FULL (its
  default: an fdatasync per commit) and NORMAL (`synchronous_full=False`), each with its
  defaults (harel's contract: a commit for each claim and each ack) and with each of its
  speed options, which change what other transports see: `defer_ack=True` (an ack rides
  on the next claim's commit), `prefetch="auto"` (a claim takes a batch of groups' heads
  when the handler is fast; acks still a commit each) and both;
- harel's `LibsqlTransport` and `SqliteTransport` at their defaults (their settings are
  read back and printed), and at synchronous NORMAL (set on their connection);
- harel's `RedisTransport` on a real `redis-server` this script starts on loopback, with
  the AOF fsynced at every write (`appendfsync always`) and once a second (`everysec`);
- harel's `PostgresTransport` on a real PostgreSQL this script starts on loopback
  (`fsync=on`), with `synchronous_commit=on` and `off`.

Besides, not harel's protocol and so not a peer of the others: ours FULL through the
native API's batch loop, `publish_many` of 10 and a drain by `claim_many(max=10)` then
`ack_and_claim_many(max=10)` (one commit a batch of 10), to show what the worker loop of
issue 15 does at the same durability.

Durability tiers for the comparison: "every commit on disk before the call returns" (ours
FULL, Redis always, Postgres synchronous_commit on) and "a crash of the process loses
nothing that returned, a power loss may lose the last moments" (ours NORMAL, Redis
everysec; Postgres synchronous_commit off is weaker: a server crash may lose the last
~0.6 s of commits, though the database stays consistent).

Cases: publish (one message per call, one process), drain with 1 worker and with 4 worker
processes (claim then ack until the queue is empty; each worker its own transport). The
queue holds N messages over G groups; each case stops at a time cap, and the rate is what
was done over the time it took. The run makes REPEAT passes over every peer (each pass
starting one peer further on), each case from a fresh queue, and reports each case's
median with its range: on a shared disk an fsync's cost moves a lot over minutes, and
appending to a file costs several times what overwriting its blocks does. The disk's pace
(fsyncs a second, appending) is measured at the start of each pass and printed.

As root, redis-server and postgresql are installed with apt-get when missing
(`BENCH_SERVERS=0` leaves those two peers out; `BENCH_MESSAGES`, `BENCH_GROUPS`,
`BENCH_CAP_S` and `BENCH_REPEAT` change the sizes). A peer that
cannot run is reported as such, with the reason. Prints a table, the ratios the issue
asks for, and a last line of JSON with every figure.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

N_MESSAGES = int(os.environ.get("BENCH_MESSAGES", "2000"))
BATCH = 10  # the native batch loop's batch
GROUPS = int(os.environ.get("BENCH_GROUPS", "100"))
CAP_S = float(os.environ.get("BENCH_CAP_S", "8"))
# Each case is run this many times (from a fresh queue each time) and its median reported:
# on a shared disk the cost of an fsync moves a lot from one second to the next.
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
# BENCH_SERVERS=0 leaves out the Redis and PostgreSQL peers (and their servers).
SERVERS = os.environ.get("BENCH_SERVERS", "1") != "0"
WORKERS = 4
VISIBILITY = 30.0


def event(i: int):
    from harel.spec.states import Event

    return Event(id=f"ev-{i}", kind="bench", data={"n": i})


def group(i: int) -> str:
    return f"g-{i % GROUPS:07d}"


def log(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Servers: started and stopped here, on loopback


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def apt_install(package: str, binary_check: Callable[[], Optional[str]]) -> Optional[str]:
    found = binary_check()
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    log(f"installing {package} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", package], env=env, check=False, capture_output=True)
    return binary_check()


def find_redis() -> Optional[str]:
    return shutil.which("redis-server")


def find_postgres() -> Optional[str]:
    for base in sorted(os.listdir("/usr/lib/postgresql"), reverse=True) if os.path.isdir("/usr/lib/postgresql") else []:
        bindir = os.path.join("/usr/lib/postgresql", base, "bin")
        if os.path.exists(os.path.join(bindir, "postgres")) and os.path.exists(os.path.join(bindir, "initdb")):
            return bindir
    return None


class Redis:
    def __init__(self, workdir: str) -> None:
        binary = apt_install("redis-server", find_redis)
        if not binary:
            raise RuntimeError("redis-server not found (and not root to apt-get install it)")
        self.port = free_port()
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir)
        self.proc = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.dir, "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        import redis

        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis.from_url(self.url).ping()
                break
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.1)
        self.version = redis.Redis.from_url(self.url).info()["redis_version"]

    def configure(self, appendfsync: str) -> None:
        import redis

        r = redis.Redis.from_url(self.url)
        r.config_set("appendfsync", appendfsync)
        r.flushall()
        r.close()

    def reset(self) -> None:
        import redis

        r = redis.Redis.from_url(self.url)
        r.flushall()
        r.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Postgres:
    def __init__(self, workdir: str) -> None:
        bindir = apt_install("postgresql", find_postgres)
        if not bindir:
            raise RuntimeError("PostgreSQL not found (and not root to apt-get install it)")
        self.port = free_port()
        self.dir = os.path.join(workdir, "pg")
        self.sock = os.path.join(workdir, "pgsock")
        os.makedirs(self.dir)
        os.makedirs(self.sock)
        user = None
        if os.geteuid() == 0:  # postgres refuses to run as root: as the package's user
            user = "postgres"
            shutil.chown(workdir, user)
            shutil.chown(self.dir, user)
            shutil.chown(self.sock, user)
        subprocess.run(
            [os.path.join(bindir, "initdb"), "-D", self.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
            user=user,
        )
        self.proc = subprocess.Popen(
            [os.path.join(bindir, "postgres"), "-D", self.dir, "-p", str(self.port), "-k", self.sock,
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            user=user,
        )
        self.base_dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.base_dsn) as c:
                    self.version = c.execute("SHOW server_version").fetchone()[0]
                break
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("PostgreSQL did not start")
                time.sleep(0.2)

    def dsn(self, synchronous_commit: str) -> str:
        return f"{self.base_dsn} options='-c synchronous_commit={synchronous_commit}'"

    def reset(self) -> None:
        import psycopg

        with psycopg.connect(self.base_dsn, autocommit=True) as c:
            for table in ("harel_transport_messages", "harel_transport_groups"):
                c.execute(f"DROP TABLE IF EXISTS {table}")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)  # fast shutdown
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---------------------------------------------------------------------------------------
# Peers: how to open each one (also inside a worker process: plain data, no closures)


def open_peer(spec: Dict[str, Any]):
    kind = spec["kind"]
    if kind == "ours":
        from harel_transport.harel import SqliteTransport

        return SqliteTransport(spec["path"], synchronous_full=spec["full"], **spec["options"])
    if kind == "ours-batch":
        from harel_transport import Transport

        return Transport(spec["path"], synchronous_full=spec["full"])
    if kind in ("libsql", "sqlite"):
        if kind == "libsql":
            from harel.engine.transport.libsql import LibsqlTransport as cls
        else:
            from harel.engine.transport.sqlite import SqliteTransport as cls
        t = cls(spec["path"])  # its defaults (SqliteTransport: WAL, busy_timeout 5000)
        if not spec["full"]:
            t._conn.execute("PRAGMA synchronous=NORMAL")  # harel has no option for it
        return t
    if kind == "redis":
        from harel.engine.transport.redis import RedisTransport

        return RedisTransport.from_url(spec["url"])
    if kind == "postgres":
        import psycopg
        from harel.engine.transport.postgres import PostgresTransport

        return PostgresTransport(psycopg.connect(spec["dsn"]))
    raise ValueError(kind)


def sqlite_settings(t) -> Dict[str, Any]:
    q = lambda p: t._conn.execute(f"PRAGMA {p}").fetchone()[0]  # noqa: E731
    return {
        "journal_mode": q("journal_mode"),
        "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(q("synchronous")),
        "busy_timeout_ms": q("busy_timeout"),
    }


# ---------------------------------------------------------------------------------------
# Cases


def publisher(spec: Dict[str, Any], t: Any) -> Callable[[List[Any]], None]:
    """How the peer publishes a run of (group, event): one call each, or for the native
    batch loop one publish_many (a commit) per BATCH."""
    if spec["kind"] == "ours-batch":
        return lambda run: t.publish_many([(g, e.model_dump_json()) for g, e in run])
    return lambda run: [t.publish(g, e) for g, e in run]


def case_publish(spec: Dict[str, Any], n: int, first: int = 0) -> Dict[str, Any]:
    t = open_peer(spec)
    publish = publisher(spec, t)
    step = BATCH if spec["kind"] == "ours-batch" else 1
    work = [(group(i), event(i)) for i in range(first, first + n)]
    done = 0
    started = time.perf_counter()
    for k in range(0, len(work), step):
        run = work[k:k + step]
        publish(run)
        done += len(run)
        if done % 16 < step and time.perf_counter() - started > CAP_S:
            break
    secs = time.perf_counter() - started
    t.close()
    return {"per_s": done / secs, "ops": done, "secs": secs, "complete": done == n}


def fill(spec: Dict[str, Any], n: int, first: int) -> int:
    """Publishes n messages, untimed, as fast as the peer goes (within 3 caps)."""
    t = open_peer(spec)
    publish = publisher(spec, t)
    step = BATCH if spec["kind"] == "ours-batch" else 1
    started = time.perf_counter()
    done = 0
    for k in range(first, first + n, step):
        run = [(group(i), event(i)) for i in range(k, min(k + step, first + n))]
        publish(run)
        done += len(run)
        if done % 16 < step and time.perf_counter() - started > 3 * CAP_S:
            break
    t.close()
    return done


def drain_worker(spec: Dict[str, Any], name: str, barrier, results) -> None:
    """One worker process (or the caller, for 1 worker): claim then ack until the queue
    stays empty for 0.3 s or the cap passes. Errors (a peer's 'database is locked') are
    counted and retried."""
    if spec["kind"] == "ours-batch":
        return batch_worker(spec, name, barrier, results)
    t = open_peer(spec)
    if barrier is not None:
        barrier.wait()
    started = time.time()
    done = errors = 0
    last = started
    idle_since = None
    first_error = None
    while time.time() - started < CAP_S:
        try:
            lease = t.claim(name, VISIBILITY)
            if lease is None:
                now = time.time()
                idle_since = idle_since or now
                if now - idle_since > 0.3:
                    break
                time.sleep(0.001)
                continue
            idle_since = None
            t.ack(lease)
            done += 1
            last = time.time()
        except Exception as e:  # noqa: BLE001 - a figure too
            errors += 1
            first_error = first_error or f"{type(e).__name__}: {e}"
            time.sleep(0.001)
    t.close()
    results.put({"done": done, "errors": errors, "started": started, "last": last, "first_error": first_error})


def batch_worker(spec: Dict[str, Any], name: str, barrier, results) -> None:
    """drain_worker for the native batch loop: claim_many, then ack_and_claim_many (one
    commit a batch) until a claim_many waiting 0.3 s finds nothing or the cap passes."""
    t = open_peer(spec)
    if barrier is not None:
        barrier.wait()
    started = time.time()
    done = errors = 0
    last = started
    first_error = None
    leases: List[Any] = []
    while time.time() - started < CAP_S:
        try:
            if not leases:
                leases = t.claim_many(name, VISIBILITY, max=BATCH, wait=0.3)
                if not leases:
                    break
                continue
            leases, acked = t.ack_and_claim_many(leases, name, VISIBILITY, max=BATCH)
            done += sum(1 for lost in acked if lost is None)
            last = time.time()
        except Exception as e:  # noqa: BLE001 - a figure too
            errors += 1
            first_error = first_error or f"{type(e).__name__}: {e}"
            leases = []
            time.sleep(0.001)
    if leases:
        t.ack_many(leases)
        done += len(leases)
        last = time.time()
    t.close()
    results.put({"done": done, "errors": errors, "started": started, "last": last, "first_error": first_error})


def case_drain(spec: Dict[str, Any], workers: int, expected: int) -> Dict[str, Any]:
    if workers == 1:
        import queue

        q: Any = queue.Queue()
        drain_worker(spec, "w0", None, q)
        parts = [q.get()]
    else:
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(workers)
        q = ctx.Queue()
        procs = [ctx.Process(target=drain_worker, args=(spec, f"w{k}", barrier, q)) for k in range(workers)]
        for p in procs:
            p.start()
        parts = [q.get(timeout=CAP_S * 6 + 60) for _ in procs]
        for p in procs:
            p.join()
    done = sum(p["done"] for p in parts)
    secs = max(p["last"] for p in parts) - min(p["started"] for p in parts)
    out = {
        "per_s": done / secs if secs > 0 else 0.0,
        "ops": done,
        "secs": secs,
        "complete": done >= expected,
        "errors": sum(p["errors"] for p in parts),
        "shares": [p["done"] for p in parts] if workers > 1 else None,
    }
    errs = [p["first_error"] for p in parts if p["first_error"]]
    if errs:
        out["first_error"] = errs[0][:200]
    return out


class Peer:
    """One peer: how to open it, how to empty it, what to set before its turn."""

    def __init__(self, name: str, spec: Dict[str, Any], reset: Callable[[], None], settings: Dict[str, Any],
                 prepare: Callable[[], None] = lambda: None, contract: str = "its own") -> None:
        self.name, self.spec, self.reset, self.settings, self.prepare = name, spec, reset, settings, prepare
        self.contract = contract  # whether the peer keeps harel's contract, for the table
        self.runs: Dict[str, List[Dict[str, Any]]] = {"publish": [], "drain_1": [], f"drain_{WORKERS}": []}
        self.error: Optional[str] = None

    def run_once(self, rep: int) -> None:
        if self.error:
            return
        try:
            self.prepare()
            self.reset()
            log(f"  [{rep + 1}/{REPEAT}] {self.name}")
            pub = case_publish(self.spec, N_MESSAGES)
            self.runs["publish"].append(pub)
            self.runs["drain_1"].append(case_drain(self.spec, 1, pub["ops"]))
            self.reset()
            filled = fill(self.spec, N_MESSAGES, N_MESSAGES)
            self.runs[f"drain_{WORKERS}"].append(case_drain(self.spec, WORKERS, filled))
            self.reset()
        except Exception as e:  # noqa: BLE001 - reported as the peer's figure
            self.error = f"{type(e).__name__}: {e}"
            log(f"  {self.name}: {self.error}")

    def summary(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"settings": self.settings, "contract": self.contract, "results": {}, "runs": {}}
        if self.error:
            out["error"] = self.error
        for case, results in self.runs.items():
            if results:
                ordered = sorted(results, key=lambda r: r["per_s"])
                median = dict(ordered[len(ordered) // 2])
                median["min_per_s"], median["max_per_s"] = ordered[0]["per_s"], ordered[-1]["per_s"]
                median["errors"] = sum(r.get("errors", 0) for r in results)
                out["results"][case] = median
                out["runs"][case] = [round(r["per_s"], 1) for r in results]
        return out


def fsync_rate(directory: str) -> float:
    """Appends of 4 KiB, each fsynced, in 0.5 s: the disk's pace right now."""
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < 0.5:
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            n += 1
        return n / (time.perf_counter() - started)
    finally:
        os.close(fd)
        os.remove(path)


# ---------------------------------------------------------------------------------------
# The run


def remove_db(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal", "-harel"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def main() -> None:
    import harel_transport
    from harel.engine.transport.libsql import LibsqlTransport
    from harel.engine.transport.sqlite import SqliteTransport

    work = tempfile.mkdtemp(prefix="harel-bench-")
    os.chmod(work, 0o755)
    size = len(event(0).model_dump_json())
    log(f"bench: {N_MESSAGES} messages over {GROUPS} groups, event {size} bytes of JSON, cap {CAP_S:.0f} s a case, "
        f"{REPEAT} passes over every peer")
    peers: List[Peer] = []
    failed: Dict[str, str] = {}
    servers: List[Any] = []

    def files(path: str) -> Callable[[], None]:
        return lambda: remove_db(path)

    try:
        # One file per peer: this process never has a file open through two SQLite libraries.
        for full in (True, False):
            for variant, options, contract in OURS:
                path = os.path.join(work, f"ours-{len(peers)}.db")
                settings = {"synchronous": "FULL" if full else "NORMAL", "journal_mode": "wal", **options,
                            "library": harel_transport.library_path().rsplit("/", 1)[-1],
                            "version": harel_transport.version()}
                spec = {"kind": "ours", "path": path, "full": full, "options": options}
                peers.append(Peer(ours(full, variant), spec, files(path), settings, contract=contract))
        path = os.path.join(work, "ours-batch.db")
        settings = {"synchronous": "FULL", "journal_mode": "wal", "batch": BATCH}
        peers.append(Peer(BATCH_PEER, {"kind": "ours-batch", "path": path, "full": True}, files(path), settings,
                          contract="not harel's protocol"))
        for full in (True, False):
            for name, kind, cls in (("harel LibsqlTransport", "libsql", LibsqlTransport),
                                    ("harel SqliteTransport", "sqlite", SqliteTransport)):
                path = os.path.join(work, f"{kind}-{len(peers)}.db")
                spec = {"kind": kind, "path": path, "full": full}
                probe = open_peer(spec)
                settings = sqlite_settings(probe)
                probe.close()
                remove_db(path)
                peers.append(Peer(theirs(name, full), spec, files(path), settings))
        try:
            if not SERVERS:
                raise RuntimeError("left out (BENCH_SERVERS=0)")
            redis = Redis(work)
            servers.append(redis)
            for fsync in ("always", "everysec"):
                settings = {"server": f"redis {redis.version}", "appendonly": "yes", "appendfsync": fsync}
                peers.append(Peer(f"harel RedisTransport (appendfsync {fsync})", {"kind": "redis", "url": redis.url},
                                  redis.reset, settings, prepare=lambda f=fsync: redis.configure(f)))
        except Exception as e:  # noqa: BLE001
            failed["harel RedisTransport"] = f"{type(e).__name__}: {e}"
            log(f"  redis: {e}")
        try:
            if not SERVERS:
                raise RuntimeError("left out (BENCH_SERVERS=0)")
            pg = Postgres(work)
            servers.append(pg)
            for sync in ("on", "off"):
                settings = {"server": f"PostgreSQL {pg.version}", "fsync": "on", "synchronous_commit": sync}
                peers.append(Peer(f"harel PostgresTransport (synchronous_commit {sync})",
                                  {"kind": "postgres", "dsn": pg.dsn(sync)}, pg.reset, settings))
        except Exception as e:  # noqa: BLE001
            failed["harel PostgresTransport"] = f"{type(e).__name__}: {e}"
            log(f"  postgres: {e}")

        # Passes over every peer, each starting one peer further on: the disk's pace moves
        # over minutes, and each peer meets it at several moments.
        disk = []
        for rep in range(REPEAT):
            disk.append(round(fsync_rate(work)))
            log(f"pass {rep + 1}: the disk does {disk[-1]} fsyncs/s appending")
            k = rep % len(peers)
            for peer in peers[k:] + peers[:k]:
                peer.run_once(rep)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    summary = {p.name: p.summary() for p in peers}
    summary.update({name: {"error": why} for name, why in failed.items()})
    report(summary, size, disk)


BATCH_PEER = f"ours FULL, native batch loop of {BATCH} (not harel's protocol)"
#: Ours: (variant, its options, what another transport sees of it).
OURS = (
    ("defaults", {}, "exactly"),
    ("defer_ack", {"defer_ack": True}, "no: an acked group stays leased until the worker's next claim"),
    ("prefetch auto", {"prefetch": "auto"}, "no: a batch's groups are leased before the worker starts them"),
    ("prefetch auto + defer_ack", {"prefetch": "auto", "defer_ack": True}, "no: both"),
)


def ours(full: bool, variant: str) -> str:
    return f"ours {'FULL' if full else 'NORMAL'}, {variant}"


def theirs(name: str, full: bool) -> str:
    return name if full else f"{name} NORMAL"


def figure(peer: Dict[str, Any], case: str) -> Optional[float]:
    r = peer.get("results", {}).get(case)
    return r["per_s"] if r else None


def report(peers: Dict[str, Dict[str, Any]], size: int, disk: List[int]) -> None:
    cases = ("publish", "drain_1", f"drain_{WORKERS}")
    print(f"\nPython-level, harel's Transport protocol; event {size} bytes; {N_MESSAGES} messages over {GROUPS} groups; "
          f"median of {REPEAT} passes (min–max), messages/s; the disk's fsyncs/s (appending) at each pass: {disk}")
    print(f"| peer | durability | harel's contract | publish /s | drain, 1 worker /s | drain, {WORKERS} workers /s |")
    print("|---|---|---|---|---|---|")
    for name, p in peers.items():
        if "results" not in p or not p["results"]:
            print(f"| {name} | - | - | {p.get('error', 'n/a')} | | |")
            continue
        s = p["settings"]
        durability = ", ".join(f"{k} {v}" for k, v in s.items() if k not in ("library", "version", "server"))
        cells = []
        for c in cases:
            r = p["results"].get(c)
            if r is None:
                cells.append(p.get("error", "n/a"))
                continue
            cell = f"{r['per_s']:,.0f}"
            if REPEAT > 1:
                cell += f" ({r['min_per_s']:,.0f}–{r['max_per_s']:,.0f})"
            if not r["complete"]:
                cell += f", {r['ops']} in {r['secs']:.1f} s"
            if r.get("errors"):
                cell += f", {r['errors']} errors"
            cells.append(cell)
        print(f"| {name} | {durability} | {p['contract']} | " + " | ".join(cells) + " |")

    def ratio(a: str, b: str, case: str) -> str:
        x, y = figure(peers.get(a, {}), case), figure(peers.get(b, {}), case)
        return f"x{x / y:.2f}" if x and y else "n/a"

    print("\nRatios, the drain (ours / theirs, and each option / ours at its defaults):")
    for full in (True, False):
        for case in ("drain_1", f"drain_{WORKERS}"):
            for variant, _, _ in OURS:
                mine = ours(full, variant)
                print(f"- {mine}, {case}: vs {theirs('harel SqliteTransport', full)} "
                      f"{ratio(mine, theirs('harel SqliteTransport', full), case)}, vs "
                      f"{theirs('harel LibsqlTransport', full)} {ratio(mine, theirs('harel LibsqlTransport', full), case)}, "
                      f"vs ours at its defaults {ratio(mine, ours(full, 'defaults'), case)}")
    for case in ("drain_1", f"drain_{WORKERS}"):
        print(f"- {case}, every commit on disk: ours FULL, defaults vs Redis always "
              f"{ratio(ours(True, 'defaults'), 'harel RedisTransport (appendfsync always)', case)}, "
              f"vs Postgres synchronous_commit on "
              f"{ratio(ours(True, 'defaults'), 'harel PostgresTransport (synchronous_commit on)', case)}; "
              f"the native batch loop (not harel's protocol) vs ours FULL, defaults "
              f"{ratio(BATCH_PEER, ours(True, 'defaults'), case)}")
        print(f"- {case}, relaxed: ours NORMAL, defaults vs Redis everysec "
              f"{ratio(ours(False, 'defaults'), 'harel RedisTransport (appendfsync everysec)', case)}, "
              f"vs Postgres synchronous_commit off "
              f"{ratio(ours(False, 'defaults'), 'harel PostgresTransport (synchronous_commit off)', case)}")
    print(json.dumps({"event_bytes": size, "messages": N_MESSAGES, "groups": GROUPS, "cap_s": CAP_S, "repeat": REPEAT,
                      "disk_fsyncs_per_s": disk, "peers": peers}))


if __name__ == "__main__":
    main()
