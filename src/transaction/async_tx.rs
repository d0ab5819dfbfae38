//! The async face of a transaction: `AsyncTransport::begin` and `AsyncTransport::transaction`.

use libsql::Value;

use super::{roll_back_dropped, TxState};
use crate::async_transport::AsyncTransport;
use crate::chain::Row;
use crate::error::{Error, Result};
use crate::types::{Delivery, Message, Published};

/// An application's transaction on the queue's database (see the module's docs, and
/// docs/queue.md "Publishing inside a transaction"): statements and publishes committed
/// together, or nothing of them. Dropped unfinished, it is rolled back.
pub struct AsyncTx<'t> {
    transport: &'t AsyncTransport,
    state: TxState,
}

impl AsyncTransport {
    /// Queues a publish in `state`'s transaction, in a span when traced: the span ends
    /// with the commit.
    pub(crate) fn tx_publish(&self, state: &mut TxState, message: Message<'_>, delivery: Delivery<'_>) -> Result<()> {
        let one = self.single()?;
        let Some((span, headers)) = self.telemetry.publishing(&[message]) else {
            return one.tx_publish(state, message, delivery);
        };
        let queued = one.tx_publish(state, Message { headers: Some(&headers[0]), ..message }, delivery);
        match &queued {
            Ok(()) => state.spans.push(span),
            Err(_) => self.telemetry.published(Some(span), &queued, &[]),
        }
        queued
    }

    /// Commits `state`'s transaction, ending its publishes' spans.
    pub(crate) async fn tx_commit(&self, state: &mut TxState) -> Result<Vec<Published>> {
        let spans = std::mem::take(&mut state.spans);
        let committed = match self.single() {
            Ok(one) => one.tx_commit(state).await,
            Err(e) => Err(e),
        };
        let seqs: Vec<i64> = committed.iter().flatten().map(|p| p.seq).collect();
        for (i, span) in spans.into_iter().enumerate() {
            self.telemetry.published(Some(span), &committed, seqs.get(i..=i).unwrap_or_default());
        }
        committed
    }

    /// Begins a transaction; nothing is sent before its first `query` or its `commit`.
    pub fn begin(&self) -> AsyncTx<'_> {
        AsyncTx { transport: self, state: TxState::default() }
    }

    /// Runs `work` in a transaction and commits it when `work` returns `Ok`; rolls it back
    /// when `work` fails (its error comes back) or panics. The value `work` returned and
    /// what became of each message it published, in order.
    pub async fn transaction<T, E: From<Error>>(
        &self,
        work: impl AsyncFnOnce(&mut AsyncTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Vec<Published>), E> {
        let mut tx = self.begin();
        match work(&mut tx).await {
            Ok(value) => Ok((value, tx.commit().await?)),
            Err(e) => {
                tx.rollback().await;
                Err(e)
            }
        }
    }
}

impl AsyncTx<'_> {
    /// Queues an application statement (no rows; its rows-changed count is not reported: ask
    /// with `query` and RETURNING when it matters). It runs, in order, with the next `query`
    /// or the commit; an error of its own ends the transaction there. `Error::Argument`
    /// now for empty SQL or a float parameter that is not finite.
    pub fn execute(&mut self, sql: &str, params: impl IntoIterator<Item = Value>) -> Result<()> {
        self.transport.single()?.tx_execute(&mut self.state, sql, params.into_iter().collect())
    }

    /// Sends what was queued and runs `sql`, a read (or a write with RETURNING), inside the
    /// transaction; its rows. The first one begins the transaction, which from then holds
    /// the write lock until it ends (on a server, across the network: mind the 5 s rule).
    pub async fn query(&mut self, sql: &str, params: impl IntoIterator<Item = Value>) -> Result<Vec<Row>> {
        self.transport.single()?.tx_query(&mut self.state, sql, params.into_iter().collect()).await
    }

    /// Queues a publish, as `publish` would write it; its arguments are checked now.
    pub fn publish(&mut self, message: Message<'_>) -> Result<()> {
        self.publish_with(message, Delivery::default())
    }

    /// Queues a publish with delivery options, as `publish_with` would write it; what
    /// became of it comes back from the commit.
    pub fn publish_with(&mut self, message: Message<'_>, delivery: Delivery<'_>) -> Result<()> {
        self.transport.tx_publish(&mut self.state, message, delivery)
    }

    /// Sends what was queued and commits; what became of each message published, in order.
    pub async fn commit(mut self) -> Result<Vec<Published>> {
        self.transport.tx_commit(&mut self.state).await
    }

    /// Ends the transaction keeping nothing of it.
    pub async fn rollback(mut self) {
        if let Ok(one) = self.transport.single() {
            one.tx_rollback(&mut self.state).await;
        }
    }
}

impl Drop for AsyncTx<'_> {
    fn drop(&mut self) {
        roll_back_dropped(&mut self.state);
    }
}
