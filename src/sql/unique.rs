//! The statements of a publish with a unique key (docs/queue.md, "Unique keys"). The key
//! lives on the message's own row (`unique_key`, under a partial UNIQUE index), so it is
//! freed by whatever removes the row — an ack, a dead letter, a purge, harel's own ack —
//! in that same statement. One chain per message (chain.rs):
//!
//! 1. `replace` (modes replace and debounce): the pending message with the key takes the
//!    new event and headers, unless a worker holds it; RETURNING its seq when it did.
//! 2. `pending`: the seq of the message pending with the key, if any (a duplicate's).
//! 3. `insert`: the message with its key, only when none is pending (`changes()` 1).
//! 4. then as a publish without a key: `published_unkeyed`, `insert_group_if_new`, and
//!    `stamp`, which gives the group of the key's message the due time of its head, later
//!    or earlier than its turn (a debounce may bring a longer delay or a park forward).

use libsql::Value;

use super::publish::{message_values, Timing};
use super::Bound;
use crate::headers::Headers;
use crate::types::{Message, UniqueMode};
use crate::validate::{DELAYED, PARKED};

#[derive(Debug, Clone)]
pub struct UniqueSql {
    replace: String,
    debounce: String,
    pending: String,
    insert: String,
    stamp: String,
}

/// The index that keeps one pending message per key, and finds it.
pub(super) fn index(m: &str) -> String {
    format!("CREATE UNIQUE INDEX IF NOT EXISTS {m}_by_unique_key ON {m} (unique_key) WHERE unique_key IS NOT NULL")
}

impl UniqueSql {
    pub(super) fn new(m: &str, g: &str) -> UniqueSql {
        // Not held by a worker: free, parked, delayed, or its lease lapsed (?2 now). A
        // lapsed lease is ended, so its worker's ack cannot remove an event it never saw.
        let not_held = format!("(locked_by IS NULL OR locked_by IN ('{PARKED}', '{DELAYED}') OR lock_expiry <= ?2)");
        let kept = format!("locked_by IN ('{PARKED}', '{DELAYED}')");
        // The head's due time, as publish.rs's stamp_delayed_head, for the key's group.
        let group = format!("(SELECT group_id FROM {m} WHERE unique_key = ?1)");
        let due = format!(
            "(SELECT h.lock_expiry FROM {m} h WHERE h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = {group}) \
             AND h.locked_by = '{DELAYED}')"
        );
        UniqueSql {
            // ?1 unique_key, ?2 now, ?3 event, ?4 headers, ?5 expires_at
            replace: format!(
                "UPDATE {m} SET event = ?3, headers = ?4, expires_at = ?5, \
                 locked_by = CASE WHEN {kept} THEN locked_by END, lock_expiry = CASE WHEN {kept} THEN lock_expiry END \
                 WHERE unique_key = ?1 AND {not_held} RETURNING seq"
            ),
            // ?1 unique_key, ?2 now, ?3 event, ?4 headers, ?5 expires_at, ?6 delay, ?7 max_delay
            debounce: format!(
                "UPDATE {m} SET event = ?3, headers = ?4, expires_at = ?5, locked_by = '{DELAYED}', \
                 lock_expiry = MIN(?2 + ?6, COALESCE(enqueued_at, ?2) + ?7), limited_key = NULL \
                 WHERE unique_key = ?1 AND {not_held} RETURNING seq"
            ),
            pending: format!("SELECT seq FROM {m} WHERE unique_key = ?1"),
            // ?1 now, ?2 group_id, ?3 event, ?4 locked_by, ?5 due, ?6 headers, ?7 expires_at, ?8 unique_key
            insert: format!(
                "INSERT INTO {m} (enqueued_at, group_id, event, locked_by, lock_expiry, headers, expires_at, \
                 retry, unique_key) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 \
                 WHERE NOT EXISTS (SELECT 1 FROM {m} WHERE unique_key = ?9)"
            ),
            // ?1 unique_key
            stamp: format!(
                "UPDATE {g} SET last_claimed_at = {due} WHERE group_id = {group} AND {due} <> last_claimed_at"
            ),
        }
    }

    /// 1: the pending message with `key` takes `m`'s event, headers and expiry (and with
    /// debounce its new due time) if no worker holds it at `now`; None in mode keep.
    pub fn replace(
        &self,
        key: &str,
        mode: UniqueMode,
        (now, expires_at): (f64, Option<f64>),
        m: &Message<'_>,
    ) -> Option<Bound<'_>> {
        let mut values: Vec<Value> = vec![key.into(), now.into(), m.event_json.into()];
        values.extend([m.headers.and_then(Headers::stored).into(), expires_at.into()]);
        match mode {
            UniqueMode::Keep => None,
            UniqueMode::Replace => Some((&self.replace, values)),
            UniqueMode::Debounce { delay, max_delay } => {
                values.extend([delay.into(), max_delay.into()]);
                Some((&self.debounce, values))
            }
        }
    }

    /// 2: the seq of the message pending with `key`: a row, or none.
    pub fn pending(&self, key: &str) -> Bound<'_> {
        (&self.pending, vec![key.into()])
    }

    /// 3: message `m` with `key`, published at `now`, as `PublishWith::insert_message`;
    /// only when no message with `key` is pending.
    pub fn insert(&self, key: &str, now: f64, m: &Message<'_>, timing: Timing) -> Bound<'_> {
        let mut values = message_values(now, m, timing);
        values.push(key.into());
        (&self.insert, values)
    }

    /// 4: the group of the message with `key` turned to its head's due time, if the head
    /// is delayed (a delayed head's group has no other turn).
    pub fn stamp(&self, key: &str) -> Bound<'_> {
        (&self.stamp, vec![key.into()])
    }
}
