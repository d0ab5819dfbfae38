//! The worker's operations, each one write transaction written once as a chain of
//! statements (chain.rs) that the backend runs: under the write lock on a local file, as
//! one request on a server (so its write lock is never held across the network). The
//! whole operation or nothing of it; a lost lease changes nothing; a claim buries what it
//! cannot hand out. Arguments arrive checked, as the requests of request.rs.
//!
//! Serving order: harel's Python transports stamp `last_claimed_at` with the claim
//! instant. We stamp the instant the group can next be served (its *ready_at*): a claim
//! writes its lease's end, a park the park's end, an ack or an immediate nack the present.
//! Groups waiting on a lease or a park therefore sort after `now`, where the claim's index
//! range stops, and a claim costs the same however many groups are in flight. Among
//! deliverable groups the order is still round-robin: the group served longest ago goes
//! first, a new group (0) first of all, ties by arrival.
//!
//! The claim is the one operation whose algorithm each backend chooses (`Backend::claim`;
//! docs/architecture.md says why): it comes after what `Before` puts first in the same
//! transaction (an ack's statements).

use libsql::Value;

use crate::backend::Backend;
use crate::chain::{lease_lost, Chain, Claimed, Done};
use crate::error::{Error, Result};
use crate::request::{Claim, Deliver, Extend, Finish, FinishMany, Nack, Now, Publish};
use crate::sql::{Statements, Timing};
use crate::types::{Lease, Message, Published, Unique};
use crate::validate::{self, MISPLACED, SET_ASIDE_UNTIL};

/// Appends the messages in order, in one transaction: all of them (and the groups they
/// create) or none. One commit for the whole batch, so at synchronous FULL one fsync
/// rather than one per message; a few multi-row INSERTs (`Statements::publish_rows`). An
/// empty batch writes nothing and opens no transaction.
pub async fn publish(backend: &mut Backend, sql: &Statements, request: &Publish<'_, '_>, now: Now<'_>) -> Result<()> {
    let messages = request.messages();
    if messages.is_empty() {
        return Ok(());
    }
    backend
        .run(|| {
            let now = now()?;
            let mut chain = Chain::new();
            let mut rest = messages;
            while !rest.is_empty() {
                // The groups' INSERT is OR IGNORE: the first publish into a group fixes its
                // priority and routing key.
                let (rows, statements) = sql.publish_rows(now, rest);
                for (statement, params) in statements {
                    chain.push(statement, params);
                }
                rest = &rest[rows..];
            }
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// Appends the messages in order with their delivery options (sql/publish.rs), in one
/// transaction: every message stored or found a duplicate, or nothing. A key is kept
/// `retention` seconds. What became of each message, in order.
pub async fn publish_with(
    backend: &mut Backend,
    sql: &Statements,
    request: &Deliver<'_, '_>,
    retention: f64,
    now: Now<'_>,
) -> Result<Vec<Published>> {
    keys_kept(sql, request)?;
    let (done, reads) = backend
        .run(|| {
            let mut chain = Chain::new();
            let reads = push_deliveries(&mut chain, sql, request, retention, now()?)?;
            Ok((chain, reads))
        })
        .await?;
    reads.into_iter().map(|at| published(&done, at)).collect()
}

/// A publish with a key needs the keys table, which a harel 0.9 file opened with
/// create_schema off lacks.
pub fn keys_kept(sql: &Statements, request: &Deliver<'_, '_>) -> Result<()> {
    if request.has_keys() && sql.lacks().keys {
        return Err(Error::Database(format!(
            "the table {} is missing, which a publish with a key needs: open the queue once with \
             create_schema on, or run harel_schema_sql's statements",
            sql.keys_table
        )));
    }
    Ok(())
}

/// Where one publish's outcome is in its chain: the `published` read and, with a unique
/// key, the reads of the pending message and of the one it replaced.
#[derive(Debug, Clone, Copy)]
pub struct PublishRead {
    published: usize,
    pending: Option<usize>,
    replaced: Option<usize>,
}

/// Appends the statements of `request`'s messages to `chain`, written at `now`: the expired
/// keys swept first (a bounded step) when any message has a key, then each message with its
/// key and group. Where each message's outcome is read (see `published`), in order.
pub fn push_deliveries<'c>(
    chain: &mut Chain<'c>,
    sql: &'c Statements,
    request: &Deliver<'_, '_>,
    retention: f64,
    now: f64,
) -> Result<Vec<PublishRead>> {
    let p = &sql.publish_with;
    if request.has_keys() {
        let (sweep, params) = p.sweep_keys(now);
        chain.push(sweep, params);
    }
    let mut reads = Vec::with_capacity(request.items().len());
    for (i, (m, d)) in request.items().iter().enumerate() {
        let due = validate::due(&request.at(i), d, now)?;
        let timing = Timing { due, expires_at: validate::expiry(&request.at(i), d, now, due)?, retry: d.retry };
        if let Some(unique) = d.unique {
            reads.push(push_unique(chain, sql, unique, now, m, timing));
            continue;
        }
        match d.key {
            Some(key) => {
                let before_read = [
                    p.forget_key(key, now),
                    p.take_key(key, now + retention),
                    p.insert_message_if_new(now, m, timing),
                    p.bind_key(key),
                ];
                for (statement, params) in before_read {
                    chain.push(statement, params);
                }
                let (published, params) = p.published(key);
                reads.push(PublishRead { published: chain.query(published, params), pending: None, replaced: None });
                let (insert_group, params) = p.insert_group_if_new(m);
                chain.push(insert_group, params);
            }
            None => {
                let (insert_message, params) = p.insert_message(now, m, timing);
                chain.push(insert_message, params);
                let (published, params) = p.published_unkeyed();
                reads.push(PublishRead { published: chain.query(published, params), pending: None, replaced: None });
                let (insert_group, params) = p.insert_group(m);
                chain.push(insert_group, params);
            }
        }
        if due.is_some() {
            let (stamp, params) = p.stamp_delayed_head(m.group_id);
            chain.push(stamp, params);
        }
    }
    Ok(reads)
}

/// One message with a unique key (sql/unique.rs): the pending message replaced or kept,
/// or this one stored.
fn push_unique<'c>(
    chain: &mut Chain<'c>,
    sql: &'c Statements,
    unique: Unique<'_>,
    now: f64,
    m: &Message<'_>,
    timing: Timing,
) -> PublishRead {
    let (u, p) = (&sql.unique, &sql.publish_with);
    let replaced = u.replace(unique.key, unique.mode, (now, timing.expires_at), m);
    let replaced = replaced.map(|(replace, params)| chain.query(replace, params));
    let (pending, params) = u.pending(unique.key);
    let pending = Some(chain.query(pending, params));
    let (insert, params) = u.insert(unique.key, now, m, timing);
    chain.push(insert, params);
    let (published, params) = p.published_unkeyed();
    let published = chain.query(published, params);
    let (insert_group, params) = p.insert_group_if_new(m);
    chain.push(insert_group, params);
    if timing.due.is_some() {
        let (stamp, params) = u.stamp(unique.key);
        chain.push(stamp, params);
    }
    PublishRead { published, pending, replaced }
}

/// What became of one publish, from its reads in `done`: the pending message's seq when
/// its unique key found one, else the `published` row (seq, 1 when stored now).
pub fn published(done: &[Done], read: PublishRead) -> Result<Published> {
    let first_row = |at: usize| done.get(at).and_then(|d| d.rows.first());
    if let Some(Some(Value::Integer(seq))) = read.pending.and_then(first_row).map(|row| row.first()) {
        let replaced = read.replaced.and_then(first_row).is_some();
        return Ok(Published { seq: *seq, duplicate: true, replaced });
    }
    let row = first_row(read.published).ok_or_else(|| Error::Database("publish: no seq came back".into()))?;
    match (row.first(), row.get(1)) {
        (Some(Value::Integer(seq)), Some(Value::Integer(stored))) => {
            Ok(Published { seq: *seq, duplicate: *stored == 0, replaced: false })
        }
        other => Err(Error::Database(format!("publish: unexpected seq row {other:?}"))),
    }
}

/// Up to `c.max` leases, each the head of a different group, in serving order, in one
/// transaction when nothing is to be buried. Each claim stamps its group with the lease's
/// end, past `now`, so the next claim of the chain finds the next group.
pub async fn claim(backend: &mut Backend, sql: &Statements, c: &Claim<'_>, now: Now<'_>) -> Result<Claimed> {
    backend.claim(sql, (c, c.max), now, None).await
}

/// How long an acked message is archived (`Options::archive`); None: it is not.
pub type Archive = Option<f64>;

/// Deletes the leased message, and its group when it was the last; `Error::LeaseLost`
/// when it is no longer this worker's (then nothing changes).
pub async fn ack(
    backend: &mut Backend,
    sql: &Statements,
    finish: Finish<'_>,
    archive: Archive,
    now: Now<'_>,
) -> Result<()> {
    let lease = finish.lease;
    backend
        .run(|| {
            let now = now()?;
            Ok((push_pruned(push_ack(Chain::new(), sql, lease, (now, archive)), sql, (now, archive)), ()))
        })
        .await
        .map(drop)
}

/// The ack and the claim in one transaction (one commit per message handled instead of
/// two); nothing is claimed when the ack fails.
pub async fn ack_and_claim<'a>(
    backend: &mut Backend,
    sql: &'a Statements,
    (finish, archive): (Finish<'a>, Archive),
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<Claimed> {
    let ack = |chain: Chain<'a>, now: f64| {
        let chain = push_ack(chain, sql, finish.lease, (now, archive));
        Ok((push_pruned(chain, sql, (now, archive)), Vec::new()))
    };
    backend.claim(sql, (c, 1), now, Some(&ack)).await
}

/// Acks every lease in one transaction, in order; an outcome per lease: `Error::LeaseLost`
/// for one that was lost (nothing of it changed), while the others are acked. Any other
/// error fails the whole call and acks nothing. No leases: nothing is written.
pub async fn ack_many(
    backend: &mut Backend,
    sql: &Statements,
    finish: &FinishMany<'_>,
    archive: Archive,
    now: Now<'_>,
) -> Result<Vec<Result<()>>> {
    if finish.leases.is_empty() {
        return Ok(Vec::new());
    }
    let (results, deletes) = backend
        .run(|| Ok(push_ack_many(Chain::new(), sql, finish.leases, (now()?, archive))))
        .await?;
    Ok(outcomes(finish.leases, deletes.iter().map(|&i| results[i].changed)))
}

/// `ack_many` and then a claim of up to `c.max`, in one transaction: a batch worker's loop
/// with one commit per batch. A lost lease is reported in its outcome and does not stop
/// the claim.
pub async fn ack_and_claim_many<'a>(
    backend: &mut Backend,
    sql: &'a Statements,
    (finish, archive): (&FinishMany<'a>, Archive),
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<(Vec<Result<()>>, Claimed)> {
    let acks = |chain: Chain<'a>, now: f64| Ok(push_ack_many(chain, sql, finish.leases, (now, archive)));
    let mut claimed = backend.claim(sql, (c, c.max), now, Some(&acks)).await?;
    Ok((outcomes(finish.leases, std::mem::take(&mut claimed.before).into_iter()), claimed))
}

/// The lease now runs to now + visibility (returned). Its group's serving stamp moves with
/// it, so claims keep passing over the group in one index range. `Error::LeaseLost` as for
/// ack: a lease that lapsed and that no one claimed since is still the worker's.
pub async fn extend(backend: &mut Backend, sql: &Statements, request: &Extend<'_>, now: Now<'_>) -> Result<f64> {
    let lease = request.finish.lease;
    let (_, lock_expiry) = backend
        .run(|| {
            let lock_expiry = now()? + request.visibility;
            let mut chain = Chain::new();
            let (extend, params) = sql.extend_lease(lease, lock_expiry);
            chain.push(extend, params);
            chain.guard(lease);
            let (stamp, params) = sql.retry.stamp_leased(&lease.group_id, lock_expiry, lease.seq);
            chain.push(stamp, params);
            Ok((chain, lock_expiry))
        })
        .await?;
    Ok(lock_expiry)
}

/// Each lease's ack, without a guard: a lost one changes nothing (its group's turn moves
/// only when its DELETE deleted) and does not stop the others; then the archive's prune.
/// The DELETEs' indexes.
fn push_ack_many<'a>(
    mut chain: Chain<'a>,
    sql: &'a Statements,
    leases: &'a [Lease],
    (now, archive): (f64, Archive),
) -> (Chain<'a>, Vec<usize>) {
    let mut deletes = Vec::with_capacity(leases.len());
    for lease in leases {
        if archive.is_some() {
            let (copy, params) = sql.archive.copy(lease, now);
            chain.push(copy, params);
        }
        let (delete, params) = sql.ack_message(lease);
        deletes.push(chain.push(delete, params));
        let (requeue, params) = sql.requeue_group_if_acked(&lease.group_id, now);
        chain.push(requeue, params);
        let (drop_group, params) = sql.drop_group_if_empty(&lease.group_id);
        chain.push_unless_changed(drop_group, params);
    }
    (push_pruned(chain, sql, (now, archive)), deletes)
}

/// An outcome per lease from the rows its DELETE deleted.
fn outcomes(leases: &[Lease], deleted: impl Iterator<Item = u64>) -> Vec<Result<()>> {
    leases.iter().zip(deleted).map(|(lease, n)| if n == 0 { Err(lease_lost(lease)) } else { Ok(()) }).collect()
}

/// `delay` parks the message (and its group) until now + delay; 0 parks it for the backoff
/// its claim drew (sql/retry.rs), or frees it now if it drew none.
pub async fn nack(backend: &mut Backend, sql: &Statements, request: &Nack<'_>, now: Now<'_>) -> Result<()> {
    let (lease, delay) = (request.finish.lease, request.delay);
    backend
        .run(|| {
            let now = now()?;
            let mut chain = Chain::new();
            let (release, params) = sql.retry.nack((lease.seq, &lease.group_id, &lease.worker_id), now, delay);
            chain.push(release, params);
            chain.guard(lease);
            let (stamp, params) = sql.retry.stamp_nacked(&lease.group_id, now, lease.seq);
            chain.push(stamp, params);
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// A sharded queue's claim found the head of a group that belongs to another shard: held by
/// `MISPLACED` for good, the group stamped as far, so no claim here reaches it again.
pub async fn set_aside(backend: &mut Backend, sql: &Statements, request: Finish<'_>) -> Result<()> {
    let lease = request.lease;
    backend
        .run(|| {
            let mut chain = Chain::new();
            let (release, params) = sql.release_message(lease, Some(MISPLACED), Some(SET_ASIDE_UNTIL));
            chain.push(release, params);
            chain.guard(lease);
            let (stamp, params) = sql.set_group_ready_at(&lease.group_id, SET_ASIDE_UNTIL);
            chain.push(stamp, params);
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// A worker's verdict on a message it holds: it will never succeed. Moved to the
/// dead-letter table with `reason`, as an ack would remove it (its group goes on with the
/// next message); `Error::LeaseLost` as for ack.
pub async fn dead_letter(
    backend: &mut Backend,
    sql: &Statements,
    finish: Finish<'_>,
    reason: &str,
    now: Now<'_>,
) -> Result<()> {
    let lease = finish.lease;
    backend
        .run(|| {
            let now = now()?;
            let mut chain = Chain::new();
            let (bury, params) = sql.bury_leased(lease, reason, now);
            chain.push(bury, params);
            chain.guard(lease);
            let (delete, params) = sql.delete_message(lease.seq);
            chain.push(delete, params);
            let chain = push_group_goes_on(chain, sql, &lease.group_id, now);
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// The ack's statements: the message, if still leased to its worker, copied into the
/// archive when it is kept and deleted, then its group.
fn push_ack<'a>(
    mut chain: Chain<'a>,
    sql: &'a Statements,
    lease: &'a Lease,
    (now, archive): (f64, Archive),
) -> Chain<'a> {
    if archive.is_some() {
        let (copy, params) = sql.archive.copy(lease, now);
        chain.push(copy, params);
    }
    let (delete, params) = sql.ack_message(lease);
    chain.push(delete, params);
    chain.guard(lease);
    push_group_goes_on(chain, sql, &lease.group_id, now)
}

/// With the archive kept: its rows older than the retention pruned, a bounded number.
fn push_pruned<'a>(mut chain: Chain<'a>, sql: &'a Statements, (now, archive): (f64, Archive)) -> Chain<'a> {
    if let Some(retention) = archive {
        let (prune, params) = sql.archive.prune(now - retention);
        chain.push(prune, params);
    }
    chain
}

/// After a group's head was removed: ready again now, or gone when it was the last (one of
/// the two applies).
fn push_group_goes_on<'a>(mut chain: Chain<'a>, sql: &'a Statements, group_id: &str, now: f64) -> Chain<'a> {
    let (requeue, params) = sql.requeue_group_if_not_empty(group_id, now);
    chain.push(requeue, params);
    let (drop_group, params) = sql.drop_group_if_empty(group_id);
    chain.push_unless_changed(drop_group, params);
    chain
}
