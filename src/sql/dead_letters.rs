//! The statements of dead letters: a message that kept failing moves out of its group into
//! `<prefix>_transport_dead`, where it waits to be redriven (back into its group, as its
//! newest message) or purged.

use libsql::Value;

use super::{leased, pause, Bound, Statements, DELAYED, PARKED};
use crate::types::{DeadLetters, Lease};

/// The dead-letter table: the message as it was (seq, group, event, claims so far), who
/// held it last, why and when it died, and what its group was made with (priority, routing
/// key), so a redrive can make the group again, and its headers.
pub(super) fn table(d: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {d} (seq INTEGER PRIMARY KEY, group_id TEXT NOT NULL, \
         event TEXT NOT NULL, attempts INTEGER NOT NULL, last_worker TEXT, reason TEXT NOT NULL, \
         dead_at REAL NOT NULL, priority INT NOT NULL DEFAULT 0, routing_key TEXT, enqueued_at REAL, \
         headers TEXT)"
    )
}

/// What a bury writes, as SQL expressions over the message `e` and its group `g`, and
/// which message it takes.
pub(super) struct Buried<'a> {
    pub attempts: &'a str,
    pub reason: &'a str,
    pub dead_at: &'a str,
    pub which: &'a str,
}

/// Copies the messages `buried.which` takes into the dead-letter table, byte for byte; no
/// worker for a parked or delayed one; a paused group's priority as its own (pause.rs), so
/// a redrive makes the group unpaused.
pub(super) fn bury_as(m: &str, g: &str, d: &str, buried: Buried<'_>) -> String {
    let Buried { attempts, reason, dead_at, which } = buried;
    format!(
        "INSERT INTO {d} (seq, group_id, event, attempts, last_worker, reason, dead_at, priority, \
         routing_key, enqueued_at, headers) \
         SELECT e.seq, e.group_id, e.event, {attempts}, \
         CASE WHEN e.locked_by IN ('{PARKED}', '{DELAYED}') THEN NULL ELSE e.locked_by END, {reason}, {dead_at}, \
         {}, g.routing_key, e.enqueued_at, e.headers \
         FROM {m} e JOIN {g} g ON g.group_id = e.group_id \
         WHERE {which}",
        pause::own_priority("g.priority")
    )
}

/// A worker's own dead_letter (`Statements::bury_leased`).
pub(super) fn bury_leased(m: &str, g: &str, d: &str) -> String {
    // ?1 seq, ?2 group_id, ?3 worker_id (the lease), ?4 reason, ?5 now
    let which = "e.seq = ?1 AND e.group_id = ?2 AND e.locked_by = ?3";
    bury_as(m, g, d, Buried { attempts: "e.attempts", reason: "?4", dead_at: "?5", which })
}

/// A local claim's (`Statements::bury_head`): ?1 seq, ?2 reason, ?3 now.
pub(super) fn bury_head(m: &str, g: &str, d: &str) -> String {
    bury_as(m, g, d, Buried { attempts: "e.attempts", reason: "?2", dead_at: "?3", which: "e.seq = ?1" })
}

/// After a claim buried message ?1: its group's row goes if it has no message left. (By
/// the dead letter's group id, which the claim may not be able to read as text.)
pub(super) fn drop_buried_group_if_empty(m: &str, g: &str, d: &str) -> String {
    let buried = format!("(SELECT group_id FROM {d} WHERE seq = ?1)");
    format!("DELETE FROM {g} WHERE group_id = {buried} AND NOT EXISTS (SELECT 1 FROM {m} WHERE group_id = {buried})")
}

impl Statements {
    /// A worker's own dead letter: the message of `lease`, if still leased to its worker,
    /// into the dead-letter table with `reason` at `now`. Then `delete_message`.
    pub fn bury_leased(&self, lease: &Lease, reason: &str, now: f64) -> Bound<'_> {
        (&self.bury_leased, leased(lease, [reason.into(), now.into()]))
    }

    /// A local claim's: head `seq`, which it looked up inside its transaction, into the
    /// dead-letter table with `reason` at `now`. Then `delete_message`.
    pub fn bury_head(&self, seq: i64, reason: &str, now: f64) -> Bound<'_> {
        (&self.bury_head, vec![seq.into(), reason.into(), now.into()])
    }

    /// After a claim buried message `seq`: its group's row goes if it has no message left.
    pub fn drop_buried_group_if_empty(&self, seq: i64) -> Bound<'_> {
        (&self.drop_buried_group_if_empty, vec![seq.into()])
    }
}

/// Which dead letters a statement takes; its parameter, if any, is the statement's last.
#[derive(Debug, Clone, Copy)]
enum DeadFilter {
    All,
    /// One group's (a text parameter).
    Group,
    /// By seq (a JSON array parameter).
    Seqs,
}

impl DeadFilter {
    /// Every filter, in the order of declaration: `DeadSql` keeps its statements by `filter as usize`.
    const EACH: [DeadFilter; 3] = [DeadFilter::All, DeadFilter::Group, DeadFilter::Seqs];

    /// The filter that takes `which`, and its parameter's value.
    fn of(which: DeadLetters<'_>) -> (DeadFilter, Option<Value>) {
        match which {
            DeadLetters::All => (DeadFilter::All, None),
            DeadLetters::Group(group_id) => (DeadFilter::Group, Some(group_id.into())),
            DeadLetters::Seqs(seqs) => {
                (DeadFilter::Seqs, Some(serde_json::to_string(seqs).unwrap_or_default().into()))
            }
        }
    }

    fn condition(self, param: usize) -> String {
        match self {
            DeadFilter::All => "1".into(),
            DeadFilter::Group => format!("group_id = ?{param}"),
            DeadFilter::Seqs => format!("seq IN (SELECT value FROM json_each(?{param}))"),
        }
    }
}

/// The statements of redrives, purges and pages of dead letters, built once per prefix.
#[derive(Debug, Clone)]
pub(super) struct DeadSql {
    /// By filter: a redrive's statements (`Statements::redrive`), the last one a purge.
    redrive: [[String; 3]; 3],
    /// A page of every group's dead letters, and one of a group's.
    pages: [String; 2],
}

impl DeadSql {
    /// `lacks_headers`: the dead letters' `headers` is read as NULL (a file opened as it is).
    pub(super) fn new(m: &str, g: &str, d: &str, lacks_headers: bool) -> DeadSql {
        let redrive = |filter: DeadFilter| {
            let with_now = filter.condition(2);
            [
                format!(
                    "INSERT INTO {m} (group_id, event, enqueued_at, headers) \
                     SELECT group_id, event, ?1, headers FROM {d} \
                     WHERE {with_now} ORDER BY seq"
                ),
                format!(
                    "INSERT OR IGNORE INTO {g} (group_id, priority, routing_key) \
                     SELECT group_id, priority, routing_key FROM {d} WHERE {} ORDER BY seq",
                    filter.condition(1)
                ),
                format!("DELETE FROM {d} WHERE {}", filter.condition(1)),
            ]
        };
        let headers = if lacks_headers { "NULL" } else { "headers" };
        let page = |group: bool| {
            let only_group = if group { " AND group_id = ?3" } else { "" };
            format!(
                "SELECT seq, CAST(group_id AS BLOB), CAST(event AS BLOB), attempts, last_worker, reason, dead_at, \
                 {headers} FROM {d} WHERE seq > ?1{only_group} ORDER BY seq LIMIT ?2 + 1"
            )
        };
        DeadSql { redrive: DeadFilter::EACH.map(redrive), pages: [page(false), page(true)] }
    }
}

impl Statements {
    /// A redrive of `which` at `now`, in order: the messages back into their groups as the
    /// newest ones (?1 now, their new enqueued_at; attempts start again at 0; ?2 the
    /// filter's), in the order they had; the groups a redrive brings back, made as their
    /// first publish made them (?1 the filter's); then the dead letters gone (`purge_dead`).
    pub fn redrive(&self, which: DeadLetters<'_>, now: f64) -> [Bound<'_>; 3] {
        let (filter, value) = DeadFilter::of(which);
        let [messages, groups, delete] = &self.dead.redrive[filter as usize];
        let with_now = std::iter::once(Value::from(now)).chain(value.clone()).collect();
        [(messages, with_now), (groups, value.iter().cloned().collect()), (delete, value.into_iter().collect())]
    }

    /// Deletes the dead letters of `which` (?1 the filter's).
    pub fn purge_dead(&self, which: DeadLetters<'_>) -> Bound<'_> {
        let (filter, value) = DeadFilter::of(which);
        (&self.dead.redrive[filter as usize][2], value.into_iter().collect())
    }

    /// A page of dead letters in seq order after seq `after` (?1), `limit` + 1 rows (?2: one
    /// more than the page, to know whether another follows); with `group_id`, only that
    /// group's (?3).
    pub fn dead_page(&self, group_id: Option<&str>, after: i64, limit: i64) -> Bound<'_> {
        let mut values = vec![after.into(), limit.into()];
        values.extend(group_id.map(Value::from));
        (&self.dead.pages[usize::from(group_id.is_some())], values)
    }
}
