//! `harel_message`: one message of a batch for `harel_transport_publish_many`, read from C.

use std::ffi::c_char;

use super::args;
use crate::error::Result;
use crate::validate;
use crate::Message;

/// One message for `harel_transport_publish_many`: the arguments of
/// `harel_transport_publish`, as a struct. The caller owns it and its strings; the library
/// only reads them during the call and copies what it stores.
#[repr(C)]
pub struct harel_message {
    /// The group whose FIFO the message joins: NUL-terminated UTF-8, not empty.
    pub group_id: *const c_char,
    /// The event: any valid JSON text, stored byte for byte.
    pub event_json: *const c_char,
    /// The group's priority (0..4), if this message creates the group.
    pub priority: i32,
    /// The group's routing key (not empty), if this message creates the group; NULL: none.
    pub routing_key: *const c_char,
}

impl harel_message {
    /// The message as the core takes it; errors name the field as `publish` does.
    ///
    /// # Safety
    /// The string fields are NULL or NUL-terminated strings live as long as `self`.
    unsafe fn to_message(&self) -> Result<Message<'_>> {
        unsafe { message(self.group_id, self.event_json, self.priority, self.routing_key) }
    }
}

/// A message from `harel_transport_publish`'s arguments (or a `harel_message`'s fields).
///
/// # Safety
/// The strings are NULL or NUL-terminated strings live for `'a`.
pub(crate) unsafe fn message<'a>(
    group_id: *const c_char,
    event_json: *const c_char,
    priority: i32,
    routing_key: *const c_char,
) -> Result<Message<'a>> {
    unsafe {
        Ok(Message {
            group_id: args::string(group_id, "group_id")?,
            event_json: args::string(event_json, "event_json")?,
            priority,
            routing_key: args::optional_string(routing_key, "routing_key")?,
            headers: None,
        })
    }
}

/// The `n` messages at `ptr`, named `messages[i]` in errors.
///
/// # Safety
/// `ptr` is NULL or points to `n` `harel_message`s whose strings are NULL or
/// NUL-terminated, all live for the duration of the call.
pub(crate) unsafe fn batch<'a>(ptr: *const harel_message, n: usize) -> Result<Vec<Message<'a>>> {
    unsafe { args::slice(ptr, n, "messages") }?
        .iter()
        .enumerate()
        .map(|(i, m)| unsafe { m.to_message() }.map_err(|e| validate::in_batch(i, e)))
        .collect()
}
