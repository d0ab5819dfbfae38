//! The calling thread's last error message, as `sqlite3_errmsg` and `git_error_last` do it.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::ptr;

use super::status::harel_status;
use crate::error::Error;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

pub(crate) fn clear() {
    LAST_ERROR.with(|last| *last.borrow_mut() = None);
}

/// A copy of the thread's current message, if any.
pub(crate) fn current() -> Option<CString> {
    LAST_ERROR.with(|last| last.borrow().clone())
}

fn remember(message: &str) {
    // A C string cannot hold NUL; a message quoting caller text shows it escaped instead.
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = Some(text));
}

pub(crate) fn set(e: &Error) -> harel_status {
    remember(e.message());
    harel_status::from(e)
}

pub(crate) fn set_panic(panic: Box<dyn Any + Send>) -> harel_status {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    remember(&format!("internal error (a bug in harel-transport; please report it): {what}"));
    harel_status::HAREL_ERR_PANIC
}

/// The message for the error the last call on this thread returned: which argument,
/// which SQL error, what the caller can do. NULL after a call that returned `HAREL_OK`
/// or `HAREL_EMPTY`.
///
/// The string belongs to the library and stays valid until the next `harel_*` call that
/// returns a status on this thread; copy it to keep it. Never free it.
#[no_mangle]
pub extern "C" fn harel_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ref().map_or(ptr::null(), |s| s.as_ptr()))
}
