//! The statements that look inside the queue and administer it. Each look is one SELECT,
//! so it reads one snapshot, takes no write lock, and works the same on an embedded
//! replica (where it reads the local copy).

use libsql::Value;

use super::{limits, pause, Bound, Statements, DELAYED, EXPIRED, PARKED, PAUSED_AT_OR_BELOW};
use crate::types::GroupState;

/// The listings of `Statements::groups_page`: every group, or those in one state.
const LISTINGS: [Option<GroupState>; 8] = [
    None,
    Some(GroupState::Ready),
    Some(GroupState::Leased),
    Some(GroupState::Parked),
    Some(GroupState::Delayed),
    Some(GroupState::Paused),
    Some(GroupState::Held),
    Some(GroupState::Retrying),
];

/// Whether head `h` is free at `now`: no one holds it, or its lease, park or delay is over.
fn head_free(h: &str, now: &str) -> String {
    format!("({h}.locked_by IS NULL OR {h}.lock_expiry < {now})")
}

/// Whether group `g` is held by a limit (limits.rs): not paused, its turn moved up by HOLD.
fn held(g: &str) -> String {
    let (priority, turn) = (format!("{g}.priority"), format!("{g}.last_claimed_at"));
    format!("(NOT {} AND {})", pause::is_paused(&priority), limits::is_held(&turn))
}

/// Whether group `g`, whose head is free when `free` is true, is ready at `now`: a claim
/// would take its head.
fn ready(g: &str, free: &str, now: &str) -> String {
    format!("(NOT {} AND {g}.last_claimed_at <= {now} AND {free})", pause::is_paused(&format!("{g}.priority")))
}

/// Whether group `g`, whose head is free when `free` is true, waits a lapsed lease's backoff
/// at `now` (retry.rs): free, but its turn, not moved by a limit, has not come. The CASE
/// reads `free` (a subquery in `stats`) only for a group whose turn is to come.
fn retrying(g: &str, free: &str, now: &str) -> String {
    format!(
        "(CASE WHEN {} OR {} OR {g}.last_claimed_at <= {now} THEN 0 ELSE {free} END)",
        pause::is_paused(&format!("{g}.priority")),
        limits::is_held(&format!("{g}.last_claimed_at"))
    )
}

/// The statements of the looks and of the admin's purges and releases, built once per
/// prefix and again when the queue turns out to lack columns of ours (`Statements::read_around`).
#[derive(Debug, Clone, Default)]
pub(super) struct Inspect {
    stats: String,
    /// By `LISTINGS`: the first page, and a page after a cursor.
    groups_pages: Vec<[String; 2]>,
    messages_page: String,
    purge_group: [String; 2],
    purge_all: [String; 2],
    release_head: [String; 2],
}

impl Inspect {
    pub(super) fn new(sql: &Statements) -> Inspect {
        let (m, g) = (&sql.messages_table, &sql.groups_table);
        Inspect {
            stats: sql.build_stats(),
            groups_pages: LISTINGS
                .iter()
                .map(|&state| [false, true].map(|after| sql.build_groups_page(state, after)))
                .collect(),
            messages_page: sql.build_messages_page(),
            purge_group: sql.build_purge_group(),
            purge_all: [format!("DELETE FROM {m}"), format!("DELETE FROM {g}")],
            release_head: sql.build_release_head(),
        }
    }
}

impl Statements {
    /// Every count of `Stats` at `now` (?1). Row 1: NULL, total messages, dead letters, the
    /// soonest due time of a delayed head, the soonest end of a lease, park or delay, the
    /// oldest ready message's enqueued_at, its seq, the earliest end of a lease that lapsed
    /// with its holder still named (a worker that died or hung), the expired dead letters.
    /// Then one row per priority level: level, groups, leased, parked, delayed, paused,
    /// held, retrying, NULL. A paused group counts as paused only, at the level it will have
    /// again.
    pub fn stats(&self, now: f64) -> Bound<'_> {
        (&self.inspect.stats, vec![now.into()])
    }

    /// Whoever leased or parked a head, its own row says so: the scan of the messages for
    /// locked rows finds the heads in flight whatever their group's stamp (ours the lease's
    /// end, harel's Python transports the claim instant), with no index the claim would have
    /// to keep; a look, not the claim's path, pays for it. Only a head is ever locked; the
    /// head check keeps a stray row from counting twice. `CROSS JOIN` keeps SQLite on the
    /// scan (each group's messages by index would read every row). The oldest ready message
    /// is the first in seq order whose group is not paused, whose head is free and whose
    /// turn has come. A group whose head is free but whose turn has not come is held by a
    /// limit (limits.rs) or waits a lapsed lease's backoff (retry.rs): the groups' scan
    /// reads those heads only.
    fn build_stats(&self) -> String {
        let (m, g) = (&self.messages_table, &self.groups_table);
        let (dead, expired) = match self.lacks.dead {
            true => ("0".to_owned(), "0".to_owned()),
            false => (
                format!("(SELECT count(*) FROM {})", self.dead_table),
                format!("(SELECT count(*) FROM {} WHERE reason = '{EXPIRED}')", self.dead_table),
            ),
        };
        let enqueued_at = self.enqueued_at("e");
        let free_head_of = |group: &str| {
            format!("(SELECT {} FROM {m} h WHERE h.group_id = {group} ORDER BY h.seq LIMIT 1)", head_free("h", "?1"))
        };
        format!(
            "WITH in_flight AS MATERIALIZED (SELECT g.priority, h.locked_by = '{PARKED}' AS parked, \
               h.locked_by = '{DELAYED}' AS delayed, h.lock_expiry \
               FROM {m} h CROSS JOIN {g} g ON g.group_id = h.group_id \
               WHERE h.locked_by IS NOT NULL AND h.lock_expiry >= ?1 AND g.priority > {PAUSED_AT_OR_BELOW} \
                 AND h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = h.group_id)), \
             held AS (SELECT priority, sum(NOT parked AND NOT delayed) AS leased, sum(parked) AS parked, \
               sum(delayed) AS delayed FROM in_flight GROUP BY priority), \
             levels AS (SELECT {own} AS level, count(*) AS groups, sum({paused}) AS paused, sum({held}) AS held, \
               sum({retrying}) AS retrying FROM {g} g GROUP BY level), \
             oldest AS (SELECT e.seq, {enqueued_at} AS enqueued_at FROM {m} e \
               WHERE EXISTS (SELECT 1 FROM {g} g WHERE g.group_id = e.group_id AND {ready}) \
               ORDER BY e.seq LIMIT 1) \
             SELECT NULL, (SELECT count(*) FROM {m}), {dead}, \
               (SELECT min(lock_expiry) FROM in_flight WHERE delayed), (SELECT min(lock_expiry) FROM in_flight), \
               (SELECT enqueued_at FROM oldest), (SELECT seq FROM oldest), \
               (SELECT min(h.lock_expiry) FROM {m} h WHERE h.locked_by IS NOT NULL \
                 AND h.locked_by NOT IN ('{PARKED}', '{DELAYED}') \
                 AND h.lock_expiry < ?1 AND h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = h.group_id)), \
               {expired} \
             UNION ALL \
             SELECT l.level, l.groups, coalesce(h.leased, 0), coalesce(h.parked, 0), coalesce(h.delayed, 0), \
               l.paused, l.held, l.retrying, NULL \
               FROM levels l LEFT JOIN held h ON h.priority = l.level",
            own = pause::own_priority("g.priority"),
            paused = pause::is_paused("g.priority"),
            held = held("g"),
            retrying = retrying("g", &free_head_of("g.group_id"), "?1"),
            ready = ready("g", &free_head_of("e.group_id"), "?1"),
        )
    }

    /// A page of groups in group_id order, after group `after` (?1, the cursor's bytes; the
    /// first page without one), `limit` + 1 rows (?2), at `now` (?3); with a state, only
    /// groups in it. Columns: group_id, priority (a paused group's own), routing_key, the
    /// head's seq, locked_by, lock_expiry, attempts, enqueued_at, the group's depth, whether
    /// it is paused, and 'held' or 'retrying' for a group `stats` counts so (else NULL).
    pub fn groups_page(&self, state: Option<GroupState>, after: Option<&[u8]>, limit: i64, now: f64) -> Bound<'_> {
        let listing = LISTINGS.iter().position(|&l| l == state).expect("LISTINGS has every state");
        let values = vec![after.map_or(Value::Null, |cursor| Value::Blob(cursor.to_vec())), limit.into(), now.into()];
        (&self.inspect.groups_pages[listing][usize::from(after.is_some())], values)
    }

    /// Every head shown is checked. The leased and parked listings scan the messages for
    /// locked heads, as `stats` does, so a head leased by harel's Python transports is listed
    /// too; the others walk the groups. A paused group is listed as paused only. Held,
    /// retrying and ready are decided by the expressions `stats` counts with.
    fn build_groups_page(&self, state: Option<GroupState>, after: bool) -> String {
        let (m, g) = (&self.messages_table, &self.groups_table);
        let paused = pause::is_paused("g.priority");
        let (held, retrying) = (held("g"), retrying("g", &head_free("h", "?3"), "?3"));
        let columns = format!(
            "CAST(g.group_id AS BLOB), {}, {}, h.seq, h.locked_by, h.lock_expiry, {}, {}, \
             (SELECT count(*) FROM {m} c WHERE c.group_id = g.group_id), {paused}, \
             CASE WHEN {held} THEN 'held' WHEN {retrying} THEN 'retrying' END",
            pause::own_priority("g.priority"),
            self.routing_key("g"),
            self.attempts("h"),
            self.enqueued_at("h")
        );
        let head = format!("h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = g.group_id)");
        let not_paused = format!("g.priority > {PAUSED_AT_OR_BELOW}");
        let groups = format!("{g} g JOIN {m} h ON {head}");
        let (from, only) = match state {
            None => (groups, String::new()),
            Some(GroupState::Paused) => (groups, format!(" AND {paused}")),
            Some(GroupState::Ready) => (groups, format!(" AND {}", ready("g", &head_free("h", "?3"), "?3"))),
            Some(GroupState::Held) => (groups, format!(" AND {held}")),
            Some(GroupState::Retrying) => (groups, format!(" AND {retrying}")),
            Some(in_flight) => {
                let holder = match in_flight {
                    GroupState::Parked => format!("= '{PARKED}'"),
                    GroupState::Delayed => format!("= '{DELAYED}'"),
                    _ => format!("NOT IN ('{PARKED}', '{DELAYED}')"),
                };
                (
                    format!("{m} h CROSS JOIN {g} g ON g.group_id = h.group_id"),
                    format!(
                        " AND h.locked_by IS NOT NULL AND h.lock_expiry >= ?3 AND h.locked_by {holder} \
                         AND {not_paused} AND {head}"
                    ),
                )
            }
        };
        // The cursor's bytes as a BLOB, read as TEXT: a group id another program stored
        // that is not UTF-8 still compares byte for byte.
        let after = if after { "g.group_id > CAST(?1 AS TEXT)" } else { "?1 IS NULL" };
        format!("SELECT {columns} FROM {from} WHERE {after}{only} ORDER BY g.group_id LIMIT ?2 + 1")
    }

    /// A page of group `group_id`'s messages (?3), oldest first, after seq `after` (?1),
    /// `limit` + 1 rows (?2). Columns: seq, event, attempts, locked_by, lock_expiry, enqueued_at,
    /// headers.
    pub fn messages_page(&self, group_id: &str, after: i64, limit: i64) -> Bound<'_> {
        (&self.inspect.messages_page, vec![after.into(), limit.into(), group_id.into()])
    }

    fn build_messages_page(&self) -> String {
        format!(
            "SELECT seq, CAST(event AS BLOB), {}, locked_by, lock_expiry, {}, {}, {} FROM {} e \
             WHERE group_id = ?3 AND seq > ?1 ORDER BY seq LIMIT ?2 + 1",
            self.attempts("e"),
            self.enqueued_at("e"),
            self.headers("e"),
            if self.lacks.retry { "NULL" } else { "e.retry_delay" },
            self.messages_table
        )
    }

    /// Purging group `group_id` (?1): its messages, then its row.
    pub fn purge_group(&self, group_id: &str) -> [Bound<'_>; 2] {
        let [messages, group] = &self.inspect.purge_group;
        [(messages, vec![group_id.into()]), (group, vec![group_id.into()])]
    }

    fn build_purge_group(&self) -> [String; 2] {
        [
            format!("DELETE FROM {} WHERE group_id = ?1", self.messages_table),
            format!("DELETE FROM {} WHERE group_id = ?1", self.groups_table),
        ]
    }

    /// Purging the queue: every message, then every group (dead letters stay).
    pub fn purge_all(&self) -> [Bound<'_>; 2] {
        let [messages, groups] = &self.inspect.purge_all;
        [(messages, Vec::new()), (groups, Vec::new())]
    }

    /// Releasing group `group_id` (?1) now: its head's lease or park ends, whoever holds it
    /// (the holder's ack or nack then finds its lease lost); then, if it did, the group is
    /// ready at `now` (?2).
    pub fn release_head(&self, group_id: &str, now: f64) -> [Bound<'_>; 2] {
        let [release, requeue] = &self.inspect.release_head;
        [(release, vec![group_id.into()]), (requeue, vec![group_id.into(), now.into()])]
    }

    fn build_release_head(&self) -> [String; 2] {
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
