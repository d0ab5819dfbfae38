//! The panic boundary of every exported function that returns a status: a panic becomes
//! `HAREL_ERR_PANIC` instead of unwinding into C, and an error is reported through `err`
//! and as the thread's last error. (Functions that return a value use unwind.rs's.)

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::error::{self, harel_error, ErrorSlot};
use super::status::harel_status;
use crate::error::Error;

/// Runs the body of a function that returns a status and takes `harel_error **err`:
/// clears the thread's last error, refuses an `*err` left set by the caller, and turns an
/// `Err` into its status and a panic into `HAREL_ERR_PANIC`, each reported through `err`
/// (when not NULL) and as the thread's last error.
pub(crate) fn boundary(err: *mut *mut harel_error, body: impl FnOnce() -> Result<harel_status, Error>) -> harel_status {
    error::clear();
    let slot = match ErrorSlot::check(err) {
        Ok(slot) => slot,
        Err(e) => return ErrorSlot::none().report(harel_error::of(&e)),
    };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => slot.report(harel_error::of(&e)),
        Err(panic) => slot.report(harel_error::of_panic(panic)),
    }
}

/// `boundary` for a function that hands out `*out`: `*out` is NULL on every error, set
/// so first thing (even when `err` is refused), and `body` gets it to fill.
pub(crate) fn boundary_out<T>(
    out: *mut *mut T,
    err: *mut *mut harel_error,
    body: impl FnOnce(&mut *mut T) -> Result<harel_status, Error>,
) -> harel_status {
    // SAFETY: the caller passes NULL or a pointer valid for writes, per every contract.
    let out = unsafe { out.as_mut() };
    let out = out.map(|o| {
        *o = std::ptr::null_mut();
        o
    });
    boundary(err, || body(out.ok_or_else(|| Error::Argument("out is NULL".into()))?))
}
