//! Publishing inside the application's transaction from C (docs/queue.md, "Publishing
//! inside a transaction"): `harel_transport_begin` hands out a `harel_tx`; `harel_tx_execute`,
//! `harel_tx_query` and `harel_tx_publish` fill it; `harel_tx_commit` or
//! `harel_tx_rollback` end it; `harel_tx_free` frees it.
//! The transactions open through the C ABI, each with the transport it runs on: looked up
//! by `harel_tx` handle (transaction.rs), and rolled back when their transport closes
//! (transport.rs), so neither of those modules needs the other for it.

use std::ffi::{c_char, c_int};

use super::boundary::{boundary, boundary_out};
use super::unwind::boundary_value;
use super::delivery::{self, harel_delivery};
use super::error::harel_error;
use super::handle::harel_transport;
use super::headers::{self, harel_header};
use super::message;
use super::ownership::{try_ref_from_ptr, Registry};
use super::status::harel_status::{self, HAREL_OK};
use super::values::{self, harel_rows, harel_value};
use super::{args, publish};
use crate::error::{Error, Result};
use crate::transaction::TxState;
use crate::{Message, Transport};

/// An application's transaction on the queue's database (opaque): its own statements and
/// its publishes, committed together or not at all. Made by `harel_transport_begin`,
/// freed by `harel_tx_free`.
///
/// `harel_tx_execute` and `harel_tx_publish` queue their work; it is sent, in order, with
/// the next `harel_tx_query` or with `harel_tx_commit`. A transaction with no query is one
/// write transaction made by its commit (on a libSQL server one request, the write lock
/// held for its statements alone). The first query begins it, and from then it holds the
/// transport's connection and the database's write lock until it ends: keep it short (on
/// a server the lock is held across the network, and a transaction that holds it for 5 s
/// while another writer waits is rolled back by the server: the next call fails with
/// HAREL_ERR_DATABASE and nothing of it is applied). Any error of a statement, a publish
/// or the commit ends it, rolled back; so does `harel_tx_free` before a commit, and
/// closing its transport. Once ended, every call but `harel_tx_rollback` and
/// `harel_tx_free` fails with HAREL_ERR_ARGUMENT naming why.
///
/// A transport runs one transaction at a time: while one holds its connection, the
/// transport's other calls (and a second transaction's query or commit) wait for it, up
/// to the busy timeout, then fail with HAREL_ERR_BUSY. So inside a transaction, publish
/// with `harel_tx_publish`, not `harel_transport_publish`, and do not nest transactions of
/// one transport. Use a transaction from one thread at a time (calls on it from several
/// threads are serialized). A stale handle is refused, and a second free does nothing.
pub struct harel_tx {
    _private: [u8; 0],
}

/// Begins a transaction on `t`. Nothing is sent, and no lock taken, before its first
/// query or its commit. On HAREL_OK `*out` is the caller's, freed with `harel_tx_free`.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL).
#[no_mangle]
pub extern "C" fn harel_transport_begin(
    t: *mut harel_transport,
    out: *mut *mut harel_tx,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        let t: &Transport = try_ref_from_ptr!(t);
        let slot = Slot { transport: t as *const Transport as usize, state: TxState::default() };
        *out = TRANSACTIONS.add(std::sync::Mutex::new(slot));
        Ok(HAREL_OK)
    })
}

/// Queues an application statement `sql` (one statement, no rows wanted) with its
/// `n_params` parameters (`?1`, `?2`, ... or `?`; `params` may be NULL when 0). It runs,
/// in order, with the next query or the commit; an error of the statement (a syntax
/// error, a constraint) fails that call and ends the transaction. Its rows-changed count
/// is not reported: when it matters, run it with RETURNING through harel_tx_query.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (tx NULL, freed or ended; sql NULL, empty or not
/// UTF-8; a parameter of an unknown type, a NULL text, a NULL blob with a size, a REAL
/// that is not finite; nothing is queued and the transaction goes on).
#[no_mangle]
pub extern "C" fn harel_tx_execute(
    tx: *mut harel_tx,
    sql: *const c_char,
    params: *const harel_value,
    n_params: usize,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        on_tx(tx, |t, state| {
            // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
            let (sql, params) = unsafe { (args::string(sql, "sql")?, values::params(params, n_params)?) };
            t.tx_execute(state, sql, params)
        })?;
        Ok(HAREL_OK)
    })
}

/// Sends what was queued and runs `sql` (a SELECT, or a write with RETURNING) inside the
/// transaction; on HAREL_OK `*out` holds its rows (the caller's, freed with
/// `harel_rows_free`). The first query begins the transaction: from then it holds the
/// connection and the write lock until it ends (see harel_tx).
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (as harel_tx_execute, or out NULL; the
/// transaction goes on); HAREL_ERR_DATABASE (an error of this or of a queued statement or
/// publish: the transaction is rolled back and ended); HAREL_ERR_BUSY (the write lock, or
/// the transport's connection held by another of its transactions, was not had within
/// the busy timeout; nothing ran and the transaction is ended); HAREL_ERR_CONNECT (the
/// server could not be reached or the transaction's stream is gone: rolled back, ended).
#[no_mangle]
pub extern "C" fn harel_tx_query(
    tx: *mut harel_tx,
    sql: *const c_char,
    params: *const harel_value,
    n_params: usize,
    out: *mut *mut harel_rows,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        let rows = on_tx(tx, |t, state| {
            // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
            let (sql, params) = unsafe { (args::string(sql, "sql")?, values::params(params, n_params)?) };
            t.tx_query(state, sql, params)
        })?;
        *out = values::hand_out(rows);
        Ok(HAREL_OK)
    })
}

/// Queues a publish, with the arguments and delivery options of
/// harel_transport_publish_with (`key` NULL: none; `delay` 0 and `not_before` -1: at
/// once). They are checked now; what became of the message (its seq, whether its key made
/// it a duplicate) comes back from harel_tx_commit. After the commit the message is
/// delivered as any other, and this process's waiting claims wake for it.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (tx NULL, freed or ended, or an argument refused
/// as harel_transport_publish_with refuses it; nothing is queued and the transaction goes
/// on); HAREL_ERR_DATABASE (a key given and the queue lacks the keys table; the queue
/// opened as it is, lacking part of the schema).
#[no_mangle]
pub extern "C" fn harel_tx_publish(
    tx: *mut harel_tx,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    key: *const c_char,
    delay: f64,
    not_before: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    harel_tx_publish_headers(
        tx,
        group_id,
        event_json,
        priority,
        routing_key,
        std::ptr::null(),
        0,
        key,
        delay,
        not_before,
        err,
    )
}

/// `harel_tx_publish` with headers, under harel_transport_publish_headers' rules (checked
/// now: a bad header is HAREL_ERR_ARGUMENT, nothing is queued and the transaction goes on).
#[no_mangle]
pub extern "C" fn harel_tx_publish_headers(
    tx: *mut harel_tx,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    headers: *const harel_header,
    n_headers: usize,
    key: *const c_char,
    delay: f64,
    not_before: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    harel_tx_publish_delivery(
        tx,
        group_id,
        event_json,
        priority,
        routing_key,
        headers,
        n_headers,
        &delivery::of(key, delay, not_before),
        err,
    )
}

/// `harel_tx_publish_headers` with the delivery options at `delivery` (NULL: none), under
/// harel_transport_publish_delivery's rules, checked now. A unique key's duplicate is an
/// answer, never an error: the transaction's statements commit with it, and
/// harel_tx_commit's `duplicates` say what became of the message (a harel_published).
///
/// Returns as harel_tx_publish_headers; HAREL_ERR_ARGUMENT also for options
/// harel_transport_publish_delivery refuses (nothing is queued and the transaction goes
/// on).
#[no_mangle]
pub extern "C" fn harel_tx_publish_delivery(
    tx: *mut harel_tx,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    headers: *const harel_header,
    n_headers: usize,
    delivery: *const harel_delivery,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        on_tx(tx, |t, state| {
            // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
            let (m, headers, options) = unsafe {
                (
                    message::message(group_id, event_json, priority, routing_key)?,
                    headers::read(headers, n_headers)?,
                    delivery::read(delivery, "")?,
                )
            };
            t.tx_publish(state, Message { headers: headers.as_ref(), ..m }, options)
        })?;
        Ok(HAREL_OK)
    })
}

/// Sends what was queued and commits: the application's statements and the messages, all
/// of them or (on any error) none. `seqs` and `duplicates` are NULL or `n` long; the
/// first min(n, published) entries receive each published message's seq and what became
/// of it, a harel_published: stored (0), a duplicate (1) or, for a unique key's publish,
/// replaced (2); in the order of the harel_tx_publish calls. `n_published` (may be NULL)
/// receives how many were published. The transaction is ended either way.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (tx NULL, freed or ended); HAREL_ERR_DATABASE
/// (a statement, a publish or the COMMIT failed: nothing was kept; also sqld's 5 s rule);
/// HAREL_ERR_BUSY (the write lock was not had within the busy timeout: nothing was kept);
/// HAREL_ERR_CONNECT (the server could not be reached: nothing was kept; or its answer to
/// the COMMIT was lost: the message says the commit may have been applied — publish with
/// keys to make a retry safe).
#[no_mangle]
pub extern "C" fn harel_tx_commit(
    tx: *mut harel_tx,
    seqs: *mut i64,
    duplicates: *mut c_int,
    n: usize,
    n_published: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        let published = on_tx(tx, |t, state| t.tx_commit(state))?;
        // SAFETY: each array is NULL or `n` long, per the contract.
        unsafe { publish::hand_out(&published[..n.min(published.len())], seqs, duplicates) };
        // SAFETY: NULL or valid for one write.
        if let Some(count) = unsafe { n_published.as_mut() } {
            *count = published.len();
        }
        Ok(HAREL_OK)
    })
}

/// Ends the transaction, keeping nothing of it. On a transaction already ended
/// (committed, rolled back, failed, its transport closed) it does nothing and returns
/// HAREL_OK, so a cleanup path may always call it.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (tx NULL, or not a live handle).
#[no_mangle]
pub extern "C" fn harel_tx_rollback(tx: *mut harel_tx, err: *mut *mut harel_error) -> harel_status {
    boundary(err, || {
        let closed = on_tx(tx, |t, state| {
            t.tx_rollback(state);
            Ok(())
        });
        match closed {
            Err(Error::Argument(m)) if m.contains("transport was closed") => Ok(HAREL_OK),
            other => other.map(|()| HAREL_OK),
        }
    })
}

/// Frees the transaction, rolling it back first unless it ended. NULL does nothing; so
/// does a transaction freed already. Free every transaction before closing its
/// transport, or let the close roll them back (the handles then only need freeing).
#[no_mangle]
pub extern "C" fn harel_tx_free(tx: *mut harel_tx) {
    boundary_value((), || {
        let _ = on_tx(tx, |t, state| {
            if state.is_live() {
                t.tx_rollback(state);
            }
            Ok(())
        });
        TRANSACTIONS.remove(tx);
    })
}

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
