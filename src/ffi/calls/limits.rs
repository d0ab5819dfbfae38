//! Limits per routing key from C (docs/queue.md, "Limits"): set, remove and list them.

use std::ffi::c_char;

use super::args;
use super::error::harel_error;
use super::handle::{harel_transport, on_handle};
use super::looks::{hand_out, look, Looked};
use super::ownership::{free_box, Castable};
use super::status::harel_status::{self, HAREL_OK};
use super::strings_out::{or_minus_one, Strings};
use super::unwind::boundary_value;
use crate::{Limit, Rate};

/// Limits the groups of `routing_key`: at most `concurrency` of their messages leased at
/// once (0: no such limit; else 1..1000000), leases taken at most at `rate` a second with
/// up to `burst` kept (a token bucket; `rate` and `burst` both 0: no such limit; else rate
/// > 0 and burst >= 1, each at most 1000000), across every worker of every process (not
/// harel 0.9's Python transports, which know nothing of limits). Replaces the key's limits;
/// in force at the next claim, stored in the database. A claim passes over a group whose
/// key has no room and holds it until the key has room. On a sharded queue, each shard
/// holds the limit for its own groups.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL; routing_key NULL, empty or not UTF-8;
/// neither limit; a number out of range, naming it); HAREL_ERR_BUSY; HAREL_ERR_DATABASE;
/// HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_set_limit(
    t: *mut harel_transport,
    routing_key: *const c_char,
    concurrency: u32,
    rate: f64,
    burst: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: NULL or NUL-terminated, per this function's contract.
        let routing_key = unsafe { args::string(routing_key, "routing_key") }?;
        let rate = (rate != 0.0 || burst != 0.0).then_some(Rate { per_second: rate, burst });
        t.set_limit(routing_key, Limit { concurrency: (concurrency != 0).then_some(concurrency), rate })?;
        Ok(HAREL_OK)
    })
}

/// Removes `routing_key`'s limits; its held groups are served again at once.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL; routing_key NULL, empty or not UTF-8; the
/// key has no limit); HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_remove_limit(
    t: *mut harel_transport,
    routing_key: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: NULL or NUL-terminated, per this function's contract.
        t.remove_limit(unsafe { args::string(routing_key, "routing_key") }?)?;
        Ok(HAREL_OK)
    })
}

/// One limit of a `harel_limit_list`, and its use now.
#[repr(C)]
pub struct harel_limit_info {
    /// `routing_key_len` bytes, then a NUL.
    pub routing_key: *const c_char,
    pub routing_key_len: usize,
    /// 0: no concurrency limit.
    pub concurrency: u32,
    /// 0 (and burst 0): no rate limit.
    pub rate: f64,
    pub burst: f64,
    /// Leases of the key's messages running now (with a concurrency limit; else 0).
    pub in_use: u64,
    /// The bucket's tokens now; -1 without a rate limit.
    pub tokens: f64,
    /// How many of the key's groups claims hold until the key has room.
    pub held: u64,
}

/// The limits in force from `harel_transport_limits`; free with `harel_limit_list_free`.
#[repr(C)]
pub struct harel_limit_list {
    pub limits: *const harel_limit_info,
    pub n_limits: usize,
}

impl Castable for harel_limit_list {
    type Ownership = Looked<harel_limit_info>;
    type RustType = harel_limit_list;
}

/// The limits in force, by routing key, with their use now (sharded: summed over the shards).
///
/// On HAREL_OK `*out` is the caller's (free it with `harel_limit_list_free`); on error NULL.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL); HAREL_ERR_DATABASE;
/// HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_limits(
    t: *mut harel_transport,
    out: *mut *mut harel_limit_list,
    err: *mut *mut harel_error,
) -> harel_status {
    look(t, out, err, |t| {
        let mut strings = Strings::default();
        let limits = t
            .limits()?
            .iter()
            .map(|l| {
                let (routing_key, routing_key_len) = strings.add(&l.routing_key);
                let (rate, burst) = l.limit.rate.map_or((0.0, 0.0), |r| (r.per_second, r.burst));
                harel_limit_info {
                    routing_key,
                    routing_key_len,
                    concurrency: l.limit.concurrency.unwrap_or(0),
                    rate,
                    burst,
                    in_use: l.in_use,
                    tokens: or_minus_one(l.tokens),
                    held: l.held,
                }
            })
            .collect();
        Ok(hand_out(limits, strings, |limits, n_limits| harel_limit_list { limits, n_limits }))
    })
}

/// Frees what `harel_transport_limits` handed out. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_limit_list_free(list: *mut harel_limit_list) {
    // SAFETY: NULL or from harel_transport_limits, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(list) })
}
