//! The statements that look inside the queue and administer it. Each look is one SELECT,
//! so it reads one snapshot, takes no write lock, and works the same on an embedded
//! replica (where it reads the local copy).

use super::{Statements, PARKED};
use crate::types::GroupState;

impl Statements {
    /// Every count of `Stats` at now (?1). Row 1: NULL, total messages, dead letters, NULL,
    /// the soonest end of a lease or park, the oldest ready message's enqueued_at. Then one
    /// row per priority level: level, groups, leased, parked, NULL, NULL.
    ///
    /// A group of ours in flight has `last_claimed_at` at its lease's or park's end, after
    /// now (queue/work.rs): the groups index's range past now finds exactly those, and their
    /// heads say which is which, with no index the claim would have to keep. (A head leased
    /// by one of harel's Python transports, which stamp the claim instant, counts as
    /// ready here; the listings check every head they show.) The oldest ready message is
    /// the first in seq order whose group's head is free.
    pub fn stats(&self) -> String {
        let (m, g, d) = (&self.messages_table, &self.groups_table, &self.dead_table);
        format!(
            "WITH in_flight AS (SELECT g.priority, h.locked_by = '{PARKED}' AS parked, h.lock_expiry \
               FROM {g} g JOIN {m} h ON h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = g.group_id) \
               WHERE g.last_claimed_at > ?1 AND h.locked_by IS NOT NULL AND h.lock_expiry >= ?1), \
             held AS (SELECT priority, sum(NOT parked) AS leased, sum(parked) AS parked FROM in_flight \
               GROUP BY priority), \
             levels AS (SELECT priority, count(*) AS groups FROM {g} GROUP BY priority) \
             SELECT NULL, (SELECT count(*) FROM {m}), (SELECT count(*) FROM {d}), NULL, \
               (SELECT min(lock_expiry) FROM in_flight), \
               (SELECT e.enqueued_at FROM {m} e WHERE (SELECT h.locked_by IS NULL OR h.lock_expiry < ?1 \
                 FROM {m} h WHERE h.group_id = e.group_id ORDER BY h.seq LIMIT 1) ORDER BY e.seq LIMIT 1) \
             UNION ALL \
             SELECT l.priority, l.groups, coalesce(h.leased, 0), coalesce(h.parked, 0), NULL, NULL \
               FROM levels l LEFT JOIN held h ON h.priority = l.priority"
        )
    }

    /// A page of groups in group_id order, after group ?1 when `after` (the first page
    /// otherwise), ?2 + 1 rows; with a state, only groups in it at now (?3). Columns:
    /// group_id, priority, routing_key, the head's seq, locked_by, lock_expiry, attempts,
    /// enqueued_at, and the group's depth. Every head shown is checked. Leased and parked
    /// groups of ours lie past now in the groups index (see `stats`), so those listings
    /// walk only that range (and a head leased by harel's Python transports is not listed
    /// as leased); ready ones walk the groups.
    pub fn groups_page(&self, state: Option<GroupState>, after: bool) -> String {
        let (m, g) = (&self.messages_table, &self.groups_table);
        let columns = format!(
            "CAST(g.group_id AS BLOB), g.priority, g.routing_key, h.seq, h.locked_by, h.lock_expiry, \
             h.attempts, h.enqueued_at, (SELECT count(*) FROM {m} c WHERE c.group_id = g.group_id)"
        );
        let head = format!("h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = g.group_id)");
        let now = if state.is_some() { "?3" } else { "" };
        let (from, held) = match state {
            None => (format!("{g} g JOIN {m} h ON {head}"), String::new()),
            Some(GroupState::Ready) => {
                (format!("{g} g JOIN {m} h ON {head}"), format!(" AND (h.locked_by IS NULL OR h.lock_expiry < {now})"))
            }
            Some(held) => {
                let parked = if held == GroupState::Parked { "=" } else { "!=" };
                (
                    format!("{g} g JOIN {m} h ON {head}"),
                    format!(
                        " AND g.last_claimed_at > {now} AND h.locked_by IS NOT NULL AND h.lock_expiry >= {now} \
                         AND h.locked_by {parked} '{PARKED}'"
                    ),
                )
            }
        };
        // The cursor's bytes as a BLOB, read as TEXT: a group id another program stored
        // that is not UTF-8 still compares byte for byte.
        let after = if after { "g.group_id > CAST(?1 AS TEXT)" } else { "?1 IS NULL" };
        format!("SELECT {columns} FROM {from} WHERE {after}{held} ORDER BY g.group_id LIMIT ?2 + 1")
    }

    /// A page of group ?3's messages, oldest first, after seq ?1, ?2 + 1 rows. Columns:
    /// seq, event, attempts, locked_by, lock_expiry, enqueued_at.
    pub fn messages_page(&self) -> String {
        format!(
            "SELECT seq, CAST(event AS BLOB), attempts, locked_by, lock_expiry, enqueued_at FROM {} \
             WHERE group_id = ?3 AND seq > ?1 ORDER BY seq LIMIT ?2 + 1",
            self.messages_table
        )
    }

    /// Purging group ?1: its messages, then its row.
    pub fn purge_group(&self) -> [String; 2] {
        [
            format!("DELETE FROM {} WHERE group_id = ?1", self.messages_table),
            format!("DELETE FROM {} WHERE group_id = ?1", self.groups_table),
        ]
    }

    /// Purging the queue: every message, then every group (dead letters stay).
    pub fn purge_all(&self) -> [String; 2] {
        [format!("DELETE FROM {}", self.messages_table), format!("DELETE FROM {}", self.groups_table)]
    }

    /// Releasing group ?1 now: its head's lease or park ends, whoever holds it (the
    /// holder's ack or nack then finds its lease lost); then, if it did, the group is ready
    /// at ?2.
    pub fn release_head(&self) -> [String; 2] {
        let (m, g) = (&self.messages_table, &self.groups_table);
        [
            format!(
                "UPDATE {m} SET locked_by = NULL, lock_expiry = NULL \
                 WHERE seq = (SELECT MIN(seq) FROM {m} WHERE group_id = ?1) AND locked_by IS NOT NULL"
            ),
            format!("UPDATE {g} SET last_claimed_at = ?2 WHERE group_id = ?1 AND changes() > 0"),
        ]
    }
}
