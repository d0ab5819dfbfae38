//! What only this process can see of a transport's work, counted as it happens: messages
//! published, leases handed out, acks, nacks, dead letters, lost leases, pauses after a
//! busy answer, and each operation's latency. The queue's own counts (stats) come from the
//! database; these come from the calls, so each process exports its own.
//!
//! Lock-free: Relaxed atomic adds, one per counter touched, and one `Instant` pair per
//! timed call. A snapshot reads each atomic once; counters are exact, but a snapshot taken
//! while calls run may see one counter of a call before another.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// How many latency buckets each histogram has (besides the count, which is `+Inf`'s).
pub const LATENCY_BUCKETS: usize = 16;

/// The buckets' upper bounds in seconds, inclusive: 100 µs to 10 s, Prometheus's
/// 1-2.5-5 steps. Fixed: a change would change the C struct `harel_histogram`.
pub const LATENCY_BOUNDS: [f64; LATENCY_BUCKETS] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The bounds in nanoseconds, so an observation is placed without a float.
const BOUNDS_NANOS: [u64; LATENCY_BUCKETS] = {
    let mut nanos = [0; LATENCY_BUCKETS];
    let mut i = 0;
    while i < LATENCY_BUCKETS {
        nanos[i] = (LATENCY_BOUNDS[i] * 1e9) as u64;
        i += 1;
    }
    nanos
};

/// One count that only goes up.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// The timed operations, each a histogram of `Latency`.
#[derive(Clone, Copy)]
pub enum Operation {
    Publish,
    Claim,
    ClaimWait,
    Ack,
    AckAndClaim,
    Nack,
    Extend,
    DeadLetter,
}

const OPERATIONS: usize = 8;

/// A histogram being filled: a count per bucket (the last one past every bound) and the
/// sum, kept apart so that one observation is two adds.
#[derive(Default)]
struct Recorder {
    buckets: [AtomicU64; LATENCY_BUCKETS + 1],
    sum_nanos: AtomicU64,
}

impl Recorder {
    fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[BOUNDS_NANOS.partition_point(|&bound| bound < nanos)].fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// Cumulative, as Prometheus wants it: the count is the total of the buckets read, so
    /// it is never below the last bucket's.
    fn snapshot(&self) -> Histogram {
        let mut buckets = [0; LATENCY_BUCKETS];
        let mut below = 0;
        for (i, bucket) in self.buckets.iter().enumerate() {
            below += bucket.load(Relaxed);
            if let Some(cumulative) = buckets.get_mut(i) {
                *cumulative = below;
            }
        }
        Histogram { buckets, count: below, sum: self.sum_nanos.load(Relaxed) as f64 / 1e9 }
    }
}

/// A transport's live counters; the backend holds `busy_retries` too.
#[derive(Default)]
pub struct Meters {
    pub published: Counter,
    pub claimed: Counter,
    pub acked: Counter,
    pub nacked: Counter,
    pub parked: Counter,
    pub dead_lettered: Counter,
    pub dead_lettered_by_claim: Counter,
    pub lost_leases: Counter,
    pub busy_retries: Arc<Counter>,
    pub limit_holds: Counter,
    latency: [Recorder; OPERATIONS],
}

impl Meters {
    pub fn observe(&self, operation: Operation, took: Duration) {
        self.latency[operation as usize].observe(took);
    }

    pub fn snapshot(&self) -> Metrics {
        let at = |operation: Operation| self.latency[operation as usize].snapshot();
        Metrics {
            published: self.published.get(),
            claimed: self.claimed.get(),
            acked: self.acked.get(),
            nacked: self.nacked.get(),
            parked: self.parked.get(),
            dead_lettered: self.dead_lettered.get(),
            dead_lettered_by_claim: self.dead_lettered_by_claim.get(),
            lost_leases: self.lost_leases.get(),
            busy_retries: self.busy_retries.get(),
            limit_holds: self.limit_holds.get(),
            latency: Latency {
                publish: at(Operation::Publish),
                claim: at(Operation::Claim),
                claim_wait: at(Operation::ClaimWait),
                ack: at(Operation::Ack),
                ack_and_claim: at(Operation::AckAndClaim),
                nack: at(Operation::Nack),
                extend: at(Operation::Extend),
                dead_letter: at(Operation::DeadLetter),
            },
        }
    }
}

/// What a transport counted since it was opened (`metrics()`); docs/operations.md,
/// "Metrics", says what each means.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Messages committed by publish and publish_many (messages, not calls).
    pub published: u64,
    /// Leases handed out by every kind of claim.
    pub claimed: u64,
    /// Messages acked (ack, ack_many, and the acks of ack_and_claim*).
    pub acked: u64,
    /// Nacks without a delay of their own (0): the message given back at once, or parked
    /// for its retry policy's backoff (docs/queue.md, "Retries").
    pub nacked: u64,
    /// Nacks that parked the message (delay > 0).
    pub parked: u64,
    /// Messages a worker moved to the dead letters (dead_letter).
    pub dead_lettered: u64,
    /// Heads a claim moved to the dead letters instead of handing them out: over
    /// max_attempts, or not UTF-8.
    pub dead_lettered_by_claim: u64,
    /// Acks, nacks, extends and dead_letters refused because the lease was lost.
    pub lost_leases: u64,
    /// Pauses after the database answered busy, before trying again.
    pub busy_retries: u64,
    /// Groups a claim passed over and held because their routing key had no room
    /// (docs/queue.md, "Limits"): each time a group is held.
    pub limit_holds: u64,
    pub latency: Latency,
}

/// A histogram per operation, of each call's seconds, failed calls included.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    /// publish and publish_many. On the blocking face, publishes that share a commit are
    /// one observation: the commit's.
    pub publish: Histogram,
    /// claim, and claim_many without a wait.
    pub claim: Histogram,
    /// claim_wait and claim_many with a wait (or a cancel): waiting included, so kept out
    /// of `claim`, which then stays the database's latency.
    pub claim_wait: Histogram,
    /// ack and ack_many.
    pub ack: Histogram,
    /// ack_and_claim and ack_and_claim_many.
    pub ack_and_claim: Histogram,
    pub nack: Histogram,
    pub extend: Histogram,
    pub dead_letter: Histogram,
}

/// Observations of one operation, cumulative as Prometheus's are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Histogram {
    /// `buckets[i]`: observations of at most `LATENCY_BOUNDS[i]` seconds.
    pub buckets: [u64; LATENCY_BUCKETS],
    /// Every observation (the `+Inf` bucket).
    pub count: u64,
    /// Their total, in seconds.
    pub sum: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_falls_in_the_first_bucket_whose_bound_it_does_not_pass() {
        let meters = Meters::default();
        for micros in [50, 100, 101, 20_000_000] {
            meters.observe(Operation::Nack, Duration::from_micros(micros));
        }
        let h = meters.snapshot().latency.nack;
        assert_eq!((h.buckets[0], h.buckets[1], h.buckets[LATENCY_BUCKETS - 1], h.count), (2, 3, 3, 4));
        assert!((h.sum - 20.000251).abs() < 1e-9, "{}", h.sum);
        assert_eq!(meters.snapshot().latency.ack.count, 0);
    }
}
