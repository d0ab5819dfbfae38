//! `harel_delivery`: what a producer asks of one message's delivery, read from C. A struct
//! that says its own size, so that it can grow at its end without moving the soname: a
//! caller built against an older header passes a smaller size, and the fields past it
//! read as their defaults.

use std::ffi::c_char;
use std::mem::{offset_of, size_of};

use super::args;
use crate::error::{Error, Result};
use crate::{Delivery, Jitter, Retry, Unique, UniqueMode};

/// What a unique key's publish does to the pending message with that key.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_unique_mode {
    /// Keep it: the publish stores nothing and reports it as the duplicate.
    HAREL_UNIQUE_KEEP = 0,
    /// Give it the new event and headers, in its place in its group's FIFO, unless a
    /// worker holds its lease (then it is kept).
    HAREL_UNIQUE_REPLACE = 1,
    /// As HAREL_UNIQUE_REPLACE, and make it due `debounce_delay` seconds from now, never
    /// later than `debounce_max_delay` seconds after its first publish.
    HAREL_UNIQUE_DEBOUNCE = 2,
}

/// How a retry policy spreads its backoff `d` (docs/queue.md, "Retries"). Full is 0, so a
/// zeroed field spreads as the library does by default.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_jitter {
    /// Uniform in [0, d): the widest spread.
    HAREL_JITTER_FULL = 0,
    /// Uniform in [d/2, d): never less than half.
    HAREL_JITTER_EQUAL = 1,
    /// `d` exactly.
    HAREL_JITTER_NONE = 2,
}

/// A retry policy from C (`harel_options_set_retry`, `harel_delivery`'s retry fields);
/// `name` names it in errors ("retry", "messages[3].retry").
pub(crate) fn retry(name: &str, (base, factor, cap): (f64, f64, f64), jitter: i32) -> Result<Retry> {
    let jitter = match jitter {
        0 => Jitter::Full,
        1 => Jitter::Equal,
        2 => Jitter::None,
        other => {
            return Err(Error::Argument(format!(
                "{name}.jitter is {other}; it must be HAREL_JITTER_FULL (0), _EQUAL (1) or _NONE (2)"
            )))
        }
    };
    Ok(Retry { base, factor, cap, jitter })
}

/// What became of a published message (the `outcomes` of harel_transport_publish_delivery
/// and the `duplicate`s of the older calls, which are never 2).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum harel_published {
    /// Stored: its seq is new.
    HAREL_PUBLISHED_STORED = 0,
    /// Nothing stored: its idempotency key was seen, or a message with its unique key is
    /// pending; the seq is that message's.
    HAREL_PUBLISHED_DUPLICATE = 1,
    /// Nothing new stored: the pending message with its unique key took its event and
    /// headers (HAREL_UNIQUE_REPLACE, HAREL_UNIQUE_DEBOUNCE); the seq is that message's.
    HAREL_PUBLISHED_REPLACED = 2,
}

/// A message's delivery options. Zeroed, with `size` set, it is a plain publish:
///
/// ```c
/// harel_delivery d = {0};
/// d.size = sizeof d;
/// d.unique_key = "invoice-42";
/// ```
///
/// Strings are the caller's, only read during the call.
#[repr(C)]
pub struct harel_delivery {
    /// `sizeof(harel_delivery)` as the caller was compiled: fields past it read as 0 and
    /// NULL. 0, or more than this library knows, is HAREL_ERR_ARGUMENT.
    pub size: usize,
    /// An idempotency key, 1..256 bytes of UTF-8 (NULL: none); see
    /// harel_transport_publish_with. Not with `unique_key`.
    pub key: *const c_char,
    /// Seconds from now before which the message is not delivered (0: at once).
    pub delay: f64,
    /// Epoch seconds before which it is not delivered (0 or negative: none).
    pub not_before: f64,
    /// A unique key, 1..256 bytes of UTF-8 (NULL: none): while a message of the queue with
    /// it is pending (not acked, dead-lettered or purged), a publish with it stores
    /// nothing (docs/queue.md, "Unique keys").
    pub unique_key: *const c_char,
    /// A harel_unique_mode (an int, so that a wrong one is refused rather than undefined).
    pub unique_mode: i32,
    /// HAREL_UNIQUE_DEBOUNCE's delay and cap, seconds, 0..HAREL_MAX_DELAY, cap >= delay.
    pub debounce_delay: f64,
    pub debounce_max_delay: f64,
    /// Seconds from now after which the message, if no worker has it by then, expires: it
    /// moves to the dead letters with the reason "expired" (docs/queue.md, "Expiry"). 0:
    /// never; otherwise finite, > 0, at most HAREL_MAX_DELAY.
    pub ttl: f64,
    /// Epoch seconds at which it expires (0: never); with `ttl`, the earlier. Either must
    /// be after now and after the message is due.
    pub expires_at: f64,
    /// A retry policy of its own, in place of the queue's (harel_options_set_retry, whose
    /// rules these follow): `retry_base` 0 means none; otherwise the first backoff in
    /// seconds, `retry_factor` its growth (1..16; 0 reads as 2), `retry_cap` the longest
    /// (0 reads as an hour, or the base if longer), `retry_jitter` a harel_jitter.
    pub retry_base: f64,
    pub retry_factor: f64,
    pub retry_cap: f64,
    pub retry_jitter: i32,
}

/// The options of the older publish calls, which take them as separate arguments.
pub(crate) fn of(key: *const c_char, delay: f64, not_before: f64) -> harel_delivery {
    harel_delivery {
        size: size_of::<harel_delivery>(),
        key,
        delay,
        not_before,
        unique_key: std::ptr::null(),
        unique_mode: 0,
        debounce_delay: 0.0,
        debounce_max_delay: 0.0,
        ttl: 0.0,
        expires_at: 0.0,
        retry_base: 0.0,
        retry_factor: 0.0,
        retry_cap: 0.0,
        retry_jitter: 0,
    }
}

/// `not_before` from C: a negative finite value means none; NaN and infinities go on to
/// be refused.
fn instant(not_before: f64) -> Option<f64> {
    (!not_before.is_finite() || not_before >= 0.0).then_some(not_before)
}

/// The options at `ptr` (NULL: none). Errors name a field after `at` ("" alone,
/// "messages[3]." in a batch) as the core names the option ("unique_key is empty"),
/// and the struct's own fields as such ("delivery.unique_mode is 7").
///
/// # Safety
/// `ptr` is NULL or points to `(*ptr).size` readable bytes that begin a `harel_delivery`,
/// whose strings are NULL or NUL-terminated.
pub(crate) unsafe fn read<'a>(ptr: *const harel_delivery, at: &str) -> Result<Delivery<'a>> {
    if ptr.is_null() {
        return Ok(Delivery::default());
    }
    // SAFETY: a harel_delivery begins with its size, per the contract.
    let size = unsafe { ptr.cast::<usize>().read_unaligned() };
    if size == 0 || size > size_of::<harel_delivery>() {
        return Err(Error::Argument(format!(
            "{at}delivery.size is {size}; set it to sizeof(harel_delivery) ({} in this library)",
            size_of::<harel_delivery>()
        )));
    }
    // A field that ends within the caller's size, or its default past it. Read through
    // the pointer, never a reference to the whole struct, which may be longer than the caller's.
    fn field<T: Copy>(ptr: *const harel_delivery, size: usize, offset: usize, default: T) -> T {
        match offset + size_of::<T>() <= size {
            // SAFETY: within the `size` readable bytes at `ptr`, per `read`'s contract.
            true => unsafe { ptr.cast::<u8>().add(offset).cast::<T>().read_unaligned() },
            false => default,
        }
    }
    let null = std::ptr::null::<c_char>();
    let key = field(ptr, size, offset_of!(harel_delivery, key), null);
    let key = unsafe { args::optional_string(key, &format!("{at}key")) }?;
    let delay: f64 = field(ptr, size, offset_of!(harel_delivery, delay), 0.0);
    let not_before: f64 = field(ptr, size, offset_of!(harel_delivery, not_before), 0.0);
    let unique_key = field(ptr, size, offset_of!(harel_delivery, unique_key), null);
    let unique_key = unsafe { args::optional_string(unique_key, &format!("{at}unique_key")) }?;
    let mode = field(ptr, size, offset_of!(harel_delivery, unique_mode), 0i32);
    let debounce_delay: f64 = field(ptr, size, offset_of!(harel_delivery, debounce_delay), 0.0);
    let debounce_max: f64 = field(ptr, size, offset_of!(harel_delivery, debounce_max_delay), 0.0);
    let mode = match mode {
        0 => UniqueMode::Keep,
        1 => UniqueMode::Replace,
        2 => UniqueMode::Debounce { delay: debounce_delay, max_delay: debounce_max },
        other => {
            return Err(Error::Argument(format!(
                "{at}delivery.unique_mode is {other}; it must be HAREL_UNIQUE_KEEP (0), _REPLACE (1) or _DEBOUNCE (2)"
            )))
        }
    };
    let unique = unique_key.map(|key| Unique { key, mode });
    let ttl: f64 = field(ptr, size, offset_of!(harel_delivery, ttl), 0.0);
    let expires_at: f64 = field(ptr, size, offset_of!(harel_delivery, expires_at), 0.0);
    let unless_zero = |x: f64| (x != 0.0).then_some(x);
    let (ttl, expires_at) = (unless_zero(ttl), unless_zero(expires_at));
    let base: f64 = field(ptr, size, offset_of!(harel_delivery, retry_base), 0.0);
    let retry = if base == 0.0 {
        None
    } else {
        let factor: f64 = field(ptr, size, offset_of!(harel_delivery, retry_factor), 0.0);
        let cap: f64 = field(ptr, size, offset_of!(harel_delivery, retry_cap), 0.0);
        let jitter: i32 = field(ptr, size, offset_of!(harel_delivery, retry_jitter), 0);
        Some(retry(&format!("{at}retry"), with_defaults(base, factor, cap), jitter)?)
    };
    Ok(Delivery { key, delay, not_before: instant(not_before), unique, ttl, expires_at, retry })
}

/// The factor and cap a C caller left 0: doubling, up to an hour (or the base, if longer).
pub(crate) fn with_defaults(base: f64, factor: f64, cap: f64) -> (f64, f64, f64) {
    let or = |value: f64, default: f64| if value == 0.0 { default } else { value };
    (base, or(factor, 2.0), or(cap, base.max(3600.0)))
}

/// The `n` options of a batch: `all` NULL (none for any) or `n` pointers, each NULL (none)
/// or as `read` takes it. Errors name the message ("messages[3].unique_key is empty").
///
/// # Safety
/// `all` is NULL or points to `n` pointers, each as `read` takes it.
pub(crate) unsafe fn read_each<'a>(all: *const *const harel_delivery, n: usize) -> Result<Vec<Delivery<'a>>> {
    if all.is_null() {
        return Ok(vec![Delivery::default(); n]);
    }
    let each = unsafe { std::slice::from_raw_parts(all, n) };
    each.iter().enumerate().map(|(i, &d)| unsafe { read(d, &format!("messages[{i}].")) }).collect()
}
