"""OpenTelemetry (``tracer_provider=``): a PRODUCER span per publish whose context travels
in the message's headers (``traceparent``, ``tracestate``), a CONSUMER span per lease handed
out, linked to it (or its child with ``trace_as_parent``), ended by the lease's ack, nack,
dead letter or loss; off, nothing. Spans are read back with the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import harel_transport as ht
from conftest import run_python
from harel_transport import AsyncTransport, Message, Transport


class Spans:
    """A TracerProvider whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def finished(self, name=None, kind=None):
        return [
            s for s in self.exporter.get_finished_spans()
            if (name is None or s.name == name) and (kind is None or s.kind == kind)
        ]

    def producers(self):
        return self.finished(kind=SpanKind.PRODUCER)

    def consumers(self):
        return self.finished(kind=SpanKind.CONSUMER)

    def clear(self):
        self.exporter.clear()


@pytest.fixture
def spans():
    return Spans()


@pytest.fixture
def t(qpath, spans):
    with Transport(qpath, tracer_provider=spans.provider) as t:
        yield t


def traceparent_of(span) -> str:
    ctx = span.get_span_context()
    return ht.format_traceparent(ctx.trace_id.to_bytes(16, "big"), ctx.span_id.to_bytes(8, "big"), 1)


def header(lease, name):
    values = [v for n, v in lease.headers if n == name]
    assert len(values) <= 1, lease.headers
    return values[0] if values else None


def linked_to(consumer, producer) -> bool:
    return [(link.context.trace_id, link.context.span_id) for link in consumer.links] == [
        (producer.context.trace_id, producer.context.span_id)
    ]


def test_a_publish_makes_a_producer_span_and_its_traceparent(t, spans):
    t.publish("g", '{"n":1}', headers=[("x", "1")])
    [producer] = spans.producers()
    assert producer.name == "publish harel"
    assert producer.kind == SpanKind.PRODUCER
    assert producer.parent is None  # no current span: a root
    assert dict(producer.attributes) == {
        "messaging.system": "harel",
        "messaging.operation.type": "send",
        "messaging.operation.name": "publish",
        "messaging.destination.name": "harel",
        "messaging.message.conversation_id": "g",
    }
    assert producer.status.status_code == StatusCode.UNSET
    lease = t.claim("w")
    assert lease.headers == [("x", "1"), ("traceparent", traceparent_of(producer))]
    parsed = ht.parse_traceparent(header(lease, "traceparent"))
    assert int.from_bytes(parsed.trace_id, "big") == producer.context.trace_id
    assert int.from_bytes(parsed.span_id, "big") == producer.context.span_id
    assert parsed.flags == 1
    t.ack(lease)


def test_the_queue_is_the_prefix(qpath, spans):
    with Transport(qpath, prefix="jobs", tracer_provider=spans.provider) as t:
        t.publish("g", "{}")
        t.ack(t.claim("w"))
    assert [s.name for s in spans.finished()] == ["publish jobs", "process jobs"]
    assert {s.attributes["messaging.destination.name"] for s in spans.finished()} == {"jobs"}


def test_a_publish_is_a_child_of_the_current_span(t, spans):
    with spans.tracer.start_as_current_span("request") as request:
        t.publish("g", "{}")
        t.publish_with("g", "{}")
        t.publish_many([("g", "{}")])
    producers = spans.producers()
    assert len(producers) == 3
    for p in producers:
        assert p.parent.span_id == request.get_span_context().span_id
        assert p.context.trace_id == request.get_span_context().trace_id


def test_the_callers_traceparent_and_tracestate_are_replaced(t, spans):
    state = trace.TraceState([("vendor", "v1"), ("other", "x")])
    remote = trace.SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=trace.TraceFlags(1), trace_state=state)
    token = otel_context.attach(trace.set_span_in_context(trace.NonRecordingSpan(remote)))
    try:
        t.publish(
            "g", "{}",
            headers=[("traceparent", "00-" + "1" * 32 + "-" + "2" * 16 + "-01"), ("a", "b"), ("tracestate", "mine=1"),
                     ("traceparent", "again")],
        )
    finally:
        otel_context.detach(token)
    [producer] = spans.producers()
    assert producer.parent.span_id == 0x5678 and producer.context.trace_id == 0x1234
    lease = t.claim("w")
    assert lease.headers == [
        ("a", "b"), ("traceparent", traceparent_of(producer)), ("tracestate", "vendor=v1,other=x"),
    ]
    t.ack(lease)
    [consumer] = spans.consumers()
    assert consumer.links[0].context.trace_state == state


def test_without_a_tracestate_the_callers_stays(t, spans):
    t.publish("g", "{}", headers=[("tracestate", "mine=1")])
    lease = t.claim("w")
    assert [n for n, _ in lease.headers] == ["tracestate", "traceparent"]


def test_a_lease_gets_a_consumer_span_linked_to_the_producer(t, spans):
    seq = t.publish_with("g", '{"n":1}').seq
    [producer] = spans.producers()
    assert producer.attributes["messaging.message.id"] == str(seq)
    with spans.tracer.start_as_current_span("unrelated"):
        lease = t.claim("w")  # a root all the same
    assert spans.consumers() == []  # open until the ack
    t.ack(lease)
    [consumer] = spans.consumers()
    assert consumer.name == "process harel" and consumer.kind == SpanKind.CONSUMER
    assert consumer.parent is None
    assert consumer.context.trace_id != producer.context.trace_id
    assert linked_to(consumer, producer)
    assert dict(consumer.attributes) == {
        "messaging.system": "harel",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "harel",
        "messaging.message.id": str(seq),
        "messaging.message.conversation_id": "g",
    }
    assert consumer.status.status_code == StatusCode.OK


def test_trace_as_parent_makes_it_a_child(qpath, spans):
    with Transport(qpath, tracer_provider=spans.provider, trace_as_parent=True) as t:
        t.publish("g", "{}")
        t.ack(t.claim("w"))
    [producer] = spans.producers()
    [consumer] = spans.consumers()
    assert consumer.parent.span_id == producer.context.span_id and consumer.parent.is_remote
    assert consumer.context.trace_id == producer.context.trace_id
    assert list(consumer.links) == []


def test_nack_dead_letter_and_extend(t, spans, qpath):
    for g in "abc":
        t.publish(g, "{}")
    a, b, c = t.claim("w"), t.claim("w"), t.claim("w")
    t.nack(a, 2.5)
    a_span = spans.consumers()[-1]
    assert a_span.status.status_code == StatusCode.ERROR and a_span.status.description == "nacked"
    assert [(e.name, dict(e.attributes)) for e in a_span.events] == [("nack", {"messaging.harel.nack_delay": 2.5})]
    t.dead_letter(b, "poison pill")
    b_span = spans.consumers()[-1]
    assert b_span.status.status_code == StatusCode.ERROR and b_span.status.description == "poison pill"
    assert [(e.name, dict(e.attributes)) for e in b_span.events] == [
        ("dead_letter", {"messaging.harel.dead_letter_reason": "poison pill"})
    ]
    c2 = t.extend(c, 60)
    c3 = t.extend(c2, 60)
    assert len(spans.consumers()) == 2
    t.ack(c3)
    c_span = spans.consumers()[-1]
    assert [e.name for e in c_span.events] == ["extend", "extend"]
    assert c_span.status.status_code == StatusCode.OK
    with pytest.raises(ht.LeaseLostError):
        t.ack(c)  # the first copy: acked already, its span ended already (once)
    assert len(spans.consumers()) == 3 and spans.consumers()[-1].status.status_code == StatusCode.OK


def test_a_lost_lease_ends_its_span(qpath, spans, clock):
    with Transport(qpath, tracer_provider=spans.provider, clock=clock) as t, Transport(qpath, clock=clock) as other:
        for g in "abc":
            t.publish(g, "{}")
        leases = [t.claim("w", 10) for _ in range(3)]
        clock.now += 20  # every lease lapses; another worker claims each message
        assert len(other.claim_many("other", 10, max=3)) == 3
        finishes = [lambda l: t.ack(l), lambda l: t.nack(l, 1), lambda l: t.extend(l, 10)]
        for lease, finish in zip(leases, finishes):
            with pytest.raises(ht.LeaseLostError):
                finish(lease)
    consumers = spans.consumers()
    assert len(consumers) == 3
    for span in consumers:
        assert span.status.status_code == StatusCode.ERROR and span.status.description == "lease lost"
        assert [e.name for e in span.events] == []


def test_batch_claims_and_batch_acks(t, spans):
    for i in range(6):
        t.publish(f"g{i}", "{}")
    producers = {p.context.span_id: p for p in spans.producers()}
    batch = t.claim_many("w", max=4)
    result = t.ack_and_claim_many(batch[:3], "w", max=5)
    assert len(result.leases) == 2 and result.acked == [None] * 3
    acked_first = spans.consumers()
    assert len(acked_first) == 3
    assert all(s.attributes["messaging.batch.message_count"] == 4 for s in acked_first)
    nxt = t.ack_and_claim(batch[3], "w")
    assert nxt is None
    assert t.ack_many(result.leases) == [None, None]
    consumers = spans.consumers()
    assert len(consumers) == 6
    counts = sorted(s.attributes["messaging.batch.message_count"] for s in consumers)
    assert counts == [2, 2, 4, 4, 4, 4]
    for s in consumers:
        assert s.status.status_code == StatusCode.OK
        [link] = s.links
        assert link.context.span_id in producers
    assert len({s.links[0].context.span_id for s in consumers}) == 6
    # a lease of ack_and_claim: not a batch
    t.publish("solo", "{}")
    t.publish("solo2", "{}")
    first = t.claim("w")
    second = t.ack_and_claim(first, "w")
    t.ack(second)
    assert "messaging.batch.message_count" not in spans.consumers()[-1].attributes


def test_a_lost_lease_in_a_batch_ack(qpath, spans, clock):
    with Transport(qpath, tracer_provider=spans.provider, clock=clock) as t, Transport(qpath, clock=clock) as other:
        t.publish("a", "{}")
        t.publish("b", "{}")
        a = t.claim("w", 10)
        clock.now += 5
        b = t.claim("w", 10)
        clock.now += 6  # a's lease lapsed, b's not
        assert other.claim("other", 10).group_id == "a"
        assert [type(o) for o in t.ack_many([a, b])] == [ht.LeaseLostError, type(None)]
    by_group = {s.attributes["messaging.message.conversation_id"]: s for s in spans.consumers()}
    assert by_group["a"].status.description == "lease lost"
    assert by_group["b"].status.status_code == StatusCode.OK


def test_a_batch_publish_is_one_span_every_message_carries(t, spans):
    t.publish_many([Message("a", "{}"), Message("b", "{}", headers=[("x", "y")]), ("c", "{}")])
    published = t.publish_many_with([Message("d", "{}", key="k1"), Message("d", "{}", key="k2")])
    one, two = spans.producers()
    assert one.attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.conversation_id" not in one.attributes  # three groups
    assert two.attributes["messaging.batch.message_count"] == 2
    assert two.attributes["messaging.message.conversation_id"] == "d"
    leases = t.claim_many("w", max=10)
    leases += [t.ack_and_claim(next(l for l in leases if l.group_id == "d"), "w")]
    by_seq = {lease.seq: lease for lease in leases}
    for lease in leases:
        expected = two if lease.group_id == "d" else one
        assert header(lease, "traceparent") == traceparent_of(expected)
    assert by_seq[published[0].seq].headers == [("traceparent", traceparent_of(two))]
    assert next(l for l in leases if l.group_id == "b").headers[0] == ("x", "y")


def test_an_empty_batch_makes_no_span(t, spans):
    t.publish_many([])
    t.publish_many_with([])
    assert spans.finished() == []


def test_a_transactions_publish_ends_at_the_commit(t, spans):
    with t.transaction() as tx:
        tx.publish("g", "{}", headers=[("a", "b")])
        tx.publish_with("h", "{}", key="k")
        assert spans.producers() == []  # they end when the commit returns
    producers = spans.producers()
    assert [p.attributes["messaging.message.id"] for p in producers] == [str(p.seq) for p in tx.published]
    assert all(p.status.status_code == StatusCode.UNSET for p in producers)
    leases = [t.claim("w"), t.claim("w")]
    assert [header(lease, "traceparent") for lease in leases] == [traceparent_of(p) for p in producers]
    assert leases[0].headers[0] == ("a", "b")


def test_a_failed_commit_and_a_rollback_end_them_with_an_error(t, spans):
    tx = t.transaction()
    tx.publish("g", "{}")
    tx.execute("INSERT INTO no_such_table VALUES (1)")
    with pytest.raises(ht.DatabaseError):
        tx.commit()
    [failed] = spans.producers()
    assert failed.status.status_code == StatusCode.ERROR and "no_such_table" in failed.status.description
    with pytest.raises(RuntimeError):
        with t.transaction() as tx:
            tx.publish("g", "{}")
            raise RuntimeError("the application's")
    rolled = spans.producers()[-1]
    assert rolled.status.status_code == StatusCode.ERROR and rolled.status.description == "rolled back"
    # a publish refused: its span ends at once, with the error; the transaction goes on
    with t.transaction() as tx:
        with pytest.raises(ht.ArgumentError):
            tx.publish("g", "{}", headers=[("a=b", "c")])
        assert spans.producers()[-1].status.status_code == StatusCode.ERROR
        tx.publish("g", "{}")
    assert spans.producers()[-1].status.status_code == StatusCode.UNSET
    assert t.stats().messages == 1


def test_a_refused_publish_ends_its_span_with_an_error(t, spans):
    with pytest.raises(ht.ArgumentError):
        t.publish("g", "{}", headers=[(f"h{i}", "v") for i in range(64)])  # 64 + traceparent: 65
    [span] = spans.producers()
    assert span.status.status_code == StatusCode.ERROR
    assert t.stats().messages == 0


def test_an_invalid_or_absent_traceparent_is_no_link(qpath, spans):
    with Transport(qpath) as plain, Transport(qpath, tracer_provider=spans.provider) as t, \
            Transport(qpath, tracer_provider=spans.provider, trace_as_parent=True) as child:
        bad = ["garbage", "00-" + "0" * 32 + "-" + "1" * 16 + "-01", "00-" + "A" * 32 + "-" + "1" * 16 + "-01",
               "ff-" + "1" * 32 + "-" + "1" * 16 + "-01", ""]
        for i, value in enumerate(bad):
            plain.publish(f"bad{i}", "{}", headers=[("traceparent", value), ("tracestate", "a=1")])
        plain.publish("none", "{}")
        plain.publish("badstate", "{}", headers=[("traceparent", "00-" + "1" * 32 + "-" + "2" * 16 + "-01"),
                                                  ("tracestate", "NOT VALID")])
        for transport in (t, child):
            for lease in transport.claim_many("w", max=20):
                transport.nack(lease) if transport is t else transport.ack(lease)
    consumers = spans.consumers()
    assert len(consumers) == 2 * (len(bad) + 2)
    for span in consumers:
        group = span.attributes["messaging.message.conversation_id"]
        if group == "badstate":  # a valid traceparent: linked (or parented), its tracestate dropped
            ctx = span.links[0].context if span.links else span.parent
            assert ctx.span_id == 0x2222222222222222 and len(ctx.trace_state) == 0
            continue
        assert list(span.links) == [] and span.parent is None, group


def test_off_adds_nothing(qpath, spans):
    with Transport(qpath) as t:
        assert t._tracing is None
        with spans.tracer.start_as_current_span("request"):
            t.publish("g", "{}")
            t.publish_with("g", "{}", headers=[("a", "b")])
            t.publish_many([Message("g", "{}")])
        leases = t.claim_many("w", max=3) + [t.claim("w")]
    assert [lease.headers for lease in leases if lease] == [[]]
    assert all(lease is None or not hasattr(lease, "_harel_span") for lease in leases)
    assert [s.name for s in spans.finished()] == ["request"]


def test_the_options_are_checked(qpath, spans):
    with pytest.raises(ht.ArgumentError, match="trace_as_parent"):
        Transport(qpath, trace_as_parent=True)
    with pytest.raises(ht.ArgumentError, match="trace_as_parent"):
        Transport(qpath, tracer_provider=spans.provider, trace_as_parent=1)
    with pytest.raises(ht.ArgumentError, match="tracer_provider"):
        Transport(qpath, tracer_provider="yes")


def test_a_pickled_or_copied_lease_carries_no_span(t, spans):
    import copy
    import pickle

    t.publish("g", "{}")
    lease = t.claim("w")
    again = pickle.loads(pickle.dumps(lease))
    assert again == lease and not getattr(again, "_harel_span", None)
    assert not getattr(copy.deepcopy(lease), "_harel_span", None)
    t.ack(again)  # acks the message; the span stays with the original lease
    assert spans.consumers() == []


def test_the_asyncio_face(qpath, spans):
    async def main():
        async with await AsyncTransport.open(qpath, tracer_provider=spans.provider) as t:
            with spans.tracer.start_as_current_span("request") as request:
                await t.publish("a", "{}", headers=[("x", "1")])
                await t.publish_with("b", "{}")
                await t.publish_many([Message("c", "{}")])
                await t.publish_many_with([Message("d", "{}")])
                async with t.transaction() as tx:
                    tx.publish("e", "{}")
                    assert not [p for p in spans.producers() if p.attributes.get("messaging.message.conversation_id") == "e"]
            producers = spans.producers()
            assert len(producers) == 5
            for p in producers:  # the task's context went with each call to the executor
                assert p.parent.span_id == request.get_span_context().span_id

            first = await t.claim("w")
            waited = await t.claim("w", wait=5)  # the watch's path
            batch = await t.claim_many("w", max=1)
            batch2 = await t.claim_many("w", max=1, wait=5)
            nxt = await t.ack_and_claim(first, "w")
            await t.nack(waited, 0)
            result = await t.ack_and_claim_many(batch + batch2, "w", max=5)
            await t.dead_letter(nxt, "no")
            for lease in result.leases:
                await t.ack(lease)
            late = asyncio.ensure_future(t.claim("w", wait=5))
            await asyncio.sleep(0.05)
            await t.publish("f", "{}")
            await t.ack(await late)
        return producers

    producers = asyncio.run(main())
    by_producer = {p.context.span_id: p for p in spans.producers()}
    consumers = spans.consumers()
    # a, b, c, d, e, f, and b again after its nack
    assert len(consumers) == 7
    statuses = sorted((s.attributes["messaging.message.conversation_id"], s.status.status_code.name,
                       s.status.description) for s in consumers)
    groups = [s[0] for s in statuses]
    assert sorted(set(groups)) == list("abcdef")
    for s in consumers:
        [link] = s.links
        assert link.context.span_id in by_producer
        assert s.parent is None
    assert ("b", "ERROR", "nacked") in statuses
    assert ("b", "OK", None) in statuses
    assert ("e", "ERROR", "no") in statuses
    assert sum(1 for s in statuses if s[1] == "OK") == 5


def test_the_global_provider_and_no_opentelemetry(tmp_path):
    """``tracer_provider=True`` uses the global provider; without opentelemetry the package
    imports and works (untraced), and asking for tracing says what to install."""
    out = run_python(
        """
        import json, sys
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from harel_transport import Transport
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        with Transport(sys.argv[1], tracer_provider=True) as t:
            t.publish("g", "{}")
            t.ack(t.claim("w"))
        print(json.dumps([s.name for s in exporter.get_finished_spans()]))
        """,
        tmp_path / "a.db",
    )
    assert json.loads(out) == ["publish harel", "process harel"]
    out = run_python(
        """
        import json, sys
        sys.modules["opentelemetry"] = None  # not installed
        import harel_transport
        from harel_transport import ArgumentError, Transport
        with Transport(sys.argv[1]) as t:
            t.publish("g", "{}", headers=[("a", "b")])
            lease = t.claim("w")
            t.ack(lease)
        try:
            Transport(sys.argv[1], tracer_provider=True)
        except ArgumentError as e:
            message = e.message
        print(json.dumps({"headers": lease.headers, "error": message,
                          "loaded": [m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m]]}))
        """,
        tmp_path / "b.db",
    )
    got = json.loads(out)
    assert got["headers"] == [["a", "b"]] and got["loaded"] == []
    assert "pip install 'harel-transport[opentelemetry]'" in got["error"]


def test_the_async_drop_in_over_a_tracing_transport(qpath, spans):
    from harel.spec.states import Event

    from harel_transport.harel import AsyncHarelTransport

    async def main():
        native = await AsyncTransport.open(qpath, tracer_provider=spans.provider)
        async with AsyncHarelTransport(native) as t:
            await t.publish("g", Event(id="e1", kind="k", data={}))
            await t.publish("h", Event(id="e2", kind="k", data={}))
            lease = await t.claim("w", 30)
            await t.ack(lease)
            other = await t.claim("w", 30)
            await t.nack(other)

    asyncio.run(main())
    [p1, p2] = spans.producers()
    c1, c2 = spans.consumers()
    assert linked_to(c1, p1) and c1.status.status_code == StatusCode.OK
    assert linked_to(c2, p2) and c2.status.description == "nacked"
