"""tools/tracing_worker.py, the Python worker of the cross-language trace test, against a
file queue: it claims the messages of its routing key, acks them, and writes its spans as
JSON lines, linked to the producers' (spans made here, through our own tracing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import child_env
from harel_transport import Transport

WORKER = Path(__file__).resolve().parent.parent / "tools" / "tracing_worker.py"


def produce(path, prefix, keys):
    """Publishes one message per (group, routing key) with tracing on; the producer spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with Transport(path, prefix=prefix, tracer_provider=provider) as t:
        for i, key in enumerate(keys):
            t.publish(f"py-{key}-{i}", json.dumps({"from": "python", "key": key}), routing_key=key)
    return list(exporter.get_finished_spans())


def worker(*args, timeout=60):
    return subprocess.run(
        [sys.executable, str(WORKER), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=child_env()
    )


def test_the_worker_claims_its_key_and_writes_linked_spans(tmp_path):
    queue = str(tmp_path / "q.db")
    producers = produce(queue, "harel", ["python", "go", "python", "node", "python"])
    spans_file = tmp_path / "spans.jsonl"
    proc = worker("--queue", queue, "--prefix", "harel", "--spans", spans_file, "--key", "python", "--count", 3)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in spans_file.read_text().splitlines()]
    assert len(lines) == 3
    ours = {format(p.context.span_id, "016x"): p for p in producers if p.attributes["messaging.message.conversation_id"].startswith("py-python")}
    assert len(ours) == 3
    seen = set()
    for span in lines:
        assert set(span) == {"lang", "name", "kind", "trace_id", "span_id", "parent_span_id", "links", "attributes", "status"}
        assert (span["lang"], span["name"], span["kind"], span["status"]) == ("python", "process harel", "consumer", "ok")
        assert len(span["trace_id"]) == 32 and len(span["span_id"]) == 16 and span["parent_span_id"] is None
        [link] = span["links"]
        producer = ours[link["span_id"]]
        assert link["trace_id"] == format(producer.context.trace_id, "032x")
        assert span["trace_id"] != link["trace_id"]  # a new root, linked
        seen.add(link["span_id"])
        attributes = span["attributes"]
        assert attributes["messaging.system"] == "harel"
        assert attributes["messaging.operation.type"] == "process"
        assert attributes["messaging.operation.name"] == "process"
        assert attributes["messaging.destination.name"] == "harel"
        assert attributes["messaging.message.conversation_id"].startswith("py-python-")
        assert attributes["messaging.message.id"].isdigit()
    assert seen == set(ours)
    with Transport(queue) as t:  # the other keys' messages stay
        assert t.stats().messages == 2

    # nothing more of its key: fewer than N within the wait is exit 1, with a message
    proc = worker("--queue", queue, "--spans", spans_file, "--key", "python", "--count", 1, "--wait", 0.3)
    assert proc.returncode == 1 and "0 of 1 messages with routing key 'python'" in proc.stderr
    assert spans_file.read_text() == ""


def test_the_worker_as_parent_and_another_prefix(tmp_path):
    queue = str(tmp_path / "q.db")
    [producer] = produce(queue, "jobs", ["rust"])
    spans_file = tmp_path / "spans.jsonl"
    proc = worker("--queue", queue, "--prefix", "jobs", "--spans", spans_file, "--key", "rust", "--count", 1,
                  "--trace-as-parent")
    assert proc.returncode == 0, proc.stderr
    [span] = [json.loads(line) for line in spans_file.read_text().splitlines()]
    assert span["name"] == "process jobs" and span["attributes"]["messaging.destination.name"] == "jobs"
    assert span["parent_span_id"] == format(producer.context.span_id, "016x")
    assert span["trace_id"] == format(producer.context.trace_id, "032x") and span["links"] == []


def test_a_bad_command_line_is_exit_2(tmp_path):
    proc = worker("--queue", tmp_path / "q.db")
    assert proc.returncode == 2 and "--spans" in proc.stderr
