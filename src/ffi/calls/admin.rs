//! The operator's writes from C: redrive and purge dead letters, purge a group or the
//! queue, release a group's hold, pause and resume.

use std::ffi::c_char;

use super::error::harel_error;
use super::handle::{harel_transport, on_handle};
use super::status::harel_status::{self, HAREL_OK};
use super::args;
use crate::error::{Error, Result};
use crate::{DeadLetters, PauseTarget};

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
        flag_out(released, t.release(unsafe { args::string(group_id, "group_id") }?)?);
        Ok(HAREL_OK)
    })
}

/// What a pause or resume names (docs/queue.md, "Pause and resume"). Passed as an
/// `int32_t`, so that a wrong value is refused rather than undefined.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_pause_kind {
    /// The whole queue: every group, and every group made while the pause lasts; `name` NULL.
    HAREL_PAUSE_QUEUE = 0,
    /// One group, `name` its id, whether or not it has messages now.
    HAREL_PAUSE_GROUP = 1,
    /// Every group published with the routing key `name`.
    HAREL_PAUSE_ROUTING_KEY = 2,
}

/// The target of `kind` (a harel_pause_kind) and `name`.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
unsafe fn target<'a>(kind: i32, name: *const c_char) -> Result<PauseTarget<'a>> {
    let name = unsafe { args::optional_string(name, "name") }?;
    match (kind, name) {
        (0, None) => Ok(PauseTarget::Queue),
        (0, Some(_)) => Err(Error::Argument("name must be NULL with HAREL_PAUSE_QUEUE".into())),
        (1, Some(group_id)) => Ok(PauseTarget::Group(group_id)),
        (2, Some(key)) => Ok(PauseTarget::RoutingKey(key)),
        (1 | 2, None) => Err(Error::Argument("name is NULL: a group id or routing key to pause".into())),
        (other, _) => Err(Error::Argument(format!(
            "kind is {other}; it must be HAREL_PAUSE_QUEUE, HAREL_PAUSE_GROUP or HAREL_PAUSE_ROUTING_KEY"
        ))),
    }
}

/// Sets `*out` (if not NULL) to `done`.
fn flag_out(out: *mut bool, done: bool) {
    // SAFETY: NULL or valid for one write (the calls' contract).
    if let Some(out) = unsafe { out.as_mut() } {
        *out = done;
    }
}

/// Pauses a group, a routing key or the whole queue: `kind` a harel_pause_kind, `name`
/// the group id or routing key (NULL for the queue). Stored in the database, so every
/// process sees it and it outlives restarts, until `harel_transport_resume`. A paused
/// group's messages stay in order and no claim takes them (harel 0.9's Python transports
/// neither); a lease taken before finishes (ack, nack, extend work); publishes go on, into
/// paused groups too. On a sharded queue, on every shard. `*paused` (if not NULL) is false
/// when the pause was there already.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL, kind not a harel_pause_kind, name NULL
/// for a group or routing key, not NULL for the queue, empty or not UTF-8); HAREL_ERR_BUSY;
/// HAREL_ERR_DATABASE (also: the queue lacks the pauses table, opened with create_schema
/// off); HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_pause(
    t: *mut harel_transport,
    kind: i32,
    name: *const c_char,
    paused: *mut bool,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: per this function's contract.
        flag_out(paused, t.pause(unsafe { target(kind, name) }?)?);
        Ok(HAREL_OK)
    })
}

/// Ends the pause `kind` and `name` name (as `harel_transport_pause`'s): the groups it
/// paused that no other pause names are served again, each from its head, at once.
/// `*resumed` (if not NULL) is false when there was no such pause (nothing changed).
///
/// Returns as `harel_transport_pause`.
#[no_mangle]
pub extern "C" fn harel_transport_resume(
    t: *mut harel_transport,
    kind: i32,
    name: *const c_char,
    resumed: *mut bool,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: per this function's contract.
        flag_out(resumed, t.resume(unsafe { target(kind, name) }?)?);
        Ok(HAREL_OK)
    })
}
