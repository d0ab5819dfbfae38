//! Administering the queue: dead letters redriven or purged, a group or the whole queue
//! purged, a stuck group released. Each is one write transaction, a chain like the
//! worker's operations (work.rs), and keeps their invariants: a group row exists exactly
//! while it has messages, and only a head is ever locked.

use libsql::Value;

use crate::backend::Backend;
use crate::chain::Chain;
use crate::error::Result;
use crate::request::{DeadSelection, Now};
use crate::sql::{DeadFilter, Statements};
use crate::types::DeadLetters;

/// The filter's kind and its parameter, if any.
fn filter(which: DeadLetters<'_>) -> (DeadFilter, Option<Value>) {
    match which {
        DeadLetters::All => (DeadFilter::All, None),
        DeadLetters::Group(group_id) => (DeadFilter::Group, Some(group_id.into())),
        DeadLetters::Seqs(seqs) => (DeadFilter::Seqs, Some(serde_json::to_string(seqs).unwrap_or_default().into())),
    }
}

/// Runs `statements` (each with its parameters) as one chain; the rows statement `counted`
/// changed.
async fn changed(backend: &mut Backend, statements: Vec<(String, Vec<Value>)>, counted: usize) -> Result<u64> {
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            for (sql, params) in &statements {
                chain.push(sql, params.clone());
            }
            Ok((chain, ()))
        })
        .await?;
    Ok(done[counted].changed)
}

/// Moves the selected dead letters back into their groups as the newest messages, in the
/// order they had, with attempts from 0; the number moved.
pub async fn redrive(
    backend: &mut Backend,
    sql: &Statements,
    selection: &DeadSelection<'_>,
    now: Now<'_>,
) -> Result<u64> {
    let (kind, param) = filter(selection.which);
    let [messages, groups, delete] = sql.redrive(kind);
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            chain.push(&messages, std::iter::once(Value::from(now()?)).chain(param.clone()).collect());
            chain.push(&groups, param.iter().cloned().collect());
            chain.push(&delete, param.iter().cloned().collect());
            Ok((chain, ()))
        })
        .await?;
    Ok(done[2].changed)
}

/// Deletes the selected dead letters; the number deleted.
pub async fn purge_dead(backend: &mut Backend, sql: &Statements, selection: &DeadSelection<'_>) -> Result<u64> {
    let (kind, param) = filter(selection.which);
    changed(backend, vec![(sql.purge_dead(kind), param.into_iter().collect())], 0).await
}

/// Deletes a group's messages and the group; the number of messages. A lease held on one
/// of them is lost.
pub async fn purge_group(backend: &mut Backend, sql: &Statements, group_id: &str) -> Result<u64> {
    let [messages, group] = sql.purge_group();
    changed(backend, vec![(messages, vec![group_id.into()]), (group, vec![group_id.into()])], 0).await
}

/// Deletes every message and group (dead letters stay); the number of messages.
pub async fn purge(backend: &mut Backend, sql: &Statements) -> Result<u64> {
    let [messages, groups] = sql.purge_all();
    changed(backend, vec![(messages, vec![]), (groups, vec![])], 0).await
}

/// Ends the lease or park on a group's head now, so the group is ready at once; false when
/// nothing was held. The holder's ack or nack then finds its lease lost.
pub async fn release(backend: &mut Backend, sql: &Statements, group_id: &str, now: Now<'_>) -> Result<bool> {
    let [release, requeue] = sql.release_head();
    let (done, ()) = backend
        .run(|| {
            let mut chain = Chain::new();
            chain.push(&release, vec![group_id.into()]);
            chain.push(&requeue, vec![group_id.into(), now()?.into()]);
            Ok((chain, ()))
        })
        .await?;
    Ok(done[0].changed > 0)
}
