"""Every face against C, in one run (issue 35, `make bench-faces`): the same drain on the
same queue from C, C++, Rust, Go, Node, Python native and harel's drop-in, as µs per message
and as a ratio to C.

Each face is one small program in bench/faces/ (face.c, face.cpp, face.rs, go/, face.js,
face.py) that opens the queue at synchronous NORMAL, publishes MESSAGES over GROUPS in one
batch (untimed), times its drain until empty ("claim_ack": claim then ack, two calls;
"ack_and_claim": claim once, then ack_and_claim per message) and prints one line of JSON.
This driver builds nothing (`make bench-faces` does): it runs every face x mode x store
REPEAT times, round-robin across the faces (a noisy period of the machine hits all of them,
not one), each run on a fresh file, and prints a table of medians, then one line of JSON.
A face that cannot run is a row saying why.

    .venv/bin/python bench/faces/run.py [--repeat 3] [--messages 4000] [--groups 50]
        [--faces c,cpp,...] [--dir DIR] [--bin-dir build/bench/faces]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODES = ("claim_ack", "ack_and_claim")
STORES = ("file", "memory")


class Face:
    """One face: how to run it, what it is held to (a ratio to C; None: no target)."""

    def __init__(self, id, label, target, argv, program=None, modes=MODES, note=None, no_mode=None, slower=False):
        self.id, self.label, self.target, self.modes, self.note = id, label, target, modes, note
        # A yardstick rather than a face: C must be `target` times as fast (ratio >= target).
        self.slower = slower
        self.no_mode = no_mode  # why a mode is missing from `modes`
        self.argv = argv  # the command before <path> <mode> <messages> <groups>
        self.program = program  # a built file the face needs, checked before running

    def unavailable(self, bin_dir):
        """Why this face cannot run here (None: it can)."""
        if self.program is not None and not Path(self.program).exists():
            # The make target leaves the reason when a toolchain is missing.
            why = bin_dir / f"{self.id}.unavailable"
            if why.exists():
                return why.read_text().strip()
            shown = Path(self.program).relative_to(REPO) if Path(self.program).is_relative_to(REPO) else self.program
            return f"{shown} is not built (make bench-faces builds it)"
        if shutil.which(self.argv[0]) is None:
            return f"{self.argv[0]} not found"
        return None


def faces(args):
    b, py, face_py = args.bin_dir, args.python, str(REPO / "bench/faces/face.py")
    koffi = REPO / "bindings/node/node_modules/koffi"
    return [
        Face("c", "C", None, [str(b / "c")], b / "c"),
        Face("cpp", "C++", 1.05, [str(b / "cpp")], b / "cpp"),
        Face("rust", "Rust", 1.05, [str(args.rust)], args.rust),
        Face("go", "Go", 1.3, [str(b / "go")], b / "go"),
        Face("node", "Node", 2.0, [args.node, str(REPO / "bench/faces/face.js")], koffi,
             note="the binding JSON.parses each event into lease.event"),
        Face("python", "Python native", 2.0, [py, face_py, "python"]),
        Face("harel", "harel drop-in", None, [py, face_py, "harel"], modes=("claim_ack",),
             note="its claim returns harel's Lease, the Event decoded from the JSON (pydantic)",
             no_mode="harel's Transport protocol has no ack_and_claim"),
        Face("harel-sqlite", "harel's Sqlite", 2.0, [py, face_py, "harel-sqlite"], modes=("claim_ack",),
             note="harel 0.9's own SqliteTransport (Python's sqlite3), the yardstick: C is held to twice its speed",
             no_mode="harel's Transport protocol has no ack_and_claim", slower=True),
    ]


def remove_db(path):
    for suffix in ("", "-wal", "-shm", "-journal", "-harel"):  # -harel: the lock's slot file
        try:
            os.remove(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def run_once(face, mode, store, rep, args, env):
    """One run: its µs per message, or an error string."""
    path = ":memory:" if store == "memory" else str(args.dir / f"{face.id}-{mode}-{rep}.db")
    if store == "file":
        remove_db(path)
    cmd = face.argv + [path, mode, str(args.messages), str(args.groups)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {args.timeout} s"
    finally:
        if store == "file":
            remove_db(path)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return f"exit {p.returncode}: {last}"
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
        if out["messages"] != args.messages:
            return f"drained {out['messages']} of {args.messages}"
        return float(out["us_per_msg"])
    except (ValueError, KeyError, IndexError) as e:
        return f"unreadable output ({e}): {p.stdout.strip()[:200]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--messages", type=int, default=4000)
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--faces", default="", help="a comma-separated subset of face ids (default: all)")
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a new temporary directory)")
    ap.add_argument("--bin-dir", type=Path, default=REPO / "build/bench/faces")
    ap.add_argument("--rust", type=Path, default=REPO / "target/release/bench-face")
    ap.add_argument("--node", default="node")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    args = ap.parse_args()
    args.bin_dir = args.bin_dir.resolve()
    own_dir = args.dir is None
    args.dir = Path(tempfile.mkdtemp(prefix="bench-faces-")) if own_dir else args.dir.resolve()
    args.dir.mkdir(parents=True, exist_ok=True)

    # Node and Python load the library the C face links: this tree's release build.
    env = dict(os.environ)
    env["HAREL_TRANSPORT_LIB"] = str(REPO / "target/release/libharel_transport.so")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "bindings/python"), env.get("PYTHONPATH")]))

    all_faces = faces(args)
    if args.faces:
        wanted = set(args.faces.split(","))
        all_faces = [f for f in all_faces if f.id in wanted or f.id == "c"]  # C is every ratio's reference
    why_not = {f.id: f.unavailable(args.bin_dir) for f in all_faces}
    runnable = [f for f in all_faces if why_not[f.id] is None]
    cases = [(m, s) for m in MODES for s in STORES]

    times = {}  # (face, mode, store) -> [µs per message]
    errors = {}  # (face, mode, store) -> [error]
    for rep in range(args.repeat):
        order = runnable[rep % len(runnable):] + runnable[:rep % len(runnable)] if runnable else []
        for mode, store in cases:
            for face in order:
                if mode not in face.modes:
                    continue
                r = run_once(face, mode, store, rep, args, env)
                key = (face.id, mode, store)
                (times if isinstance(r, float) else errors).setdefault(key, []).append(r)
                print(f"  run {rep + 1}/{args.repeat} {face.id:6} {mode:13} {store:6} "
                      f"{r if isinstance(r, str) else f'{r:9.2f} µs/msg'}", file=sys.stderr, flush=True)
    if own_dir:
        shutil.rmtree(args.dir, ignore_errors=True)

    rows = []
    for mode, store in cases:
        c = times.get(("c", mode, store))
        c_median = statistics.median(c) if c else None
        for face in all_faces:
            key = (face.id, mode, store)
            row = {"face": face.id, "mode": mode, "store": store, "target_ratio": face.target,
                   "target_is": "at least" if face.slower else "at most"}
            if why_not[face.id] is not None:
                row["not_run"] = why_not[face.id]
            elif mode not in face.modes:
                row["not_run"] = face.no_mode
            elif key not in times:
                row["not_run"] = "every run failed: " + errors[key][-1]
            else:
                xs = times[key]
                row.update(us_per_msg=statistics.median(xs), min=min(xs), max=max(xs), runs=xs)
                if key in errors:
                    row["failed_runs"] = errors[key]
                if c_median:
                    row["ratio_to_c"] = row["us_per_msg"] / c_median
                    if face.target is not None:
                        row["met"] = row["ratio_to_c"] >= face.target if face.slower else row["ratio_to_c"] <= face.target
            rows.append(row)

    print_table(rows, all_faces, args)
    print(json.dumps({"bench_faces": {"messages": args.messages, "groups": args.groups, "repeat": args.repeat,
                                      "synchronous": "NORMAL", "rows": rows}}))
    return 0 if times.get(("c", MODES[0], STORES[0])) else 1


def print_table(rows, all_faces, args):
    label = {f.id: f.label for f in all_faces}
    print(f"\nEvery face against C (issue 35): {args.messages} messages over {args.groups} groups, synchronous NORMAL, "
          f"median of {args.repeat} runs (min-max), µs per message drained")
    head = f"{'face':15} {'mode':14} {'store':7} {'µs/msg (min-max)':>26} {'x C':>6} {'target':>7}  verdict"
    print(head)
    print("-" * len(head))
    for r in rows:
        start = f"{label[r['face']]:15} {r['mode']:14} {r['store']:7}"
        if "not_run" in r:
            print(f"{start} not run: {r['not_run']}")
            continue
        figure = f"{r['us_per_msg']:.1f} ({r['min']:.1f}-{r['max']:.1f})"
        ratio = f"{r['ratio_to_c']:.2f}" if "ratio_to_c" in r else "?"
        bound = ">=" if r["target_is"] == "at least" else "<="
        target = f"{bound}{r['target_ratio']:g}" if r["target_ratio"] is not None else "-"
        verdict = "ref" if r["face"] == "c" else ("met" if r.get("met") else "MISSED" if "met" in r else "-")
        if "failed_runs" in r:
            verdict += f" ({len(r['failed_runs'])} run(s) failed: {r['failed_runs'][-1]})"
        print(f"{start} {figure:>26} {ratio:>6} {target:>7}  {verdict}")
    for f in all_faces:
        if f.note:
            print(f"  {f.label}: {f.note}")
    # The drop-in against the transport it replaces (issue 35: >= 1.5 its speed at NORMAL).
    by = {(r["face"], r["mode"], r["store"]): r for r in rows if "us_per_msg" in r}
    for store in STORES:
        ours, theirs = by.get(("harel", "claim_ack", store)), by.get(("harel-sqlite", "claim_ack", store))
        if ours and theirs:
            speed = theirs["us_per_msg"] / ours["us_per_msg"]
            print(f"  harel drop-in ÷ harel's SqliteTransport ({store}), speed: {speed:.2f} (target >= 1.5: "
                  f"{'met' if speed >= 1.5 else 'MISSED'})")


if __name__ == "__main__":
    sys.exit(main())
