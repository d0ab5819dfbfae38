//! Waiting claims: `harel_transport_claim_wait`, and the two ways to end a wait early,
//! a `harel_cancel` (one call's wait) and `harel_transport_interrupt` (every wait on a handle).

use std::ffi::c_char;

use super::args;
use super::error::harel_error;
use super::lease::harel_lease;
use super::ownership::{free_box, ref_from_ptr, to_boxed_mut_ptr, Boxed, Castable};
use super::status::harel_status;
use super::transport::{claim_into, harel_transport, lease_out};
use crate::error::Result;
use crate::waiting::wait::{self, Cancel, Wait};

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
    super::boundary_value(std::ptr::null_mut(), || to_boxed_mut_ptr(Cancel::new()))
}

/// Fires `cancel`: every call waiting with it returns HAREL_ERR_INTERRUPTED, having
/// claimed nothing (a call that had already claimed returns its leases). Safe from any
/// thread, any number of times. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_cancel_fire(cancel: *const harel_cancel) {
    super::boundary_value((), || {
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
    super::boundary_value((), || unsafe { free_box(cancel) })
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
        let (worker_id, keys, wait) = unsafe {
            (
                args::string(worker_id, "worker_id")?,
                args::strings(routing_keys, n_routing_keys, "routing_keys")?,
                wait_of(wait, cancel)?,
            )
        };
        lease_out(out, t.claim_wait(worker_id, visibility, min_priority, &keys, &wait)?)
    })
}

/// Ends every claim waiting on `t` now (harel_transport_claim_wait, harel_transport_claim_many):
/// each returns HAREL_ERR_INTERRUPTED. Later calls wait as usual. Safe from any thread
/// while other threads use `t` (unlike close). NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_transport_interrupt(t: *mut harel_transport) {
    super::boundary_value((), || {
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
