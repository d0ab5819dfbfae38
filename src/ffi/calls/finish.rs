//! What a worker does with a lease it holds, from C: ack (one or a batch), nack, extend,
//! and make it a dead letter.

use std::ffi::c_char;

use super::error::harel_error;
use super::handle::{harel_transport, on_handle};
use super::lease::{harel_lease, leases_of, outcomes_of, write_outcomes};
use super::ownership::{try_mut_from_ptr, try_ref_from_ptr};
use super::status::harel_status::{self, HAREL_OK};
use super::args;

/// Finishes a lease: deletes its message (and the group's row when it was the last).
/// Reads only lease->seq, lease->group_id (lease->group_id_len bytes) and
/// lease->worker_id; the lease stays the caller's to free.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (the message is gone, or no longer leased to
/// this worker: acked or nacked already, or its lease lapsed and another worker claimed
/// it; nothing changed); HAREL_ERR_ARGUMENT (t or lease NULL, lease->group_id or
/// lease->worker_id NULL or not UTF-8, lease->group_id_len 0, lease->worker_id empty or
/// "__parked__"); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_ack(
    t: *mut harel_transport,
    lease: *const harel_lease,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_ref_from_ptr!(lease).to_lease()?;
        t.ack(&lease)?;
        Ok(HAREL_OK)
    })
}

/// The lease now runs to now + `visibility` seconds (finite, > 0), and `lease->lock_expiry`
/// is set to the new end; nothing else of the lease is written. Reads `seq`, `group_id`
/// (`group_id_len` bytes) and `worker_id` as ack does. A handler that runs longer than its
/// visibility extends its lease while it works; the group stays out of claims until the
/// new end.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (acked or nacked already, or the lease lapsed and
/// another worker claimed the message; a lapsed lease no one claimed since is still this
/// worker's and is extended; on LEASE_LOST nothing changed); HAREL_ERR_ARGUMENT (as for
/// ack, or visibility not finite or <= 0); HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_extend(
    t: *mut harel_transport,
    lease: *mut harel_lease,
    visibility: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_mut_from_ptr!(lease);
        let mut extended = lease.to_lease()?;
        t.extend(&mut extended, visibility)?;
        lease.lock_expiry = extended.lock_expiry;
        Ok(HAREL_OK)
    })
}

/// Gives a leased message back: `delay` 0 makes it claimable at once; `delay` > 0 parks
/// it, blocking its group, for `delay` seconds. The lease is over either way. Reads only
/// lease->seq, lease->group_id (lease->group_id_len bytes) and lease->worker_id; the lease
/// stays the caller's to free.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (as for ack; nothing changed);
/// HAREL_ERR_ARGUMENT (as for ack, or delay not finite or < 0); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_nack(
    t: *mut harel_transport,
    lease: *const harel_lease,
    delay: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_ref_from_ptr!(lease).to_lease()?;
        t.nack(&lease, delay)?;
        Ok(HAREL_OK)
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

/// Moves the leased message to the dead-letter table with `reason` (for a worker that
/// knows the message will never succeed); its group goes on with the next message. Reads
/// only lease->seq, lease->group_id (group_id_len bytes) and lease->worker_id; the lease
/// stays the caller's to free.
///
/// Returns HAREL_OK; HAREL_ERR_LEASE_LOST (as for ack; nothing changed);
/// HAREL_ERR_ARGUMENT (as for ack, or reason NULL, empty or not UTF-8); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_dead_letter(
    t: *mut harel_transport,
    lease: *const harel_lease,
    reason: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let lease = try_ref_from_ptr!(lease).to_lease()?;
        // SAFETY: the caller passes NULL or a NUL-terminated string, per this function's contract.
        let reason = unsafe { args::string(reason, "reason") }?;
        t.dead_letter(&lease, reason)?;
        Ok(HAREL_OK)
    })
}
