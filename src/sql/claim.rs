//! The statements of the worker's operations as chains (chain.rs, queue/work.rs): run
//! inside one transaction with no value from the client between two statements. Every
//! backend runs the chains of the ack, nack and dead letter; the claim's chain is a
//! server's (a local file claims with a look, backend/local/claim.rs). What one statement
//! found, the next one finds again in the database itself:
//!
//! - A claim marks the group it serves with a sentinel turn (`MARK`, negative: no turn is
//!   ever below 0, the clock is checked to be >= 0), leases that group's head, then gives
//!   the group its real turn. The mark lives only inside the transaction.
//! - A head over `max_attempts` is buried first (up to `BURY_ROUNDS` of them per request):
//!   the statements after the INSERT act only when the one before changed a row
//!   (`changes()`), on the dead letter just written (`last_insert_rowid()`, its seq).
//! - An ack, nack or dead_letter is followed by `LEASE_GUARD`, which fails the chain when
//!   the statement before it changed nothing (the lease is lost), so nothing is applied.

use libsql::Value;

use super::dead_letters::{bury_as, Buried};
use super::limits::HOLD;
use super::retry;
use super::{claim_candidates, Bound, Statements};

/// The text of the error `LEASE_GUARD` raises; the chain knows its guard by it.
pub const LEASE_LOST: &str = "harel-transport: the lease is lost";

/// Fails the chain (raises an error whose message holds `LEASE_LOST`) when the statement
/// before it changed no row. The bad JSON path is chosen at run time, so SQLite cannot
/// evaluate it ahead.
pub const LEASE_GUARD: &str =
    "SELECT json_extract('{}', CASE changes() WHEN 0 THEN 'harel-transport: the lease is lost' ELSE '$' END)";

/// The turn a claim gives the group it is serving until its head is leased.
pub(super) const MARK: &str = "-1.0";

/// How many heads over `max_attempts` one claim chain buries before it leases; a claim
/// that finds more runs another chain.
const BURY_ROUNDS: usize = 2;

/// How many routing keys without room one claim chain holds (limits.rs: each hold takes
/// the key's ready groups) before it leases; a claim that finds more runs another chain.
const HOLD_ROUNDS: usize = 2;

/// A claim's statements with their parameters, and which of them say what it found.
pub struct ClaimStatements {
    pub statements: Vec<(String, Vec<Value>)>,
    /// The lease's UPDATE: it returns the leased head (seq, group_id and event as BLOBs,
    /// attempts with this claim, headers, expires_at), or no row.
    pub lease: usize,
    /// A row when a group is still next, which the lease did not take: a head over
    /// `max_attempts` to bury, or a group whose key has no room to hold.
    pub more: usize,
    /// The INSERTs that bury a head over `max_attempts`: each changed a row if it buried one.
    pub buried: Vec<usize>,
    /// The UPDATEs that hold a key's groups: each changed as many rows as it held.
    pub holds: Vec<usize>,
}

impl Statements {
    /// The claim of `Statements::claim` as a chain (see the module's doc): leases to
    /// `worker_id` until `lock_expiry`; `max_attempts` 0 means no limit.
    pub fn claim_chain(
        &self,
        now: f64,
        (min_priority, routing_keys): (i32, &[&str]),
        (max_attempts, retry): (u32, Option<&str>),
        (worker_id, lock_expiry): (&str, f64),
    ) -> ClaimStatements {
        let (m, g) = (&self.messages_table, &self.groups_table);
        let (candidates, params) = claim_candidates(now, min_priority, routing_keys);
        // The rowid of the group served next: the best candidate of `best_candidate`. A
        // server compiles every statement of every request, under its write lock, so one
        // candidate goes in without the wrapping that joins several (a shorter compile;
        // docs/benchmark.md has the figures).
        let next_group = match candidates.as_slice() {
            [only] => self.first_of(only, "g.rowid", "1"),
            several => {
                format!(
                    "SELECT c.arrival FROM ({}) c ORDER BY c.ready_at, c.arrival LIMIT 1",
                    self.union_of(several, "1")
                )
            }
        };
        let head_of = |group: &str| format!("(SELECT MIN(seq) FROM {m} WHERE group_id = {group})");
        let limit = format!("?{}", params.len() + 1);
        let with_limit = || params.iter().cloned().chain([Value::from(max_attempts)]).collect::<Vec<_>>();
        let mut statements = Vec::new();
        let (give_back, now_only) = self.limit.give_back(now);
        statements.push((give_back.to_owned(), now_only));
        let mut under_limit = String::new();
        let mut buried = Vec::new();
        if max_attempts > 0 {
            for _ in 0..BURY_ROUNDS {
                buried.push(statements.len());
                statements.push((self.bury_next_over_limit(&next_group, &limit, &head_of("g.group_id")), with_limit()));
                statements.push((format!("DELETE FROM {m} WHERE seq = last_insert_rowid() AND changes() > 0"), vec![]));
                statements.push((self.drop_buried_group_if_now_empty(), vec![]));
            }
            under_limit =
                format!(" AND (SELECT attempts FROM {m} WHERE seq = {}) < {limit}", head_of(&format!("{g}.group_id")));
        }
        // a group whose key has no room (none but the limited keys') is held, and not marked
        let no_room = &self.limit.no_room;
        let mut holds = Vec::new();
        for _ in 0..HOLD_ROUNDS {
            let hold = format!(
                "UPDATE {g} SET last_claimed_at = last_claimed_at + {HOLD:.1} \
                 WHERE routing_key = (SELECT routing_key FROM {g} WHERE rowid = ({next_group})) \
                 AND last_claimed_at <= ?1 AND {no_room}"
            );
            holds.push(statements.len());
            statements.push((hold, params.clone()));
        }
        let mark = format!(
            "UPDATE {g} SET last_claimed_at = {MARK} WHERE rowid = ({next_group}){under_limit} AND NOT {no_room}"
        );
        statements.push((mark, if max_attempts > 0 { with_limit() } else { params.clone() }));
        let lease = statements.len();
        let marked_head = head_of(&format!("(SELECT group_id FROM {g} WHERE last_claimed_at = {MARK})"));
        statements.push((
            format!(
                "UPDATE {m} SET locked_by = ?1, lock_expiry = ?2, attempts = attempts + 1, claimed_at = ?3, \
                 retry_delay = {}, limited_key = {} WHERE seq = {marked_head} RETURNING seq, CAST(group_id AS BLOB), \
                 CAST(event AS BLOB), attempts, headers, expires_at",
                retry::backoff(m, &format!("{m}.attempts + 1"), "?4"),
                self.limit.marked_key
            ),
            vec![worker_id.into(), lock_expiry.into(), now.into(), retry.into()],
        ));
        let (token, now_only) = self.limit.take_marked_token(now);
        statements.push((token.to_owned(), now_only));
        statements.push((
            format!(
                "UPDATE {g} SET last_claimed_at = {} WHERE last_claimed_at = {MARK}",
                retry::turn_after_lease(m, &head_of(&format!("{g}.group_id")), "?1")
            ),
            vec![lock_expiry.into()],
        ));
        // a lease not taken while a group is still next: more to bury or hold
        statements.push((next_group, params));
        let more = statements.len() - 1;
        ClaimStatements { statements, lease, more, buried, holds }
    }

    /// The next group's head into the dead-letter table if it was claimed `limit` times
    /// already, with today's reason; ?1 is now.
    fn bury_next_over_limit(&self, next_group: &str, limit: &str, head: &str) -> String {
        let reason = format!("'claimed ' || e.attempts || ' times: max_attempts is ' || {limit}");
        let which = format!("g.rowid = ({next_group}) AND e.seq = {head} AND e.attempts >= {limit}");
        let buried = Buried { attempts: "e.attempts", reason: &reason, dead_at: "?1", which: &which };
        bury_as(&self.messages_table, &self.groups_table, &self.dead_table, buried)
    }

    /// After the DELETE of a message just buried: its group goes if that was its last.
    fn drop_buried_group_if_now_empty(&self) -> String {
        let (m, g, d) = (&self.messages_table, &self.groups_table, &self.dead_table);
        format!(
            "DELETE FROM {g} WHERE group_id = (SELECT group_id FROM {d} WHERE seq = last_insert_rowid()) \
             AND changes() > 0 AND NOT EXISTS (SELECT 1 FROM {m} WHERE group_id = {g}.group_id)"
        )
    }
}

/// A head a claim leased but cannot hand out (not UTF-8) into the dead-letter table, counted
/// as it was before that claim (`Statements::bury_claimed`).
pub(super) fn bury_claimed(m: &str, g: &str, d: &str) -> String {
    // ?1 seq, ?2 worker_id, ?3 lock_expiry (the claim's lease), ?4 reason, ?5 now
    let which = "e.seq = ?1 AND e.locked_by = ?2 AND e.lock_expiry = ?3";
    bury_as(m, g, d, Buried { attempts: "e.attempts - 1", reason: "?4", dead_at: "?5", which })
}

/// Deletes message ?1 if it is in the dead-letter table too.
pub(super) fn delete_buried(m: &str, d: &str) -> String {
    format!("DELETE FROM {m} WHERE seq = ?1 AND EXISTS (SELECT 1 FROM {d} WHERE seq = ?1)")
}

/// The group of dead letter ?1 ready again at ?2 if it has messages left.
pub(super) fn requeue_buried_group(m: &str, g: &str, d: &str) -> String {
    format!(
        "UPDATE {g} SET last_claimed_at = ?2 WHERE group_id = (SELECT group_id FROM {d} WHERE seq = ?1) \
         AND EXISTS (SELECT 1 FROM {m} WHERE group_id = {g}.group_id)"
    )
}

impl Statements {
    /// A server's claim leased head `seq` to `worker_id` until `lock_expiry` and cannot hand
    /// it out (not UTF-8): into the dead-letter table with `reason` at `now`, if still so
    /// leased, counted as it was before that claim. Then `delete_buried` and the group's turn
    /// (`requeue_buried_group`, `drop_buried_group_if_empty`).
    pub fn bury_claimed(&self, seq: i64, (worker_id, lock_expiry): (&str, f64), reason: &str, now: f64) -> Bound<'_> {
        (&self.bury_claimed, vec![seq.into(), worker_id.into(), lock_expiry.into(), reason.into(), now.into()])
    }

    /// Deletes message `seq` if it is in the dead-letter table too: it was just buried.
    pub fn delete_buried(&self, seq: i64) -> Bound<'_> {
        (&self.delete_buried, vec![seq.into()])
    }

    /// After dead letter `seq` was taken out of its group: the group is ready again at `now`
    /// if it has messages left (`drop_buried_group_if_empty` drops it otherwise).
    pub fn requeue_buried_group(&self, seq: i64, now: f64) -> Bound<'_> {
        (&self.requeue_buried_group, vec![seq.into(), now.into()])
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::highest_parameter;
    use super::*;

    fn claim(max_attempts: u32, keys: &[&str]) -> ClaimStatements {
        Statements::new("t").claim_chain(1000.0, (0, keys), (max_attempts, None), ("w", 1030.0))
    }

    #[test]
    fn a_claim_marks_leases_and_stamps_with_exactly_its_parameters() {
        for (max_attempts, keys) in [(0, &[][..]), (3, &[][..]), (0, &["a", "b"][..]), (5, &["k"; 40][..])] {
            let c = claim(max_attempts, keys);
            for (sql, params) in &c.statements {
                assert_eq!(highest_parameter(sql), params.len(), "{sql}");
            }
            // the give-back, the bury rounds, the hold rounds, the mark, the lease (its slot
            // with it), its token, the stamp, the next group
            let buries = if max_attempts > 0 { 3 * BURY_ROUNDS } else { 0 };
            let expected = 1 + buries + HOLD_ROUNDS + 5;
            assert_eq!(c.statements.len(), expected);
            assert!(c.statements[c.lease].0.contains("RETURNING"));
            assert_eq!(c.more, expected - 1);
            assert!(c.statements[c.lease - 1].0.contains(&format!("last_claimed_at = {MARK}")));
            assert!(c.statements[c.lease + 2].0.ends_with(&format!("WHERE last_claimed_at = {MARK}")));
        }
    }

    #[test]
    fn one_candidate_is_marked_without_the_wrapping_of_several() {
        let mark = |keys: &[&str], min_priority| {
            let c = Statements::new("t").claim_chain(1000.0, (min_priority, keys), (0, None), ("w", 1030.0));
            c.statements[c.lease - 1].0.clone()
        };
        for one in [mark(&[], 0), mark(&["k"], 0), mark(&["k"; 40], 2)] {
            assert!(one.contains("WHERE rowid = (SELECT g.rowid FROM t_transport_groups g JOIN"), "{one}");
            assert!(!one.contains("UNION ALL") && !one.contains("SELECT *"), "{one}");
        }
        for several in [mark(&["a", "b"], 0), mark(&[], 3)] {
            assert!(several.contains("UNION ALL") && several.contains("SELECT c.arrival FROM"), "{several}");
        }
    }

    #[test]
    fn the_guard_fails_with_the_lost_lease_text() {
        assert!(LEASE_GUARD.contains(&format!("'{LEASE_LOST}'")));
    }
}
