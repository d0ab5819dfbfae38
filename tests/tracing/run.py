#!/usr/bin/env python3
"""One trace across languages (docs/tracing.md), on a file and on sqld.

C publishes one message per routing key with a traceparent written by the library's
helpers (trace T, span S); Go publishes one more per key, each in a PRODUCER span that is
a child of S. A worker per language (Go, Node, Python, Rust), each with its language's
OpenTelemetry SDK and an in-memory exporter, claims the two messages of its key in another
process and writes its spans as JSON lines. Checked: every producer span is in trace T,
and each worker has one CONSUMER span per message, linked to that message's producer
(S for C's, the Go span for Go's), with the messaging attributes.

    tests/tracing/run.py --c-producer BIN --go-producer BIN --go-worker BIN \\
        --node-worker CMD --python-worker CMD --rust-worker BIN [--sqld SQLD]
"""

import argparse
import json
import os
import secrets
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEYS = ["go", "node", "python", "rust"]
PREFIX = "harel"
STEP_TIMEOUT = 120


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, timeout=STEP_TIMEOUT, **kwargs)
    if done.returncode != 0:
        raise AssertionError(f"{shlex.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def spans_of(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def check(queue, workdir, commands):
    trace_id, c_span = secrets.token_hex(16), secrets.token_hex(8)
    traceparent = run([commands["c-producer"], queue, PREFIX, trace_id, c_span, *KEYS]).strip()
    assert traceparent == f"00-{trace_id}-{c_span}-01", traceparent
    go_spans = workdir / "go-producer.jsonl"
    run(commands["go-producer"] + ["--queue", queue, "--prefix", PREFIX, "--traceparent", traceparent,
                                   "--keys", ",".join(KEYS), "--spans", str(go_spans)])
    producers = [s for s in spans_of(go_spans) if s["kind"] == "producer"]
    assert len(producers) == len(KEYS), f"go: {len(producers)} producer spans"
    for span in producers:
        assert span["trace_id"] == trace_id and span["parent_span_id"] == c_span, span
        assert span["name"] == f"publish {PREFIX}" and span["attributes"]["messaging.system"] == "harel", span
    producer_of = {s["attributes"]["messaging.message.conversation_id"]: s["span_id"] for s in producers}

    workers = {}
    for key in KEYS:
        out = workdir / f"{key}.jsonl"
        command = commands[f"{key}-worker"] + ["--queue", queue, "--prefix", PREFIX, "--key", key,
                                                "--count", "2", "--spans", str(out)]
        workers[key] = (subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out)
    summary = []
    for key, (process, out) in workers.items():
        try:
            _, stderr = process.communicate(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError(f"the {key} worker did not finish within {STEP_TIMEOUT} s")
        assert process.returncode == 0, f"the {key} worker exited {process.returncode}: {stderr.strip()}"
        consumers = [s for s in spans_of(out) if s["kind"] == "consumer"]
        assert len(consumers) == 2, f"{key}: {len(consumers)} consumer spans"
        linked = set()
        for span in consumers:
            attributes = span["attributes"]
            assert span["name"] == f"process {PREFIX}", span
            assert attributes["messaging.system"] == "harel", span
            assert attributes["messaging.operation.type"] == "process", span
            assert attributes["messaging.destination.name"] == PREFIX, span
            group = attributes["messaging.message.conversation_id"]
            expected = c_span if group == f"c-{key}" else producer_of.get(group)
            assert expected, f"{key}: a span of group {group}"
            assert span["links"] == [{"trace_id": trace_id, "span_id": expected}], span
            assert span["status"] == "ok", span
            linked.add(group)
        assert linked == {f"c-{key}", f"go-{key}"}, linked
        summary.append(f"{key}: 2 consumer spans linked to {c_span} (C) and {producer_of[f'go-{key}']} (Go)")
    return trace_id, summary


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_sqld(sqld, workdir, body):
    port = free_port()
    server = subprocess.Popen([sqld, "--db-path", str(workdir / "data.sqld"), "--http-listen-addr",
                               f"127.0.0.1:{port}", "--no-welcome"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError("sqld did not start within 30 s")
                time.sleep(0.05)
        return body(f"http://127.0.0.1:{port}")
    finally:
        server.kill()
        server.wait()


def main():
    parser = argparse.ArgumentParser()
    for name in ["c-producer", "go-producer", "go-worker", "node-worker", "python-worker", "rust-worker"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--sqld", default=os.environ.get("HAREL_SQLD"))
    args = parser.parse_args()
    commands = {name: shlex.split(getattr(args, name.replace("-", "_"))) for name in
                ["go-producer", "go-worker", "node-worker", "python-worker", "rust-worker"]}
    commands["c-producer"] = args.c_producer
    backends = [("file", lambda dir, body: body(str(dir / "queue.db")))]
    if args.sqld:
        backends.append(("sqld", lambda dir, body: with_sqld(args.sqld, dir, body)))
    passed = failed = 0
    for name, backend in backends:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            try:
                trace_id, summary = backend(workdir, lambda queue: check(queue, workdir, commands))
                print(f"ok   one trace on a {name}: {trace_id}")
                for line in summary:
                    print(f"       {line}")
                passed += 1
            except (AssertionError, subprocess.TimeoutExpired) as e:
                print(f"FAIL one trace on a {name}: {e}")
                failed += 1
    if not args.sqld:
        # As the Rust server suites do (tests/common/sqld.rs): named, not silent.
        ci = " (CI runs without sqld)" if os.environ.get("CI") else ""
        print(f"skipped: one trace on sqld: HAREL_SQLD is not set{ci}")
    print(f"tracing: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
