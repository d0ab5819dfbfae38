//! `harel_lease`: a claimed message handed to C, and read back from C by ack and nack.

use std::ffi::c_char;

use super::unwind::boundary_value;
use super::ownership::{free_box, to_boxed_mut_ptr_keeping, try_ref_from_ptr, Boxed, Castable};
use super::status::harel_status::{self, HAREL_OK};
use super::args;
use super::headers::{harel_header, HeadersOut};
use crate::error::{Error, Result};
use crate::Lease;

/// A claimed message. One returned by a claim belongs to the caller, who frees it with
/// `harel_lease_free` (after ack or nack, or when giving up on it); never change its
/// fields. The strings are NUL-terminated, but a group id or an event stored by another
/// writer may hold NUL bytes: read them with their lengths to get every byte.
///
/// A caller may also fill a `harel_lease` of its own (e.g. a binding that copied the
/// fields): ack, nack and dead_letter read only `seq`, `group_id` with `group_id_len`, and
/// `worker_id`. Never pass such a lease to `harel_lease_free`.
#[repr(C)]
pub struct harel_lease {
    /// The message's seq: FIFO order and the lease handle.
    pub seq: i64,
    /// The group: `group_id_len` bytes of UTF-8, then a NUL.
    pub group_id: *mut c_char,
    /// The length of `group_id` in bytes, without the terminating NUL.
    pub group_id_len: usize,
    /// The event: JSON text, byte for byte as published; `event_len` bytes, then a NUL.
    pub event: *mut c_char,
    /// The length of `event` in bytes, without the terminating NUL.
    pub event_len: usize,
    /// Who holds the lease: NUL-terminated UTF-8.
    pub worker_id: *mut c_char,
    /// Epoch seconds the lease runs to.
    pub lock_expiry: f64,
    /// How many times the message has been claimed, this claim included (1 on its first).
    pub attempts: i64,
    /// The headers it was published with, in order: `n_headers` pairs at `headers` (NULL
    /// when there are none), living as long as the lease. Added after 0.4.0 at the end of
    /// the struct: a lease the caller fills itself need not set them.
    pub headers: *const harel_header,
    pub n_headers: usize,
}

/// A claim's lease is boxed with its strings: group_id, event and worker_id, each followed
/// by a NUL, in one buffer the lease points into (a Vec's buffer stays where it is when the
/// Vec moves into the box), and its headers. A caller's own lease is only ever borrowed.
impl Castable for harel_lease {
    type Ownership = Boxed<(Vec<u8>, HeadersOut)>;
    type RustType = harel_lease;
}

impl harel_lease {
    /// Hands a claimed lease to the caller, who frees it with harel_lease_free: one
    /// allocation for the struct and one for its strings, so nothing can be half made.
    pub(crate) fn hand_out(lease: Lease) -> *mut harel_lease {
        let (group_id, event, worker_id) =
            (lease.group_id.as_bytes(), lease.event.as_bytes(), lease.worker_id.as_bytes());
        let mut strings = Vec::with_capacity(group_id.len() + event.len() + worker_id.len() + 3);
        for s in [group_id, event, worker_id] {
            strings.extend_from_slice(s);
            strings.push(0);
        }
        let base = strings.as_mut_ptr().cast::<c_char>();
        let (headers_out, headers) = HeadersOut::of(&lease.headers);
        // SAFETY: each offset lies within `strings` (the three strings and their NULs).
        let (event_at, worker_at) =
            unsafe { (base.add(group_id.len() + 1), base.add(group_id.len() + event.len() + 2)) };
        let handed = harel_lease {
            seq: lease.seq,
            group_id: base,
            group_id_len: group_id.len(),
            event: event_at,
            event_len: event.len(),
            worker_id: worker_at,
            lock_expiry: lease.lock_expiry,
            attempts: lease.attempts,
            headers: headers.items,
            n_headers: headers.n,
        };
        to_boxed_mut_ptr_keeping(handed, (strings, headers_out))
    }

    /// What ack and nack need, read from a lease the library or the caller built.
    pub(crate) fn to_lease(&self) -> Result<Lease> {
        // SAFETY: group_id is NULL or points to group_id_len bytes, worker_id is NULL or a
        // NUL-terminated string (harel_lease's contract).
        let (group_id, worker_id) = unsafe {
            (group_id_of(self.group_id, self.group_id_len)?, args::string(self.worker_id, "lease.worker_id")?)
        };
        Ok(Lease {
            seq: self.seq,
            group_id: group_id.to_owned(),
            event: String::new(),
            worker_id: worker_id.to_owned(),
            lock_expiry: self.lock_expiry,
            attempts: self.attempts,
            headers: Default::default(),
        })
    }
}

/// # Safety
/// `ptr` is NULL or points to `len` readable bytes.
unsafe fn group_id_of<'a>(ptr: *const c_char, len: usize) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::Argument("lease.group_id is NULL".into()));
    }
    if len == 0 {
        return Err(Error::Argument(
            "lease.group_id_len is 0: a lease filled by the caller must set it to group_id's length in bytes".into(),
        ));
    }
    // SAFETY: the caller's promise.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| Error::Argument(format!("lease.group_id is not valid UTF-8: {e}")))
}

/// Frees a lease a claim returned, with its strings. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_lease_free(lease: *mut harel_lease) {
    // SAFETY: NULL or a lease a claim handed out, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(lease) })
}

/// # Safety
/// `leases` is NULL or points to `n` pointers, each NULL or a live harel_lease.
pub(crate) unsafe fn leases_of(leases: *const *const harel_lease, n: usize) -> Result<Vec<Lease>> {
    let name = |i: usize| format!("leases[{i}]");
    let pointers = unsafe { args::slice(leases, n, "leases") }?;
    pointers
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            try_ref_from_ptr!(p, &name(i))
                .to_lease()
                .map_err(|e| Error::Argument(format!("leases[{i}].{}", e.message().trim_start_matches("lease."))))
        })
        .collect()
}

/// # Safety
/// `outcomes` is NULL or valid for `n` writes.
pub(crate) unsafe fn outcomes_of<'a>(outcomes: *mut harel_status, n: usize) -> Result<&'a mut [harel_status]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if outcomes.is_null() {
        return Err(Error::Argument(format!("outcomes is NULL but n_leases is {n}")));
    }
    Ok(unsafe { std::slice::from_raw_parts_mut(outcomes, n) })
}

/// Each lease's status: a lost one's HAREL_ERR_LEASE_LOST, and on a sharded queue a lease
/// of a shard whose transaction failed gets that error's (HAREL_ERR_BUSY, ...): it was
/// not acked, and may well still be held.
pub(crate) fn write_outcomes(outcomes: &mut [harel_status], acked: Vec<Result<()>>) {
    for (slot, outcome) in outcomes.iter_mut().zip(acked) {
        *slot = match outcome {
            Ok(()) => HAREL_OK,
            Err(e) => harel_status::from(&e),
        };
    }
}
