//! The worker's operations on a libSQL server (remote, or an embedded replica's primary),
//! each one HTTP request: the chain of src/sql/one_request.rs as one transaction on the
//! server (server_batch.rs), so the write lock is never held across the network. The same
//! guarantees as the transactions of queue.rs: the whole operation or nothing of it, a
//! lost lease changes nothing, a claim buries what it cannot hand out.
//!
//! "Now" is read from the clock as each request is made, since the lock is taken on the
//! server; a `BEGIN IMMEDIATE` that finds the lock taken has run nothing, and the request
//! is made again (with a new "now") after a pause, until the busy timeout.
//!
//! Two cases take a further request: a claim that finds more heads over `max_attempts`
//! than one request buries (`BURY_ROUNDS`), and a head that is not UTF-8 (written by
//! another program): it was leased before the client could read it, so the next request
//! buries it (counted as before that claim; its group goes on at once, as after an ack)
//! and claims again.

use std::time::Duration;

use libsql::Value;
use libsql_hrana::proto::{self, StmtResult};

use crate::error::{Error, Result};
use crate::hrana_pipeline::{Failure, HranaPipeline};
use crate::lease::Lease;
use crate::lock_wait::LockWait;
use crate::queue::{lease_lost, Now};
use crate::request::{Claim, Extend, Finish, FinishMany, Nack, Publish};
use crate::server_batch::{Chain, Failed, Outcome};
use crate::server_session::SERVER_ANSWER_TIMEOUT;
use crate::sql::Statements;
use crate::validate::PARKED;

pub struct OneRequest {
    pipeline: HranaPipeline,
    busy_timeout: Duration,
}

impl OneRequest {
    /// Operations on the server at `url` (a remote database's, or a replica's `sync_url`).
    pub fn new(url: &str, token: &str, busy_timeout: Duration) -> Result<OneRequest> {
        let pipeline = HranaPipeline::new(url, token).map_err(Error::Connect)?;
        Ok(OneRequest { pipeline, busy_timeout })
    }

    /// How long one operation may wait for the server, busy pauses included.
    fn answer_limit(&self) -> Duration {
        self.busy_timeout.saturating_add(SERVER_ANSWER_TIMEOUT)
    }

    /// Runs the chain `build` makes (with what it wants back once the chain has run);
    /// made again while BEGIN finds the write lock taken.
    async fn run<T>(&self, build: impl FnMut() -> Result<(Chain, T)>) -> Result<(Vec<StmtResult>, T)> {
        let limit = self.answer_limit();
        match tokio::time::timeout(limit, self.run_until_begun(build)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::Connect(format!(
                "the libSQL server did not answer within {} s: the operation may have been applied",
                limit.as_secs()
            ))),
        }
    }

    async fn run_until_begun<T>(&self, mut build: impl FnMut() -> Result<(Chain, T)>) -> Result<(Vec<StmtResult>, T)> {
        let mut waiting = LockWait::server(self.busy_timeout);
        loop {
            let (chain, extra) = build()?;
            let result = self.pipeline.run(chain.batch()).await.map_err(failed_request)?;
            match chain.outcome(result) {
                Outcome::Committed(results) => return Ok((results, extra)),
                Outcome::NotBegun(e) => match server_error(e) {
                    Error::Busy(_) => tokio::time::sleep(waiting.next_pause()?).await,
                    other => return Err(other),
                },
                Outcome::Failed(Failed::Lost(lost)) => return Err(lost),
                Outcome::Failed(Failed::Server(e)) => return Err(server_error(e)),
            }
        }
    }
}

fn server_error(e: proto::Error) -> Error {
    Error::from_server(&e.code, &e.message)
}

fn failed_request(failure: Failure) -> Error {
    match failure {
        Failure::Unreached(m) => {
            Error::Connect(format!("the libSQL server could not be reached: {m} (nothing was applied)"))
        }
        Failure::AnswerLost(m) => {
            Error::Connect(format!("the libSQL server's answer was lost: {m} (the operation may have been applied)"))
        }
        Failure::Status(status @ (401 | 403), body) => {
            Error::Connect(format!("the libSQL server refused the token (HTTP {status}): {body}"))
        }
        Failure::Status(status, body) => Error::Connect(format!("the libSQL server answered HTTP {status}: {body}")),
        Failure::Stream { code, message } => Error::from_server(&code, &message),
    }
}

/// As `queue::publish`: the messages in order, with their groups, all or none.
pub async fn publish(server: &OneRequest, sql: &Statements, request: &Publish<'_, '_>, now: Now<'_>) -> Result<()> {
    let messages = request.messages();
    if messages.is_empty() {
        return Ok(());
    }
    server
        .run(|| {
            let now = now()?;
            let mut chain = Chain::new();
            let mut rest = messages;
            while !rest.is_empty() {
                let (rows, insert_messages, insert_groups) = sql.publish_rows(rest.len(), false);
                let (run, later) = rest.split_at(rows);
                let values = run.iter().flat_map(|m| [Value::from(m.group_id), Value::from(m.event_json)]);
                chain.push(&insert_messages, std::iter::once(Value::from(now)).chain(values).collect())?;
                let groups = run.iter().flat_map(|m| [m.group_id.into(), m.priority.into(), m.routing_key.into()]);
                chain.push(&insert_groups, groups.collect())?;
                rest = later;
            }
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// Up to `c.max` leases, all claimed in one request when nothing is to be buried.
pub async fn claim(server: &OneRequest, sql: &Statements, c: &Claim<'_>, now: Now<'_>) -> Result<Vec<Lease>> {
    claim_after(server, sql, (c, c.max), now, None).await.map(|(_, leases)| leases)
}

pub async fn ack(server: &OneRequest, sql: &Statements, finish: Finish<'_>, now: Now<'_>) -> Result<()> {
    let lease = finish.lease;
    server.run(|| Ok((push_ack(Chain::new(), sql, lease, now()?)?, ()))).await.map(drop)
}

/// The ack and the claim in one request (one transaction); nothing is claimed when the
/// ack fails.
pub async fn ack_and_claim(
    server: &OneRequest,
    sql: &Statements,
    finish: Finish<'_>,
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<Option<Lease>> {
    let ack = |chain: Chain, now: f64| Ok((push_ack(chain, sql, finish.lease, now)?, Vec::new()));
    let (_, leases) = claim_after(server, sql, (c, 1), now, Some(&ack)).await?;
    Ok(leases.into_iter().next())
}

/// Acks every lease in one request, in order; an outcome per lease (`Error::LeaseLost`
/// for one that was lost, nothing of it changed), as `queue::ack_many`.
pub async fn ack_many(
    server: &OneRequest,
    sql: &Statements,
    finish: &FinishMany<'_>,
    now: Now<'_>,
) -> Result<Vec<Result<()>>> {
    let (results, deletes) = server
        .run(|| {
            let (chain, deletes) = push_ack_many(Chain::new(), sql, finish.leases, now()?)?;
            Ok((chain, deletes))
        })
        .await?;
    Ok(outcomes(finish.leases, deletes.iter().map(|&i| results[i].affected_row_count)))
}

/// `ack_many` and then a claim of up to `c.max`, in one request.
pub async fn ack_and_claim_many(
    server: &OneRequest,
    sql: &Statements,
    finish: &FinishMany<'_>,
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
    let acks = |chain: Chain, now: f64| push_ack_many(chain, sql, finish.leases, now);
    let (deleted, leases) = claim_after(server, sql, (c, c.max), now, Some(&acks)).await?;
    Ok((outcomes(finish.leases, deleted.into_iter()), leases))
}

/// The lease now runs to now + visibility (returned), its group's turn with it.
pub async fn extend(server: &OneRequest, sql: &Statements, request: &Extend<'_>, now: Now<'_>) -> Result<f64> {
    let lease = request.finish.lease;
    let (_, lock_expiry) = server
        .run(|| {
            let lock_expiry = now()? + request.visibility;
            let mut chain = Chain::new();
            let (seq, group_id, worker_id) = (lease.seq, lease.group_id.as_str(), lease.worker_id.as_str());
            chain.push(&sql.extend_lease, vec![seq.into(), group_id.into(), worker_id.into(), lock_expiry.into()])?;
            chain.guard(&Statements::lease_guard(), lease_lost(lease));
            chain.push(&sql.set_group_ready_at, vec![group_id.into(), lock_expiry.into()])?;
            Ok((chain, lock_expiry))
        })
        .await?;
    Ok(lock_expiry)
}

/// Each lease's ack, without a guard: a lost one changes nothing (its group's turn moves
/// only when its DELETE deleted) and does not stop the others. The DELETEs' indexes.
fn push_ack_many(mut chain: Chain, sql: &Statements, leases: &[Lease], now: f64) -> Result<(Chain, Vec<usize>)> {
    let mut deletes = Vec::with_capacity(leases.len());
    for lease in leases {
        let group_id = lease.group_id.as_str();
        deletes.push(
            chain.push(&sql.ack_message, vec![lease.seq.into(), group_id.into(), lease.worker_id.as_str().into()])?,
        );
        chain.push(&sql.requeue_group_if_acked(), vec![group_id.into(), now.into()])?;
        chain.push(&sql.drop_group_if_empty, vec![group_id.into()])?;
    }
    Ok((chain, deletes))
}

/// An outcome per lease from the rows its DELETE deleted.
fn outcomes(leases: &[Lease], deleted: impl Iterator<Item = u64>) -> Vec<Result<()>> {
    leases.iter().zip(deleted).map(|(lease, n)| if n == 0 { Err(lease_lost(lease)) } else { Ok(()) }).collect()
}

pub async fn nack(server: &OneRequest, sql: &Statements, request: &Nack<'_>, now: Now<'_>) -> Result<()> {
    let (lease, delay) = (request.finish.lease, request.delay);
    server
        .run(|| {
            let now = now()?;
            let (locked_by, lock_expiry) = if delay > 0.0 { (Some(PARKED), Some(now + delay)) } else { (None, None) };
            let mut chain = Chain::new();
            let (seq, group_id, worker_id) = (lease.seq, lease.group_id.as_str(), lease.worker_id.as_str());
            chain.push(
                &sql.release_message,
                vec![seq.into(), group_id.into(), worker_id.into(), locked_by.into(), lock_expiry.into()],
            )?;
            chain.guard(&Statements::lease_guard(), lease_lost(lease));
            chain.push(&sql.set_group_ready_at, vec![group_id.into(), (now + delay).into()])?;
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// As `queue::dead_letter`: the leased message into the dead-letter table with `reason`.
pub async fn dead_letter(
    server: &OneRequest,
    sql: &Statements,
    finish: Finish<'_>,
    reason: &str,
    now: Now<'_>,
) -> Result<()> {
    let lease = finish.lease;
    server
        .run(|| {
            let now = now()?;
            let mut chain = Chain::new();
            let (group_id, worker_id) = (lease.group_id.as_str(), lease.worker_id.as_str());
            chain.push(
                &sql.bury_leased,
                vec![lease.seq.into(), reason.into(), now.into(), group_id.into(), worker_id.into()],
            )?;
            chain.guard(&Statements::lease_guard(), lease_lost(lease));
            chain.push(&sql.delete_message, vec![lease.seq.into()])?;
            Ok((push_group_goes_on(chain, sql, group_id, now)?, ()))
        })
        .await
        .map(drop)
}

/// The ack's statements: the message, if still leased to its worker, then its group.
fn push_ack(mut chain: Chain, sql: &Statements, lease: &Lease, now: f64) -> Result<Chain> {
    let group_id = lease.group_id.as_str();
    chain.push(&sql.ack_message, vec![lease.seq.into(), group_id.into(), lease.worker_id.as_str().into()])?;
    chain.guard(&Statements::lease_guard(), lease_lost(lease));
    push_group_goes_on(chain, sql, group_id, now)
}

/// After a group's head was removed: ready again now, or gone when it was the last (one of
/// the two applies).
fn push_group_goes_on(mut chain: Chain, sql: &Statements, group_id: &str, now: f64) -> Result<Chain> {
    chain.push(&sql.requeue_group_if_not_empty, vec![group_id.into(), now.into()])?;
    chain.push(&sql.drop_group_if_empty, vec![group_id.into()])?;
    Ok(chain)
}

/// What comes before a claim in its first request (an ack's statements), and the indexes
/// of those whose changed rows the caller wants back.
type Before<'a> = &'a (dyn Fn(Chain, f64) -> Result<(Chain, Vec<usize>)> + Sync);

/// A head the last request leased and cannot hand out.
struct Undeliverable {
    seq: i64,
    lock_expiry: f64,
    reason: &'static str,
}

/// What a claim's request found.
enum Found {
    Lease(Lease),
    Nothing,
    /// Heads over max_attempts are still next: the next request buries them.
    MoreToBury,
    Undeliverable(Undeliverable),
}

/// Claims up to `want` leases after `before`'s statements, in one request unless heads are
/// to be buried; the rows `before`'s marked statements changed, and the leases.
async fn claim_after(
    server: &OneRequest,
    sql: &Statements,
    (c, want): (&Claim<'_>, usize),
    now: Now<'_>,
    before: Option<Before<'_>>,
) -> Result<(Vec<u64>, Vec<Lease>)> {
    let mut before_changed: Option<Vec<u64>> = None;
    let mut leases = Vec::new();
    let mut undeliverable: Vec<Undeliverable> = Vec::new();
    loop {
        let (results, (marked, claims, lock_expiry)) = server
            .run(|| {
                let now = now()?;
                let mut chain = Chain::new();
                let mut marked = Vec::new();
                if let (Some(before), None) = (before, &before_changed) {
                    (chain, marked) = before(chain, now)?;
                }
                for u in &undeliverable {
                    chain = push_bury_claimed(chain, sql, u, c.worker_id, now)?;
                }
                let lock_expiry = now + c.visibility;
                let mut claims = Vec::new();
                for _ in leases.len()..want {
                    let statements = sql.one_request_claim(
                        now,
                        (c.min_priority, c.routing_keys),
                        c.max_attempts,
                        (c.worker_id, lock_expiry),
                    );
                    let mut at = Vec::new();
                    for (statement, params) in statements.statements {
                        at.push(chain.push(&statement, params)?);
                    }
                    claims.push((at[statements.lease], statements.more.map(|i| at[i])));
                }
                Ok((chain, (marked, claims, lock_expiry)))
            })
            .await?;
        before_changed.get_or_insert_with(|| marked.iter().map(|&i| results[i].affected_row_count).collect());
        undeliverable.clear();
        let mut again = false;
        // Every claim of the chain was committed: each lease is kept, whatever came before it.
        for (lease_at, more_at) in claims {
            match found(&results[lease_at], more_at.map(|i| &results[i]), c.worker_id, lock_expiry)? {
                Found::Lease(lease) => leases.push(lease),
                Found::Nothing => {}
                Found::MoreToBury => again = true,
                Found::Undeliverable(u) => undeliverable.push(u),
            }
        }
        if leases.len() >= want || (!again && undeliverable.is_empty()) {
            return Ok((before_changed.unwrap_or_default(), leases));
        }
    }
}

/// The undeliverable head into the dead-letter table, if this worker still holds it.
fn push_bury_claimed(
    mut chain: Chain,
    sql: &Statements,
    u: &Undeliverable,
    worker_id: &str,
    now: f64,
) -> Result<Chain> {
    let params = vec![u.seq.into(), u.reason.into(), now.into(), worker_id.into(), u.lock_expiry.into()];
    chain.push(&sql.bury_claimed(), params)?;
    chain.push(&sql.delete_buried(), vec![u.seq.into()])?;
    chain.push(&sql.requeue_buried_group(), vec![u.seq.into(), now.into()])?;
    chain.push(&sql.drop_buried_group_if_empty, vec![u.seq.into()])?;
    Ok(chain)
}

/// Reads the lease's UPDATE ... RETURNING (and the check for more to bury).
fn found(lease: &StmtResult, more: Option<&StmtResult>, worker_id: &str, lock_expiry: f64) -> Result<Found> {
    let Some(row) = lease.rows.first() else {
        return Ok(if more.is_some_and(|m| !m.rows.is_empty()) { Found::MoreToBury } else { Found::Nothing });
    };
    let unexpected = || Error::Database(format!("the libSQL server answered a claim with an unexpected row: {row:?}"));
    let (seq, group_id, event, attempts) = match row.values.as_slice() {
        [proto::Value::Integer { value: seq }, proto::Value::Blob { value: group_id }, proto::Value::Blob { value: event }, proto::Value::Integer { value: attempts }] => {
            (*seq, group_id, event, *attempts)
        }
        _ => return Err(unexpected()),
    };
    let undeliverable = |reason| Found::Undeliverable(Undeliverable { seq, lock_expiry, reason });
    Ok(match (String::from_utf8(group_id.to_vec()), String::from_utf8(event.to_vec())) {
        (Ok(group_id), Ok(event)) => {
            Found::Lease(Lease { seq, group_id, event, worker_id: worker_id.to_owned(), lock_expiry, attempts })
        }
        (Err(_), _) => undeliverable("its group_id is not valid UTF-8 (written by another program)"),
        (_, Err(_)) => undeliverable("its event is not valid UTF-8 (written by another program)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: Vec<Vec<proto::Value>>) -> StmtResult {
        StmtResult {
            cols: vec![],
            rows: rows.into_iter().map(|values| proto::Row { values }).collect(),
            affected_row_count: 0,
            last_insert_rowid: None,
            replication_index: None,
            rows_read: 0,
            rows_written: 0,
            query_duration_ms: 0.0,
        }
    }

    fn head(group_id: &[u8], event: &[u8]) -> StmtResult {
        rows(vec![vec![
            proto::Value::Integer { value: 7 },
            proto::Value::Blob { value: group_id.to_vec().into() },
            proto::Value::Blob { value: event.to_vec().into() },
            proto::Value::Integer { value: 2 },
        ]])
    }

    #[test]
    fn a_leased_head_is_a_lease() {
        let Found::Lease(lease) = found(&head(b"g", b"{}"), None, "w", 1030.0).unwrap() else { panic!() };
        assert_eq!((lease.seq, lease.group_id.as_str(), lease.event.as_str(), lease.attempts), (7, "g", "{}", 2));
        assert_eq!((lease.worker_id.as_str(), lease.lock_expiry), ("w", 1030.0));
    }

    #[test]
    fn a_head_that_is_not_utf8_is_buried_by_the_next_request() {
        for (group_id, event, what) in [(&b"\xff"[..], &b"{}"[..], "group_id"), (b"g", b"\xc3(", "event")] {
            let Found::Undeliverable(u) = found(&head(group_id, event), None, "w", 1030.0).unwrap() else { panic!() };
            assert_eq!((u.seq, u.lock_expiry), (7, 1030.0));
            assert!(u.reason.contains(what), "{}", u.reason);
        }
    }

    #[test]
    fn no_lease_is_nothing_or_more_to_bury() {
        let none = rows(vec![]);
        assert!(matches!(found(&none, None, "w", 1.0).unwrap(), Found::Nothing));
        assert!(matches!(found(&none, Some(&rows(vec![])), "w", 1.0).unwrap(), Found::Nothing));
        let next = rows(vec![vec![proto::Value::Integer { value: 1 }]]);
        assert!(matches!(found(&none, Some(&next), "w", 1.0).unwrap(), Found::MoreToBury));
    }

    #[test]
    fn an_unexpected_row_is_a_database_error() {
        let text = rows(vec![vec![proto::Value::Text { value: "7".into() }]]);
        assert!(matches!(found(&text, None, "w", 1.0), Err(Error::Database(_))));
    }

    #[test]
    fn a_failed_request_says_whether_it_may_have_been_applied() {
        let connect = |f| match failed_request(f) {
            Error::Connect(m) => m,
            other => panic!("{other:?}"),
        };
        assert!(connect(Failure::Unreached("refused".into())).contains("nothing was applied"));
        assert!(connect(Failure::AnswerLost("reset".into())).contains("may have been applied"));
        assert!(connect(Failure::Status(401, "The JWT is invalid".into())).contains("refused the token"));
        assert!(connect(Failure::Status(503, "".into())).contains("HTTP 503"));
        let timeout = Failure::Stream { code: "TRANSACTION_TIMEOUT".into(), message: "Transaction timed-out".into() };
        assert!(matches!(failed_request(timeout), Error::Database(m) if m.contains("5 s")));
        let busy = Failure::Stream { code: "SQLITE_BUSY".into(), message: "database is locked".into() };
        assert!(matches!(failed_request(busy), Error::Busy(_)));
    }
}
