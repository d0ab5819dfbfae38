//! The batch calls: `harel_transport_claim_many`, `harel_transport_ack_many` and both in
//! one transaction, `harel_transport_ack_and_claim_many`.

use std::ffi::c_char;

use super::args;
use super::error::harel_error;
use super::lease::harel_lease;
use super::ownership::try_ref_from_ptr;
use super::status::harel_status::{self, HAREL_EMPTY, HAREL_OK};
use super::transport::{harel_transport, on_handle};
use super::waiting::{harel_cancel, wait_of};
use crate::error::{Error, Result};
use crate::{Lease, Transport};

/// Leases up to `max` messages (1..1000), each the head of a different group, in the
/// order `harel_transport_claim` would hand them out one after another, in one
/// transaction; the claim's arguments and rules are those of `harel_transport_claim`.
/// While nothing is deliverable it waits as `harel_transport_claim_wait` does (`wait`
/// seconds, 0: not at all; `cancel` may be NULL).
///
/// `leases_out` is the caller's array of at least `max` elements: on HAREL_OK its first
/// `*n_out` (1..max) elements are leases the caller owns, each freed with
/// `harel_lease_free`; the rest of the array is not written. On HAREL_EMPTY and on error
/// `*n_out` is 0.
///
/// Returns HAREL_OK; HAREL_EMPTY (nothing came within the wait); HAREL_ERR_ARGUMENT (as
/// for claim, or leases_out or n_out NULL, max outside 1..1000, wait not finite or < 0);
/// HAREL_ERR_INTERRUPTED (see harel_transport_claim_wait); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_claim_many(
    t: *mut harel_transport,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    max: usize,
    wait: f64,
    cancel: *const harel_cancel,
    leases_out: *mut *mut harel_lease,
    n_out: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    batch_into(n_out, t, err, |t, n_out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (worker_id, keys, wait) = unsafe {
            (
                args::string(worker_id, "worker_id")?,
                args::strings(routing_keys, n_routing_keys, "routing_keys")?,
                wait_of(wait, cancel)?,
            )
        };
        let out = out_array(leases_out)?;
        // SAFETY: `out` holds at least `max` elements, per the contract.
        unsafe { leases_into(out, n_out, t.claim_many(worker_id, visibility, min_priority, &keys, max, &wait)?) }
    })
}

/// Acks `n_leases` leases in one transaction (one commit), in array order, each read as
/// by `harel_transport_ack`, with an outcome per lease in the caller's array `outcomes`
/// (`n_leases` elements): HAREL_OK (acked) or HAREL_ERR_LEASE_LOST (lost as ack would
/// report it; nothing of it changed) — the others are acked all the same. On a sharded
/// queue, one transaction per shard: a lease of a shard whose transaction failed gets that
/// error's status (HAREL_ERR_BUSY, HAREL_ERR_DATABASE: not acked, and still held unless
/// it lapsed; HAREL_ERR_CONNECT: its shard unreachable, or its answer lost, so it may have
/// been acked: ack it again, and HAREL_ERR_LEASE_LOST then says it was), the other shards'
/// leases their own. The leases stay the
/// caller's. `leases` and `outcomes` may be NULL only when `n_leases` is 0 (nothing is
/// written).
///
/// Returns HAREL_OK (the transaction committed: read `outcomes`); HAREL_ERR_ARGUMENT (t
/// NULL; leases or outcomes NULL with n_leases > 0; an element NULL or as for ack, named
/// by index: nothing was acked); HAREL_ERR_BUSY, HAREL_ERR_DATABASE, HAREL_ERR_CONNECT
/// (nothing was acked; `outcomes` is not written).
#[no_mangle]
pub extern "C" fn harel_transport_ack_many(
    t: *mut harel_transport,
    leases: *const *const harel_lease,
    n_leases: usize,
    outcomes: *mut harel_status,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (leases, outcomes) = unsafe { (leases_of(leases, n_leases)?, outcomes_of(outcomes, n_leases)?) };
        write_outcomes(outcomes, t.ack_many(&leases)?);
        Ok(HAREL_OK)
    })
}

/// `harel_transport_ack_many` and then `harel_transport_claim_many` without waiting, in
/// one transaction: a batch worker's loop with one commit per batch. `outcomes` as for
/// ack_many (a lost lease does not stop the claim); `leases_out` and `*n_out` as for
/// claim_many.
///
/// Returns HAREL_OK (acked, and `*n_out` leases claimed); HAREL_EMPTY (acked, nothing
/// deliverable); HAREL_ERR_ARGUMENT (as for both calls: nothing acked or claimed);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (nothing acked or claimed).
#[no_mangle]
pub extern "C" fn harel_transport_ack_and_claim_many(
    t: *mut harel_transport,
    leases: *const *const harel_lease,
    n_leases: usize,
    outcomes: *mut harel_status,
    worker_id: *const c_char,
    visibility: f64,
    min_priority: i32,
    routing_keys: *const *const c_char,
    n_routing_keys: usize,
    max: usize,
    leases_out: *mut *mut harel_lease,
    n_out: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    batch_into(n_out, t, err, |t, n_out| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (leases, outcomes, worker_id, keys) = unsafe {
            (
                leases_of(leases, n_leases)?,
                outcomes_of(outcomes, n_leases)?,
                args::string(worker_id, "worker_id")?,
                args::strings(routing_keys, n_routing_keys, "routing_keys")?,
            )
        };
        let out = out_array(leases_out)?;
        let (acked, claimed) = t.ack_and_claim_many(&leases, worker_id, visibility, min_priority, &keys, max)?;
        write_outcomes(outcomes, acked);
        // SAFETY: `out` holds at least `max` elements, per the contract.
        unsafe { leases_into(out, n_out, claimed) }
    })
}

/// The frame of the calls that hand out leases into the caller's array: `*n_out` is set to
/// 0 first thing, before `t` and `err` are looked at, so it is 0 on every error (as `*out`
/// is for the single claims) and on HAREL_EMPTY.
fn batch_into(
    n_out: *mut usize,
    t: *mut harel_transport,
    err: *mut *mut harel_error,
    body: impl FnOnce(&Transport, &mut usize) -> Result<harel_status>,
) -> harel_status {
    // SAFETY: the caller passes NULL or a pointer valid for writes, per every contract.
    let n_out = unsafe { n_out.as_mut() }.map(|n| {
        *n = 0;
        n
    });
    on_handle(t, err, |t| body(t, n_out.ok_or_else(|| Error::Argument("n_out is NULL".into()))?))
}

fn out_array(leases_out: *mut *mut harel_lease) -> Result<*mut *mut harel_lease> {
    if leases_out.is_null() {
        return Err(Error::Argument("leases_out is NULL".into()));
    }
    Ok(leases_out)
}

/// # Safety
/// `out` holds at least `leases.len()` elements (no more than the call's `max`).
unsafe fn leases_into(out: *mut *mut harel_lease, n_out: &mut usize, leases: Vec<Lease>) -> Result<harel_status> {
    if leases.is_empty() {
        return Ok(HAREL_EMPTY);
    }
    for (i, lease) in leases.into_iter().enumerate() {
        // SAFETY: i < the array's length, per this function's contract.
        unsafe { *out.add(i) = harel_lease::hand_out(lease) };
        *n_out = i + 1;
    }
    Ok(HAREL_OK)
}

/// # Safety
/// `leases` is NULL or points to `n` pointers, each NULL or a live harel_lease.
unsafe fn leases_of(leases: *const *const harel_lease, n: usize) -> Result<Vec<Lease>> {
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
unsafe fn outcomes_of<'a>(outcomes: *mut harel_status, n: usize) -> Result<&'a mut [harel_status]> {
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
fn write_outcomes(outcomes: &mut [harel_status], acked: Vec<Result<()>>) {
    for (slot, outcome) in outcomes.iter_mut().zip(acked) {
        *slot = match outcome {
            Ok(()) => HAREL_OK,
            Err(e) => harel_status::from(&e),
        };
    }
}
