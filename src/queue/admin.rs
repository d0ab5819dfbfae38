//! Administering the queue: dead letters redriven or purged, a group or the whole queue
//! purged, a stuck group released, groups paused and resumed. Each is one write transaction, a chain like the
//! worker's operations (work.rs), and keeps their invariants: a group row exists exactly
//! while it has messages, and only a head is ever locked.

use crate::backend::Backend;
use crate::chain::Chain;
use crate::error::{Error, Result};
use crate::request::{DeadSelection, Limited, Now};
use crate::sql::{Bound, Statements};
use crate::types::PauseTarget;

/// Runs `statements` as one chain; the rows the first one changed.
async fn changed<const N: usize>(backend: &mut Backend, statements: [Bound<'_>; N]) -> Result<u64> {
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            for (statement, params) in &statements {
                chain.push(*statement, params.clone());
            }
            Ok((chain, ()))
        })
        .await?;
    Ok(done[0].changed)
}

/// Moves the selected dead letters back into their groups as the newest messages, in the
/// order they had, with attempts from 0; the number moved.
pub async fn redrive(
    backend: &mut Backend,
    sql: &Statements,
    selection: &DeadSelection<'_>,
    now: Now<'_>,
) -> Result<u64> {
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            for (statement, params) in sql.redrive(selection.which, now()?) {
                chain.push(statement, params);
            }
            Ok((chain, ()))
        })
        .await?;
    Ok(done[2].changed)
}

/// Deletes the selected dead letters; the number deleted.
pub async fn purge_dead(backend: &mut Backend, sql: &Statements, selection: &DeadSelection<'_>) -> Result<u64> {
    changed(backend, [sql.purge_dead(selection.which)]).await
}

/// Deletes a group's messages and the group; the number of messages. A lease held on one
/// of them is lost.
pub async fn purge_group(backend: &mut Backend, sql: &Statements, group_id: &str) -> Result<u64> {
    changed(backend, sql.purge_group(group_id)).await
}

/// Deletes every message and group (dead letters stay); the number of messages.
pub async fn purge(backend: &mut Backend, sql: &Statements) -> Result<u64> {
    changed(backend, sql.purge_all()).await
}

/// Runs the statements `at` builds for now (read inside the transaction, after the write
/// lock) as one chain; whether the first one changed a row.
async fn changed_now<'s, const N: usize>(
    backend: &mut Backend,
    now: Now<'_>,
    at: impl Fn(f64) -> [Bound<'s>; N],
) -> Result<bool> {
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            for (statement, params) in at(now()?) {
                chain.push(statement, params);
            }
            Ok((chain, ()))
        })
        .await?;
    Ok(done[0].changed > 0)
}

/// Ends the lease or park on a group's head now, so the group is ready at once; false when
/// nothing was held. The holder's ack or nack then finds its lease lost.
pub async fn release(backend: &mut Backend, sql: &Statements, group_id: &str, now: Now<'_>) -> Result<bool> {
    changed_now(backend, now, |now| sql.release_head(group_id, now)).await
}

/// Sets a routing key's limits (anew: a concurrency or rate not given is off), in force for
/// the next claim of every process.
pub async fn set_limit(backend: &mut Backend, sql: &Statements, limited: &Limited<'_>, now: Now<'_>) -> Result<()> {
    let Limited { routing_key, limit } = *limited;
    let rate = limit.rate.map(|r| (r.per_second, r.burst));
    changed_now(backend, now, |now| [sql.limit.set(routing_key, limit.concurrency, rate, now)]).await.map(drop)
}

/// Removes a routing key's limits; its held groups are served again at once. False when
/// the key had none.
pub async fn remove_limit(backend: &mut Backend, sql: &Statements, routing_key: &str) -> Result<bool> {
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            for (statement, params) in sql.limit.remove(routing_key) {
                chain.push(statement, params);
            }
            Ok((chain, ()))
        })
        .await?;
    Ok(done[1].changed > 0)
}

/// Pause and resume need the pauses table and its triggers, which a file made before them
/// and opened with create_schema off (or as it is) lacks.
fn pauses_kept(sql: &Statements) -> Result<()> {
    if sql.lacks().pauses {
        return Err(Error::Database(format!(
            "the table {} or its triggers are missing, which pause and resume need: open the queue once with \
             create_schema on, or run harel_schema_upgrade_sql's statements",
            sql.pauses_table
        )));
    }
    Ok(())
}

/// Stores the pause of `target` and sets aside the groups it names, in one transaction;
/// true when the pause is new (false: it was there already).
pub async fn pause(backend: &mut Backend, sql: &Statements, target: &PauseTarget<'_>, now: Now<'_>) -> Result<bool> {
    pauses_kept(sql)?;
    changed_now(backend, now, |now| sql.pause.pause(target, now)).await
}

/// Deletes the pause of `target` and gives the groups no other pause names their turn
/// back, in one transaction; true when there was such a pause.
pub async fn resume(backend: &mut Backend, sql: &Statements, target: &PauseTarget<'_>, now: Now<'_>) -> Result<bool> {
    pauses_kept(sql)?;
    changed_now(backend, now, |now| sql.pause.resume(target, now)).await
}
