//! `harel_transport`, the handle of an open queue that every call takes, and the frame of
//! the calls that take one and return only a status.

use super::boundary::boundary;
use super::error::harel_error;
use super::ownership::{try_ref_from_ptr, Boxed, Castable};
use super::status::harel_status;
use crate::Transport;

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
