"""What a transport counted since it was opened (`Transport.metrics`), copied out of the
library's harel_metrics: counters, and a latency histogram per operation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

#: The operations with a latency histogram, the fields of `Latency`.
OPERATIONS = ("publish", "claim", "claim_wait", "ack", "ack_and_claim", "nack", "extend", "dead_letter")


@dataclass(frozen=True)
class Histogram:
    """One operation's calls by duration, cumulative as Prometheus histograms are. Failed
    calls count; calls refused for a bad argument do not."""

    #: The buckets' upper bounds, seconds, the same for every histogram: 0.0001 .. 10.
    bounds: Tuple[float, ...]
    #: ``buckets[i]``: the calls that took at most ``bounds[i]`` seconds.
    buckets: Tuple[int, ...]
    #: Every call (the ``+Inf`` bucket).
    count: int
    #: Their total, seconds.
    sum: float


@dataclass(frozen=True)
class Latency:
    """A histogram per operation. ``claim_wait`` holds the claims that may wait (a
    ``wait`` or a cancel given), their waiting included, so that ``claim`` stays the
    database's latency; publishes that shared a commit are one ``publish`` call."""

    publish: Histogram
    claim: Histogram
    claim_wait: Histogram
    ack: Histogram  # ack and ack_many
    ack_and_claim: Histogram  # ack_and_claim and ack_and_claim_many
    nack: Histogram
    extend: Histogram
    dead_letter: Histogram


@dataclass(frozen=True)
class Metrics:
    """What one transport counted since it was opened; counters only go up."""

    #: Messages committed by publish and publish_many (messages, not calls).
    published: int
    #: Leases handed out, by every kind of claim.
    claimed: int
    #: Messages acked (ack, ack_many, the acks of ack_and_claim*).
    acked: int
    #: Nacks that gave the message back at once (delay 0).
    nacked: int
    #: Nacks that parked the message (delay > 0).
    parked: int
    #: Messages a worker moved to the dead letters (dead_letter).
    dead_lettered: int
    #: Heads a claim moved to the dead letters instead of handing them out (over
    #: max_attempts, or not UTF-8).
    dead_lettered_by_claim: int
    #: Acks, nacks, extends and dead letters refused with LeaseLostError.
    lost_leases: int
    #: Pauses after the database answered busy, before trying again.
    busy_retries: int
    latency: Latency
    #: Groups a claim passed over and held because their routing key had no room under its
    #: limit (`Transport.set_limit`), each time one is held. Last, with a default: positional
    #: construction of the fields before it still works.
    limit_holds: int = 0


def copy_metrics(c: Any) -> Metrics:
    """A `Metrics` from a harel_metrics (``ptr.contents``)."""
    bounds = tuple(c.bounds)

    def histogram(h: Any) -> Histogram:
        return Histogram(bounds=bounds, buckets=tuple(h.buckets), count=h.count, sum=h.sum)

    return Metrics(
        published=c.published,
        claimed=c.claimed,
        acked=c.acked,
        nacked=c.nacked,
        parked=c.parked,
        dead_lettered=c.dead_lettered,
        dead_lettered_by_claim=c.dead_lettered_by_claim,
        lost_leases=c.lost_leases,
        busy_retries=c.busy_retries,
        latency=Latency(**{op: histogram(getattr(c, op)) for op in OPERATIONS}),
        limit_holds=c.limit_holds,
    )
