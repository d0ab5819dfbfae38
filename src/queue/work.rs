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
//! Two cases take a further transaction: a claim that finds more heads over
//! `max_attempts` than one chain buries (sql/claim.rs, `BURY_ROUNDS`), and a head that is
//! not UTF-8 (written by another program): it was leased before it could be read, so the
//! next chain buries it (counted as before that claim; its group goes on at once, as after
//! an ack) and claims again.

use libsql::Value;

use crate::backend::Backend;
use crate::chain::{Chain, Done};
use crate::error::{Error, Result};
use crate::request::{Claim, Extend, Finish, FinishMany, Nack, Publish};
use crate::sql::Statements;
use crate::types::Lease;
use crate::validate::PARKED;

/// The transport's clock, checked.
pub type Now<'a> = &'a (dyn Fn() -> Result<f64> + Send + Sync);

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
                let (rows, insert_messages, insert_groups) = sql.publish_rows(rest.len());
                let (run, later) = rest.split_at(rows);
                let values = run.iter().flat_map(|m| [Value::from(m.group_id), Value::from(m.event_json)]);
                chain.push(&insert_messages, std::iter::once(Value::from(now)).chain(values).collect());
                let groups = run.iter().flat_map(|m| [m.group_id.into(), m.priority.into(), m.routing_key.into()]);
                // OR IGNORE: the first publish into a group fixes its priority and routing key.
                chain.push(&insert_groups, groups.collect());
                rest = later;
            }
            Ok((chain, ()))
        })
        .await
        .map(drop)
}

/// Up to `c.max` leases, each the head of a different group, in serving order, in one
/// transaction when nothing is to be buried. Each claim stamps its group with the lease's
/// end, past `now`, so the next claim of the chain finds the next group.
pub async fn claim(backend: &mut Backend, sql: &Statements, c: &Claim<'_>, now: Now<'_>) -> Result<Vec<Lease>> {
    claim_after(backend, sql, (c, c.max), now, None).await.map(|(_, leases)| leases)
}

/// Deletes the leased message, and its group when it was the last; `Error::LeaseLost`
/// when it is no longer this worker's (then nothing changes).
pub async fn ack(backend: &mut Backend, sql: &Statements, finish: Finish<'_>, now: Now<'_>) -> Result<()> {
    let lease = finish.lease;
    backend.run(|| Ok((push_ack(Chain::new(), sql, lease, now()?), ()))).await.map(drop)
}

/// The ack and the claim in one transaction (one commit per message handled instead of
/// two); nothing is claimed when the ack fails.
pub async fn ack_and_claim(
    backend: &mut Backend,
    sql: &Statements,
    finish: Finish<'_>,
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<Option<Lease>> {
    let ack = |chain: Chain, now: f64| Ok((push_ack(chain, sql, finish.lease, now), Vec::new()));
    let (_, leases) = claim_after(backend, sql, (c, 1), now, Some(&ack)).await?;
    Ok(leases.into_iter().next())
}

/// Acks every lease in one transaction, in order; an outcome per lease: `Error::LeaseLost`
/// for one that was lost (nothing of it changed), while the others are acked. Any other
/// error fails the whole call and acks nothing. No leases: nothing is written.
pub async fn ack_many(
    backend: &mut Backend,
    sql: &Statements,
    finish: &FinishMany<'_>,
    now: Now<'_>,
) -> Result<Vec<Result<()>>> {
    if finish.leases.is_empty() {
        return Ok(Vec::new());
    }
    let (results, deletes) = backend
        .run(|| {
            let (chain, deletes) = push_ack_many(Chain::new(), sql, finish.leases, now()?);
            Ok((chain, deletes))
        })
        .await?;
    Ok(outcomes(finish.leases, deletes.iter().map(|&i| results[i].changed)))
}

/// `ack_many` and then a claim of up to `c.max`, in one transaction: a batch worker's loop
/// with one commit per batch. A lost lease is reported in its outcome and does not stop
/// the claim.
pub async fn ack_and_claim_many(
    backend: &mut Backend,
    sql: &Statements,
    finish: &FinishMany<'_>,
    c: &Claim<'_>,
    now: Now<'_>,
) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
    let acks = |chain: Chain, now: f64| Ok(push_ack_many(chain, sql, finish.leases, now));
    let (deleted, leases) = claim_after(backend, sql, (c, c.max), now, Some(&acks)).await?;
    Ok((outcomes(finish.leases, deleted.into_iter()), leases))
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
            let (seq, group_id, worker_id) = (lease.seq, lease.group_id.as_str(), lease.worker_id.as_str());
            chain.push(&sql.extend_lease, vec![seq.into(), group_id.into(), worker_id.into(), lock_expiry.into()]);
            chain.guard(&Statements::lease_guard(), lease_lost(lease));
            chain.push(&sql.set_group_ready_at, vec![group_id.into(), lock_expiry.into()]);
            Ok((chain, lock_expiry))
        })
        .await?;
    Ok(lock_expiry)
}

/// Each lease's ack, without a guard: a lost one changes nothing (its group's turn moves
/// only when its DELETE deleted) and does not stop the others. The DELETEs' indexes.
fn push_ack_many(mut chain: Chain, sql: &Statements, leases: &[Lease], now: f64) -> (Chain, Vec<usize>) {
    let mut deletes = Vec::with_capacity(leases.len());
    for lease in leases {
        let group_id = lease.group_id.as_str();
        deletes.push(
            chain.push(&sql.ack_message, vec![lease.seq.into(), group_id.into(), lease.worker_id.as_str().into()]),
        );
        chain.push(&sql.requeue_group_if_acked(), vec![group_id.into(), now.into()]);
        chain.push(&sql.drop_group_if_empty, vec![group_id.into()]);
    }
    (chain, deletes)
}

/// An outcome per lease from the rows its DELETE deleted.
fn outcomes(leases: &[Lease], deleted: impl Iterator<Item = u64>) -> Vec<Result<()>> {
    leases.iter().zip(deleted).map(|(lease, n)| if n == 0 { Err(lease_lost(lease)) } else { Ok(()) }).collect()
}

/// `delay` 0 frees the message now; more parks it (and its group) until now + delay.
pub async fn nack(backend: &mut Backend, sql: &Statements, request: &Nack<'_>, now: Now<'_>) -> Result<()> {
    let (lease, delay) = (request.finish.lease, request.delay);
    backend
        .run(|| {
            let now = now()?;
            let (locked_by, lock_expiry) = if delay > 0.0 { (Some(PARKED), Some(now + delay)) } else { (None, None) };
            let mut chain = Chain::new();
            let (seq, group_id, worker_id) = (lease.seq, lease.group_id.as_str(), lease.worker_id.as_str());
            chain.push(
                &sql.release_message,
                vec![seq.into(), group_id.into(), worker_id.into(), locked_by.into(), lock_expiry.into()],
            );
            chain.guard(&Statements::lease_guard(), lease_lost(lease));
            chain.push(&sql.set_group_ready_at, vec![group_id.into(), (now + delay).into()]);
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
            let (group_id, worker_id) = (lease.group_id.as_str(), lease.worker_id.as_str());
            chain.push(
                &sql.bury_leased,
                vec![lease.seq.into(), reason.into(), now.into(), group_id.into(), worker_id.into()],
            );
            chain.guard(&Statements::lease_guard(), lease_lost(lease));
            chain.push(&sql.delete_message, vec![lease.seq.into()]);
            Ok((push_group_goes_on(chain, sql, group_id, now), ()))
        })
        .await
        .map(drop)
}

/// The ack's statements: the message, if still leased to its worker, then its group.
fn push_ack(mut chain: Chain, sql: &Statements, lease: &Lease, now: f64) -> Chain {
    let group_id = lease.group_id.as_str();
    chain.push(&sql.ack_message, vec![lease.seq.into(), group_id.into(), lease.worker_id.as_str().into()]);
    chain.guard(&Statements::lease_guard(), lease_lost(lease));
    push_group_goes_on(chain, sql, group_id, now)
}

/// After a group's head was removed: ready again now, or gone when it was the last (one of
/// the two applies).
fn push_group_goes_on(mut chain: Chain, sql: &Statements, group_id: &str, now: f64) -> Chain {
    chain.push(&sql.requeue_group_if_not_empty, vec![group_id.into(), now.into()]);
    chain.push(&sql.drop_group_if_empty, vec![group_id.into()]);
    chain
}

/// What comes before a claim in its first chain (an ack's statements), and the indexes
/// of those whose changed rows the caller wants back.
type Before<'a> = &'a (dyn Fn(Chain, f64) -> Result<(Chain, Vec<usize>)> + Sync);

/// A head the last chain leased and cannot hand out.
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
    backend: &mut Backend,
    sql: &Statements,
    (c, want): (&Claim<'_>, usize),
    now: Now<'_>,
    before: Option<Before<'_>>,
) -> Result<(Vec<u64>, Vec<Lease>)> {
    let mut before_changed: Option<Vec<u64>> = None;
    let mut leases = Vec::new();
    let mut undeliverable: Vec<Undeliverable> = Vec::new();
    loop {
        let (results, (marked, claims, lock_expiry)) = backend
            .run(|| {
                let now = now()?;
                let mut chain = Chain::new();
                let mut marked = Vec::new();
                if let (Some(before), None) = (before, &before_changed) {
                    (chain, marked) = before(chain, now)?;
                }
                for u in &undeliverable {
                    chain = push_bury_claimed(chain, sql, u, c.worker_id, now);
                }
                let lock_expiry = now + c.visibility;
                let mut claims = Vec::new();
                for _ in leases.len()..want {
                    let statements = sql.claim_chain(
                        now,
                        (c.min_priority, c.routing_keys),
                        c.max_attempts,
                        (c.worker_id, lock_expiry),
                    );
                    let at: Vec<usize> = statements
                        .statements
                        .into_iter()
                        .map(|(statement, params)| chain.push(&statement, params))
                        .collect();
                    let lease_at = at[statements.lease];
                    chain.end_if_empty(lease_at);
                    claims.push((lease_at, statements.more.map(|i| at[i])));
                }
                Ok((chain, (marked, claims, lock_expiry)))
            })
            .await?;
        before_changed.get_or_insert_with(|| marked.iter().map(|&i| results[i].changed).collect());
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
fn push_bury_claimed(mut chain: Chain, sql: &Statements, u: &Undeliverable, worker_id: &str, now: f64) -> Chain {
    let params = vec![u.seq.into(), u.reason.into(), now.into(), worker_id.into(), u.lock_expiry.into()];
    chain.push(&sql.bury_claimed(), params);
    chain.push(&sql.delete_buried(), vec![u.seq.into()]);
    chain.push(&sql.requeue_buried_group(), vec![u.seq.into(), now.into()]);
    chain.push(&sql.drop_buried_group_if_empty, vec![u.seq.into()]);
    chain
}

/// Reads the lease's UPDATE ... RETURNING (and the check for more to bury).
fn found(lease: &Done, more: Option<&Done>, worker_id: &str, lock_expiry: f64) -> Result<Found> {
    let Some(row) = lease.rows.first() else {
        return Ok(if more.is_some_and(|m| !m.rows.is_empty()) { Found::MoreToBury } else { Found::Nothing });
    };
    let (seq, group_id, event, attempts) = match row.as_slice() {
        [Value::Integer(seq), Value::Blob(group_id), Value::Blob(event), Value::Integer(attempts)] => {
            (*seq, group_id, event, *attempts)
        }
        _ => return Err(Error::Database(format!("a claim's lease came back as an unexpected row: {row:?}"))),
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

pub(crate) fn lease_lost(lease: &Lease) -> Error {
    Error::LeaseLost(format!(
        "message {} of group {:?} is no longer leased to worker {:?}: it was acked or nacked \
         already, or its lease lapsed and another worker claimed it",
        lease.seq, lease.group_id, lease.worker_id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: Vec<Vec<Value>>) -> Done {
        Done { rows, changed: 0 }
    }

    fn head(group_id: &[u8], event: &[u8]) -> Done {
        rows(vec![vec![
            Value::Integer(7),
            Value::Blob(group_id.to_vec()),
            Value::Blob(event.to_vec()),
            Value::Integer(2),
        ]])
    }

    #[test]
    fn a_leased_head_is_a_lease() {
        let Found::Lease(lease) = found(&head(b"g", b"{}"), None, "w", 1030.0).unwrap() else { panic!() };
        assert_eq!((lease.seq, lease.group_id.as_str(), lease.event.as_str(), lease.attempts), (7, "g", "{}", 2));
        assert_eq!((lease.worker_id.as_str(), lease.lock_expiry), ("w", 1030.0));
    }

    #[test]
    fn a_head_that_is_not_utf8_is_buried_by_the_next_transaction() {
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
        let next = rows(vec![vec![Value::Integer(1)]]);
        assert!(matches!(found(&none, Some(&next), "w", 1.0).unwrap(), Found::MoreToBury));
    }

    #[test]
    fn an_unexpected_row_is_a_database_error() {
        let text = rows(vec![vec![Value::Text("7".into())]]);
        assert!(matches!(found(&text, None, "w", 1.0), Err(Error::Database(_))));
    }
}
