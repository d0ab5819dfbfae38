//! The queue's operations, each one write transaction over the tables of docs/queue.md
//! (on a libSQL server, one request each: server_ops.rs).
//! Arguments arrive checked, as the requests of request.rs. "Now" is read from the transport's clock only once the write lock is
//! held: a time read before waiting for the lock would be older than what other
//! processes wrote meanwhile, and the claim would not see the groups they released.
//!
//! Serving order: harel's Python transports stamp `last_claimed_at` with the claim
//! instant. We stamp the instant the group can next be served (its *ready_at*): a claim writes its lease's end, a park the
//! park's end, an ack or an immediate nack the present. Groups waiting on a lease or a
//! park therefore sort after `now`, where the claim's index range stops, and a claim
//! costs the same however many groups are in flight. Among deliverable groups the order
//! is still round-robin: the group served longest ago goes first, a new group (0) first
//! of all, ties by arrival.

use libsql::Value;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::request::{Claim, Extend, Finish, FinishMany, Nack, Publish};
use crate::server_ops;
use crate::sql::Statements;
use crate::validate::PARKED;

/// The transport's clock, checked.
pub type Now<'a> = &'a (dyn Fn() -> Result<f64> + Send + Sync);

/// Appends the messages in order, in one transaction: all of them (and the groups they
/// create) or none. One commit for the whole batch, so at synchronous FULL one fsync
/// rather than one per message; a few multi-row INSERTs (`Statements::publish_rows`), so on a
/// server a few round trips rather than two per message. An empty batch writes nothing
/// and opens no transaction.
pub async fn publish(db: &mut Db, sql: &Statements, request: &Publish<'_, '_>, now: Now<'_>) -> Result<()> {
    if let Some(server) = db.one_request() {
        return server_ops::publish(server, sql, request, now).await;
    }
    let messages = request.messages();
    if messages.is_empty() {
        return Ok(());
    }
    db.write_transaction(async |db| {
        let now = now()?;
        let mut rest = messages;
        while !rest.is_empty() {
            let (rows, insert_messages, insert_groups) = sql.publish_rows(rest.len(), db.prepares_statements());
            let (run, later) = rest.split_at(rows);
            let values = run.iter().flat_map(|m| [Value::from(m.group_id), Value::from(m.event_json)]);
            db.execute(&insert_messages, std::iter::once(Value::from(now)).chain(values).collect::<Vec<_>>()).await?;
            // OR IGNORE: the first publish into a group fixes its priority and routing key.
            let groups = run.iter().flat_map(|m| [m.group_id.into(), m.priority.into(), m.routing_key.into()]);
            db.execute(&insert_groups, groups.collect::<Vec<Value>>()).await?;
            rest = later;
        }
        Ok(())
    })
    .await
}

/// Up to `c.max` leases, each the head of a different group, in serving order, in one
/// transaction. Each claim stamps its group with the lease's end, past `now`, so the next
/// look of the same transaction finds the next group.
pub async fn claim(db: &mut Db, sql: &Statements, c: &Claim<'_>, now: Now<'_>) -> Result<Vec<Lease>> {
    if let Some(server) = db.one_request() {
        return server_ops::claim(server, sql, c, now).await;
    }
    db.write_transaction(async |db| claim_many_within(db, sql, c, now()?).await).await
}

async fn claim_many_within(db: &mut Db, sql: &Statements, c: &Claim<'_>, now: f64) -> Result<Vec<Lease>> {
    let mut leases = Vec::new();
    while leases.len() < c.max {
        match claim_within(db, sql, c, now).await? {
            Some(lease) => leases.push(lease),
            None => break,
        }
    }
    Ok(leases)
}

/// What a waiting claim reads, without the write lock, to know whether to claim or how
/// long to sleep (waiting.rs).
pub struct Readiness {
    /// A head the claim would take (or bury) now.
    pub deliverable: bool,
    /// The earliest time after now that a group is next ready: a lease's or park's end.
    pub next_ready_at: Option<f64>,
    /// `PRAGMA data_version` on a local database: changes once another connection's commit is visible.
    pub data_version: Option<i64>,
}

pub async fn readiness(db: &mut Db, sql: &Statements, c: &Claim<'_>, now: f64, local: bool) -> Result<Readiness> {
    db.catch_up().await?;
    // Each statement reads its own snapshot. The version first: a commit that becomes
    // visible after it is seen either by the look (deliverable) or, unseen, leaves the
    // version as it was, so the waiter keeps settling instead of sleeping through it.
    let data_version =
        if local { db.query_one("PRAGMA data_version", (), |row| row.get::<i64>(0)).await? } else { None };
    let (claim, params) = sql.claim(now, c.min_priority, c.routing_keys);
    let deliverable = db.query_one(&claim, params, |_| Ok(())).await?.is_some();
    let next_ready_at = db.query_one(&sql.next_ready_at, [now], |row| row.get::<Option<f64>>(0)).await?.flatten();
    Ok(Readiness { deliverable, next_ready_at, data_version })
}

/// A worker's verdict on a message it holds: it will never succeed. Moved to the
/// dead-letter table with `reason`, as an ack would remove it (its group goes on with the
/// next message); `Error::LeaseLost` as for ack.
pub async fn dead_letter(db: &mut Db, sql: &Statements, finish: Finish<'_>, reason: &str, now: Now<'_>) -> Result<()> {
    if let Some(server) = db.one_request() {
        return server_ops::dead_letter(server, sql, finish, reason, now).await;
    }
    let lease = finish.lease;
    db.write_transaction(async |db| {
        let now = now()?;
        let params = (lease.seq, reason, now, lease.group_id.as_str(), lease.worker_id.as_str());
        if db.execute(&sql.bury_leased, params).await? == 0 {
            return Err(lease_lost(lease));
        }
        db.execute(&sql.delete_message, [lease.seq]).await?;
        group_goes_on(db, sql, &lease.group_id, now).await
    })
    .await
}

pub async fn ack(db: &mut Db, sql: &Statements, finish: Finish<'_>, now: Now<'_>) -> Result<()> {
    if let Some(server) = db.one_request() {
        return server_ops::ack(server, sql, finish, now).await;
    }
    db.write_transaction(async |db| ack_within(db, sql, finish.lease, now()?).await).await
}

/// Acks every lease in one transaction, in order; an outcome per lease: `Error::LeaseLost`
/// for one that was lost (nothing of it changed), while the others are acked. Any other
/// error fails the whole call and acks nothing. No leases: nothing is written.
pub async fn ack_many(db: &mut Db, sql: &Statements, finish: &FinishMany<'_>, now: Now<'_>) -> Result<Vec<Result<()>>> {
    if finish.leases.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(server) = db.one_request() {
        return server_ops::ack_many(server, sql, finish, now).await;
    }
    db.write_transaction(async |db| ack_many_within(db, sql, finish, now()?).await).await
}

async fn ack_many_within(db: &mut Db, sql: &Statements, finish: &FinishMany<'_>, now: f64) -> Result<Vec<Result<()>>> {
    let mut outcomes = Vec::with_capacity(finish.leases.len());
    for lease in finish.leases {
        match ack_within(db, sql, lease, now).await {
            Err(Error::LeaseLost(m)) => outcomes.push(Err(Error::LeaseLost(m))),
            other => outcomes.push(Ok(other?)),
        }
    }
    Ok(outcomes)
}

/// `ack_many` and then `claim`, in one transaction: a batch worker's loop with one commit
/// per batch. A lost lease is reported in its outcome and does not stop the claim.
pub async fn ack_and_claim_many(
    db: &mut Db,
    sql: &Statements,
    finish: &FinishMany<'_>,
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
    if let Some(server) = db.one_request() {
        return server_ops::ack_and_claim_many(server, sql, finish, c, now).await;
    }
    db.write_transaction(async |db| {
        let now = now()?;
        let outcomes = ack_many_within(db, sql, finish, now).await?;
        Ok((outcomes, claim_many_within(db, sql, c, now).await?))
    })
    .await
}

/// The lease now runs to now + visibility; `lease.lock_expiry` shows it. Its group's
/// serving stamp moves with it, so claims keep passing over the group in one index range.
/// `Error::LeaseLost` as for ack: a lease that lapsed and that no one claimed since is
/// still the worker's, as its ack would be.
pub async fn extend(db: &mut Db, sql: &Statements, request: &Extend<'_>, now: Now<'_>) -> Result<f64> {
    if let Some(server) = db.one_request() {
        return server_ops::extend(server, sql, request, now).await;
    }
    let lease = request.finish.lease;
    db.write_transaction(async |db| {
        let lock_expiry = now()? + request.visibility;
        let params = (lease.seq, lease.group_id.as_str(), lease.worker_id.as_str(), lock_expiry);
        if db.execute(&sql.extend_lease, params).await? == 0 {
            return Err(lease_lost(lease));
        }
        db.execute(&sql.set_group_ready_at, (lease.group_id.as_str(), lock_expiry)).await?;
        Ok(lock_expiry)
    })
    .await
}

/// Both in one transaction: one commit per message handled instead of two.
pub async fn ack_and_claim(
    db: &mut Db,
    sql: &Statements,
    finish: Finish<'_>,
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<Option<Lease>> {
    if let Some(server) = db.one_request() {
        return server_ops::ack_and_claim(server, sql, finish, c, now).await;
    }
    db.write_transaction(async |db| {
        let now = now()?;
        ack_within(db, sql, finish.lease, now).await?;
        claim_within(db, sql, c, now).await
    })
    .await
}

/// The claim's statements, inside a write transaction. A head that cannot be handed out
/// (claimed `max_attempts` times already, 0 meaning no limit; or text another program
/// stored that is not UTF-8) moves to the dead-letter table instead, and the claim looks
/// again: that group's next message (which keeps the group's place) or another group's is
/// served, and the queue is never blocked behind it.
async fn claim_within(db: &mut Db, sql: &Statements, c: &Claim<'_>, now: f64) -> Result<Option<Lease>> {
    loop {
        let (claim, params) = sql.claim(now, c.min_priority, c.routing_keys);
        let head = db
            .query_one(&claim, params, |row| {
                Ok((row.get::<i64>(0)?, row.get::<Vec<u8>>(1)?, row.get::<Vec<u8>>(2)?, row.get::<i64>(3)?))
            })
            .await?;
        let Some((seq, group_id, event, attempts)) = head else { return Ok(None) };
        let undeliverable = match (String::from_utf8(group_id), String::from_utf8(event)) {
            _ if c.max_attempts > 0 && attempts >= i64::from(c.max_attempts) => {
                format!("claimed {attempts} times: max_attempts is {}", c.max_attempts)
            }
            (Ok(group_id), Ok(event)) => {
                let lock_expiry = now + c.visibility;
                db.execute(&sql.set_group_ready_at, (group_id.as_str(), lock_expiry)).await?;
                db.execute(&sql.lease_message, (seq, c.worker_id, lock_expiry)).await?;
                let worker_id = c.worker_id.to_owned();
                return Ok(Some(Lease { seq, group_id, event, worker_id, lock_expiry, attempts: attempts + 1 }));
            }
            (Err(_), _) => "its group_id is not valid UTF-8 (written by another program)".to_owned(),
            (_, Err(_)) => "its event is not valid UTF-8 (written by another program)".to_owned(),
        };
        db.execute(&sql.bury_head, (seq, undeliverable, now)).await?;
        db.execute(&sql.delete_message, [seq]).await?;
        db.execute(&sql.drop_buried_group_if_empty, [seq]).await?;
    }
}

/// The ack's statements, inside a write transaction.
async fn ack_within(db: &mut Db, sql: &Statements, lease: &Lease, now: f64) -> Result<()> {
    let group_id = lease.group_id.as_str();
    let deleted = db.execute(&sql.ack_message, (lease.seq, group_id, lease.worker_id.as_str())).await?;
    if deleted == 0 {
        return Err(lease_lost(lease));
    }
    group_goes_on(db, sql, group_id, now).await
}

/// After its head was removed: the group is ready again now, or goes when that was its
/// last message.
async fn group_goes_on(db: &mut Db, sql: &Statements, group_id: &str, now: f64) -> Result<()> {
    if db.execute(&sql.requeue_group_if_not_empty, (group_id, now)).await? == 0 {
        db.execute(&sql.drop_group_if_empty, [group_id]).await?;
    }
    Ok(())
}

/// `delay` 0 frees the message now; more parks it (and its group) until now + delay.
pub async fn nack(db: &mut Db, sql: &Statements, request: &Nack<'_>, now: Now<'_>) -> Result<()> {
    if let Some(server) = db.one_request() {
        return server_ops::nack(server, sql, request, now).await;
    }
    let (lease, delay) = (request.finish.lease, request.delay);
    db.write_transaction(async |db| {
        let now = now()?;
        let (locked_by, lock_expiry) = if delay > 0.0 { (Some(PARKED), Some(now + delay)) } else { (None, None) };
        let released = db
            .execute(
                &sql.release_message,
                (lease.seq, lease.group_id.as_str(), lease.worker_id.as_str(), locked_by, lock_expiry),
            )
            .await?;
        if released == 0 {
            return Err(lease_lost(lease));
        }
        db.execute(&sql.set_group_ready_at, (lease.group_id.as_str(), now + delay)).await?;
        Ok(())
    })
    .await
}

pub(crate) fn lease_lost(lease: &Lease) -> Error {
    Error::LeaseLost(format!(
        "message {} of group {:?} is no longer leased to worker {:?}: it was acked or nacked \
         already, or its lease lapsed and another worker claimed it",
        lease.seq, lease.group_id, lease.worker_id
    ))
}
