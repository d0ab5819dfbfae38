"""Exports a harel_transport Transport's metrics with prometheus_client: a custom collector
that reads `Transport.metrics()` at each scrape (an `AsyncTransport`'s too: its
`metrics()` is no coroutine).

    from prometheus_client import REGISTRY, start_http_server
    REGISTRY.register(TransportCollector(transport, queue="orders"))
    start_http_server(9464)
"""

from __future__ import annotations

from typing import Any, Dict, Iterator

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

OPERATIONS = ("publish", "claim", "claim_wait", "ack", "ack_and_claim", "nack", "extend", "dead_letter")


class TransportCollector(Collector):
    """One transport's counters, and a histogram of its calls' durations by operation;
    `labels` (a queue's name, say) tell several transports apart."""

    def __init__(self, transport: Any, **labels: str) -> None:
        self._transport = transport
        self._names = list(labels)
        self._values = list(labels.values())

    def collect(self) -> Iterator[Metric]:
        m = self._transport.metrics()
        yield self._counter("published_messages", "Messages published (committed).", m.published)
        yield self._counter("claimed_messages", "Leases handed out by claims.", m.claimed)
        yield self._counter("acked_messages", "Messages acked.", m.acked)
        yield self._counter(
            "nacked_messages", "Messages given back: at once (delay none) or parked.",
            by=("delay", {"none": m.nacked, "parked": m.parked}),
        )
        yield self._counter(
            "dead_lettered_messages", "Messages moved to the dead letters by a worker or by a claim.",
            by=("by", {"worker": m.dead_lettered, "claim": m.dead_lettered_by_claim}),
        )
        yield self._counter("lost_leases", "Acks, nacks, extends and dead letters refused: the lease was lost.",
                            m.lost_leases)
        yield self._counter("busy_retries", "Pauses after the database answered busy.", m.busy_retries)
        yield self._counter(
            "limit_holds", "Groups a claim passed over and held: their routing key had no room.", m.limit_holds,
        )
        duration = HistogramMetricFamily(
            "harel_transport_call_duration_seconds", "Duration of the transport's calls, by operation.",
            labels=self._names + ["operation"],
        )
        for op in OPERATIONS:
            h = getattr(m.latency, op)
            # Cumulative already, as Prometheus wants; the count is the +Inf bucket.
            buckets = [(str(bound), n) for bound, n in zip(h.bounds, h.buckets)] + [("+Inf", h.count)]
            duration.add_metric(self._values + [op], buckets, h.sum)
        yield duration

    def _counter(self, name: str, doc: str, count: int = 0, by: Any = None) -> CounterMetricFamily:
        """A counter; with `by` (a label and its values' counts), one sample per value."""
        label, counts = by if by else (None, {})
        family = CounterMetricFamily(f"harel_transport_{name}", doc, labels=self._names + ([label] if label else []))
        samples: Dict[str, int] = counts
        if not by:
            family.add_metric(self._values, count)
        for value, n in samples.items():
            family.add_metric(self._values + [value], n)
        return family
