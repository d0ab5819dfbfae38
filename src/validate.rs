//! Argument checks, done once here for the Rust API, the C ABI and every binding.
//! Each returns `Error::Argument` naming the parameter as the C header names it.

use crate::error::{Error, Result};
use crate::types::Message;

/// The worker id a parked message carries in `locked_by` (docs/queue.md); no worker may use it.
pub const PARKED: &str = "__parked__";
/// Whom a message with a due time is locked to until then (docs/queue.md, "Delayed
/// delivery"); no worker may use it.
pub const DELAYED: &str = "__delayed__";
/// Whom a sharded queue sets aside the head of a group found on a shard its hash does not
/// name (docs/queue.md, "Sharded queues"), until the end of year 9999; no worker may use it.
pub const MISPLACED: &str = "__misplaced__";
pub(crate) const SET_ASIDE_UNTIL: f64 = 253_402_300_799.0;
pub const MAX_PRIORITY: i32 = 4;
pub const MAX_PREFIX_LEN: usize = 30;
/// The most leases one `claim_many` hands out.
pub const MAX_CLAIM: usize = 1000;
/// The longest idempotency key, in bytes.
pub const MAX_KEY_LEN: usize = 256;
/// The longest delay, and the farthest due time from now: ten years, in seconds.
pub const MAX_DELAY: f64 = 315_360_000.0;

fn arg(message: String) -> Error {
    Error::Argument(message)
}

/// A prefix becomes part of table names, so it must be a plain identifier.
pub fn prefix(p: &str) -> Result<()> {
    let mut chars = p.chars();
    let first_ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_');
    if !first_ok || p.len() > MAX_PREFIX_LEN || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(arg(format!(
            "prefix {p:?} is not an identifier: a letter or '_', then letters, digits or '_', \
             at most {MAX_PREFIX_LEN} characters"
        )));
    }
    Ok(())
}

pub fn non_empty(name: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(arg(format!("{name} is empty")));
    }
    Ok(())
}

pub fn worker_id(value: &str) -> Result<()> {
    non_empty("worker_id", value)?;
    if value == PARKED {
        return Err(arg(format!("worker_id {PARKED:?} is reserved for parked messages")));
    }
    if value == DELAYED {
        return Err(arg(format!("worker_id {DELAYED:?} is reserved for delayed messages")));
    }
    if value == MISPLACED {
        return Err(arg(format!("worker_id {MISPLACED:?} is reserved for a sharded queue's misplaced groups")));
    }
    Ok(())
}

pub fn priority(name: &str, value: i32) -> Result<()> {
    if !(0..=MAX_PRIORITY).contains(&value) {
        return Err(arg(format!("{name} is {value}; it must be 0..{MAX_PRIORITY}")));
    }
    Ok(())
}

/// Seconds that must be finite and > 0 (`visibility`, `sync_interval`).
pub fn positive_seconds(name: &str, value: f64) -> Result<()> {
    if !value.is_finite() || value <= 0.0 {
        return Err(arg(format!("{name} is {value}; it must be a finite number of seconds > 0")));
    }
    Ok(())
}

/// How long something is kept (`key_retention`, `archive`): finite, > 0, at most ten years.
pub fn retention(name: &str, seconds: f64) -> Result<f64> {
    positive_seconds(name, seconds)?;
    if seconds > MAX_DELAY {
        return Err(arg(format!("{name} is {seconds}; at most {MAX_DELAY} (ten years)")));
    }
    Ok(seconds)
}

/// The shortest first backoff of a retry policy, seconds.
pub const MIN_RETRY_BASE: f64 = 0.001;
/// The largest growth factor of a retry policy.
pub const MAX_RETRY_FACTOR: f64 = 16.0;

/// A retry policy; `name` names it ("retry", "messages[3].retry").
pub fn retry(name: &str, r: &crate::types::Retry) -> Result<()> {
    if !r.base.is_finite() || !(MIN_RETRY_BASE..=MAX_DELAY).contains(&r.base) {
        return Err(arg(format!(
            "{name}.base is {}; it must be finite seconds, {MIN_RETRY_BASE}..{MAX_DELAY} (ten years)",
            r.base
        )));
    }
    if !r.factor.is_finite() || !(1.0..=MAX_RETRY_FACTOR).contains(&r.factor) {
        return Err(arg(format!("{name}.factor is {}; it must be finite, 1..{MAX_RETRY_FACTOR}", r.factor)));
    }
    if !r.cap.is_finite() || r.cap < r.base || r.cap > MAX_DELAY {
        return Err(arg(format!(
            "{name}.cap is {}; it must be finite seconds, from base ({}) to {MAX_DELAY} (ten years)",
            r.cap, r.base
        )));
    }
    Ok(())
}

/// Seconds that must be finite and >= 0 (`delay`, `busy_timeout`).
pub fn non_negative_seconds(name: &str, value: f64) -> Result<()> {
    if !value.is_finite() || value < 0.0 {
        return Err(arg(format!("{name} is {value}; it must be a finite number of seconds >= 0")));
    }
    Ok(())
}

/// The event is stored byte for byte, so it is only parsed here, never re-serialized.
pub fn event_json(value: &str) -> Result<()> {
    serde_json::from_str::<serde::de::IgnoredAny>(value)
        .map(|_| ())
        .map_err(|e| arg(format!("event_json is not valid JSON: {e}")))
}

/// One message's arguments, named as `publish` names them.
pub fn message(m: &Message) -> Result<()> {
    non_empty("group_id", m.group_id)?;
    event_json(m.event_json)?;
    priority("priority", m.priority)?;
    m.routing_key.map_or(Ok(()), |key| non_empty("routing_key", key))
}

/// Every message of a batch, before any is written; an error names the message by its
/// index ("messages[3].event_json is not valid JSON: ...").
pub fn messages(batch: &[Message]) -> Result<()> {
    batch.iter().enumerate().try_for_each(|(i, m)| message(m).map_err(|e| in_batch(i, e)))
}

/// An argument error about message `i` of a batch, its field named as `publish` names it:
/// "messages[3].event_json ...".
pub fn in_batch(i: usize, e: Error) -> Error {
    arg(format!("messages[{i}].{e}"))
}

/// How many leases a batch claim may hand out: 1..=MAX_CLAIM.
pub fn claim_max(max: usize) -> Result<()> {
    if !(1..=MAX_CLAIM).contains(&max) {
        return Err(arg(format!("max is {max}; it must be 1..{MAX_CLAIM}")));
    }
    Ok(())
}

pub fn routing_keys<S: AsRef<str>>(keys: &[S]) -> Result<()> {
    keys.iter().try_for_each(|k| non_empty("routing_keys element", k.as_ref()))
}

/// Seconds already checked finite and >= 0, as a Duration (which tops out near 2^64 s).
pub fn duration(name: &str, seconds: f64) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(seconds)
        .map_err(|_| arg(format!("{name} is {seconds}; it is too large for a duration")))
}

/// A publish's delivery options; `at` names the message ("messages[3].") or is empty.
pub fn delivery(at: &str, d: &crate::types::Delivery<'_>) -> Result<()> {
    if let Some(key) = d.key {
        non_empty(&format!("{at}key"), key)?;
        if key.len() > MAX_KEY_LEN {
            return Err(arg(format!("{at}key is {} bytes; at most {MAX_KEY_LEN}", key.len())));
        }
    }
    if !d.delay.is_finite() || d.delay < 0.0 || d.delay > MAX_DELAY {
        return Err(arg(format!(
            "{at}delay is {}; it must be a finite number of seconds, 0..{MAX_DELAY} (ten years)",
            d.delay
        )));
    }
    if let Some(t) = d.not_before {
        if !t.is_finite() || t < 0.0 {
            return Err(arg(format!("{at}not_before is {t}; it must be finite epoch seconds >= 0")));
        }
    }
    if let Some(ttl) = d.ttl {
        if !ttl.is_finite() || ttl <= 0.0 || ttl > MAX_DELAY {
            return Err(arg(format!(
                "{at}ttl is {ttl}; it must be a finite number of seconds > 0, at most {MAX_DELAY} (ten years)"
            )));
        }
    }
    if let Some(t) = d.expires_at {
        if !t.is_finite() || t < 0.0 {
            return Err(arg(format!("{at}expires_at is {t}; it must be finite epoch seconds >= 0")));
        }
    }
    if let Some(r) = &d.retry {
        retry(&format!("{at}retry"), r)?;
    }
    d.unique.map_or(Ok(()), |u| unique(at, d.key.is_some(), &u))
}

/// When a message published at `now` with `d` (checked) and due at `due` expires: the
/// earlier of its ttl and its expires_at, None for never. An `Error::Argument` when that
/// is not after now, or not after its due time (it could never be delivered).
pub fn expiry(at: &str, d: &crate::types::Delivery<'_>, now: f64, due: Option<f64>) -> Result<Option<f64>> {
    let expires = match (d.ttl.map(|ttl| now + ttl), d.expires_at) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => match a.or(b) {
            Some(t) => t,
            None => return Ok(None),
        },
    };
    if expires <= now {
        return Err(arg(format!("{at}expires_at is {expires}: not after now ({now})")));
    }
    if let Some(due) = due.filter(|&due| expires <= due) {
        return Err(arg(format!(
            "{at}expires_at is {expires}: not after the message is due ({due}), so it could never be delivered"
        )));
    }
    Ok(Some(expires))
}

/// A unique key and its mode; `keyed` when the publish has an idempotency key too.
fn unique(at: &str, keyed: bool, u: &crate::types::Unique<'_>) -> Result<()> {
    if keyed {
        return Err(arg(format!(
            "{at}key and {at}unique_key are both given: a publish takes one (a unique key already makes a \
             retry a duplicate while its message is pending)"
        )));
    }
    non_empty(&format!("{at}unique_key"), u.key)?;
    if u.key.len() > MAX_KEY_LEN {
        return Err(arg(format!("{at}unique_key is {} bytes; at most {MAX_KEY_LEN}", u.key.len())));
    }
    if let crate::types::UniqueMode::Debounce { delay, max_delay } = u.mode {
        for (name, value) in [("delay", delay), ("max_delay", max_delay)] {
            if !value.is_finite() || value < 0.0 || value > MAX_DELAY {
                return Err(arg(format!(
                    "{at}debounce {name} is {value}; it must be a finite number of seconds, 0..{MAX_DELAY} (ten years)"
                )));
            }
        }
        if max_delay < delay {
            return Err(arg(format!("{at}debounce max_delay is {max_delay}; it must be >= its delay ({delay})")));
        }
    }
    Ok(())
}

/// The due time of a message published at `now` with `d` (checked), None when it is due
/// at once; an `Error::Argument` for a `not_before` more than ten years away.
pub fn due(at: &str, d: &crate::types::Delivery<'_>, now: f64) -> Result<Option<f64>> {
    let debounce = match d.unique.map(|u| u.mode) {
        Some(crate::types::UniqueMode::Debounce { delay, .. }) => delay,
        _ => 0.0,
    };
    let due = (now + d.delay.max(debounce)).max(d.not_before.unwrap_or(0.0));
    if due > now + MAX_DELAY {
        return Err(arg(format!("{at}not_before is {due}: more than ten years after now ({now})")));
    }
    Ok((due > now).then_some(due))
}
