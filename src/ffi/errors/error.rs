//! How a failed call reports what went wrong: a `harel_error` handed to the caller through
//! the call's own `harel_error **err` (readable on any thread, owned by the caller), and a
//! copy of its message as the calling thread's last error, as `sqlite3_errmsg` and
//! `git_error_last` do it, for plain C callers.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::ptr;

use super::ownership::{free_box, ref_from_ptr, to_boxed_mut_ptr, Boxed, Castable};
use super::status::harel_status;
use super::unwind::boundary_value;
use crate::error::Error;

/// The error of one failed call (opaque): its status and its message. A call that takes
/// `harel_error **err` sets `*err` to one on error; the caller owns it and frees it with
/// `harel_error_free`. Read it with `harel_error_status` and `harel_error_message`.
pub struct harel_error {
    status: harel_status,
    message: CString,
}

impl Castable for harel_error {
    type Ownership = Boxed;
    type RustType = harel_error;
}

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

pub(crate) fn clear() {
    LAST_ERROR.with(|last| *last.borrow_mut() = None);
}

impl harel_error {
    fn new(status: harel_status, message: &str) -> harel_error {
        // A C string cannot hold NUL; a message quoting caller text shows it escaped instead.
        let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
        harel_error { status, message }
    }

    pub(crate) fn of(e: &Error) -> harel_error {
        harel_error::new(harel_status::from(e), e.message())
    }

    pub(crate) fn of_panic(panic: Box<dyn Any + Send>) -> harel_error {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let message = format!("internal error (a bug in harel-transport; please report it): {what}");
        harel_error::new(harel_status::HAREL_ERR_PANIC, &message)
    }
}

/// Where a call hands its error out: the caller's `*err`, checked empty on entry.
pub(crate) struct ErrorSlot(*mut *mut harel_error);

impl ErrorSlot {
    /// `err` as the caller passed it: NULL (no error object wanted) or pointing to NULL.
    /// A `*err` already set would be overwritten and leak: that is the caller's bug,
    /// reported without touching it.
    pub(crate) fn check(err: *mut *mut harel_error) -> Result<ErrorSlot, Error> {
        // SAFETY: the caller passes NULL or a pointer valid for reads and writes.
        match unsafe { err.as_ref() } {
            Some(current) if !current.is_null() => Err(Error::Argument(
                "err: *err is not NULL (an error of an earlier call not yet freed with \
                 harel_error_free?); nothing was done"
                    .into(),
            )),
            _ => Ok(ErrorSlot(err)),
        }
    }

    /// A slot that hands nothing out (the call's own `err` was refused).
    pub(crate) fn none() -> ErrorSlot {
        ErrorSlot(ptr::null_mut())
    }

    /// Records `error` as the thread's last error and hands it to the caller; its status.
    pub(crate) fn report(self, error: harel_error) -> harel_status {
        let status = error.status;
        LAST_ERROR.with(|last| *last.borrow_mut() = Some(error.message.clone()));
        // SAFETY: checked in `check`: NULL, or valid for a write.
        if let Some(out) = unsafe { self.0.as_mut() } {
            *out = to_boxed_mut_ptr(error);
        }
        status
    }
}

/// The status of `e`: a negative harel_status. HAREL_OK for NULL.
#[no_mangle]
pub extern "C" fn harel_error_status(e: *const harel_error) -> harel_status {
    // SAFETY: the caller passes NULL or an error from a harel_* call, not yet freed.
    boundary_value(harel_status::HAREL_ERR_PANIC, || {
        unsafe { ref_from_ptr(e) }.map_or(harel_status::HAREL_OK, |e| e.status)
    })
}

/// The message of `e`: which argument, which SQL error, what the caller can do. NULL for
/// NULL. The string belongs to `e` and lives until `harel_error_free(e)`.
#[no_mangle]
pub extern "C" fn harel_error_message(e: *const harel_error) -> *const c_char {
    // SAFETY: as for harel_error_status.
    boundary_value(ptr::null(), || unsafe { ref_from_ptr(e) }.map_or(ptr::null(), |e| e.message.as_ptr()))
}

/// Frees an error a call handed out through its `err`. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_error_free(e: *mut harel_error) {
    // SAFETY: NULL or an error a call handed out, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(e) })
}

/// The message of the last failed call on this thread, for callers that passed no `err`:
/// the same text as that call's `harel_error_message`. NULL after a call that returned
/// `HAREL_OK` or `HAREL_EMPTY`.
///
/// The string belongs to the library and stays valid until this thread's next call of a
/// function that takes a `harel_error **err`; copy it to keep it. Never free it.
#[no_mangle]
pub extern "C" fn harel_last_error() -> *const c_char {
    boundary_value(ptr::null(), || LAST_ERROR.with(|last| last.borrow().as_ref().map_or(ptr::null(), |s| s.as_ptr())))
}
