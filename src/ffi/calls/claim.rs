//! What hands out leases, from C: `harel_transport_claim`, its waiting and batch forms,
//! `harel_transport_ack_and_claim` and `_many`; and the two ways to end a wait early, a
//! `harel_cancel` (one call's wait) and `harel_transport_interrupt` (every wait on a handle).

use std::ffi::c_char;

use super::boundary::boundary_out;
use super::unwind::boundary_value;
use super::error::harel_error;
use super::handle::{harel_transport, on_handle};
use super::lease::{harel_lease, leases_of, outcomes_of, write_outcomes};
use super::ownership::{free_box, ref_from_ptr, to_boxed_mut_ptr, try_ref_from_ptr, Boxed, Castable};
use super::status::harel_status::{self, HAREL_EMPTY, HAREL_OK};
use super::args;
use crate::error::{Error, Result};
use crate::waiting::wait::{self, Cancel, Wait};
use crate::{Lease, Transport};

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
        let (worker_id, keys) = unsafe { args::claimer(worker_id, routing_keys, n_routing_keys) }?;
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
        let (worker_id, keys) = unsafe { args::claimer(worker_id, routing_keys, n_routing_keys) }?;
        lease_out(out, t.ack_and_claim(&lease, worker_id, visibility, min_priority, &keys)?)
    })
}

/// Leases up to `max` messages (1..1000), each the head of a different group, in the
/// order `harel_transport_claim` would hand them out one after another, in one
/// transaction; the claim's arguments and rules are those of `harel_transport_claim`.
/// While nothing is deliverable it waits as `harel_transport_claim_wait` does (`wait`
/// seconds, 0: not at all; `cancel` may be NULL).
///
/// `leases_out` is the caller's array of at least `max` elements: on HAREL_OK its first
/// `*n_out` (1..max) elements are leases the caller owns, each freed with
/// `harel_lease_free`; the rest of the array is not written. On HAREL_EMPTY and on error
/// `*n_out` is 0.
///
/// Returns HAREL_OK; HAREL_EMPTY (nothing came within the wait); HAREL_ERR_ARGUMENT (as
/// for claim, or leases_out or n_out NULL, max outside 1..1000, wait not finite or < 0);
/// HAREL_ERR_INTERRUPTED (see harel_transport_claim_wait); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_claim_many(
    t: *mut harel_transport,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    max: usize,
    wait: f64,
    cancel: *const harel_cancel,
    leases_out: *mut *mut harel_lease,
    n_out: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    batch_into(n_out, t, err, |t, n_out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let ((worker_id, keys), wait) =
            unsafe { (args::claimer(worker_id, routing_keys, n_routing_keys)?, wait_of(wait, cancel)?) };
        let out = out_array(leases_out)?;
        // SAFETY: `out` holds at least `max` elements, per the contract.
        unsafe { leases_into(out, n_out, t.claim_many(worker_id, visibility, min_priority, &keys, max, &wait)?) }
    })
}

/// `harel_transport_ack_many` and then `harel_transport_claim_many` without waiting, in
/// one transaction: a batch worker's loop with one commit per batch. `outcomes` as for
/// ack_many (a lost lease does not stop the claim); `leases_out` and `*n_out` as for
/// claim_many.
///
/// Returns HAREL_OK (acked, and `*n_out` leases claimed); HAREL_EMPTY (acked, nothing
/// deliverable); HAREL_ERR_ARGUMENT (as for both calls: nothing acked or claimed);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (nothing acked or claimed).
#[no_mangle]
pub extern "C" fn harel_transport_ack_and_claim_many(
    t: *mut harel_transport,
    leases: *const *const harel_lease,
    n_leases: usize,
    outcomes: *mut harel_status,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    max: usize,
    leases_out: *mut *mut harel_lease,
    n_out: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    batch_into(n_out, t, err, |t, n_out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (leases, outcomes, (worker_id, keys)) = unsafe {
            (
                leases_of(leases, n_leases)?,
                outcomes_of(outcomes, n_leases)?,
                args::claimer(worker_id, routing_keys, n_routing_keys)?,
            )
        };
        let out = out_array(leases_out)?;
        let (acked, claimed) = t.ack_and_claim_many(&leases, worker_id, visibility, min_priority, &keys, max)?;
        write_outcomes(outcomes, acked);
        // SAFETY: `out` holds at least `max` elements, per the contract.
        unsafe { leases_into(out, n_out, claimed) }
    })
}

/// The frame of the calls that hand out leases into the caller's array: `*n_out` is set to
/// 0 first thing, before `t` and `err` are looked at, so it is 0 on every error (as `*out`
/// is for the single claims) and on HAREL_EMPTY.
fn batch_into(
    n_out: *mut usize,
    t: *mut harel_transport,
    err: *mut *mut harel_error,
    body: impl FnOnce(&Transport, &mut usize) -> Result<harel_status>,
) -> harel_status {
    // SAFETY: the caller passes NULL or a pointer valid for writes, per every contract.
    let n_out = unsafe { n_out.as_mut() }.map(|n| {
        *n = 0;
        n
    });
    on_handle(t, err, |t| body(t, n_out.ok_or_else(|| Error::Argument("n_out is NULL".into()))?))
}

fn out_array(leases_out: *mut *mut harel_lease) -> Result<*mut *mut harel_lease> {
    if leases_out.is_null() {
        return Err(Error::Argument("leases_out is NULL".into()));
    }
    Ok(leases_out)
}

/// # Safety
/// `out` holds at least `leases.len()` elements (no more than the call's `max`).
unsafe fn leases_into(out: *mut *mut harel_lease, n_out: &mut usize, leases: Vec<Lease>) -> Result<harel_status> {
    if leases.is_empty() {
        return Ok(HAREL_EMPTY);
    }
    for (i, lease) in leases.into_iter().enumerate() {
        // SAFETY: i < the array's length, per this function's contract.
        unsafe { *out.add(i) = harel_lease::hand_out(lease) };
        *n_out = i + 1;
    }
    Ok(HAREL_OK)
}

/// Ends the waits of the calls it is passed to (opaque). Made by `harel_cancel_new`, fired
/// with `harel_cancel_fire` from any thread (a signal handler excepted), freed with
/// `harel_cancel_free` once no call that was given it is still running. Firing is final:
/// a call given a fired cancel returns HAREL_ERR_INTERRUPTED at once.
pub struct harel_cancel {
    _private: [u8; 0],
}

impl Castable for harel_cancel {
    type Ownership = Boxed;
    type RustType = Cancel;
}

/// A new cancel, not fired; the caller owns it.
#[no_mangle]
pub extern "C" fn harel_cancel_new() -> *mut harel_cancel {
    boundary_value(std::ptr::null_mut(), || to_boxed_mut_ptr(Cancel::new()))
}

/// Fires `cancel`: every call waiting with it returns HAREL_ERR_INTERRUPTED, having
/// claimed nothing (a call that had already claimed returns its leases). Safe from any
/// thread, any number of times. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_cancel_fire(cancel: *const harel_cancel) {
    boundary_value((), || {
        // SAFETY: NULL or a live cancel from harel_cancel_new.
        if let Some(cancel) = unsafe { ref_from_ptr(cancel) } {
            cancel.fire();
        }
    })
}

/// Frees a cancel. NULL does nothing. Never free one that a running call was given.
#[no_mangle]
pub extern "C" fn harel_cancel_free(cancel: *mut harel_cancel) {
    // SAFETY: NULL or from harel_cancel_new, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(cancel) })
}

/// `harel_transport_claim`, waiting up to `wait` seconds (finite, >= 0; 0 looks once)
/// for something deliverable. It returns as soon as a lease is had. While it waits it
/// holds no lock of the database and other threads' calls on this handle go ahead; it
/// wakes at once on a commit by any handle of this process on the same queue, within a
/// few ms of another process's commit to a local file (Linux; elsewhere it polls every
/// 50 ms), at the end of a lease or park, and on a libSQL server it polls (20 ms doubling
/// to 1 s). `cancel` (NULL: none) or `harel_transport_interrupt` ends the wait early.
///
/// `*out` as for harel_transport_claim.
///
/// Returns HAREL_OK; HAREL_EMPTY (nothing came within `wait`); HAREL_ERR_INTERRUPTED
/// (`cancel` fired, or the handle was interrupted, during the wait: nothing claimed);
/// HAREL_ERR_ARGUMENT (as for claim, or wait not finite or < 0); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_claim_wait(
    t: *mut harel_transport,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    wait: f64,
    cancel: *const harel_cancel,
    out: *mut *mut harel_lease,
    err: *mut *mut harel_error,
) -> harel_status {
    claim_into(out, t, err, |t, out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let ((worker_id, keys), wait) =
            unsafe { (args::claimer(worker_id, routing_keys, n_routing_keys)?, wait_of(wait, cancel)?) };
        lease_out(out, t.claim_wait(worker_id, visibility, min_priority, &keys, &wait)?)
    })
}

/// Ends every claim waiting on `t` now (harel_transport_claim_wait, harel_transport_claim_many):
/// each returns HAREL_ERR_INTERRUPTED. Later calls wait as usual. Safe from any thread
/// while other threads use `t` (unlike close). NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_transport_interrupt(t: *mut harel_transport) {
    boundary_value((), || {
        // SAFETY: NULL or a live handle from harel_transport_open.
        if let Some(t) = unsafe { ref_from_ptr(t) } {
            t.interrupt();
        }
    })
}

/// A call's wait: `seconds` checked, and its cancel.
///
/// # Safety
/// `cancel` is NULL or a live harel_cancel.
pub(crate) unsafe fn wait_of(seconds: f64, cancel: *const harel_cancel) -> Result<Wait> {
    let wait = wait::seconds(seconds)?;
    Ok(match unsafe { ref_from_ptr(cancel) } {
        Some(cancel) => wait.or_until(cancel),
        None => wait,
    })
}
