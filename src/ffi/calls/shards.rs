//! A queue sharded over several databases (docs/queue.md, "Sharded queues"): opened from a
//! list; every other call takes its `harel_transport` as it takes any.

use std::ffi::c_char;

use super::args;
use super::error::harel_error;
use super::options::harel_options;
use super::ownership::{to_boxed_mut_ptr, try_ref_from_ptr};
use super::status::harel_status::{self, HAREL_OK};
use super::transport::{c_options, harel_transport};
use super::{boundary, boundary_out};
use crate::error::Error;
use crate::Transport;

/// Opens one queue sharded over the `n_databases` databases of `databases` (1..256 file
/// paths or server URLs, each as `harel_transport_open` takes it, or paths of embedded
/// replicas with `harel_options_set_sync_urls` naming each one's primary; the same
/// `options` otherwise), in their shard order.
/// Each group lives on the shard `harel_shard_of` names: publishes, acks and nacks go
/// there, claims serve the shards in turn, waits and watches cover all of them, and
/// stats and listings add them up (docs/queue.md, "Sharded queues"). Each database is an
/// unchanged queue that harel's own workers can serve.
///
/// The first open of a list of empty databases makes them a set: each records the queue's
/// id, its index and the number of shards. Every later open must pass the same list in
/// the same order. A list of one is a queue that is not sharded, as `harel_transport_open`
/// opens it. The handle is freed with `harel_transport_close`.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (databases or out NULL, n_databases 0 or above
/// 256, an element NULL, empty, not UTF-8 or repeated (also as another path to the same
/// file); sync_urls of another count than n_databases, or set beside sync_url; sync_url
/// with n_databases above 1; the list does not match the
/// databases' records: a database missing, one extra, the order changed, another queue's
/// database, a database that holds messages but belongs to no set, a path that names no
/// file yet beside a set's databases — the message names the database as "databases[i]
/// (its text)", and no file is made; a transaction begun on a sharded queue is refused at
/// its first call); otherwise as `harel_transport_open`, the message naming the database
/// that failed. On error nothing is left open and `*out` is NULL.
#[no_mangle]
pub extern "C" fn harel_transport_open_shards(
    databases: *const *const c_char,
    n_databases: usize,
    options: *const harel_options,
    out: *mut *mut harel_transport,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        // The count first: the array is read only once it is known to be of a size allowed.
        if !(1..=crate::MAX_SHARDS).contains(&n_databases) {
            let allowed = crate::MAX_SHARDS;
            return Err(Error::Argument(format!("databases has {n_databases} entries; it must have 1..{allowed}")));
        }
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let databases = unsafe { args::strings(databases, n_databases, "databases") }?;
        *out = to_boxed_mut_ptr(Transport::open_shards(&databases, &unsafe { c_options(options) })?);
        Ok(HAREL_OK)
    })
}

/// Sets `*n` to the number of databases `t` is sharded over (1 when it is not sharded).
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or n NULL).
#[no_mangle]
pub extern "C" fn harel_transport_shard_count(
    t: *const harel_transport,
    n: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        let t = try_ref_from_ptr!(t);
        // SAFETY: checked not NULL; the caller passes a writable size_t.
        let n = unsafe { n.as_mut() }.ok_or_else(|| args::null("n"))?;
        *n = t.shard_count();
        Ok(HAREL_OK)
    })
}

/// Sets `*shard` to the shard (0..n_shards-1) that holds `group_id` in a queue sharded
/// over `n_shards` databases: FNV-1a, 64-bit, over the id's UTF-8 bytes, modulo
/// `n_shards` (docs/queue.md gives it, so a program that writes to one shard directly
/// places a group where the sharded queue looks for it). Needs no transport.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (group_id or shard NULL, group_id empty or not
/// UTF-8, n_shards 0 or above 256).
#[no_mangle]
pub extern "C" fn harel_shard_of(
    group_id: *const c_char,
    n_shards: usize,
    shard: *mut usize,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary(err, || {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let group_id = unsafe { args::string(group_id, "group_id") }?;
        crate::validate::non_empty("group_id", group_id)?;
        if !(1..=crate::MAX_SHARDS).contains(&n_shards) {
            return Err(Error::Argument(format!("n_shards is {n_shards}; it must be 1..{}", crate::MAX_SHARDS)));
        }
        // SAFETY: the caller passes NULL or a writable size_t.
        let shard = unsafe { shard.as_mut() }.ok_or_else(|| args::null("shard"))?;
        *shard = crate::shard_of(group_id, n_shards);
        Ok(HAREL_OK)
    })
}
