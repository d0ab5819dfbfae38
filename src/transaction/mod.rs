//! Publishing inside the application's transaction: its own statements and its publishes,
//! on the queue's connection, committed together or not at all (docs/queue.md,
//! "Publishing inside a transaction"). The sanctioned way for an application to write its
//! own tables in the queue's database: opening the file with another SQLite loses writes.
//!
//! What a transaction is asked to do is queued (`execute`, `publish`) and sent, in order,
//! with its next read (`query`) or its commit. A transaction that does not read before its
//! commit is one write transaction, begun and committed by the commit: on a server one
//! request, the write lock held for its statements alone. A read begins it (BEGIN
//! IMMEDIATE, what was queued, the read) and from then on it holds the connection and the
//! write lock until its commit or rollback; on a server across the network, where sqld
//! rolls back a transaction that has held the lock for 5 s while another writer waits.
//! Any error ends it, rolled back; so does dropping it unfinished. A transport runs one
//! transaction at a time on its one connection: the other calls on it, a second
//! transaction's included, wait for the one that holds it, up to the busy timeout.

mod async_tx;
mod queued;
mod tx;

use crate::telemetry::Publishing;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use libsql::Value;
use tokio::sync::OwnedMutexGuard;

pub use self::async_tx::AsyncTx;
use self::queued::{OwnedPublish, Queued};
pub use self::tx::Tx;
use crate::queue::database::Queue;
use crate::backend::Backend;
use crate::chain::{Done, Row};
use crate::error::{Error, Result};
use crate::queue::work;
use crate::request::Deliver;
use crate::types::{Delivery, Message, Published};
use crate::validate;

/// A transaction's state, apart from the transport it runs on (what the C ABI keeps behind
/// a `harel_tx`).
#[derive(Default)]
pub struct TxState {
    queued: Vec<Queued>,
    /// What became of the publishes sent with an earlier read, in order.
    published: Vec<Published>,
    /// The connection, from the first read to the end.
    held: Option<Held>,
    /// Why it can no longer be used, once it cannot.
    ended: Option<&'static str>,
    /// The spans of its traced publishes, ended by the commit.
    spans: Vec<Publishing>,
}

/// A transport's connection held by its open transaction; the transport's other calls
/// wait for it only up to the busy timeout while this says so.
pub(crate) struct Held {
    pub backend: OwnedMutexGuard<Backend>,
    flag: Arc<AtomicBool>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.flag.store(false, Ordering::Release);
    }
}

impl TxState {
    /// Ended: every later call is refused with `why`.
    fn live(&self) -> Result<()> {
        match self.ended {
            Some(why) => Err(Error::Argument(format!("the transaction was {why}: begin a new one"))),
            None => Ok(()),
        }
    }

    /// Whether it can still be used (not committed, rolled back or failed).
    pub fn is_live(&self) -> bool {
        self.ended.is_none()
    }

    /// Ends it as `why`, letting the connection go (rolled back already, or committed).
    fn end(&mut self, why: &'static str) {
        self.ended = Some(why);
        self.queued.clear();
        self.held = None;
    }
}

impl Queue {
    /// Queues an application statement (see `AsyncTx::execute`).
    pub(crate) fn tx_execute(&self, state: &mut TxState, sql: &str, params: Vec<Value>) -> Result<()> {
        state.live()?;
        state.queued.push(queued::statement(sql, params)?);
        Ok(())
    }

    /// Queues a publish, checked now (see `AsyncTx::publish_with`).
    pub(crate) fn tx_publish(&self, state: &mut TxState, message: Message<'_>, delivery: Delivery<'_>) -> Result<()> {
        state.live()?;
        self.writable()?;
        let request = Deliver::one(message, delivery)?;
        // A due instant past the ten-year limit, or an expiry not after now or the due
        // time, is refused now, not at the commit (which checks again with its own "now").
        let now = self.now()?;
        validate::expiry("", &delivery, now, validate::due("", &delivery, now)?)?;
        work::keys_kept(self.sql(), &request)?;
        state.queued.push(Queued::Publish(OwnedPublish::of(&message, &delivery)));
        Ok(())
    }

    /// Sends what was queued and the read `sql`, inside the transaction (begun now if it
    /// was not); the read's rows. Any error ends the transaction, rolled back.
    pub(crate) async fn tx_query(&self, state: &mut TxState, sql: &str, params: Vec<Value>) -> Result<Vec<Row>> {
        state.live()?;
        let query = queued::statement(sql, params)?;
        if state.held.is_none() {
            match self.hold_for_transaction().await {
                Ok((backend, flag)) => state.held = Some(Held { backend, flag }),
                Err(e) => {
                    state.end("rolled back after an error");
                    return Err(e);
                }
            }
        }
        let queued = std::mem::take(&mut state.queued);
        let held = state.held.as_mut().expect("held just above");
        let outcome = held
            .backend
            .run_open(|| queued::chain(&queued, Some(&query), self.sql(), self.key_retention(), self.now()?))
            .await;
        match outcome {
            Ok((done, reads)) => {
                state.published.extend(self.published(&done, &reads.published)?);
                let at = reads.query.expect("a flush with a read");
                Ok(done.into_iter().nth(at).map(|d| d.rows).unwrap_or_default())
            }
            Err(e) => {
                state.end("rolled back after an error");
                Err(e)
            }
        }
    }

    /// Sends what was queued and commits: each publish's outcome, in the order published.
    /// Its publishes wake this process's waiting claims. Any error ends it, rolled back
    /// (after `Error::Connect` on a server, unless the COMMIT was applied: the message says).
    pub(crate) async fn tx_commit(&self, state: &mut TxState) -> Result<Vec<Published>> {
        state.live()?;
        let queued = std::mem::take(&mut state.queued);
        let outcome = match state.held.as_mut() {
            Some(held) => {
                let built =
                    self.now().and_then(|now| queued::chain(&queued, None, self.sql(), self.key_retention(), now));
                match built {
                    Ok((chain, reads)) => held.backend.commit_open(chain).await.map(|done| (done, reads)),
                    Err(e) => {
                        held.backend.rollback_open().await;
                        Err(e)
                    }
                }
            }
            None if queued.is_empty() => {
                state.end("committed");
                return Ok(std::mem::take(&mut state.published));
            }
            // Never read: one write transaction, made again while BEGIN finds the lock taken.
            None => match self.connection().await {
                Ok(mut backend) => {
                    backend.run(|| queued::chain(&queued, None, self.sql(), self.key_retention(), self.now()?)).await
                }
                Err(e) => Err(e),
            },
        };
        match outcome {
            Ok((done, reads)) => {
                state.end("committed");
                let mut published = std::mem::take(&mut state.published);
                published.extend(self.published(&done, &reads.published)?);
                self.committed(&published);
                Ok(published)
            }
            Err(e) => {
                state.end("rolled back after an error");
                Err(e)
            }
        }
    }

    /// Ends the transaction keeping nothing of it. Nothing to do once it ended.
    pub(crate) async fn tx_rollback(&self, state: &mut TxState) {
        if let Some(held) = state.held.as_mut() {
            held.backend.rollback_open().await;
        }
        if state.is_live() {
            state.end("rolled back");
        }
    }

    fn published(&self, done: &[Done], reads: &[work::PublishRead]) -> Result<Vec<Published>> {
        reads.iter().map(|at| work::published(done, *at)).collect()
    }
}

/// Rolls back, on a runtime of its own, a transaction dropped while it held the connection
/// from async code (where a drop cannot wait). Without a runtime, the backend rolls it back
/// before its next call (`Backend::rollback_open`).
pub(crate) fn roll_back_dropped(state: &mut TxState) {
    if let Some(mut held) = state.held.take() {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { held.backend.rollback_open().await });
        }
    }
}
