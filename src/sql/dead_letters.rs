//! The statements of dead letters: a message that kept failing moves out of its group into
//! `<prefix>_transport_dead`, where it waits to be redriven (back into its group, as its
//! newest message) or purged.

use super::{Statements, PARKED};

/// The dead-letter table: the message as it was (seq, group, event, claims so far), who
/// held it last, why and when it died, and what its group was made with (priority, routing
/// key), so a redrive can make the group again.
pub(super) fn table(d: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {d} (seq INTEGER PRIMARY KEY, group_id TEXT NOT NULL, \
         event TEXT NOT NULL, attempts INTEGER NOT NULL, last_worker TEXT, reason TEXT NOT NULL, \
         dead_at REAL NOT NULL, priority INT NOT NULL DEFAULT 0, routing_key TEXT, enqueued_at REAL)"
    )
}

/// Copies message ?1 into the dead-letter table, with reason ?2 and time ?3, byte for
/// byte; `guard` narrows it to the message of a lease (`{guard}` uses ?4 and ?5). Then
/// `delete_message` removes it.
fn bury(m: &str, g: &str, d: &str, guard: &str) -> String {
    let which = format!("e.seq = ?1{guard}");
    bury_as(m, g, d, Buried { attempts: "e.attempts", reason: "?2", dead_at: "?3", which: &which })
}

/// What a bury writes, as SQL expressions over the message `e` and its group `g`, and
/// which message it takes.
pub(super) struct Buried<'a> {
    pub attempts: &'a str,
    pub reason: &'a str,
    pub dead_at: &'a str,
    pub which: &'a str,
}

/// Copies the messages `buried.which` takes into the dead-letter table, byte for byte.
pub(super) fn bury_as(m: &str, g: &str, d: &str, buried: Buried<'_>) -> String {
    let Buried { attempts, reason, dead_at, which } = buried;
    format!(
        "INSERT INTO {d} (seq, group_id, event, attempts, last_worker, reason, dead_at, priority, \
         routing_key, enqueued_at) \
         SELECT e.seq, e.group_id, e.event, {attempts}, NULLIF(e.locked_by, '{PARKED}'), {reason}, {dead_at}, \
         g.priority, g.routing_key, e.enqueued_at \
         FROM {m} e JOIN {g} g ON g.group_id = e.group_id \
         WHERE {which}"
    )
}

/// A worker's own dead_letter: only if message ?1 is in group ?4 and leased to worker ?5.
pub(super) fn bury_leased(m: &str, g: &str, d: &str) -> String {
    bury(m, g, d, " AND e.group_id = ?4 AND e.locked_by = ?5")
}

/// A local claim's: the head it just looked up, inside its transaction.
pub(super) fn bury_head(m: &str, g: &str, d: &str) -> String {
    bury(m, g, d, "")
}

/// After a claim buried message ?1: its group's row goes if it has no message left. (By
/// the dead letter's group id, which the claim may not be able to read as text.)
pub(super) fn drop_buried_group_if_empty(m: &str, g: &str, d: &str) -> String {
    let buried = format!("(SELECT group_id FROM {d} WHERE seq = ?1)");
    format!("DELETE FROM {g} WHERE group_id = {buried} AND NOT EXISTS (SELECT 1 FROM {m} WHERE group_id = {buried})")
}

/// Which dead letters a statement takes; its parameter, if any, is the statement's last.
#[derive(Debug, Clone, Copy)]
pub enum DeadFilter {
    All,
    /// One group's (a text parameter).
    Group,
    /// By seq (a JSON array parameter).
    Seqs,
}

impl DeadFilter {
    fn condition(self, param: usize) -> String {
        match self {
            DeadFilter::All => "1".into(),
            DeadFilter::Group => format!("group_id = ?{param}"),
            DeadFilter::Seqs => format!("seq IN (SELECT value FROM json_each(?{param}))"),
        }
    }
}

impl Statements {
    /// A redrive, in order: the messages back into their groups as the newest ones (?1
    /// now, their new enqueued_at; attempts start again at 0), in the order they had; the
    /// groups a redrive brings back, made as their first publish made them; then the dead
    /// letters gone. Parameters: now and the filter's; the last statement only the filter's.
    pub fn redrive(&self, filter: DeadFilter) -> [String; 3] {
        let (m, g, d) = (&self.messages_table, &self.groups_table, &self.dead_table);
        let with_now = filter.condition(2);
        [
            format!(
                "INSERT INTO {m} (group_id, event, enqueued_at) SELECT group_id, event, ?1 FROM {d} \
                 WHERE {with_now} ORDER BY seq"
            ),
            format!(
                "INSERT OR IGNORE INTO {g} (group_id, priority, routing_key) \
                 SELECT group_id, priority, routing_key FROM {d} WHERE {} ORDER BY seq",
                filter.condition(1)
            ),
            self.purge_dead(filter),
        ]
    }

    /// Deletes the dead letters the filter takes (its parameter is ?1).
    pub fn purge_dead(&self, filter: DeadFilter) -> String {
        format!("DELETE FROM {} WHERE {}", self.dead_table, filter.condition(1))
    }

    /// A page of dead letters in seq order after seq ?1, ?2 + 1 rows (one more than the
    /// page, to know whether another follows); with `group`, only group ?3's.
    pub fn dead_page(&self, group: bool) -> String {
        let only_group = if group { " AND group_id = ?3" } else { "" };
        format!(
            "SELECT seq, CAST(group_id AS BLOB), CAST(event AS BLOB), attempts, last_worker, reason, dead_at \
             FROM {} WHERE seq > ?1{only_group} ORDER BY seq LIMIT ?2 + 1",
            self.dead_table
        )
    }
}
