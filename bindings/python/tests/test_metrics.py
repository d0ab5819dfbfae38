"""`metrics()` on the sync and async transports: every field after known calls, a second
transport counting apart, a closed one refused, harel_metrics' layout (limit_holds at its
end; test_limits.py counts it under a limit); and the prometheus_client collector of
examples/prometheus_collector.py, registered and scraped."""

import asyncio
import ctypes
import dataclasses
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from harel_transport import AsyncTransport, LeaseLostError, Metrics, Transport, TransportClosedError, _native

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from prometheus_collector import TransportCollector  # noqa: E402


def known_calls(t):
    """3 published, 4 claimed, 1 acked, 1 nacked, 1 parked, 1 dead-lettered, 1 lost."""
    t.publish("a", '{"n":1}')
    t.publish_many([("b", '{"n":2}'), ("c", '{"n":3}')])
    a, b, c = (t.claim("w") for _ in range(3))
    t.ack(a)
    with pytest.raises(LeaseLostError):
        t.ack(a)
    t.nack(b)
    t.nack(c, delay=60)
    t.dead_letter(t.claim("w"), "poison")


def test_metrics_count_every_call():
    t = Transport(":memory:")
    known_calls(t)
    m = t.metrics()
    assert isinstance(m, Metrics)
    counts = (m.published, m.claimed, m.acked, m.nacked, m.parked, m.dead_lettered, m.dead_lettered_by_claim)
    assert counts == (3, 4, 1, 1, 1, 1, 0)
    assert (m.lost_leases, m.busy_retries, m.limit_holds) == (1, 0, 0)
    calls = {op: getattr(m.latency, op).count for op in
             ("publish", "claim", "claim_wait", "ack", "ack_and_claim", "nack", "extend", "dead_letter")}
    assert calls == dict(publish=2, claim=4, claim_wait=0, ack=2, ack_and_claim=0, nack=2, extend=0, dead_letter=1)
    h = m.latency.claim
    assert h.bounds[0] == 0.0001 and h.bounds[-1] == 10.0 and len(h.bounds) == len(h.buckets) == 16
    assert list(h.buckets) == sorted(h.buckets) and h.buckets[-1] <= h.count and h.sum > 0
    assert Transport(":memory:").metrics().published == 0
    t.close()
    with pytest.raises(TransportClosedError):
        t.metrics()


def test_the_metrics_structs_have_the_headers_layout():
    assert ctypes.sizeof(_native.HarelHistogram) == 144
    # nine counters, the bounds, eight histograms, then limit_holds (added at the end)
    assert ctypes.sizeof(_native.HarelMetrics) == 9 * 8 + 16 * 8 + 8 * 144 + 8 == 1360
    assert _native.HarelMetrics.dead_letter.offset == 9 * 8 + 16 * 8 + 7 * 144
    assert _native.HarelMetrics.limit_holds.offset == 9 * 8 + 16 * 8 + 8 * 144
    assert [f[0] for f in _native.HarelMetrics._fields_] == [
        "published", "claimed", "acked", "nacked", "parked", "dead_lettered", "dead_lettered_by_claim",
        "lost_leases", "busy_retries", "bounds",
        "publish", "claim", "claim_wait", "ack", "ack_and_claim", "nack", "extend", "dead_letter",
        "limit_holds",
    ]
    # Metrics gained limit_holds last, with a default: positional construction still works
    assert [f.name for f in dataclasses.fields(Metrics)][-2:] == ["latency", "limit_holds"]
    assert Metrics(*range(9), None).limit_holds == 0


def test_async_metrics_is_no_coroutine():
    async def run():
        t = await AsyncTransport.open(":memory:")
        await t.publish("g", '{"n":1}')
        await t.claim("w", wait=0.01)
        m = t.metrics()
        await t.close()
        return m

    m = asyncio.run(run())
    assert (m.published, m.claimed, m.latency.claim_wait.count) == (1, 1, 1)


def test_the_prometheus_collector_is_scraped():
    t = Transport(":memory:")
    known_calls(t)
    registry = CollectorRegistry()
    registry.register(TransportCollector(t, queue="test"))
    text = generate_latest(registry).decode()
    for line in (
        'harel_transport_published_messages_total{queue="test"} 3.0',
        'harel_transport_claimed_messages_total{queue="test"} 4.0',
        'harel_transport_acked_messages_total{queue="test"} 1.0',
        'harel_transport_nacked_messages_total{delay="none",queue="test"} 1.0',
        'harel_transport_nacked_messages_total{delay="parked",queue="test"} 1.0',
        'harel_transport_dead_lettered_messages_total{by="worker",queue="test"} 1.0',
        'harel_transport_lost_leases_total{queue="test"} 1.0',
        'harel_transport_limit_holds_total{queue="test"} 0.0',
        'harel_transport_call_duration_seconds_count{operation="publish",queue="test"} 2.0',
        'harel_transport_call_duration_seconds_bucket{le="+Inf",operation="ack",queue="test"} 2.0',
        'harel_transport_call_duration_seconds_count{operation="extend",queue="test"} 0.0',
    ):
        assert line + "\n" in text, f"{line} not in\n{text}"
    assert registry.get_sample_value("harel_transport_call_duration_seconds_count", {"operation": "claim", "queue": "test"}) == 4
    t.close()
