//! `harel_transport`: open, publish, claim, ack, nack, close.

use std::ffi::c_char;

use super::args;
use super::error::harel_error;
use super::lease::harel_lease;
use super::message::{self, harel_message};
use super::options::harel_options;
use super::ownership::{
    ref_from_ptr, take_from_ptr, to_boxed_mut_ptr, try_mut_from_ptr, try_ref_from_ptr, Boxed, Castable,
};
use super::status::harel_status::{self, HAREL_EMPTY, HAREL_OK};
use super::{boundary, boundary_out};
use crate::{Lease, Options, Transport};

/// An open queue (opaque). Made by `harel_transport_open`, freed by
/// `harel_transport_close`. One handle may be used from several threads at once (each
/// call reports its own error through its `err`); its calls run one at a time, except
/// that publishes (`harel_transport_publish`,
/// `harel_transport_publish_many`) made from several threads while one of them commits
/// are written together in the next transaction: one commit (one fsync at synchronous
/// FULL) for all of them, each call still returning its own status, and each returning
/// only once its messages are committed. To claim in parallel open one handle per thread
/// or process on the same database. Never close a handle while another thread is using it.
pub struct harel_transport {
    _private: [u8; 0],
}

impl Castable for harel_transport {
    type Ownership = Boxed;
    type RustType = Transport;
}

/// Runs a call on handle `t` inside the boundary.
pub(crate) fn on_handle(
    t: *mut harel_transport,
    err: *mut *mut harel_error,
    body: impl FnOnce(&Transport) -> crate::Result<harel_status>,
) -> harel_status {
    boundary(err, || body(try_ref_from_ptr!(t)))
}

/// Opens the queue at `database`: a file path (a local libSQL file, WAL journal),
/// ":memory:", a "libsql://", "http://" or "https://" URL (a libSQL server), or a path
/// with `harel_options_set_sync_url` (an embedded replica of that server). `options` may
/// be NULL for the defaults; it is only read during the call.
///
/// On HAREL_OK `*out` is a new handle the caller owns (free it with
/// `harel_transport_close`); on error `*out` is NULL and, when `err` is not NULL, `*err`
/// is the error (see harel_error).
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (database or out NULL, database empty or not
/// UTF-8); HAREL_ERR_DATABASE (the file can't be opened or isn't a database, a table is
/// missing with create_schema off); HAREL_ERR_BUSY (another process held the write lock
/// past the busy timeout while the schema was set up); HAREL_ERR_CONNECT (a server can't
/// be reached within seconds or refused the token).
#[no_mangle]
pub extern "C" fn harel_transport_open(
    database: *const c_char,
    options: *const harel_options,
    out: *mut *mut harel_transport,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let database = unsafe { args::string(database, "database") }?;
        *out = to_boxed_mut_ptr(Transport::open(database, &unsafe { c_options(options) })?);
        Ok(HAREL_OK)
    })
}

/// The options an open through the C ABI runs with: `options`' (NULL: the defaults), and
/// the other-SQLite check, since this library's SQLite is its own there (its symbols are
/// hidden): a lock of this process on the file that no transport holds is another copy's.
///
/// # Safety
/// `options` is NULL or a live `harel_options`.
pub(crate) unsafe fn c_options(options: *const harel_options) -> Options {
    let mut options = unsafe { ref_from_ptr(options) }.map_or_else(Options::new, Options::clone);
    options.refuse_other_sqlite = true;
    options
}

/// Appends `event_json` (any valid JSON text, stored byte for byte) to the FIFO of
/// `group_id`. The first publish into a group fixes its `priority` (0..4) and
/// `routing_key` (NULL: none); later publishes leave both as they are. One transaction:
/// the message and its group, or neither. Strings are copied.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t, group_id or event_json NULL; a string not
/// UTF-8; group_id or routing_key empty; event_json not JSON; priority outside 0..4);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_publish(
    t: *mut harel_transport,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (group_id, event_json, routing_key) = unsafe {
            (
                args::string(group_id, "group_id")?,
                args::string(event_json, "event_json")?,
                args::optional_string(routing_key, "routing_key")?,
            )
        };
        t.publish(group_id, event_json, priority, routing_key)?;
        Ok(HAREL_OK)
    })
}

/// Appends `n_messages` messages, in array order, in one transaction: all of them (and
/// the groups they create) or none. One commit for the batch: at synchronous FULL one
/// fsync instead of one per message. Each element holds what `harel_transport_publish`
/// takes, under the same rules; within a group the messages keep their order in the
/// array, and the first message into a group (in this batch or before it) fixes its
/// priority and routing key. Every message is checked before anything is written: one bad
/// message rejects the whole batch, and the error message names it by index
/// ("messages[3].event_json is not valid JSON: ...").
///
/// `messages` may be NULL only when `n_messages` is 0; an empty batch returns HAREL_OK and
/// writes nothing. The strings are copied; the array is only read during the call and
/// stays the caller's.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL; messages NULL with n_messages > 0; in any
/// element: group_id or event_json NULL, a string not UTF-8, group_id or routing_key
/// empty, event_json not JSON, priority outside 0..4; nothing was written);
/// HAREL_ERR_BUSY (nothing was written); HAREL_ERR_DATABASE (the batch was rolled back:
/// nothing was written); HAREL_ERR_CONNECT (a libSQL server could not be reached or did
/// not answer; if it was the commit that got no answer, the batch may have been applied).
#[no_mangle]
pub extern "C" fn harel_transport_publish_many(
    t: *mut harel_transport,
    messages: *const harel_message,
    n_messages: usize,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        t.publish_many(&unsafe { message::batch(messages, n_messages) }?)?;
        Ok(HAREL_OK)
    })
}

/// Leases the head (oldest message) of the group that has waited longest among those
/// with nothing in flight, priority >= `min_priority` (0..4) and, when `n_routing_keys`
/// is above 0, a routing key among `routing_keys`, to `worker_id` until now +
/// `visibility` seconds. `routing_keys` may be NULL when `n_routing_keys` is 0 (any group).
///
/// On HAREL_OK `*out` is a lease the caller owns (free it with `harel_lease_free`); on
/// HAREL_EMPTY (nothing deliverable now) and on error `*out` is NULL.
///
/// Returns HAREL_OK; HAREL_EMPTY; HAREL_ERR_ARGUMENT (t, worker_id or out NULL; a string
/// not UTF-8; worker_id empty or "__parked__"; visibility not finite or <= 0;
/// min_priority outside 0..4; routing_keys NULL with n_routing_keys > 0, or an element
/// NULL or empty; the clock returned a non-finite time); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_claim(
    t: *mut harel_transport,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    out: *mut *mut harel_lease,
    err: *mut *mut harel_error,
) -> harel_status {
    claim_into(out, t, err, |t, out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (worker_id, keys) = unsafe {
            (args::string(worker_id, "worker_id")?, args::strings(routing_keys, n_routing_keys, "routing_keys")?)
        };
        lease_out(out, t.claim(worker_id, visibility, min_priority, &keys)?)
    })
}

/// The frame of the calls that hand out a lease: `*out` is NULL on every error (a NULL
/// `t` included) and on HAREL_EMPTY.
pub(crate) fn claim_into(
    out: *mut *mut harel_lease,
    t: *mut harel_transport,
    err: *mut *mut harel_error,
    body: impl FnOnce(&Transport, &mut *mut harel_lease) -> crate::Result<harel_status>,
) -> harel_status {
    boundary_out(out, err, |out| body(try_ref_from_ptr!(t), out))
}

/// Hands a claimed lease to the caller: HAREL_OK with `*out` set, or HAREL_EMPTY.
pub(crate) fn lease_out(out: &mut *mut harel_lease, claimed: Option<Lease>) -> crate::Result<harel_status> {
    match claimed {
        Some(lease) => {
            *out = harel_lease::hand_out(lease);
            Ok(HAREL_OK)
        }
        None => Ok(HAREL_EMPTY),
    }
}

/// Finishes a lease: deletes its message (and the group's row when it was the last).
/// Reads only lease->seq, lease->group_id (lease->group_id_len bytes) and
/// lease->worker_id; the lease stays the caller's to free.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (the message is gone, or no longer leased to
/// this worker: acked or nacked already, or its lease lapsed and another worker claimed
/// it; nothing changed); HAREL_ERR_ARGUMENT (t or lease NULL, lease->group_id or
/// lease->worker_id NULL or not UTF-8, lease->group_id_len 0, lease->worker_id empty or
/// "__parked__"); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_ack(
    t: *mut harel_transport,
    lease: *const harel_lease,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_ref_from_ptr!(lease).to_lease()?;
        t.ack(&lease)?;
        Ok(HAREL_OK)
    })
}

/// Acks `lease` and claims the next message for `worker_id`, in one transaction: a
/// worker loop with one commit per message instead of two (at synchronous FULL, half the
/// fsyncs). If the ack fails, nothing is claimed. The claim's arguments and `*out` are as
/// for `harel_transport_claim`; `lease` is read as by `harel_transport_ack` and stays the
/// caller's to free.
///
/// Returns HAREL_OK (acked, and `*out` is the next lease); HAREL_EMPTY (acked, nothing
/// deliverable); HAREL_ERR_LEASE_LOST (not acked, nothing claimed); HAREL_ERR_ARGUMENT
/// (as for ack and claim); HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_ack_and_claim(
    t: *mut harel_transport,
    lease: *const harel_lease,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    out: *mut *mut harel_lease,
    err: *mut *mut harel_error,
) -> harel_status {
    claim_into(out, t, err, |t, out| {
        let lease = try_ref_from_ptr!(lease).to_lease()?;
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (worker_id, keys) = unsafe {
            (args::string(worker_id, "worker_id")?, args::strings(routing_keys, n_routing_keys, "routing_keys")?)
        };
        lease_out(out, t.ack_and_claim(&lease, worker_id, visibility, min_priority, &keys)?)
    })
}

/// The lease now runs to now + `visibility` seconds (finite, > 0), and `lease->lock_expiry`
/// is set to the new end; nothing else of the lease is written. Reads `seq`, `group_id`
/// (`group_id_len` bytes) and `worker_id` as ack does. A handler that runs longer than its
/// visibility extends its lease while it works; the group stays out of claims until the
/// new end.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (acked or nacked already, or the lease lapsed and
/// another worker claimed the message; a lapsed lease no one claimed since is still this
/// worker's and is extended; on LEASE_LOST nothing changed); HAREL_ERR_ARGUMENT (as for
/// ack, or visibility not finite or <= 0); HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_extend(
    t: *mut harel_transport,
    lease: *mut harel_lease,
    visibility: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_mut_from_ptr!(lease);
        let mut extended = lease.to_lease()?;
        t.extend(&mut extended, visibility)?;
        lease.lock_expiry = extended.lock_expiry;
        Ok(HAREL_OK)
    })
}

/// Gives a leased message back: `delay` 0 makes it claimable at once; `delay` > 0 parks
/// it, blocking its group, for `delay` seconds. The lease is over either way. Reads only
/// lease->seq, lease->group_id (lease->group_id_len bytes) and lease->worker_id; the lease
/// stays the caller's to free.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (as for ack; nothing changed);
/// HAREL_ERR_ARGUMENT (as for ack, or delay not finite or < 0); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_nack(
    t: *mut harel_transport,
    lease: *const harel_lease,
    delay: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_ref_from_ptr!(lease).to_lease()?;
        t.nack(&lease, delay)?;
        Ok(HAREL_OK)
    })
}

/// Closes the connection and frees the handle; closing cannot fail. Never use `t` again,
/// and never close a handle while another thread is using it. NULL does nothing. Its
/// transactions still open are rolled back; their handles then refuse every call but
/// harel_tx_rollback and harel_tx_free.
#[no_mangle]
pub extern "C" fn harel_transport_close(t: *mut harel_transport) {
    super::boundary_value((), || {
        // SAFETY: NULL or from harel_transport_open, closed once (this function's contract).
        // Its transactions end first, while it is where they point.
        if let Some(transport) = unsafe { ref_from_ptr(t) } {
            super::open_transactions::end_transactions_of(transport);
        }
        // SAFETY: as above.
        if let Some(t) = unsafe { take_from_ptr(t) } {
            t.close();
        }
    })
}
