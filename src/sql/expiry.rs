//! The statements of expiry (docs/queue.md, "Expiry"). A message published with a time to
//! live carries `expires_at`; once that has passed and no worker holds it, it is moved to
//! the dead letters with the reason `expired`, so its group goes on behind it. Two ways,
//! both inside a claim's transaction (no daemon, no thread):
//!
//! - the claim itself never hands out an expired head: it buries it as one over
//!   `max_attempts` (backend/local/claim.rs, backend/server/claim.rs);
//! - a bounded sweep (`SWEEP` messages a claim, by the partial index on `expires_at`)
//!   takes the others: behind a head, parked, in a paused group.
//!
//! A message under a live lease is never expired: its worker finishes it.

use super::dead_letters::{bury_as, Buried};
use super::{Bound, DELAYED, PARKED};

/// The reason of an expired message's dead letter.
pub const EXPIRED: &str = "expired";

/// The most messages one sweep moves.
const SWEEP: usize = 100;

/// The index of the sweep; partial, so messages without a time to live cost it nothing.
pub(super) fn index(m: &str) -> String {
    format!("CREATE INDEX IF NOT EXISTS {m}_by_expiry ON {m} (expires_at) WHERE expires_at IS NOT NULL")
}

/// The expired dead letters, which `stats` counts.
pub(super) fn dead_index(d: &str) -> String {
    format!("CREATE INDEX IF NOT EXISTS {d}_expired ON {d} (dead_at) WHERE reason = '{EXPIRED}'")
}

#[derive(Debug, Clone, Default)]
pub struct ExpirySql {
    any: String,
    sweep: [String; 4],
}

impl ExpirySql {
    pub(super) fn new(m: &str, g: &str, d: &str) -> ExpirySql {
        // Expired at ?1 and held by no worker: free, parked, delayed, or its lease lapsed.
        let expired = format!(
            "expires_at <= ?1 AND (locked_by IS NULL OR locked_by IN ('{PARKED}', '{DELAYED}') OR lock_expiry < ?1)"
        );
        let which = format!("e.seq IN (SELECT seq FROM {m} WHERE {expired} ORDER BY expires_at LIMIT {SWEEP})");
        let reason = format!("'{EXPIRED}'");
        // After the INSERT, and until the DELETE: a message beside its dead letter was just
        // buried (a row is never both otherwise), found by the expiry index.
        let buried = |alias: &str| format!("EXISTS (SELECT 1 FROM {d} WHERE seq = {alias}.seq)");
        let swept = format!("(SELECT x.group_id FROM {m} x WHERE x.expires_at <= ?1 AND {})", buried("x"));
        let left = format!("{m} y WHERE y.group_id = {g}.group_id AND NOT {}", buried("y"));
        ExpirySql {
            any: format!("SELECT 1 FROM {m} WHERE {expired} LIMIT 1"),
            // ?1 now, in each
            sweep: [
                bury_as(m, g, d, Buried { attempts: "e.attempts", reason: &reason, dead_at: "?1", which: &which }),
                // a group whose held head expired goes on now, or when its new head's hold ends
                format!(
                    "UPDATE {g} SET last_claimed_at = MAX(?1, COALESCE((SELECT h.lock_expiry FROM {m} h \
                     WHERE h.seq = (SELECT MIN(y.seq) FROM {left}) AND h.locked_by IS NOT NULL), 0)) \
                     WHERE group_id IN {swept} AND last_claimed_at > ?1"
                ),
                format!("DELETE FROM {g} WHERE group_id IN {swept} AND NOT EXISTS (SELECT 1 FROM {left})"),
                format!("DELETE FROM {m} WHERE expires_at <= ?1 AND {}", buried(m)),
            ],
        }
    }

    /// One row when some message expired by `now` and no worker holds it.
    pub fn any(&self, now: f64) -> Bound<'_> {
        (&self.any, vec![now.into()])
    }

    /// Up to `SWEEP` messages expired by `now` into the dead letters, their groups kept
    /// right (the first statement changed as many rows as it moved).
    pub fn sweep(&self, now: f64) -> [Bound<'_>; 4] {
        self.sweep.each_ref().map(|statement| (statement.as_str(), vec![now.into()]))
    }
}
