//! The statements of a publish with delivery options (`publish_with`): an idempotency key,
//! a due time. Each message is a few statements of one chain (chain.rs), so a key and its
//! message are committed together or not at all, on a file as on a server:
//!
//! 1. `forget_key`: the key, if its retention ended, is no longer seen.
//! 2. `take_key`: the key's row, with seq -1 for now; `changes()` is 1 when the key is new.
//! 3. `insert_message` (`_if_new` with a key): the message, only when the key is new. A
//!    message with a due time goes in locked to `DELAYED` until then: harel 0.9's
//!    transports, which know nothing of delays, see a lease held until then and never
//!    deliver it early; ours see the same.
//! 4. `bind_key`: the new key's seq becomes the message's (`last_insert_rowid()`).
//! 5. `published`: the seq the key stands for (a duplicate's: the first message's), and
//!    `changes()` of 4: 1 when this publish stored it. Without a key, `last_insert_rowid()`.
//! 6. `insert_group_if_new`: the group, when the message is new.
//! 7. `stamp_delayed_head`: a group whose head waits for its due time is stamped with it,
//!    so claims pass over it in their index range (as over a leased group) and a waiting
//!    claim's look finds the time (`next_ready_at`).
//!
//! A key's row outlives its message: it lasts the retention, acked or not. `sweep_keys`
//! deletes a bounded number of expired ones in each keyed publish.

use libsql::Value;

use super::Bound;
use crate::headers::Headers;
use crate::types::{Message, Retry};
use super::retry::stored;
use crate::validate::DELAYED;

/// How many expired keys one keyed publish deletes: a bounded step, however many expired.
const SWEEP: usize = 16;

/// The publish statements, built once per prefix.
#[derive(Debug, Clone)]
pub struct PublishWith {
    sweep_keys: String,
    forget_key: String,
    take_key: String,
    insert_message: String,
    insert_message_if_new: String,
    bind_key: String,
    published: String,
    published_unkeyed: String,
    insert_group: String,
    insert_group_if_new: String,
    stamp_delayed_head: String,
}

/// The keys table: a key, the seq of the message it stored, and when it is forgotten.
pub(super) fn keys_table(k: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {k} (key TEXT PRIMARY KEY, seq INTEGER NOT NULL, \
         expires_at REAL NOT NULL)"
    )
}

pub(super) fn keys_index(k: &str) -> String {
    format!("CREATE INDEX IF NOT EXISTS {k}_by_expiry ON {k} (expires_at)")
}

/// The due time of group ?1's head when it is delayed, else NULL.
fn delayed_head_due(m: &str) -> String {
    format!(
        "(SELECT h.lock_expiry FROM {m} h WHERE h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = ?1) \
         AND h.locked_by = '{DELAYED}')"
    )
}

/// `requeue_group_if_not_empty`'s new turn: now (?2), or its head's due time if later.
pub(super) fn turn_after_head(m: &str) -> String {
    format!("MAX(?2, COALESCE({}, 0))", delayed_head_due(m))
}

impl PublishWith {
    /// For the messages, groups and keys tables `m`, `g`, `k`.
    pub(super) fn new(m: &str, g: &str, k: &str) -> PublishWith {
        // ?1 now, ?2 group_id, ?3 event, ?4 locked_by (DELAYED or NULL), ?5 due (or NULL),
        // ?6 headers (or NULL), ?7 expires_at (or NULL), ?8 retry (or NULL)
        let message_row = "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8";
        let insert = format!(
            "INSERT INTO {m} (enqueued_at, group_id, event, locked_by, lock_expiry, headers, expires_at, retry)"
        );
        let due = delayed_head_due(m);
        PublishWith {
            // ?1 now
            sweep_keys: format!(
                "DELETE FROM {k} WHERE key IN (SELECT key FROM {k} WHERE expires_at <= ?1 \
                 ORDER BY expires_at LIMIT {SWEEP})"
            ),
            // ?1 key, ?2 now
            forget_key: format!("DELETE FROM {k} WHERE key = ?1 AND expires_at <= ?2"),
            // ?1 key, ?2 expires_at
            take_key: format!(
                "INSERT INTO {k} (key, seq, expires_at) VALUES (?1, -1, ?2) ON CONFLICT (key) DO NOTHING"
            ),
            insert_message: format!("{insert} {message_row}"),
            insert_message_if_new: format!("{insert} {message_row} WHERE changes() = 1"),
            // ?1 key
            bind_key: format!("UPDATE {k} SET seq = last_insert_rowid() WHERE key = ?1 AND seq = -1"),
            published: format!("SELECT seq, changes() FROM {k} WHERE key = ?1"),
            published_unkeyed: "SELECT last_insert_rowid(), 1".to_owned(),
            // ?1 group_id, ?2 priority, ?3 routing_key
            insert_group: format!("INSERT OR IGNORE INTO {g} (group_id, priority, routing_key) VALUES (?1, ?2, ?3)"),
            // after `published`, changes() is still `bind_key`'s
            insert_group_if_new: format!(
                "INSERT OR IGNORE INTO {g} (group_id, priority, routing_key) SELECT ?1, ?2, ?3 WHERE changes() = 1"
            ),
            // ?1 group_id
            stamp_delayed_head: format!(
                "UPDATE {g} SET last_claimed_at = {due} WHERE group_id = ?1 AND {due} > last_claimed_at"
            ),
        }
    }

    /// Deletes up to `SWEEP` keys whose retention ended by `now`.
    pub fn sweep_keys(&self, now: f64) -> Bound<'_> {
        (&self.sweep_keys, vec![now.into()])
    }

    /// 1: `key`, if its retention ended by `now`, is no longer seen.
    pub fn forget_key(&self, key: &str, now: f64) -> Bound<'_> {
        (&self.forget_key, vec![key.into(), now.into()])
    }

    /// 2: `key`'s row, kept until `expires_at`.
    pub fn take_key(&self, key: &str, expires_at: f64) -> Bound<'_> {
        (&self.take_key, vec![key.into(), expires_at.into()])
    }

    /// 3: message `m`, published at `now`; locked to `DELAYED` until its due time, if it
    /// has one; expiring at its expiry, if it has one.
    pub fn insert_message(&self, now: f64, m: &Message<'_>, timing: Timing) -> Bound<'_> {
        (&self.insert_message, message_values(now, m, timing))
    }

    /// 3 with a key: the same, only when the key is new.
    pub fn insert_message_if_new(&self, now: f64, m: &Message<'_>, timing: Timing) -> Bound<'_> {
        (&self.insert_message_if_new, message_values(now, m, timing))
    }

    /// 4: the new `key` stands for the message just inserted.
    pub fn bind_key(&self, key: &str) -> Bound<'_> {
        (&self.bind_key, vec![key.into()])
    }

    /// 5: the seq `key` stands for, and 1 when this publish stored it.
    pub fn published(&self, key: &str) -> Bound<'_> {
        (&self.published, vec![key.into()])
    }

    /// 5 without a key: the seq just inserted, and 1.
    pub fn published_unkeyed(&self) -> Bound<'_> {
        (&self.published_unkeyed, Vec::new())
    }

    /// 6: the group of message `m`, made with its priority and routing key unless it exists.
    pub fn insert_group(&self, m: &Message<'_>) -> Bound<'_> {
        (&self.insert_group, group_values(m))
    }

    /// 6 with a key: the same, only when the message is new.
    pub fn insert_group_if_new(&self, m: &Message<'_>) -> Bound<'_> {
        (&self.insert_group_if_new, group_values(m))
    }

    /// 7: group `group_id` stamped with its head's due time, if the head is delayed.
    pub fn stamp_delayed_head(&self, group_id: &str) -> Bound<'_> {
        (&self.stamp_delayed_head, vec![group_id.into()])
    }
}

/// When a message is due and when it expires, each None for at once and never
/// (`validate::due`, `validate::expiry`), and its own retry policy, if any.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    pub due: Option<f64>,
    pub expires_at: Option<f64>,
    pub retry: Option<Retry>,
}

/// A message's row (`message_row` in `PublishWith::new`): ?1 now, ?2 group_id, ?3 event,
/// ?4 locked_by, ?5 due, ?6 headers, ?7 expires_at, ?8 retry.
pub(super) fn message_values(now: f64, m: &Message<'_>, Timing { due, expires_at, retry }: Timing) -> Vec<Value> {
    let locked_by = due.map(|_| DELAYED);
    let headers = m.headers.and_then(Headers::stored);
    let values = [now.into(), m.group_id.into(), m.event_json.into(), locked_by.into(), due.into(), headers.into()];
    values.into_iter().chain([expires_at.into(), retry.as_ref().map(stored).into()]).collect()
}

/// ?1 group_id, ?2 priority, ?3 routing_key.
fn group_values(m: &Message<'_>) -> Vec<Value> {
    vec![m.group_id.into(), m.priority.into(), m.routing_key.into()]
}
