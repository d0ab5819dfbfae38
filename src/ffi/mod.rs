//! The C ABI (docs/abi.md). This layer only checks pointers, UTF-8 and numbers' types,
//! calls the Rust API and maps its errors to a status and a `harel_error`; the queue's
//! logic and argument rules live in the core.
//!
//! Every exported function runs inside the panic boundary (boundary.rs, or unwind.rs for
//! those that return no status): a panic becomes `HAREL_ERR_PANIC` instead of unwinding into C.
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
#[path = "calls/archive.rs"]
mod archive;
#[path = "arguments/args.rs"]
mod args;
mod boundary;
#[path = "calls/claim.rs"]
mod claim;
#[path = "arguments/delivery.rs"]
mod delivery;
#[path = "errors/error.rs"]
mod error;
#[path = "calls/finish.rs"]
mod finish;
mod handle;
#[path = "arguments/headers.rs"]
mod headers;
#[path = "calls/lease.rs"]
mod lease;
#[path = "calls/limits.rs"]
mod limits;
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
#[path = "calls/trace.rs"]
mod trace;
#[path = "calls/transactions.rs"]
mod transactions;
mod unwind;
#[path = "arguments/values.rs"]
mod values;
#[path = "calls/watch.rs"]
mod watch;

pub use admin::*;
pub use archive::*;
pub use claim::*;
pub use delivery::{harel_delivery, harel_jitter, harel_published, harel_unique_mode};
pub use error::{harel_error, harel_error_free, harel_error_message, harel_error_status, harel_last_error};
pub use finish::*;
pub use handle::harel_transport;
pub use headers::{harel_header, harel_headers};
pub use lease::{harel_lease, harel_lease_free};
pub use limits::*;
pub use looks::*;
pub use message::harel_message;
pub use metrics::*;
pub use open::*;
pub use options::*;
pub use publish::*;
pub use shards::*;
pub use status::{harel_status, harel_status_name};
pub use trace::*;
pub use transactions::*;
pub use values::*;
pub use watch::*;
