//! What a transport counted, from C: `harel_transport_metrics` copies the core's snapshot
//! into one allocation, freed with `harel_metrics_free`.

use super::boundary::boundary_out;
use super::unwind::boundary_value;
use super::error::harel_error;
use super::handle::harel_transport;
use super::ownership::{free_box, to_boxed_mut_ptr, try_ref_from_ptr, Boxed, Castable};
use super::status::harel_status::{self, HAREL_OK};
use crate::metrics::{Histogram, LATENCY_BOUNDS, LATENCY_BUCKETS};

/// One operation's latency in `harel_metrics`: counts of calls, cumulative as Prometheus
/// histograms are. Failed calls count; calls refused for a bad argument do not.
#[repr(C)]
pub struct harel_histogram {
    /// `buckets[i]`: calls that took at most `harel_metrics.bounds[i]` seconds.
    pub buckets: [u64; LATENCY_BUCKETS],
    /// Every call (the `+Inf` bucket).
    pub count: u64,
    /// Their total time, seconds.
    pub sum: f64,
}

/// What one transport counted since it was opened, from `harel_transport_metrics`; free
/// with `harel_metrics_free`. Counters only go up; docs/operations.md, "Metrics", explains
/// each.
/// Fields are only ever added at the end of this struct, which the library allocates.
#[repr(C)]
pub struct harel_metrics {
    /// Messages committed by publish and publish_many (messages, not calls).
    pub published: u64,
    /// Leases handed out, by every kind of claim.
    pub claimed: u64,
    /// Messages acked (ack, ack_many, the acks of ack_and_claim*).
    pub acked: u64,
    /// Nacks without a delay of their own (0): the message given back at once, or parked
    /// for its retry policy's backoff.
    pub nacked: u64,
    /// Nacks that parked the message (delay > 0).
    pub parked: u64,
    /// Messages a worker moved to the dead letters (harel_transport_dead_letter).
    pub dead_lettered: u64,
    /// Heads a claim moved to the dead letters instead of handing them out (over
    /// max_attempts, or not UTF-8).
    pub dead_lettered_by_claim: u64,
    /// Acks, nacks, extends and dead_letters refused with HAREL_ERR_LEASE_LOST (each lost
    /// lease of an ack_many counts once).
    pub lost_leases: u64,
    /// Pauses after the database answered busy, before trying again.
    pub busy_retries: u64,
    /// The histograms' bucket bounds, seconds, ascending: 0.0001 0.00025 0.0005 0.001
    /// 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10.
    pub bounds: [f64; LATENCY_BUCKETS],
    /// publish and publish_many; publishes that shared a commit are one observation.
    pub publish: harel_histogram,
    /// claim, and claim_many with a wait of 0.
    pub claim: harel_histogram,
    /// claim_wait, and claim_many with a wait or a cancel: their waiting included, so kept
    /// out of `claim`.
    pub claim_wait: harel_histogram,
    /// ack and ack_many.
    pub ack: harel_histogram,
    /// ack_and_claim and ack_and_claim_many.
    pub ack_and_claim: harel_histogram,
    pub nack: harel_histogram,
    pub extend: harel_histogram,
    pub dead_letter: harel_histogram,
    /// Groups a claim passed over and held because their routing key had no room
    /// (docs/queue.md, "Limits"): each time a group is held. Added after 0.4.0, at the end.
    pub limit_holds: u64,
}

impl Castable for harel_metrics {
    type Ownership = Boxed;
    type RustType = harel_metrics;
}

fn c_histogram(h: &Histogram) -> harel_histogram {
    harel_histogram { buckets: h.buckets, count: h.count, sum: h.sum }
}

/// What handle `t` counted since it was opened: messages published, claimed, acked,
/// nacked, parked and dead-lettered, lost leases, busy retries, and a latency histogram per
/// operation. Reads counters in memory: no database access, no lock, never busy.
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_metrics_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL).
#[no_mangle]
pub extern "C" fn harel_transport_metrics(
    t: *mut harel_transport,
    out: *mut *mut harel_metrics,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        let m = try_ref_from_ptr!(t).metrics();
        let l = &m.latency;
        *out = to_boxed_mut_ptr(harel_metrics {
            published: m.published,
            claimed: m.claimed,
            acked: m.acked,
            nacked: m.nacked,
            parked: m.parked,
            dead_lettered: m.dead_lettered,
            dead_lettered_by_claim: m.dead_lettered_by_claim,
            lost_leases: m.lost_leases,
            busy_retries: m.busy_retries,
            bounds: LATENCY_BOUNDS,
            publish: c_histogram(&l.publish),
            claim: c_histogram(&l.claim),
            claim_wait: c_histogram(&l.claim_wait),
            ack: c_histogram(&l.ack),
            ack_and_claim: c_histogram(&l.ack_and_claim),
            nack: c_histogram(&l.nack),
            extend: c_histogram(&l.extend),
            dead_letter: c_histogram(&l.dead_letter),
            limit_holds: m.limit_holds,
        });
        Ok(HAREL_OK)
    })
}

/// Frees what `harel_transport_metrics` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_metrics_free(metrics: *mut harel_metrics) {
    // SAFETY: NULL or from harel_transport_metrics, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(metrics) })
}
