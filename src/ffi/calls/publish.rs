//! Publishing from C: one message or a batch, with or without delivery options (an
//! idempotency key, a delay or a due instant).

use std::ffi::{c_char, c_int};

use super::error::harel_error;
use super::delivery::{self, harel_delivery, harel_published};
use super::headers::{self, harel_header, harel_headers};
use super::handle::{harel_transport, on_handle};
use super::message::{self, harel_message};
use super::status::harel_status::{self, HAREL_OK};
use crate::error::Result;
use crate::{Delivery, Message, Published, Transport};

/// Appends `event_json` (any valid JSON text, stored byte for byte) to the FIFO of
/// `group_id`. The first publish into a group fixes its `priority` (0..4) and
/// `routing_key` (NULL: none); later publishes leave both as they are. One transaction:
/// the message and its group, or neither. Strings are copied.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t, group_id or event_json NULL; a string not
/// UTF-8; group_id or routing_key empty; event_json not JSON; priority outside 0..4);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE; HAREL_ERR_CONNECT (a libSQL server: see harel_status).
#[no_mangle]
pub extern "C" fn harel_transport_publish(
    t: *mut harel_transport,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let m = unsafe { message::message(group_id, event_json, priority, routing_key) }?;
        t.publish(m.group_id, m.event_json, m.priority, m.routing_key)?;
        Ok(HAREL_OK)
    })
}

/// Appends `n_messages` messages, in array order, in one transaction: all of them (and
/// the groups they create) or none. One commit for the batch: at synchronous FULL one
/// fsync instead of one per message. Each element holds what `harel_transport_publish`
/// takes, under the same rules; within a group the messages keep their order in the
/// array, and the first message into a group (in this batch or before it) fixes its
/// priority and routing key. Every message is checked before anything is written: one bad
/// message rejects the whole batch, and the error message names it by index
/// ("messages[3].event_json is not valid JSON: ...").
///
/// `messages` may be NULL only when `n_messages` is 0; an empty batch returns HAREL_OK and
/// writes nothing. The strings are copied; the array is only read during the call and
/// stays the caller's.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (t NULL; messages NULL with n_messages > 0; in any
/// element: group_id or event_json NULL, a string not UTF-8, group_id or routing_key
/// empty, event_json not JSON, priority outside 0..4; nothing was written);
/// HAREL_ERR_BUSY (nothing was written); HAREL_ERR_DATABASE (the batch was rolled back:
/// nothing was written); HAREL_ERR_CONNECT (a libSQL server could not be reached or did
/// not answer; if it was the commit that got no answer, the batch may have been applied).
#[no_mangle]
pub extern "C" fn harel_transport_publish_many(
    t: *mut harel_transport,
    messages: *const harel_message,
    n_messages: usize,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        t.publish_many(&unsafe { message::batch(messages, n_messages) }?)?;
        Ok(HAREL_OK)
    })
}

/// A publish's outcome as C reads it.
fn outcome(p: &Published) -> harel_published {
    match (p.duplicate, p.replaced) {
        (_, true) => harel_published::HAREL_PUBLISHED_REPLACED,
        (true, false) => harel_published::HAREL_PUBLISHED_DUPLICATE,
        (false, false) => harel_published::HAREL_PUBLISHED_STORED,
    }
}

/// Writes what became of each message to the caller's arrays (each NULL or `n` long).
///
/// # Safety
/// `seqs` and `duplicates` are NULL or valid for `published.len()` writes.
pub(crate) unsafe fn hand_out(published: &[Published], seqs: *mut i64, duplicates: *mut c_int) {
    for (i, p) in published.iter().enumerate() {
        // SAFETY: the caller's arrays hold `published.len()` elements, per the contract.
        unsafe {
            if !seqs.is_null() {
                *seqs.add(i) = p.seq;
            }
            if !duplicates.is_null() {
                *duplicates.add(i) = outcome(p) as c_int;
            }
        }
    }
}

/// `harel_transport_publish` with delivery options:
///
/// - `key` (NULL: none): an idempotency key, 1..256 bytes of UTF-8. A key seen within the
///   queue's retention (`harel_options_set_key_retention`, default 24 hours) stores
///   nothing: the call returns HAREL_OK with `*duplicate` 1 and `*seq` the first
///   message's. The key and the message are committed together. A publish that failed with
///   HAREL_ERR_CONNECT (it may have been applied) is safe to retry with the same key.
/// - `delay` (seconds, finite, 0..315360000) and `not_before` (epoch seconds by the
///   transport's clock; a negative finite value: none): the message is not delivered before the later of
///   now + delay and not_before. It keeps its place in its group's FIFO: the messages after
///   it wait behind it (docs/queue.md, "Delayed delivery").
///
/// `seq` and `duplicate` may be NULL; on HAREL_OK they receive the message's seq and
/// whether it was a duplicate (1) or stored (0). Not through group commit: the call is
/// its own transaction.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (as for harel_transport_publish, or key empty,
/// longer than 256 bytes or not UTF-8, delay not finite, negative or over ten years,
/// not_before NaN, infinite or more than ten years away; nothing was written);
/// HAREL_ERR_BUSY; HAREL_ERR_DATABASE (also: a key given and the queue lacks the keys
/// table, opened with create_schema off); HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_publish_with(
    t: *mut harel_transport,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    key: *const c_char,
    delay: f64,
    not_before: f64,
    seq: *mut i64,
    duplicate: *mut c_int,
    err: *mut *mut harel_error,
) -> harel_status {
    harel_transport_publish_with_headers(
        t,
        group_id,
        event_json,
        priority,
        routing_key,
        std::ptr::null(),
        0,
        key,
        delay,
        not_before,
        seq,
        duplicate,
        err,
    )
}

/// `harel_transport_publish` with headers: `n_headers` (name, value) pairs at `headers`
/// (NULL when `n_headers` is 0), stored beside the message and handed back, in order and
/// byte for byte, with every lease of it (`harel_lease`'s `headers`), by
/// harel_transport_peek and with its dead letter; a redrive keeps them. harel's own Python
/// workers never see them. At most 64 pairs and 16384 bytes of names and values in all; a
/// name 1..128 bytes of visible ASCII (0x21..0x7e) without '='; a value UTF-8 without NUL;
/// names may repeat. Strings are copied. Shares commits with other publishes as
/// harel_transport_publish does.
///
/// Returns as harel_transport_publish; HAREL_ERR_ARGUMENT also for headers NULL with
/// n_headers > 0 or a header that breaks the rules, named ("headers[2].name holds byte
/// 0x3d: ..."; nothing was written).
#[no_mangle]
pub extern "C" fn harel_transport_publish_headers(
    t: *mut harel_transport,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    headers: *const harel_header,
    n_headers: usize,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (m, headers) = unsafe {
            (message::message(group_id, event_json, priority, routing_key)?, headers::read(headers, n_headers)?)
        };
        t.publish_many(&[Message { headers: headers.as_ref(), ..m }])?;
        Ok(HAREL_OK)
    })
}

/// `harel_transport_publish_with` with headers, under harel_transport_publish_headers'
/// rules. A duplicate (its key seen) stores nothing, its headers neither.
///
/// Returns as harel_transport_publish_with; HAREL_ERR_ARGUMENT also for a bad header
/// (nothing was written).
#[no_mangle]
pub extern "C" fn harel_transport_publish_with_headers(
    t: *mut harel_transport,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    headers: *const harel_header,
    n_headers: usize,
    key: *const c_char,
    delay: f64,
    not_before: f64,
    seq: *mut i64,
    duplicate: *mut c_int,
    err: *mut *mut harel_error,
) -> harel_status {
    harel_transport_publish_delivery(
        t,
        group_id,
        event_json,
        priority,
        routing_key,
        headers,
        n_headers,
        &delivery::of(key, delay, not_before),
        seq,
        duplicate,
        err,
    )
}

/// `harel_transport_publish_many` with delivery options per message, in one transaction:
/// every message stored or found a duplicate, or nothing written. `keys`, `delays` and
/// `not_before` are each NULL (none for every message) or `n_messages` long, element i
/// for message i, with the meanings of harel_transport_publish_with (a NULL key: none; a
/// negative finite not_before: none). A key met earlier in the batch makes the later message a
/// duplicate of the earlier one. `seqs` and `duplicates` are NULL or `n_messages` long; on
/// HAREL_OK they receive each message's outcome. An error names the message
/// ("messages[3].key is empty").
///
/// Returns as harel_transport_publish_with; an empty batch returns HAREL_OK and writes nothing.
#[no_mangle]
pub extern "C" fn harel_transport_publish_many_with(
    t: *mut harel_transport,
    messages: *const harel_message,
    n_messages: usize,
    keys: *const *const c_char,
    delays: *const f64,
    not_before: *const f64,
    seqs: *mut i64,
    duplicates: *mut c_int,
    err: *mut *mut harel_error,
) -> harel_status {
    harel_transport_publish_many_with_headers(
        t, messages, n_messages, std::ptr::null(), keys, delays, not_before, seqs, duplicates, err,
    )
}

/// `harel_transport_publish_many_with`, with each message's headers: `headers` is NULL
/// (none for any message) or `n_messages` long, element i holding message i's under
/// harel_transport_publish_headers' rules (`n` 0: none). An error names the message and
/// the header ("messages[3].headers[0].name is 0 bytes; ...").
///
/// Returns as harel_transport_publish_many_with; HAREL_ERR_ARGUMENT also for a bad
/// header (nothing was written).
#[no_mangle]
pub extern "C" fn harel_transport_publish_many_with_headers(
    t: *mut harel_transport,
    messages: *const harel_message,
    n_messages: usize,
    headers: *const harel_headers,
    keys: *const *const c_char,
    delays: *const f64,
    not_before: *const f64,
    seqs: *mut i64,
    duplicates: *mut c_int,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // None for any message: nothing to build (and `n_messages` not trusted before the
        // batch is checked). SAFETY: each array is NULL or `n_messages` long, per the contract.
        let given = !(keys.is_null() && delays.is_null() && not_before.is_null());
        let options: Vec<harel_delivery> = match given {
            false => Vec::new(),
            true => (0..n_messages)
                .map(|i| unsafe {
                    delivery::of(
                        if keys.is_null() { std::ptr::null() } else { *keys.add(i) },
                        if delays.is_null() { 0.0 } else { *delays.add(i) },
                        if not_before.is_null() { -1.0 } else { *not_before.add(i) },
                    )
                })
                .collect(),
        };
        let each: Vec<*const harel_delivery> = options.iter().map(std::ptr::from_ref).collect();
        let deliveries = if given { each.as_ptr() } else { std::ptr::null() };
        // SAFETY: as this function's contract, `deliveries` NULL or `n_messages` long.
        unsafe { publish_batch(t, (messages, n_messages), headers, deliveries, (seqs, duplicates)) }
    })
}

/// `harel_transport_publish_headers` with the delivery options at `delivery` (NULL: none;
/// see harel_delivery): an idempotency key, a delay or due instant, a unique key and its
/// mode. `headers` as harel_transport_publish_headers takes them (NULL with `n_headers` 0).
///
/// A unique key (docs/queue.md, "Unique keys"): while a message of the queue with it is
/// pending (ready, delayed, leased or parked: not yet acked, dead-lettered or purged), the
/// publish stores nothing new. HAREL_UNIQUE_KEEP reports the pending message as the
/// duplicate; HAREL_UNIQUE_REPLACE gives it this event and these headers in its place in
/// its group's FIFO (its group, priority and routing key stay), unless a worker holds its
/// lease, which is never replaced (then a duplicate); HAREL_UNIQUE_DEBOUNCE also makes it
/// due `debounce_delay` seconds from now, never later than `debounce_max_delay` seconds
/// after its first publish (a new message is due `debounce_delay` from now). The key is
/// freed when the message is acked, dead-lettered or purged. On a sharded queue a key is
/// held on the shard of its message's group.
///
/// `seq` and `outcome` may be NULL; on HAREL_OK they receive the message's seq (for a
/// duplicate, the pending or first message's) and a harel_published. Its own
/// transaction, not through group commit.
///
/// Returns HAREL_OK; HAREL_ERR_ARGUMENT (as harel_transport_publish_with_headers, or
/// delivery->size 0 or larger than this library's harel_delivery, unique_key empty,
/// longer than 256 bytes or not UTF-8, both key and unique_key given, unique_mode not a
/// harel_unique_mode, a debounce delay or cap not finite, negative, over ten years, or
/// the cap below the delay; nothing was written); HAREL_ERR_BUSY; HAREL_ERR_DATABASE
/// (also: a key given and the queue, opened with create_schema off, lacks the keys
/// table); HAREL_ERR_CONNECT.
#[no_mangle]
pub extern "C" fn harel_transport_publish_delivery(
    t: *mut harel_transport,
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
    headers: *const harel_header,
    n_headers: usize,
    delivery: *const harel_delivery,
    seq: *mut i64,
    outcome: *mut c_int,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        let (m, headers, options) = unsafe {
            (
                message::message(group_id, event_json, priority, routing_key)?,
                headers::read(headers, n_headers)?,
                delivery::read(delivery, "")?,
            )
        };
        let published = t.publish_with(Message { headers: headers.as_ref(), ..m }, options)?;
        // SAFETY: NULL or valid for one write each.
        unsafe { hand_out(&[published], seq, outcome) };
        Ok(HAREL_OK)
    })
}

/// `harel_transport_publish_many_with_headers` with each message's delivery options, in
/// one transaction: every message stored or found a duplicate (or replaced), or nothing
/// written. `deliveries` is NULL (none for any message) or `n_messages` pointers, each
/// NULL (none) or a harel_delivery for message i, under harel_transport_publish_delivery's
/// rules; a unique key met earlier in the batch finds the earlier message pending.
/// `seqs` and `outcomes` are NULL or `n_messages` long; on HAREL_OK they receive each
/// message's seq and harel_published. An error names the message
/// ("messages[3].unique_key is empty").
///
/// Returns as harel_transport_publish_delivery; an empty batch returns HAREL_OK and writes nothing.
#[no_mangle]
pub extern "C" fn harel_transport_publish_many_delivery(
    t: *mut harel_transport,
    messages: *const harel_message,
    n_messages: usize,
    headers: *const harel_headers,
    deliveries: *const *const harel_delivery,
    seqs: *mut i64,
    outcomes: *mut c_int,
    err: *mut *mut harel_error,
) -> harel_status {
    on_handle(t, err, |t| {
        // SAFETY: the caller passes NULL or valid pointers, per this function's contract.
        unsafe { publish_batch(t, (messages, n_messages), headers, deliveries, (seqs, outcomes)) }
    })
}

/// A batch as both batch calls with options publish it: the messages, their headers and
/// their options read and checked, in that order, then published and the outcomes handed out.
///
/// # Safety
/// The pointers are as harel_transport_publish_many_delivery takes them.
unsafe fn publish_batch(
    t: &Transport,
    (messages, n_messages): (*const harel_message, usize),
    headers: *const harel_headers,
    deliveries: *const *const harel_delivery,
    (seqs, outcomes): (*mut i64, *mut c_int),
) -> Result<harel_status> {
    let batch = unsafe { message::batch(messages, n_messages) }?;
    let each = unsafe { headers::read_each(headers, n_messages) }?;
    let options = unsafe { delivery::read_each(deliveries, n_messages) }?;
    let items: Vec<(Message<'_>, Delivery<'_>)> = batch
        .into_iter()
        .zip(&each)
        .zip(options)
        .map(|((m, h), d)| (Message { headers: h.as_ref(), ..m }, d))
        .collect();
    let published = t.publish_many_with(&items)?;
    // SAFETY: NULL or valid for `n_messages` writes each.
    unsafe { hand_out(&published, seqs, outcomes) };
    Ok(HAREL_OK)
}
