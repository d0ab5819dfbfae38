//! The operator's writes from C: redrive and purge dead letters, purge a group or the
//! queue, release a group's hold.

use std::ffi::c_char;

use super::error::harel_error;
use super::handle::{harel_transport, on_handle};
use super::status::harel_status::{self, HAREL_OK};
use super::args;
use crate::error::{Error, Result};
use crate::DeadLetters;

/// Which dead letters: exactly one of `all`, a `group_id` (not NULL) or `n_seqs` seqs.
///
/// # Safety
/// `group_id` is NULL or NUL-terminated; `seqs` is NULL or points to `n_seqs` values.
unsafe fn selection<'a>(
    all: bool,
    group_id: *const c_char,
    seqs: *const i64,
    n_seqs: usize,
) -> Result<DeadLetters<'a>> {
    let group_id = unsafe { args::optional_string(group_id, "group_id") }?;
    let seqs = unsafe { args::slice(seqs, n_seqs, "seqs") }?;
    match (all, group_id, seqs.is_empty()) {
        (true, None, true) => Ok(DeadLetters::All),
        (false, Some(group_id), true) => Ok(DeadLetters::Group(group_id)),
        (false, None, false) => Ok(DeadLetters::Seqs(seqs)),
        _ => Err(Error::Argument(
            "say which dead letters: exactly one of all, group_id (not NULL) or seqs (n_seqs > 0)".into(),
        )),
    }
}

/// Writes `n` to `out` when `out` is not NULL.
fn count_out(out: *mut u64, n: u64) {
    // SAFETY: NULL or valid for one write, per the functions' contract.
    if let Some(out) = unsafe { out.as_mut() } {
        *out = n;
    }
}

/// Moves dead letters back into their groups as the newest messages (after what each
/// group holds now), in the order they had, claimed 0 times; a group they bring back is
/// made with its old priority and routing key. Which: exactly one of `all`, `group_id`,
/// or the `n_seqs` seqs at `seqs` (unknown seqs are passed over). `*moved` (if `moved` is
/// not NULL) is how many moved.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL, not exactly one selection, group_id
/// empty or not UTF-8, seqs NULL with n_seqs > 0; nothing changed); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_redrive(
    t: *mut harel_transport,
    all: bool,
    group_id: *const c_char,
    seqs: *const i64,
    n_seqs: usize,
    moved: *mut u64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: per this function's contract.
        count_out(moved, t.redrive(unsafe { selection(all, group_id, seqs, n_seqs) }?)?);
        Ok(HAREL_OK)
    })
}

/// Deletes dead letters, selected as for harel_transport_redrive; `*purged` (if `purged`
/// is not NULL) is how many.
///
/// Returns as harel_transport_redrive.
#[no_mangle]
pub extern "C" fn harel_transport_purge_dead(
    t: *mut harel_transport,
    all: bool,
    group_id: *const c_char,
    seqs: *const i64,
    n_seqs: usize,
    purged: *mut u64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: per this function's contract.
        count_out(purged, t.purge_dead(unsafe { selection(all, group_id, seqs, n_seqs) }?)?);
        Ok(HAREL_OK)
    })
}

/// Deletes `group_id`'s messages and the group (a lease on one of them is lost);
/// `*purged` (if not NULL) is how many messages.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or group_id NULL, group_id empty or not UTF-8);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_purge_group(
    t: *mut harel_transport,
    group_id: *const c_char,
    purged: *mut u64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: per this function's contract.
        count_out(purged, t.purge_group(unsafe { args::string(group_id, "group_id") }?)?);
        Ok(HAREL_OK)
    })
}

/// Deletes every message and group; dead letters stay. `*purged` (if not NULL) is how
/// many messages.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL); HAREL_ERR_BUSY; HAREL_ERR_DATABASE;
/// HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_purge(
    t: *mut harel_transport,
    purged: *mut u64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        count_out(purged, t.purge()?);
        Ok(HAREL_OK)
    })
}

/// Ends the lease or park on `group_id`'s head now, so a stuck group is served at once
/// (the holder's ack or nack then finds its lease lost). `*released` (if not NULL) is
/// false when nothing was held.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or group_id NULL, group_id empty or not UTF-8);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_release(
    t: *mut harel_transport,
    group_id: *const c_char,
    released: *mut bool,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: per this function's contract.
        let done = t.release(unsafe { args::string(group_id, "group_id") }?)?;
        // SAFETY: NULL or valid for one write.
        if let Some(released) = unsafe { released.as_mut() } {
            *released = done;
        }
        Ok(HAREL_OK)
    })
}
