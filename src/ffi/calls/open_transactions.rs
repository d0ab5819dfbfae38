//! The transactions open through the C ABI, each with the transport it runs on: looked up
//! by `harel_tx` handle (transaction.rs), and rolled back when their transport closes
//! (transport.rs), so neither of those modules needs the other for it.

use super::args;
use super::ownership::Registry;
use crate::error::{Error, Result};
use crate::transaction::TxState;
use crate::Transport;

/// A transaction and the transport it runs on (0 once that transport was closed).
pub(crate) struct Slot {
    pub transport: usize,
    pub state: TxState,
}

/// Transactions are looked up by id: a freed one is refused, a second free does nothing.
pub(crate) static TRANSACTIONS: Registry<std::sync::Mutex<Slot>> = Registry::new();

/// Runs `body` on the live transaction `tx` and its transport.
pub(crate) fn on_tx<C, T>(tx: *const C, body: impl FnOnce(&Transport, &mut TxState) -> Result<T>) -> Result<T> {
    if tx.is_null() {
        return Err(args::null("tx"));
    }
    let slot = TRANSACTIONS
        .get(tx)
        .ok_or_else(|| Error::Argument("tx is not a live transaction (freed already, or never made)".into()))?;
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if slot.transport == 0 {
        return Err(Error::Argument("the transaction's transport was closed: it was rolled back".into()));
    }
    // SAFETY: a live transport (closing it sets `transport` to 0 under this lock first,
    // `end_transactions_of`), borrowed for the call.
    let transport = unsafe { &*(slot.transport as *const Transport) };
    body(transport, &mut slot.state)
}

/// Rolls back every transaction of the transport at `t`, which is closing, and makes
/// their handles refuse further use.
pub(crate) fn end_transactions_of(t: &Transport) {
    let at = t as *const Transport as usize;
    for slot in TRANSACTIONS.values() {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.transport == at {
            t.tx_rollback(&mut slot.state);
            slot.transport = 0;
        }
    }
}
