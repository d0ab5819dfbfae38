//! The blocking face of a transaction: `Transport::begin` and `Transport::transaction`.

use libsql::Value;

use super::TxState;
use crate::chain::Row;
use crate::error::{Error, Result};
use crate::transport::Transport;
use crate::types::{Delivery, Message, Published};

/// An application's transaction on the queue's database, for threads (see `AsyncTx`).
/// Dropped unfinished, or left by a panic, it is rolled back.
pub struct Tx<'t> {
    transport: &'t Transport,
    state: TxState,
}

impl Transport {
    /// See [`crate::AsyncTransport::begin`].
    pub fn begin(&self) -> Tx<'_> {
        Tx { transport: self, state: TxState::default() }
    }

    /// See [`crate::AsyncTransport::transaction`].
    pub fn transaction<T, E: From<Error>>(
        &self,
        work: impl FnOnce(&mut Tx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<(T, Vec<Published>), E> {
        let mut tx = self.begin();
        let value = work(&mut tx)?;
        Ok((value, tx.commit()?))
    }

    /// The calls of a transaction kept apart from the transport (the C ABI's `harel_tx`).
    pub(crate) fn tx_execute(&self, state: &mut TxState, sql: &str, params: Vec<Value>) -> Result<()> {
        self.inner().single().and_then(|one| one.tx_execute(state, sql, params)).map_err(|e| e.during("execute"))
    }

    pub(crate) fn tx_query(&self, state: &mut TxState, sql: &str, params: Vec<Value>) -> Result<Vec<Row>> {
        self.block_on(async { self.inner().single()?.tx_query(state, sql, params).await }).map_err(|e| e.during("query"))
    }

    pub(crate) fn tx_publish(&self, state: &mut TxState, message: Message<'_>, delivery: Delivery<'_>) -> Result<()> {
        self.inner().tx_publish(state, message, delivery).map_err(|e| e.during("publish"))
    }

    pub(crate) fn tx_commit(&self, state: &mut TxState) -> Result<Vec<Published>> {
        self.block_on(self.inner().tx_commit(state)).map_err(|e| e.during("commit"))
    }

    pub(crate) fn tx_rollback(&self, state: &mut TxState) {
        if let Ok(one) = self.inner().single() {
            self.block_on(one.tx_rollback(state));
        }
    }
}

impl Tx<'_> {
    /// See [`crate::AsyncTx::execute`].
    pub fn execute(&mut self, sql: &str, params: impl IntoIterator<Item = Value>) -> Result<()> {
        self.transport.tx_execute(&mut self.state, sql, params.into_iter().collect())
    }

    /// See [`crate::AsyncTx::query`].
    pub fn query(&mut self, sql: &str, params: impl IntoIterator<Item = Value>) -> Result<Vec<Row>> {
        self.transport.tx_query(&mut self.state, sql, params.into_iter().collect())
    }

    /// See [`crate::AsyncTx::publish`].
    pub fn publish(&mut self, message: Message<'_>) -> Result<()> {
        self.publish_with(message, Delivery::default())
    }

    /// See [`crate::AsyncTx::publish_with`].
    pub fn publish_with(&mut self, message: Message<'_>, delivery: Delivery<'_>) -> Result<()> {
        self.transport.tx_publish(&mut self.state, message, delivery)
    }

    /// See [`crate::AsyncTx::commit`].
    pub fn commit(mut self) -> Result<Vec<Published>> {
        self.transport.tx_commit(&mut self.state)
    }

    /// See [`crate::AsyncTx::rollback`].
    pub fn rollback(mut self) {
        self.transport.tx_rollback(&mut self.state);
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.state.is_live() {
            self.transport.tx_rollback(&mut self.state);
        }
    }
}
