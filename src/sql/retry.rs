//! The statements of retries (docs/queue.md, "Retries"). Each claim draws its message's
//! backoff for this attempt into `retry_delay`, in the lease's own UPDATE, from the
//! message's policy (`retry`, a JSON array: base, factor, cap, jitter) or else the
//! claiming transport's (a parameter, NULL for none). What ends the attempt reads it:
//!
//! - The claim gives the group its turn at the lease's end plus the backoff, so a lease that
//!   lapses leaves its message waiting the backoff before the next claim finds it, with no
//!   write at the lapse (there is no one to write it).
//! - A nack without a delay of its own parks the message for the backoff.
//! - An extend moves the turn with the lease, the backoff still after it.
//!
//! SQLite here has no pow(): `factor^(n-1)` is a recursive CTE that stops at the cap (and
//! at once for factor 1), so it runs at most n steps.

use super::Bound;
use crate::types::{Jitter, Retry};
use crate::validate::PARKED;

/// A uniform draw in [0, 1): random() is a signed 64-bit integer.
const UNIFORM: &str = "(random() / 18446744073709551616.0 + 0.5)";

/// A policy as the `retry` column and the claim's parameter hold it.
pub fn stored(r: &Retry) -> String {
    let jitter = match r.jitter {
        Jitter::None => 0,
        Jitter::Full => 1,
        Jitter::Equal => 2,
    };
    format!("[{},{},{},{jitter}]", r.base, r.factor, r.cap)
}

/// The backoff of claim number `attempt` (an SQL expression) of message row `m`, under its
/// own policy or the default `default` (an SQL parameter: the policy, or NULL); NULL without
/// either.
pub(super) fn backoff(m: &str, attempt: &str, default: &str) -> String {
    format!(
        "(WITH RECURSIVE p(b, f, c, j) AS (SELECT json_extract(r, '$[0]'), json_extract(r, '$[1]'), \
           json_extract(r, '$[2]'), json_extract(r, '$[3]') FROM (SELECT coalesce({m}.retry, {default}) AS r) \
           WHERE r IS NOT NULL), \
         s(i, d) AS (SELECT 1, b FROM p UNION ALL SELECT i + 1, min(c, d * f) FROM s, p \
           WHERE i < {attempt} AND d < c AND f > 1) \
         SELECT CASE j WHEN 1 THEN d * {UNIFORM} WHEN 2 THEN d * (1 + {UNIFORM}) / 2 ELSE d END \
         FROM s, p ORDER BY i DESC LIMIT 1)"
    )
}

/// Group `group` (an SQL expression)'s turn after its head `head` was leased until `until`:
/// the lease's end, plus the backoff the lease drew.
pub(super) fn turn_after_lease(m: &str, head: &str, until: &str) -> String {
    format!("{until} + coalesce((SELECT retry_delay FROM {m} WHERE seq = {head}), 0)")
}

#[derive(Debug, Clone)]
pub struct RetrySql {
    nack: String,
    stamp_nacked: String,
    stamp_leased: String,
}

impl RetrySql {
    pub(super) fn new(m: &str, g: &str) -> RetrySql {
        // the worker's delay (?5) if it gave one, else the backoff this claim drew
        let delay = "(CASE WHEN ?5 > 0 THEN ?5 ELSE coalesce(retry_delay, 0) END)";
        RetrySql {
            // ?1 seq, ?2 group_id, ?3 worker_id (the lease), ?4 now, ?5 delay
            nack: format!(
                "UPDATE {m} SET locked_by = CASE WHEN {delay} > 0 THEN '{PARKED}' END, \
                 lock_expiry = CASE WHEN {delay} > 0 THEN ?4 + {delay} END, limited_key = NULL \
                 WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"
            ),
            // ?1 group_id, ?2 now, ?3 seq: the park's end, or now
            stamp_nacked: format!(
                "UPDATE {g} SET last_claimed_at = \
                 coalesce((SELECT lock_expiry FROM {m} WHERE seq = ?3 AND locked_by = '{PARKED}'), ?2) \
                 WHERE group_id = ?1"
            ),
            // ?1 group_id, ?2 the lease's end, ?3 seq
            stamp_leased: format!(
                "UPDATE {g} SET last_claimed_at = {} WHERE group_id = ?1",
                turn_after_lease(m, "?3", "?2")
            ),
        }
    }

    /// The nack of message `seq` (its lease `group_id`, `worker_id`): parked until `now` +
    /// `delay`, or with `delay` 0 for the backoff its claim drew, or freed if it drew none.
    pub fn nack(&self, (seq, group_id, worker_id): (i64, &str, &str), now: f64, delay: f64) -> Bound<'_> {
        (&self.nack, vec![seq.into(), group_id.into(), worker_id.into(), now.into(), delay.into()])
    }

    /// After `nack`: group `group_id` turns at its head `seq`'s park's end, or `now`.
    pub fn stamp_nacked(&self, group_id: &str, now: f64, seq: i64) -> Bound<'_> {
        (&self.stamp_nacked, vec![group_id.into(), now.into(), seq.into()])
    }

    /// After a lease of head `seq` of group `group_id` until `until` (a claim's, an
    /// extend's): the group turns at its end plus the lease's backoff.
    pub fn stamp_leased(&self, group_id: &str, until: f64, seq: i64) -> Bound<'_> {
        (&self.stamp_leased, vec![group_id.into(), until.into(), seq.into()])
    }
}
