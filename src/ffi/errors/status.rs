//! The status codes (docs/abi.md), one per kind of `Error`.

use std::ffi::c_char;

use super::unwind::boundary_value;
use crate::error::Error;

/// What a call did. `HAREL_OK` is 0, "nothing to do" is positive, every error is
/// negative; after an error the call's `*err` (see harel_error) and `harel_last_error()`
/// say what went wrong.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_status {
    HAREL_OK = 0,
    /// claim: nothing is deliverable right now (not an error).
    HAREL_EMPTY = 1,
    /// A bad argument: NULL, invalid UTF-8, event not JSON, bad prefix, priority outside
    /// 0..4, visibility <= 0, delay < 0, a non-finite number, an empty group or worker id,
    /// the reserved worker id "__parked__", routing_keys or messages NULL with n > 0.
    /// Nothing changed.
    HAREL_ERR_ARGUMENT = -1,
    /// The database failed: I/O, corrupt or not a database, schema missing with
    /// create_schema off, any other SQL error.
    HAREL_ERR_DATABASE = -2,
    /// The write lock was not had within the busy timeout.
    HAREL_ERR_BUSY = -3,
    /// ack/nack: the message is gone, or leased to another worker. Nothing changed.
    HAREL_ERR_LEASE_LOST = -4,
    /// sync_url or a server URL: the server can't be reached or refused the token (at
    /// open), or stopped answering mid-call (after the busy timeout + 20 s; if it was the
    /// commit that got no answer, the call may have been applied). The next call opens a
    /// new connection.
    HAREL_ERR_CONNECT = -5,
    /// A waiting claim: its `harel_cancel` fired, or `harel_transport_interrupt` was called
    /// on its handle, while it waited. Nothing was claimed.
    HAREL_ERR_INTERRUPTED = -6,
    /// A bug, caught at the boundary; close the handle.
    HAREL_ERR_PANIC = -99,
}

impl From<&Error> for harel_status {
    fn from(e: &Error) -> harel_status {
        match e {
            Error::Argument(_) => harel_status::HAREL_ERR_ARGUMENT,
            Error::Database(_) => harel_status::HAREL_ERR_DATABASE,
            Error::Busy(_) => harel_status::HAREL_ERR_BUSY,
            Error::LeaseLost(_) => harel_status::HAREL_ERR_LEASE_LOST,
            Error::Connect(_) => harel_status::HAREL_ERR_CONNECT,
            Error::Interrupted(_) => harel_status::HAREL_ERR_INTERRUPTED,
        }
    }
}

/// The name of a status, e.g. "HAREL_ERR_BUSY"; "HAREL_UNKNOWN" for any other value.
///
/// The string is static: never free it.
#[no_mangle]
pub extern "C" fn harel_status_name(status: i32) -> *const c_char {
    boundary_value(c"HAREL_UNKNOWN".as_ptr(), || status_name(status).as_ptr().cast())
}

fn status_name(status: i32) -> &'static str {
    match status {
        0 => "HAREL_OK\0",
        1 => "HAREL_EMPTY\0",
        -1 => "HAREL_ERR_ARGUMENT\0",
        -2 => "HAREL_ERR_DATABASE\0",
        -3 => "HAREL_ERR_BUSY\0",
        -4 => "HAREL_ERR_LEASE_LOST\0",
        -5 => "HAREL_ERR_CONNECT\0",
        -6 => "HAREL_ERR_INTERRUPTED\0",
        -99 => "HAREL_ERR_PANIC\0",
        _ => "HAREL_UNKNOWN\0",
    }
}
