//! A sharded queue's own calls from C (docs/queue.md, "Sharded queues"): how many shards,
//! and which holds a group. Every other call takes a sharded `harel_transport` as any.

use std::ffi::c_char;

use super::boundary::boundary;
use super::error::harel_error;
use super::handle::harel_transport;
use super::ownership::try_ref_from_ptr;
use super::status::harel_status::{self, HAREL_OK};
use super::args;
use crate::error::Error;

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
