//! A message to publish: what `publish_many` takes a batch of.

/// One message for `publish_many`: the arguments of `publish`, borrowed for the call.
/// The rules are `publish`'s: `group_id` not empty, `event_json` any valid JSON text
/// (stored byte for byte), `priority` 0..4, `routing_key` not empty when given. The
/// message that creates a group (earlier in the batch or before it) fixes the group's
/// priority and routing key; later ones leave both as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// The group whose FIFO the message joins.
    pub group_id: &'a str,
    /// The event, JSON text.
    pub event_json: &'a str,
    /// The group's priority (0..4), if this message creates the group.
    pub priority: i32,
    /// The group's routing key, if this message creates the group; `None`: no key.
    pub routing_key: Option<&'a str>,
}
