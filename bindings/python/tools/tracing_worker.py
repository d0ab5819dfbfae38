#!/usr/bin/env python3
"""The Python worker of the cross-language trace test (tests/tracing/run.py): claims the
messages of one routing key with this package's OpenTelemetry on, acks them, and writes
every span it finished as one JSON object per line.

    python tracing_worker.py --queue PATH-OR-URL [--prefix harel] --spans FILE \\
        --key ROUTING_KEY --count N [--wait SECONDS] [--trace-as-parent]

- `--queue`: a queue file's path, or a libSQL server's URL (``http://127.0.0.1:PORT``).
- `--prefix`: the queue's table prefix (default ``harel``); spans are named after it.
- `--spans`: where the spans go, one JSON object a line:
  ``{"lang":"python","name":"process harel","kind":"consumer","trace_id":"<32 hex>",
  "span_id":"<16 hex>","parent_span_id":"<16 hex>"|null,"links":[{"trace_id":..,
  "span_id":..}],"attributes":{...},"status":"unset"|"ok"|"error"}``.
- `--key`, `--count`: claims exactly N messages whose group has that routing key, waiting
  up to `--wait` seconds (default 30) in all, and acks each.
- `--trace-as-parent`: each lease's span a child of the producer's context instead of a
  root linked to it.

Exits 0 once N were claimed and acked (the spans written); 1 with a message on stderr when
fewer came within the wait (the spans of those that came written all the same); 2 for a
bad command line. Runs with the package and opentelemetry-sdk installed (the test venv,
build/python/venv, after `make test-python` or `make python-tracing-worker`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Dict, List

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from harel_transport import Transport

LANG = "python"
_KINDS = {
    SpanKind.CONSUMER: "consumer",
    SpanKind.PRODUCER: "producer",
    SpanKind.CLIENT: "client",
    SpanKind.SERVER: "server",
    SpanKind.INTERNAL: "internal",
}
_STATUSES = {StatusCode.UNSET: "unset", StatusCode.OK: "ok", StatusCode.ERROR: "error"}


def _value(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def span_json(span: ReadableSpan) -> Dict[str, Any]:
    """One finished span as the trace test reads it."""
    ctx = span.get_span_context()
    assert ctx is not None
    return {
        "lang": LANG,
        "name": span.name,
        "kind": _KINDS.get(span.kind, str(span.kind).lower()),
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_span_id": None if span.parent is None else format(span.parent.span_id, "016x"),
        "links": [
            {"trace_id": format(link.context.trace_id, "032x"), "span_id": format(link.context.span_id, "016x")}
            for link in span.links
        ],
        "attributes": {k: _value(v) for k, v in (span.attributes or {}).items()},
        "status": _STATUSES[span.status.status_code],
    }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", required=True, help="a queue file's path, or a libSQL server's URL")
    parser.add_argument("--prefix", default="harel", help="the queue's table prefix (default harel)")
    parser.add_argument("--spans", required=True, help="where to write the spans, one JSON object a line")
    parser.add_argument("--key", required=True, help="the routing key of the messages to claim")
    parser.add_argument("--count", required=True, type=int, help="how many messages to claim and ack")
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait for them in all (default 30)")
    parser.add_argument("--trace-as-parent", action="store_true", help="spans child of the producer's, not linked")
    args = parser.parse_args(argv)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    got = 0
    deadline = time.monotonic() + args.wait
    try:
        with Transport(
            args.queue, prefix=args.prefix, tracer_provider=provider, trace_as_parent=args.trace_as_parent
        ) as queue:
            while got < args.count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                lease = queue.claim(f"{LANG}-tracing-worker", 30, 0, [args.key], wait=left)
                if lease is None:
                    break
                queue.ack(lease)
                got += 1
    finally:
        with open(args.spans, "w", encoding="utf-8") as out:
            for span in exporter.get_finished_spans():
                out.write(json.dumps(span_json(span), separators=(",", ":")) + "\n")
        provider.shutdown()
    if got < args.count:
        print(
            f"tracing_worker: {got} of {args.count} messages with routing key {args.key!r} came within "
            f"{args.wait:g} s on {args.queue}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
