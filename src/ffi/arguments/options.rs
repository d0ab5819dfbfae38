//! `harel_options`: created, set, passed to `harel_transport_open`, freed. Each setter
//! validates its value at once.

use std::ffi::{c_char, c_void};

use super::boundary::boundary;
use super::unwind::boundary_value;
use super::args;
use super::delivery;
use super::error::harel_error;
use super::ownership::{free_box, to_boxed_mut_ptr, try_mut_from_ptr, Boxed, Castable};
use super::status::harel_status::{self, HAREL_OK};
use crate::{Options, Synchronous};

/// Options for `harel_transport_open` (opaque). `harel_options_new` creates one with the
/// defaults; free it with `harel_options_free`. `open` copies what it needs, so the
/// options may be freed right after it returns, or reused for another open.
pub struct harel_options {
    _private: [u8; 0],
}

impl Castable for harel_options {
    type Ownership = Boxed;
    type RustType = Options;
}

/// New options with the defaults: prefix "harel", create_schema on, a local file, busy
/// timeout 5 s, synchronous FULL, the system clock.
///
/// The caller owns the result and frees it with `harel_options_free`. NULL only if the
/// library failed internally.
#[no_mangle]
pub extern "C" fn harel_options_new() -> *mut harel_options {
    boundary_value(std::ptr::null_mut(), || to_boxed_mut_ptr(Options::new()))
}

/// Frees options made by `harel_options_new`. NULL does nothing.
#[no_mangle]
pub extern "C" fn harel_options_free(o: *mut harel_options) {
    // SAFETY: NULL or from harel_options_new, freed once (this function's contract).
    boundary_value((), || unsafe { free_box(o) })
}

/// Runs one setter on `o`; the shared body of every `harel_options_set_*`.
fn set(
    o: *mut harel_options,
    err: *mut *mut harel_error,
    apply: impl FnOnce(&mut Options) -> crate::Result<()>,
) -> harel_status {
    boundary(err, || {
        apply(try_mut_from_ptr!(o))?;
        Ok(HAREL_OK)
    })
}

/// Table names start with `prefix`: ASCII, a letter or '_', then letters, digits or
/// '_', at most 30 characters. The string is copied.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o or prefix NULL, not UTF-8, not an identifier).
#[no_mangle]
pub extern "C" fn harel_options_set_prefix(
    o: *mut harel_options,
    prefix: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    // SAFETY: the caller passes NULL or a NUL-terminated string.
    set(o, err, |opts| opts.prefix(unsafe { args::string(prefix, "prefix") }?).map(drop))
}

/// On (the default): create the tables and indexes idempotently at open, and upgrade a
/// harel 0.9 schema in place. Off: create nothing; a missing table fails open with
/// HAREL_ERR_DATABASE.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL).
#[no_mangle]
pub extern "C" fn harel_options_set_create_schema(
    o: *mut harel_options,
    create_schema: bool,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        opts.create_schema(create_schema);
        Ok(())
    })
}

/// Makes the database path an embedded replica of the libSQL server at `url` (its HTTP
/// URL, e.g. "http://127.0.0.1:8080" or "libsql://db.turso.io"). NULL unsets it. Copied.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, url empty or not UTF-8).
#[no_mangle]
pub extern "C" fn harel_options_set_sync_url(
    o: *mut harel_options,
    url: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    // SAFETY: the caller passes NULL or a NUL-terminated string.
    set(o, err, |opts| opts.sync_url(unsafe { args::optional_string(url, "url") }?).map(drop))
}

/// Makes the databases of `harel_transport_open_shards` embedded replicas: shard `i`'s
/// path replicates the libSQL server at `urls[i]` (as `harel_options_set_sync_url`
/// takes it), so the open takes as many paths as `n_urls`. The auth token and sync
/// interval hold for every shard. `n_urls` 0 unsets (`urls` may then be NULL). Copied.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL; urls NULL with n_urls above 0;
/// n_urls above 256; an element NULL, empty, not UTF-8 or repeated).
#[no_mangle]
pub extern "C" fn harel_options_set_sync_urls(
    o: *mut harel_options,
    urls: *const *const c_char,
    n_urls: usize,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        // The count first: the array is read only once it is known to be of a size allowed.
        if n_urls > crate::MAX_SHARDS {
            return Err(crate::Error::Argument(format!("urls has {n_urls} entries; at most {}", crate::MAX_SHARDS)));
        }
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        opts.sync_urls(&unsafe { args::strings(urls, n_urls, "urls") }?).map(drop)
    })
}

/// The auth token for a libSQL server (remote URL or a replica's primary). NULL unsets
/// it. Copied.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, token not UTF-8).
#[no_mangle]
pub extern "C" fn harel_options_set_auth_token(
    o: *mut harel_options,
    token: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        opts.auth_token(unsafe { args::optional_string(token, "token") }?);
        Ok(())
    })
}

/// How often an embedded replica pulls from its primary, in seconds.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, seconds not finite or <= 0).
#[no_mangle]
pub extern "C" fn harel_options_set_sync_interval(
    o: *mut harel_options,
    seconds: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| opts.sync_interval(seconds).map(drop))
}

/// How long a write waits for the database's write lock before HAREL_ERR_BUSY, in
/// seconds (default 5).
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, seconds not finite or < 0).
#[no_mangle]
pub extern "C" fn harel_options_set_busy_timeout(
    o: *mut harel_options,
    seconds: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| opts.busy_timeout(seconds).map(drop))
}

/// Local files: `full` true (the default) makes every commit durable against power loss
/// (synchronous FULL) but a claim's, whose lease a power loss ends anyway (its worker
/// stops too; the message is delivered again, that claim not counted in `attempts`);
/// false trades the last commits before a power loss for speed (synchronous NORMAL;
/// still safe against process crashes).
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL).
#[no_mangle]
pub extern "C" fn harel_options_set_synchronous_full(
    o: *mut harel_options,
    full: bool,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        opts.synchronous(if full { Synchronous::Full } else { Synchronous::Normal });
        Ok(())
    })
}

/// How many times a message may be claimed: a claim that would hand it out once more moves
/// it to the dead-letter table instead, and its group goes on with its next message. 0
/// (the default): no limit.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL).
#[no_mangle]
pub extern "C" fn harel_options_set_max_attempts(
    o: *mut harel_options,
    max_attempts: u32,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        opts.max_attempts(max_attempts);
        Ok(())
    })
}

/// How long an idempotency key is remembered after its publish, in seconds (> 0, at most
/// ten years; default 86400, a day): within it a publish with the same key stores nothing
/// (harel_transport_publish_with). A day outlasts a producer's retries and the outages
/// they ride out while the keys of a day's publishes stay a small table.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, seconds not finite, <= 0 or over ten years).
#[no_mangle]
pub extern "C" fn harel_options_set_key_retention(
    o: *mut harel_options,
    seconds: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| opts.key_retention(seconds).map(drop))
}

/// Keeps each acked message in the archive for `retention_seconds` after its ack (> 0, at
/// most ten years): its seq, group, event, headers, claims, the worker, and when it was
/// published, claimed and acked (`harel_transport_archive` lists them). Each ack copies its
/// message in its own transaction and prunes at most 100 rows older than the retention.
/// Not set (the default): an ack deletes, and the archive is left as it is. With
/// create_schema off the archive table must be there, or open fails naming it.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, retention_seconds not finite, <= 0 or
/// over ten years).
#[no_mangle]
pub extern "C" fn harel_options_set_archive(
    o: *mut harel_options,
    retention_seconds: f64,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| opts.archive(retention_seconds).map(drop))
}

/// The queue's retry policy (docs/queue.md, "Retries"): a message whose claim ends in a nack
/// with delay 0 or in a lease that lapses waits `min(cap, base * factor^(n-1))` seconds
/// after its claim number n ends, spread by `jitter` (a harel_jitter), before its next
/// delivery; a message published with a policy of its own (harel_delivery's retry fields)
/// follows that one. Each claim draws its backoff, which harel_transport_peek shows
/// (`retry_delays`); every claim still counts toward max_attempts. The claims of transports
/// opened with these options apply it. `base` 0 removes the policy (the default: a nack
/// with delay 0 frees the message at once, a lapsed lease is claimable at its end);
/// otherwise 0.001..HAREL_MAX_DELAY seconds. `factor` 1..16 (0: 2); `cap` base..
/// HAREL_MAX_DELAY seconds (0: an hour, or base if longer).
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL, a value not finite or out of its range,
/// naming it: "retry.factor is 20; ...", or an unknown jitter).
#[no_mangle]
pub extern "C" fn harel_options_set_retry(
    o: *mut harel_options,
    base: f64,
    factor: f64,
    cap: f64,
    jitter: i32,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        let policy = if base == 0.0 {
            None
        } else {
            Some(delivery::retry("retry", delivery::with_defaults(base, factor, cap), jitter)?)
        };
        opts.retry(policy).map(drop)
    })
}

/// The function every call that writes or looks asks for "now" (a publish stamps its
/// messages with it; a claim, ack or nack reads it under the write lock): epoch seconds, called with `ctx`.
/// NULL restores the system clock. It is called on the thread that makes the call, while
/// the transport's lock is held, so it must not call back into the same transport; it
/// must be safe to call from every thread that uses the transport. `ctx` stays the
/// caller's; it must outlive every transport opened with these options. A clock that
/// returns a non-finite or negative value makes the call fail with HAREL_ERR_ARGUMENT.
///
/// Returns HAREL_OK, or HAREL_ERR_ARGUMENT (o NULL).
#[no_mangle]
pub extern "C" fn harel_options_set_clock(
    o: *mut harel_options,
    clock: Option<unsafe extern "C" fn(ctx: *mut c_void) -> f64>,
    ctx: *mut c_void,
    err: *mut *mut harel_error,
) -> harel_status {
    set(o, err, |opts| {
        match clock {
            Some(f) => {
                let ctx = ClockContext(ctx);
                // SAFETY: the caller promises `f` may be called with `ctx` from any thread.
                opts.clock(move || unsafe { f(ctx.pointer()) });
            }
            None => {
                opts.system_clock();
            }
        }
        Ok(())
    })
}

/// The caller's clock context; its thread-safety is the caller's promise (see set_clock).
#[derive(Clone, Copy)]
struct ClockContext(*mut c_void);

impl ClockContext {
    fn pointer(self) -> *mut c_void {
        self.0
    }
}

// SAFETY: harel_options_set_clock documents that the callback and ctx must be usable
// from any thread; the library never dereferences ctx itself.
unsafe impl Send for ClockContext {}
unsafe impl Sync for ClockContext {}
