//! The C ABI (docs/abi.md). This layer only checks pointers, UTF-8 and numbers' types,
//! calls the Rust API and maps its errors to a status and a `harel_error`; the queue's
//! logic and argument rules live in the core.
//!
//! Every exported function runs inside [`boundary`] (or [`boundary_value`] for those that
//! return no status): a panic becomes `HAREL_ERR_PANIC` instead of unwinding into C.
//! Handles' pointers become references, and values become handles, only through
//! [`ownership`], where each C type says once how it is owned; other arguments go
//! through [`args`].

#![allow(non_camel_case_types)]
// C names
// The exported functions are safe to call from C with what their doc comments promise;
// a C caller cannot see `unsafe` anyway, and the pointers are checked in `ownership` and `args`.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

// cbindgen writes the header's functions module by module, in the order declared here. So
// that filing a module under a folder (calls/, errors/, arguments/) cannot reorder the
// header, the modules stay one flat, alphabetical list (rustfmt keeps it so) and `#[path]`
// says where each file is. calls/ holds a file per method group (docs/architecture.md,
// "Method groups"), and the lease every group hands over.
#[path = "calls/admin.rs"]
mod admin;
#[path = "arguments/args.rs"]
mod args;
#[path = "calls/claim.rs"]
mod claim;
#[path = "errors/error.rs"]
mod error;
#[path = "calls/finish.rs"]
mod finish;
mod handle;
#[path = "calls/lease.rs"]
mod lease;
#[path = "calls/looks.rs"]
mod looks;
#[path = "arguments/message.rs"]
mod message;
#[path = "calls/metrics.rs"]
mod metrics;
#[path = "calls/open.rs"]
mod open;
#[path = "arguments/options.rs"]
mod options;
mod ownership;
#[path = "calls/publish.rs"]
mod publish;
#[path = "calls/shards.rs"]
mod shards;
#[path = "errors/status.rs"]
mod status;
mod strings_out;
#[path = "calls/transactions.rs"]
mod transactions;
mod unwind;
#[path = "arguments/values.rs"]
mod values;
#[path = "calls/watch.rs"]
mod watch;

pub use admin::*;
pub use claim::*;
pub use error::{harel_error, harel_error_free, harel_error_message, harel_error_status, harel_last_error};
pub use finish::*;
pub use handle::harel_transport;
pub use lease::{harel_lease, harel_lease_free};
pub use looks::*;
pub use message::harel_message;
pub use metrics::*;
pub use open::*;
pub use options::*;
pub use publish::*;
pub use shards::*;
pub use status::{harel_status, harel_status_name};
pub use transactions::*;
pub use values::*;
pub use watch::*;
pub(crate) use unwind::boundary_value;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::Error;
use error::ErrorSlot;

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
