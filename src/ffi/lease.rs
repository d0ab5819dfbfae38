//! `harel_lease`: a claimed message handed to C, and read back from C by ack and nack.

use std::ffi::{c_char, CString};

use super::args;
use super::boundary_value;
use crate::error::{Error, Result};
use crate::lease::Lease;

/// A claimed message. One returned by `harel_transport_claim` belongs to the caller, who
/// frees it with `harel_lease_free` (after ack or nack, or when giving up on it). A caller
/// may also fill a `harel_lease` of its own (e.g. a binding that copied the fields): ack
/// and nack read only `seq`, `group_id` and `worker_id`; never pass such a lease to
/// `harel_lease_free`.
#[repr(C)]
pub struct harel_lease {
    /// The message's seq: FIFO order and the lease handle.
    pub seq: i64,
    /// The group, NUL-terminated UTF-8.
    pub group_id: *mut c_char,
    /// The event: JSON text, byte for byte as published.
    pub event: *mut c_char,
    /// Who holds the lease.
    pub worker_id: *mut c_char,
    /// Epoch seconds the lease runs to.
    pub lock_expiry: f64,
}

fn c_string(value: String, name: &str) -> Result<CString> {
    CString::new(value).map_err(|_| {
        Error::Database(format!("the message's {name} holds a NUL byte and cannot be handed to C"))
    })
}

impl harel_lease {
    /// Moves a claimed lease into C memory; the caller frees it with harel_lease_free.
    pub(crate) fn into_raw(lease: Lease) -> Result<*mut harel_lease> {
        let boxed = harel_lease {
            seq: lease.seq,
            group_id: c_string(lease.group_id, "group_id")?.into_raw(),
            event: c_string(lease.event, "event")?.into_raw(),
            worker_id: c_string(lease.worker_id, "worker_id")?.into_raw(),
            lock_expiry: lease.lock_expiry,
        };
        Ok(Box::into_raw(Box::new(boxed)))
    }

    /// What ack and nack need, read from a lease the library or the caller built.
    pub(crate) fn to_lease(&self) -> Result<Lease> {
        // SAFETY: the fields are NULL or NUL-terminated strings (harel_lease's contract).
        let (group_id, worker_id) = unsafe {
            (args::string(self.group_id, "lease.group_id")?, args::string(self.worker_id, "lease.worker_id")?)
        };
        Ok(Lease {
            seq: self.seq,
            group_id: group_id.to_owned(),
            event: String::new(),
            worker_id: worker_id.to_owned(),
            lock_expiry: self.lock_expiry,
        })
    }
}

/// Frees a lease returned by `harel_transport_claim`, with its strings. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_lease_free(lease: *mut harel_lease) {
    boundary_value((), || {
        if lease.is_null() {
            return;
        }
        // SAFETY: a non-NULL lease came from harel_transport_claim (harel_lease::into_raw)
        // and is freed once; its strings came from CString::into_raw.
        unsafe {
            let lease = Box::from_raw(lease);
            for s in [lease.group_id, lease.event, lease.worker_id] {
                if !s.is_null() {
                    drop(CString::from_raw(s));
                }
            }
        }
    })
}
