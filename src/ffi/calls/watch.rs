//! Watching for work from an event loop (docs/abi.md, "Watching for work"):
//! `harel_transport_watch` hands out a `harel_watch`, whose descriptor the caller polls;
//! `harel_watch_rearm` says whether to claim.

use std::ffi::c_int;
use std::os::fd::AsRawFd;

use super::boundary::{boundary, boundary_out};
use super::unwind::boundary_value;
use super::error::harel_error;
use super::handle::{harel_transport, on_handle};
use super::ownership::{try_ref_from_ptr, Registry};
use super::status::harel_status::{self, HAREL_EMPTY, HAREL_OK};
use super::args;
use crate::error::{Error, Result};
use crate::Watch;

/// A descriptor that becomes readable when a claim may find work (opaque), for a program
/// that runs an event loop (epoll, poll, libuv, asyncio, Asio) instead of a thread per
/// waiting claim. Made by `harel_transport_watch`, freed by `harel_watch_free`. The
/// protocol, for a watch `w` of transport `t`:
///
/// 1. Poll `harel_watch_fd`'s descriptor for readability (POLLIN, EPOLLIN, UV_READABLE).
///    It is level-triggered: readable from creation, and from each wake until a
///    `harel_watch_rearm` returns HAREL_EMPTY.
/// 2. When it is readable, call `harel_watch_rearm(t, w)`: it clears the descriptor and
///    looks (a read without the write lock). HAREL_OK: claim without waiting
///    (`harel_transport_claim`, `harel_transport_claim_many` with wait 0) until
///    HAREL_EMPTY, then go back to 1; the descriptor stayed readable, so the next rearm
///    looks again and arms the timer for the leases just taken. HAREL_EMPTY: go back to 1.
///
/// The descriptor becomes readable on a commit by any transport of this process on the
/// same queue, on another process's commit to a local file (inotify, within a few ms),
/// at the end of a lease or park (a timer the library arms), once a second while a group
/// is held by a lease whose end the queue does not record (harel's Python transports) or
/// is passed over by the watch's filter, and on a libSQL server on the polling schedule
/// (20 ms doubling to 1 s). A wake means "may": spurious ones happen, and rearm decides.
/// Rearm before claiming, never after: a commit after the rearm makes the descriptor
/// readable again, so no wake is lost. While nothing is committed and nothing is leased
/// or parked, nothing fires and no thread of the library runs.
///
/// Any function here may be called from any thread. Closing `t` makes each of its
/// watches readable for good; free them (rearm needs `t`). The descriptor is close-on-exec;
/// a child process must not use its parent's watches. Linux only (epoll, eventfd, timerfd,
/// inotify).
pub struct harel_watch {
    _private: [u8; 0],
}

/// Watches are looked up by id: a freed one is refused, a second free does nothing.
static WATCHES: Registry<Watch> = Registry::new();

fn watch_of(w: *const harel_watch) -> Result<std::sync::Arc<Watch>> {
    if w.is_null() {
        return Err(args::null("w"));
    }
    WATCHES.get(w).ok_or_else(|| Error::Argument("w is not a live watch (freed already, or never made)".into()))
}

/// A watch of `t` for claims with this filter (`min_priority` 0..4 and routing keys as
/// for `harel_transport_claim`); it starts readable. On HAREL_OK `*out` is the caller's,
/// freed with `harel_watch_free`.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t or out NULL, min_priority outside 0..4, a
/// routing key NULL, empty or not UTF-8, routing_keys NULL with n_routing_keys > 0);
/// HAREL_ERR_DATABASE (the system refused a descriptor: its limit of open files reached).
#[no_mangle]
pub extern "C" fn harel_transport_watch(
    t: *mut harel_transport,
    min_priority: i32,
    routing_keys: *const *const std::ffi::c_char,
    n_routing_keys: usize,
    out: *mut *mut harel_watch,
    err: *mut *mut harel_error,
) -> harel_status {
    boundary_out(out, err, |out| {
        let t = try_ref_from_ptr!(t);
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let keys = unsafe { args::strings(routing_keys, n_routing_keys, "routing_keys") }?;
        *out = WATCHES.add(t.watch(min_priority, &keys)?);
        Ok(HAREL_OK)
    })
}

/// Sets `*fd` to the watch's descriptor, to poll for readability. It stays the same for
/// the watch's life and is closed by `harel_watch_free`: remove it from your poll set
/// before that, and never close it yourself.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (w NULL or not live, fd NULL).
#[no_mangle]
pub extern "C" fn harel_watch_fd(w: *const harel_watch, fd: *mut c_int, err: *mut *mut harel_error) -> harel_status {
    boundary(err, || {
        let watch = watch_of(w)?;
        // SAFETY: NULL or valid for a write, per this function's contract.
        let fd = unsafe { fd.as_mut() }.ok_or_else(|| args::null("fd"))?;
        *fd = watch.as_raw_fd();
        Ok(HAREL_OK)
    })
}

/// Clears the watch's descriptor and looks whether a claim with its filter would find work
/// (a read without the write lock; on a libSQL server, one request). See harel_watch for
/// the protocol.
///
/// Returns HAREL_OK (claim now; the descriptor stays readable); HAREL_EMPTY (nothing to
/// claim: the descriptor is clear, and becomes readable when that may change);
/// HAREL_ERR_ARGUMENT (t or w NULL, w not live, w made by another transport);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT. After an error the
/// descriptor becomes readable again within a second, so a loop that polls retries.
#[no_mangle]
pub extern "C" fn harel_watch_rearm(
    t: *mut harel_transport,
    w: *mut harel_watch,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        let watch = watch_of(w)?;
        Ok(if t.rearm(&watch)? { HAREL_OK } else { HAREL_EMPTY })
    })
}

/// Frees the watch and closes its descriptor. NULL does nothing; so does a watch freed
/// already (a second free is harmless).
#[no_mangle]
pub extern "C" fn harel_watch_free(w: *mut harel_watch) {
    boundary_value((), || {
        WATCHES.remove(w);
    })
}
