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

use crate::validate::DELAYED;

/// How many expired keys one keyed publish deletes: a bounded step, however many expired.
const SWEEP: usize = 16;

/// The publish statements, built once per prefix.
#[derive(Debug, Clone)]
pub struct PublishWith {
    pub sweep_keys: String,
    pub forget_key: String,
    pub take_key: String,
    pub insert_message: String,
    pub insert_message_if_new: String,
    pub bind_key: String,
    pub published: String,
    pub published_unkeyed: String,
    pub insert_group: String,
    pub insert_group_if_new: String,
    pub stamp_delayed_head: String,
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
        // ?1 now, ?2 group_id, ?3 event, ?4 locked_by (DELAYED or NULL), ?5 due (or NULL)
        let message_values = "SELECT ?1, ?2, ?3, ?4, ?5";
        let insert = format!("INSERT INTO {m} (enqueued_at, group_id, event, locked_by, lock_expiry)");
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
            insert_message: format!("{insert} {message_values}"),
            insert_message_if_new: format!("{insert} {message_values} WHERE changes() = 1"),
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
}
