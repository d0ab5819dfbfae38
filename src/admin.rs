//! Administering the queue: dead letters redriven or purged, a group or the whole queue
//! purged, a stuck group released. Each is one write transaction, like the queue's
//! operations (queue.rs), and keeps their invariants: a group row exists exactly while it
//! has messages, and only a head is ever locked.

use libsql::Value;

use crate::db::Db;
use crate::error::Result;
use crate::inspect::DeadLetters;
use crate::queue::Now;
use crate::request::DeadSelection;
use crate::sql::{DeadFilter, Statements};

/// The filter's kind and its parameter, if any.
fn filter(which: DeadLetters<'_>) -> (DeadFilter, Option<Value>) {
    match which {
        DeadLetters::All => (DeadFilter::All, None),
        DeadLetters::Group(group_id) => (DeadFilter::Group, Some(group_id.into())),
        DeadLetters::Seqs(seqs) => (DeadFilter::Seqs, Some(serde_json::to_string(seqs).unwrap_or_default().into())),
    }
}

/// Moves the selected dead letters back into their groups as the newest messages, in the
/// order they had, with attempts from 0; the number moved.
pub async fn redrive(db: &mut Db, sql: &Statements, selection: &DeadSelection<'_>, now: Now<'_>) -> Result<u64> {
    let (kind, param) = filter(selection.which);
    let [messages, groups, delete] = sql.redrive(kind);
    db.write_transaction(async |db| {
        let now = now()?;
        db.execute(&messages, std::iter::once(Value::from(now)).chain(param.clone()).collect::<Vec<_>>()).await?;
        db.execute(&groups, param.iter().cloned().collect::<Vec<_>>()).await?;
        db.execute(&delete, param.iter().cloned().collect::<Vec<_>>()).await
    })
    .await
}

/// Deletes the selected dead letters; the number deleted.
pub async fn purge_dead(db: &mut Db, sql: &Statements, selection: &DeadSelection<'_>) -> Result<u64> {
    let (kind, param) = filter(selection.which);
    let delete = sql.purge_dead(kind);
    db.write_transaction(async |db| db.execute(&delete, param.into_iter().collect::<Vec<_>>()).await).await
}

/// Deletes a group's messages and the group; the number of messages. A lease held on one
/// of them is lost.
pub async fn purge_group(db: &mut Db, sql: &Statements, group_id: &str) -> Result<u64> {
    let [messages, group] = sql.purge_group();
    db.write_transaction(async |db| {
        let purged = db.execute(&messages, [group_id]).await?;
        db.execute(&group, [group_id]).await?;
        Ok(purged)
    })
    .await
}

/// Deletes every message and group (dead letters stay); the number of messages.
pub async fn purge(db: &mut Db, sql: &Statements) -> Result<u64> {
    let [messages, groups] = sql.purge_all();
    db.write_transaction(async |db| {
        let purged = db.execute(&messages, ()).await?;
        db.execute(&groups, ()).await?;
        Ok(purged)
    })
    .await
}

/// Ends the lease or park on a group's head now, so the group is ready at once; false when
/// nothing was held. The holder's ack or nack then finds its lease lost.
pub async fn release(db: &mut Db, sql: &Statements, group_id: &str, now: Now<'_>) -> Result<bool> {
    let release = sql.release_head();
    db.write_transaction(async |db| {
        let now = now()?;
        if db.execute(&release, [group_id]).await? == 0 {
            return Ok(false);
        }
        db.execute(&sql.set_group_ready_at, (group_id, now)).await?;
        Ok(true)
    })
    .await
}
