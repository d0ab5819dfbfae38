#!/usr/bin/env python3
"""The shape of src/: no circle between modules, and no arrow from a lower floor up.

A module is a file under src/ (mod.rs and lib.rs name their folder; a `#[path]` attribute
names its file as the declaring module's child). Its arrows are the modules it names
through `crate::`, `super::` and `self::` paths, `use` groups expanded. Each module sits on
the floor of the longest entry of FLOORS that prefixes its path; an arrow may go to its
own floor or below, never up.

    python3 tests/architecture/check_modules.py [SRC] [--self-test]

Prints the floors, each circle and each upward arrow, then one summary line; exit 1 when
there is any."""

import os
import re
import shutil
import sys
import tempfile

# From the top: the faces, the router, one database's queue, what runs it (a backend, and
# the waiting it wakes), and the values and rules every floor shares. docs/architecture.md draws the same.
FLOORS = [
    ("the C ABI", ["ffi"]),
    ("the blocking faces", ["transport", "group_commit", "transaction"]),
    ("the async face", ["async_transport"]),
    ("the router over shards", ["shards"]),
    ("a queue over one database", ["queue"]),
    ("the backends", ["backend"]),
    ("waiting for work", ["waiting"]),
    ("statements and chains", ["sql", "chain"]),
    ("values and rules", [
        "request", "validate", "types", "cursor", "error", "options", "mode", "metrics", "trace_context", "headers",
        # spans are the faces' record of calls, as metrics are; options carry the tracer
        "telemetry",
    ]),
]


def modules(src):
    """module path ('a::b') -> file."""
    found = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
                if rel[-1] in ("mod", "lib", "main"):
                    rel = rel[:-1]
                found["::".join(rel)] = os.path.join(root, f)
    moved = {}
    for mod, f in found.items():
        text = open(f, encoding="utf-8").read()
        for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', text):
            target = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
            moved[target] = "::".join(p for p in (mod, m.group(2)) if p)
    found = {mod: f for mod, f in found.items() if os.path.normpath(f) not in moved}
    found.update({mod: f for f, mod in moved.items()})
    return found


def expand(path):
    """`a::{b, c::{d}}` -> ['a::b', 'a::c::d']."""
    m = re.match(r"^([\w:]*?)::\{(.*)\}$", path, re.S)
    if not m:
        return [path]
    head, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return [e for p in parts if p for e in expand(f"{head}::{p}")]


def arrows(text, me, known):
    """The modules of `known` that `text` (module `me`'s source) names."""
    text = re.sub(r"//[^\n]*", "", text)
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        paths += expand(re.sub(r"\s+", "", m.group(1)))
    paths += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text)
    named = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "crate":
            parts = parts[1:]
        elif parts[0] in ("super", "self"):
            base = me.split("::") if me else []
            while parts and parts[0] in ("super", "self"):
                if parts.pop(0) == "super":
                    base = base[:-1]
            parts = base + parts
        else:
            continue
        # The longest prefix that is a module. A module's use of its own children is their
        # declaration and re-export, not an arrow; a child's use of its parent is one (two
        # children of one parent that reach each other through it make a circle).
        for n in range(len(parts), 0, -1):
            mod = "::".join(parts[:n])
            if mod in known:
                if mod != me and not (me == "" or mod.startswith(me + "::")):
                    named.add(mod)
                break
    return named


def floor_of(mod):
    best = None
    for i, (_, prefixes) in enumerate(FLOORS):
        for p in prefixes:
            if mod == p or mod.startswith(p + "::"):
                if best is None or len(p) > best[1]:
                    best = (i, len(p))
    return None if best is None else best[0]


def circles(graph):
    """Strongly connected sets of two or more modules (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(src, quiet=False):
    found = modules(src)
    known = set(found)
    graph = {m: arrows(open(f, encoding="utf-8").read(), m, known) for m, f in found.items()}
    problems = []
    for mod in sorted(known):
        if mod and floor_of(mod) is None:
            problems.append(f"{mod} ({found[mod]}) is on no floor: add it to FLOORS")
    for scc in circles(graph):
        problems.append("circle: " + " <-> ".join(scc))
    for mod in sorted(graph):
        for to in sorted(graph[mod]):
            a, b = floor_of(mod), floor_of(to)
            if a is not None and b is not None and b < a:
                problems.append(f"upward: {mod} ({FLOORS[a][0]}) -> {to} ({FLOORS[b][0]})")
    if not quiet:
        for i, (name, prefixes) in enumerate(FLOORS):
            mods = sorted(m for m in known if floor_of(m) == i)
            print(f"floor {i}, {name}: {len(mods)} modules ({', '.join(prefixes)})")
        for p in problems:
            print(p)
    return problems


def self_test(src):
    """A planted circle and a planted upward arrow must be caught, and nothing else."""
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy)
        with open(os.path.join(copy, "types.rs"), "a", encoding="utf-8") as f:
            f.write("\nuse crate::queue::work;\n")
        with open(os.path.join(copy, "cursor.rs"), "a", encoding="utf-8") as f:
            f.write("\nuse crate::validate::due;\n")
        with open(os.path.join(copy, "validate.rs"), "a", encoding="utf-8") as f:
            f.write("\nuse super::cursor::parse_cursor;\n")
        found = check(copy, quiet=True)
        want = ["upward: types (values and rules) -> queue::work (a queue over one database)"]
        for w in want:
            if w not in found:
                print(f"self-test: not caught: {w}")
                ok = False
        if not any(p.startswith("circle: ") and "cursor" in p and "validate" in p for p in found):
            print("self-test: the planted circle cursor <-> validate was not caught")
            ok = False
    print(f"{'ok  ' if ok else 'FAIL'} self-test: a planted circle and a planted upward arrow are caught")
    return ok


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..", "src")
    problems = check(src)
    passed = failed = 0
    if problems:
        failed += 1
    else:
        passed += 1
    if "--self-test" in sys.argv:
        if self_test(src):
            passed += 1
        else:
            failed += 1
    print(f"modules: {passed} passed, {failed} failed ({len(problems)} circles or upward arrows)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
