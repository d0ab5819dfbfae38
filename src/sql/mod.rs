//! Every SQL statement the transport runs, written for one table prefix — the one place
//! SQL lives. The tables and the first three indexes are harel's (docs/queue.md, "The
//! tables"), so harel's Python transports share the file; the last index is ours. Together
//! with the way `queue` stamps `last_claimed_at` they make a claim's cost independent of
//! the queue's size (see docs/queue.md, "How the claim finds a group").

use std::borrow::Cow;

use libsql::Value;

use crate::headers::Headers;
use crate::types::{Lease, Message};
use crate::validate::{DELAYED, MAX_PRIORITY, PARKED};

mod archive;
mod claim;
mod dead_letters;
mod expiry;
mod inspect;
mod limits;
mod pause;
mod publish;
mod retry;
mod shards;
mod unique;

pub use archive::ArchiveSql;
pub use claim::{LEASE_GUARD, LEASE_LOST};
use dead_letters::DeadSql;
pub use expiry::{ExpirySql, EXPIRED};
use inspect::Inspect;
pub use limits::LimitSql;
pub use pause::PauseSql;
pub(crate) use pause::PAUSED_AT_OR_BELOW;
pub use publish::{PublishWith, Timing};
pub use retry::{stored as stored_retry, RetrySql};
pub use shards::ShardSql;
pub use unique::UniqueSql;

/// The claim's limit, ?2. A plain `LIMIT ?N` makes SQLite compile the statement again at
/// every new binding of ?N (it plans for the value): a compile per claim. `+?N` is the same
/// number without it.
const LIMIT_2: &str = "+?2";

/// Above this many routing keys a claim uses one candidate query with `IN` instead of one
/// per key (SQLite caps a compound SELECT at 500 parts).
const MAX_ROUTING_CANDIDATES: usize = 32;

/// A batch is written by multi-row INSERTs of these many rows, largest first: few
/// statements per batch, and few distinct ones for a local connection to keep prepared.
/// Far below SQLite's 32,766 parameters per statement.
const INSERT_ROWS: [usize; 8] = [128, 64, 32, 16, 8, 4, 2, 1];

/// What of ours a queue's tables lack: a harel 0.9 file opened as it is
/// (`Options::schema_as_is`). The looks read an absent column as what this library would
/// find there: no claim of ours counted (attempts 0), no publish time, no routing key, no
/// dead letter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lacks {
    pub attempts: bool,
    pub enqueued_at: bool,
    pub routing_key: bool,
    pub dead: bool,
    /// The keys table (a harel 0.9 file, or one made by 0.4 and opened with create_schema off).
    pub keys: bool,
    /// The messages' and the dead letters' `headers` (a file made before headers).
    pub headers: bool,
    pub dead_headers: bool,
    /// The messages' `expires_at` (a file made before expiry).
    pub expires_at: bool,
    /// The pauses table (a file made before pauses, opened with create_schema off or as
    /// it is): pause and resume are refused.
    pub pauses: bool,
    /// The archive table (a file made before the archive): the archive's look finds
    /// nothing, and opening with `Options::archive` on is refused.
    pub archive: bool,
    /// The limits' table or the messages' `limited_key` (opened as it is): no limit is listed.
    pub limits: bool,
    /// The messages' `retry` and `retry_delay` (a file made before retries): no backoff shown.
    pub retry: bool,
}

/// A statement and the values it runs with, in the order of its parameters (?1 first; a
/// bare `?` takes the next number). sql/ hands out each statement with its values, written
/// beside its SQL, so no caller binds what it cannot see; beside a statement with more than
/// three parameters, a table names each (`// ?1 seq, ?2 group_id, ...`). Numbered, not
/// named (`:seq`): libsql looks a name up at every run of a local statement, a cost the
/// worker's path would pay.
pub type Bound<'s> = (&'s str, Vec<Value>);

#[derive(Debug, Clone)]
pub struct Statements {
    /// The table names under the prefix.
    pub messages_table: String,
    pub groups_table: String,
    pub dead_table: String,
    /// Idempotency keys (publish.rs); ours, and optional: a queue without it refuses keyed publishes.
    pub keys_table: String,
    /// Pauses (pause.rs); ours, and optional as the keys table: without it pause and resume are refused.
    pub pauses_table: String,
    /// The archive (archive.rs); ours, and optional unless `Options::archive` is on.
    pub archive_table: String,
    /// Limits per routing key (limits.rs); ours, and needed by every claim.
    pub limits_table: String,
    /// What the looks must read around (nothing, unless opened as it is; `read_around`).
    lacks: Lacks,
    /// The claim for `min_priority` 0..=4 without routing keys, built once.
    unrouted_claims: Vec<String>,
    /// By `INSERT_ROWS`' order: the messages' INSERT and the groups' INSERT OR IGNORE.
    publish_rows: Vec<(String, String)>,
    set_group_ready_at: String,
    /// A local claim's lease of the head it looked up (backend/local/claim.rs).
    lease_message: String,
    ack_message: String,
    requeue_group_if_not_empty: String,
    /// The same in an ack of several, which has no guard: only if the DELETE before it
    /// deleted.
    requeue_group_if_acked: String,
    drop_group_if_empty: String,
    release_message: String,
    extend_lease: String,
    next_ready_at: String,
    undated_turns: String,
    /// Moving a message into the dead-letter table (see dead_letters.rs and claim.rs).
    bury_leased: String,
    bury_head: String,
    bury_claimed: String,
    delete_buried: String,
    requeue_buried_group: String,
    drop_buried_group_if_empty: String,
    delete_message: String,
    /// Redriving, purging and listing dead letters (dead_letters.rs).
    dead: DeadSql,
    /// The looks and the admin's other statements (inspect.rs): built again by `read_around`.
    inspect: Inspect,
    /// A publish with a key or a due time.
    pub publish_with: PublishWith,
    /// A publish with a unique key.
    pub unique: UniqueSql,
    /// A sharded queue's record of its set.
    pub shard: ShardSql,
    /// Pausing and resuming.
    pub pause: PauseSql,
    /// Expiry's sweep.
    pub expiry: ExpirySql,
    /// The archive's copy, prune and pages.
    pub archive: ArchiveSql,
    /// Limits per routing key.
    pub limit: LimitSql,
    /// Retries' backoff: a nack's park and a lease's turn.
    pub retry: RetrySql,
}

impl Statements {
    /// `prefix` must already be validated (`validate::prefix`): it is spliced into names.
    pub fn new(prefix: &str) -> Statements {
        let m = format!("{prefix}_transport_messages");
        let g = format!("{prefix}_transport_groups");
        let d = format!("{prefix}_transport_dead");
        let k = format!("{prefix}_transport_keys");
        let p = format!("{prefix}_transport_pauses");
        let a = format!("{prefix}_transport_archive");
        let l = format!("{prefix}_transport_limits");
        let retry = RetrySql::new(&m, &g);
        let publish_with = PublishWith::new(&m, &g, &k);
        let shard = ShardSql::new(prefix, &m);
        let unique = UniqueSql::new(&m, &g);
        let pause = PauseSql::new(&m, &g, &p);
        let expiry = ExpirySql::new(&m, &g, &d);
        let archive = ArchiveSql::new(&m, &a);
        let limit = LimitSql::new(&m, &g, &l, claim::MARK);
        let mut sql = Statements {
            unrouted_claims: Vec::new(),
            publish_rows: Vec::new(),
            set_group_ready_at: format!("UPDATE {g} SET last_claimed_at = ?2 WHERE group_id = ?1"),
            // ?5 the claiming transport's retry policy (retry.rs), or NULL; ?6 the limited
            // key whose slot the lease takes (limits.rs), or NULL
            lease_message: format!(
                "UPDATE {m} SET locked_by = ?2, lock_expiry = ?3, attempts = attempts + 1, claimed_at = ?4, \
                 retry_delay = {}, limited_key = ?6 WHERE seq = ?1",
                retry::backoff(&m, &format!("{m}.attempts + 1"), "?5")
            ),
            ack_message: format!("DELETE FROM {m} WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"),
            // The group's next turn: now, or its new head's due time if it is delayed.
            requeue_group_if_not_empty: format!(
                "UPDATE {g} SET last_claimed_at = {} \
                 WHERE group_id = ?1 AND EXISTS (SELECT 1 FROM {m} WHERE group_id = ?1)",
                publish::turn_after_head(&m)
            ),
            requeue_group_if_acked: format!(
                "UPDATE {g} SET last_claimed_at = {} \
                 WHERE group_id = ?1 AND changes() > 0 AND EXISTS (SELECT 1 FROM {m} WHERE group_id = ?1)",
                publish::turn_after_head(&m)
            ),
            drop_group_if_empty: format!(
                "DELETE FROM {g} WHERE group_id = ?1 AND NOT EXISTS (SELECT 1 FROM {m} WHERE group_id = ?1)"
            ),
            // ?1 seq, ?2 group_id, ?3 worker_id (the lease), ?4 locked_by, ?5 lock_expiry
            release_message: format!(
                "UPDATE {m} SET locked_by = ?4, lock_expiry = ?5, limited_key = NULL \
                 WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"
            ),
            // ?1 seq, ?2 group_id, ?3 worker_id (the lease), ?4 lock_expiry
            extend_lease: format!(
                "UPDATE {m} SET lock_expiry = ?4 WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"
            ),
            // a lease's, park's or delay's end, or a held group's key's next token
            next_ready_at: format!(
                "SELECT MIN(t) FROM (SELECT MIN(last_claimed_at) AS t FROM {g} WHERE last_claimed_at > ?1 \
                 UNION ALL {})",
                limit.token_due
            ),
            undated_turns: format!("SELECT EXISTS (SELECT 1 FROM {g} WHERE last_claimed_at <= ?1)"),
            bury_leased: dead_letters::bury_leased(&m, &g, &d),
            bury_head: dead_letters::bury_head(&m, &g, &d),
            bury_claimed: claim::bury_claimed(&m, &g, &d),
            delete_buried: claim::delete_buried(&m, &d),
            requeue_buried_group: claim::requeue_buried_group(&m, &g, &d),
            drop_buried_group_if_empty: dead_letters::drop_buried_group_if_empty(&m, &g, &d),
            delete_message: format!("DELETE FROM {m} WHERE seq = ?1"),
            dead: DeadSql::new(&m, &g, &d, false),
            inspect: Inspect::default(),
            messages_table: m,
            groups_table: g,
            dead_table: d,
            publish_with,
            unique,
            shard,
            keys_table: k,
            pauses_table: p,
            archive_table: a,
            limits_table: l,
            pause,
            expiry,
            archive,
            limit,
            retry,
            lacks: Lacks::default(),
        };
        sql.unrouted_claims = (0..=MAX_PRIORITY).map(|p| sql.build_unrouted_claim(p)).collect();
        sql.publish_rows = INSERT_ROWS.iter().map(|&n| sql.build_publish_rows(n)).collect();
        sql.inspect = Inspect::new(&sql);
        sql
    }

    /// What the queue's tables lack of ours.
    pub fn lacks(&self) -> Lacks {
        self.lacks
    }

    /// Records what the queue's tables lack of ours, found at open: the looks read around it.
    pub fn read_around(&mut self, lacks: Lacks) {
        self.lacks = lacks;
        self.inspect = Inspect::new(self);
        self.dead = DeadSql::new(&self.messages_table, &self.groups_table, &self.dead_table, lacks.dead_headers);
    }

    /// Turns group `group_id` to `ready_at`: the end of its head's lease or park.
    pub fn set_group_ready_at(&self, group_id: &str, ready_at: f64) -> Bound<'_> {
        (&self.set_group_ready_at, vec![group_id.into(), ready_at.into()])
    }

    /// Leases message `seq` (a head a local claim looked up) to `worker_id` from `now`
    /// until `lock_expiry`, counting the claim and drawing its backoff under the message's
    /// retry policy or else `retry` (the claiming transport's, `retry::stored`); the lease
    /// takes a slot of `limited_key`, its group's routing key if that has a limit.
    pub fn lease_message(
        &self,
        seq: i64,
        worker_id: &str,
        (now, lock_expiry): (f64, f64),
        (retry, limited_key): (Option<&str>, Option<&str>),
    ) -> Bound<'_> {
        let values =
            vec![seq.into(), worker_id.into(), lock_expiry.into(), now.into(), retry.into(), limited_key.into()];
        (&self.lease_message, values)
    }

    /// The ack: deletes the message of `lease` if it is still leased to its worker.
    pub fn ack_message(&self, lease: &Lease) -> Bound<'_> {
        (&self.ack_message, leased(lease, []))
    }

    /// After a group's head was removed: the group is ready again at `now` (or at its new
    /// head's due time) if it has messages left.
    pub fn requeue_group_if_not_empty(&self, group_id: &str, now: f64) -> Bound<'_> {
        (&self.requeue_group_if_not_empty, vec![group_id.into(), now.into()])
    }

    /// `requeue_group_if_not_empty` in an ack of several: only if the ack before it deleted.
    pub fn requeue_group_if_acked(&self, group_id: &str, now: f64) -> Bound<'_> {
        (&self.requeue_group_if_acked, vec![group_id.into(), now.into()])
    }

    /// Deletes group `group_id`'s row if it has no message left.
    pub fn drop_group_if_empty(&self, group_id: &str) -> Bound<'_> {
        (&self.drop_group_if_empty, vec![group_id.into()])
    }

    /// The message of `lease`, if still leased to its worker, freed (`holder` and `until`
    /// None) or held by `holder` until `until` (a park, a set-aside).
    pub fn release_message(&self, lease: &Lease, holder: Option<&str>, until: Option<f64>) -> Bound<'_> {
        (&self.release_message, leased(lease, [holder.into(), until.into()]))
    }

    /// The lease, if still its worker's, now runs to `lock_expiry`.
    pub fn extend_lease(&self, lease: &Lease, lock_expiry: f64) -> Bound<'_> {
        (&self.extend_lease, leased(lease, [lock_expiry.into()]))
    }

    /// The earliest instant after `now` that a group is next ready (a lease's or park's end).
    pub fn next_ready_at(&self, now: f64) -> Bound<'_> {
        (&self.next_ready_at, vec![now.into()])
    }

    /// Whether some group's turn has come by `now` (see `Readiness::undated_turns`).
    pub fn undated_turns(&self, now: f64) -> Bound<'_> {
        (&self.undated_turns, vec![now.into()])
    }

    /// Deletes message `seq` (after a bury copied it).
    pub fn delete_message(&self, seq: i64) -> Bound<'_> {
        (&self.delete_message, vec![seq.into()])
    }

    /// The INSERTs of `n` rows. Multi-row VALUES go in in order: FIFO within a group is
    /// the batch's order, and the first row into a group fixes its priority and routing key.
    fn build_publish_rows(&self, n: usize) -> (String, String) {
        let rows = |row: &str| vec![row; n].join(", ");
        let (m, g) = (&self.messages_table, &self.groups_table);
        (
            // ?1: now, for every row; then group_id, event, headers per row.
            format!("INSERT INTO {m} (enqueued_at, group_id, event, headers) VALUES {}", rows("(?1, ?, ?, ?)")),
            format!("INSERT OR IGNORE INTO {g} (group_id, priority, routing_key) VALUES {}", rows("(?, ?, ?)")),
        )
    }

    /// The statements that write the first rows of `messages` (not empty) at `now`, and how
    /// many rows they write: the messages' INSERT (now, then group_id, event, headers per row) and the
    /// groups' INSERT OR IGNORE (group_id, priority, routing_key per row).
    pub fn publish_rows(&self, now: f64, messages: &[Message<'_>]) -> (usize, [Bound<'_>; 2]) {
        let (&rows, (insert_messages, insert_groups)) = INSERT_ROWS
            .iter()
            .zip(&self.publish_rows)
            .find(|(&rows, _)| rows <= messages.len())
            .expect("INSERT_ROWS ends with 1, and a batch is not empty");
        let run = &messages[..rows];
        let values = run
            .iter()
            .flat_map(|m| [m.group_id.into(), m.event_json.into(), m.headers.and_then(Headers::stored).into()]);
        let groups = run.iter().flat_map(|m| [m.group_id.into(), m.priority.into(), m.routing_key.into()]);
        let messages = std::iter::once(Value::from(now)).chain(values).collect();
        (rows, [(insert_messages, messages), (insert_groups, groups.collect())])
    }

    /// One candidate: the first `limit` groups, in serving order, that pass its filter and
    /// whose head (oldest message) is free now (?1). Columns: ready_at, arrival, seq, gid,
    /// room (limits.rs: the key if its limit has room, 0 if it has none, NULL if no limit).
    /// See `first_of`; the outer SELECT lets candidates, each with its own ORDER BY and
    /// LIMIT, be joined by UNION ALL.
    fn candidate(&self, c: &Candidate, limit: &str) -> String {
        let columns = format!(
            "g.last_claimed_at AS ready_at, g.rowid AS arrival, h.seq AS seq, g.group_id AS gid, {} AS room",
            self.limit.room_of_group
        );
        format!("SELECT * FROM ({})", self.first_of(c, &columns, limit))
    }

    /// `columns` of the first `limit` groups, in serving order, that pass `c`'s filter and
    /// whose head is free now (?1), with the group as `g` and its head as `h`.
    ///
    /// `ready_at <= now` is what keeps this cheap: a claim stamps a group with its lease's
    /// end and a park with the park's end, so groups in flight or parked lie beyond `now`
    /// and the index range never reaches them. Only a group's head is ever leased, so
    /// the head's own lock says whether the group has anything in flight; that check
    /// still matters for groups leased by a harel Python transport, which stamps the
    /// claim instant instead.
    fn first_of(&self, c: &Candidate, columns: &str, limit: &str) -> String {
        let (g, m, ready_at) = (&self.groups_table, &self.messages_table, c.ready_at);
        format!(
            "SELECT {columns} FROM {g} g \
             JOIN {m} h ON h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = g.group_id) \
             WHERE {} AND {ready_at} <= ?1 AND (h.locked_by IS NULL OR h.lock_expiry < ?1) \
             ORDER BY {ready_at}, g.rowid LIMIT {limit}",
            c.filter
        )
    }

    /// The candidates as one compound SELECT (columns as `candidate`'s).
    fn union_of(&self, candidates: &[Candidate], limit: &str) -> String {
        candidates.iter().map(|c| self.candidate(c, limit)).collect::<Vec<_>>().join(" UNION ALL ")
    }

    /// The best `limit` of the candidates, in serving order, with their events: each a
    /// different group's head, so a local claim of several leases them all from one look
    /// (each lease moves only its own group out of the range). Columns: seq, group_id,
    /// event, attempts (claims so far), headers, expires_at, room (`candidate`'s);
    /// group_id and event as BLOBs, because libsql reads TEXT as a C string and would cut
    /// a value another writer stored with a NUL byte in it at that byte.
    fn best_candidates(&self, candidates: &[Candidate], limit: &str) -> String {
        let m = &self.messages_table;
        format!(
            "SELECT c.seq, CAST(c.gid AS BLOB), CAST(e.event AS BLOB), e.attempts, e.headers, e.expires_at, c.room \
             FROM ({}) c JOIN {m} e ON e.seq = c.seq \
             ORDER BY c.ready_at, c.arrival LIMIT {limit}",
            self.union_of(candidates, limit)
        )
    }

    /// With no floor, one walk of harel's (last_claimed_at) index. With a floor, one
    /// candidate per priority level at or above it, each an index range on (priority,
    /// last_claimed_at), so a high-priority group is found without walking past lower
    /// ones; a last candidate takes priorities above 4, which harel's Python publish does not
    /// reject (few groups, so it may sort them).
    fn build_unrouted_claim(&self, min_priority: i32) -> String {
        self.best_candidates(&unrouted_candidates(min_priority), LIMIT_2)
    }

    /// The claim's look for up to `limit` heads and its parameters: ?1 now; without routing
    /// keys ?2 the limit (the floor is in the statement); with them ?2 min_priority, the
    /// keys (?3, ?4, ... one each, or ?3 as a JSON array when there are many) and the
    /// limit last. Exactly the parameters it uses: a libSQL server refuses extra ones
    /// ("too many parameters"), where SQLite lets them pass.
    pub fn claim(
        &self,
        now: f64,
        min_priority: i32,
        routing_keys: &[&str],
        limit: usize,
    ) -> (Cow<'_, str>, Vec<Value>) {
        let limit_value = Value::from(i64::try_from(limit).unwrap_or(i64::MAX));
        if routing_keys.is_empty() {
            return (self.unrouted_claims[min_priority as usize].as_str().into(), vec![now.into(), limit_value]);
        }
        let (candidates, mut params) = claim_candidates(now, min_priority, routing_keys);
        let last = format!("+?{}", params.len() + 1);
        params.push(limit_value);
        (self.best_candidates(&candidates, &last).into(), params)
    }

    /// The column `attempts` of the message `alias`, or 0 where the table lacks it.
    fn attempts(&self, alias: &str) -> String {
        if self.lacks.attempts {
            "0".to_owned()
        } else {
            format!("{alias}.attempts")
        }
    }

    /// The column `enqueued_at` of the message `alias`, or NULL where the table lacks it.
    fn enqueued_at(&self, alias: &str) -> String {
        if self.lacks.enqueued_at {
            "NULL".to_owned()
        } else {
            format!("{alias}.enqueued_at")
        }
    }

    /// The column `headers` of the message `alias`, or NULL where the table lacks it.
    fn headers(&self, alias: &str) -> String {
        if self.lacks.headers {
            "NULL".to_owned()
        } else {
            format!("{alias}.headers")
        }
    }

    /// The column `routing_key` of the group `alias`, or NULL where the table lacks it.
    fn routing_key(&self, alias: &str) -> String {
        if self.lacks.routing_key {
            "NULL".to_owned()
        } else {
            format!("{alias}.routing_key")
        }
    }

    /// The idempotent statements of a fresh schema: tables, then indexes.
    pub fn schema(&self) -> Vec<String> {
        let mut statements = self.tables();
        statements.extend(self.indexes());
        statements
    }

    /// The tables. The messages table's `attempts`, `enqueued_at` and `headers` and the groups table's
    /// `routing_key` are ours: harel 0.9 makes the tables without them (see `added_columns`),
    /// and its transports neither write nor read them. The dead-letter table is ours.
    pub fn tables(&self) -> Vec<String> {
        let (g, m, d) = (&self.groups_table, &self.messages_table, &self.dead_table);
        vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {m} (seq INTEGER PRIMARY KEY AUTOINCREMENT, \
                 group_id TEXT NOT NULL, event TEXT NOT NULL, locked_by TEXT, lock_expiry REAL, \
                 attempts INTEGER NOT NULL DEFAULT 0, enqueued_at REAL, headers TEXT, unique_key TEXT, \
                 expires_at REAL, claimed_at REAL, retry TEXT, retry_delay REAL, limited_key TEXT)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {g} (group_id TEXT PRIMARY KEY, \
                 last_claimed_at REAL NOT NULL DEFAULT 0.0, priority INT NOT NULL DEFAULT 0, \
                 routing_key TEXT)"
            ),
            dead_letters::table(d),
            publish::keys_table(&self.keys_table),
            pause::table(&self.pauses_table),
            archive::table(&self.archive_table),
            limits::table(&self.limits_table),
        ]
    }

    /// The columns harel 0.9's tables lack, as (table, column, the ALTER that adds it).
    /// SQLite has no ADD COLUMN IF NOT EXISTS: `schema` adds each one a file lacks.
    pub fn added_columns(&self) -> Vec<(&str, &'static str, String)> {
        let (g, m, d) = (self.groups_table.as_str(), self.messages_table.as_str(), self.dead_table.as_str());
        vec![
            (g, "routing_key", format!("ALTER TABLE {g} ADD COLUMN routing_key TEXT")),
            (m, "attempts", format!("ALTER TABLE {m} ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0")),
            (m, "enqueued_at", format!("ALTER TABLE {m} ADD COLUMN enqueued_at REAL")),
            // after 0.4.0: a message's headers (headers.rs), kept by its dead letter
            (m, "headers", format!("ALTER TABLE {m} ADD COLUMN headers TEXT")),
            (d, "headers", format!("ALTER TABLE {d} ADD COLUMN headers TEXT")),
            // after 0.4.0: a pending message's unique key (unique.rs)
            (m, "unique_key", format!("ALTER TABLE {m} ADD COLUMN unique_key TEXT")),
            // after 0.4.0: when a message expires (expiry.rs)
            (m, "expires_at", format!("ALTER TABLE {m} ADD COLUMN expires_at REAL")),
            // after 0.4.0: when the lease was taken, for the archive (archive.rs)
            (m, "claimed_at", format!("ALTER TABLE {m} ADD COLUMN claimed_at REAL")),
            // after 0.4.0: a message's own retry policy, and the backoff its claim drew (retry.rs)
            (m, "retry", format!("ALTER TABLE {m} ADD COLUMN retry TEXT")),
            (m, "retry_delay", format!("ALTER TABLE {m} ADD COLUMN retry_delay REAL")),
            // after 0.4.0: the limited key whose slot a lease takes (limits.rs)
            (m, "limited_key", format!("ALTER TABLE {m} ADD COLUMN limited_key TEXT")),
        ]
    }

    /// Whether `table` exists (one row if it does).
    pub fn has_table(table: &str) -> String {
        format!("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{table}'")
    }

    /// Whether `trigger` exists (one row if it does).
    pub fn has_trigger(trigger: &str) -> String {
        format!("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = '{trigger}'")
    }

    /// The names of the pauses' two triggers (pause.rs).
    pub fn pause_triggers(&self) -> [&str; 2] {
        [&self.pause.triggers[0], &self.pause.triggers[1]]
    }

    /// The names of the limits' two triggers (limits.rs).
    pub fn limit_triggers(&self) -> [&str; 2] {
        [&self.limit.triggers[0], &self.limit.triggers[1]]
    }

    /// Whether `name` is a table or trigger of ours, which a harel 0.9 file lacks.
    pub fn is_ours(&self, name: &str) -> bool {
        name == self.dead_table || name == self.keys_table || name == self.pauses_table
            || name == self.archive_table || name == self.limits_table
            || self.pause_triggers().contains(&name) || self.limit_triggers().contains(&name)
    }

    /// Whether `table` has `column` (one row if it does).
    pub fn has_column(table: &str, column: &str) -> String {
        format!("SELECT 1 FROM pragma_table_info('{table}') WHERE name = '{column}'")
    }

    /// The indexes, then the pauses' triggers (pause.rs), which read columns the tables
    /// may have only after `added_columns`.
    pub fn indexes(&self) -> Vec<String> {
        let (g, m) = (&self.groups_table, &self.messages_table);
        let mut statements = vec![
            format!("CREATE INDEX IF NOT EXISTS {g}_by_last_claimed ON {g} (last_claimed_at)"),
            format!("CREATE INDEX IF NOT EXISTS {m}_by_group ON {m} (group_id, seq)"),
        ];
        statements.extend(self.our_indexes());
        statements
    }

    /// What upgrades a harel 0.9 file: the columns it lacks, the dead-letter table (made
    /// with its `headers`), our indexes. The ALTERs are not idempotent: run them once (a
    /// file made by harel-transport leaves out those of the columns it has, and adds the
    /// dead letters' `headers` if it lacks it: docs/queue.md, "Upgrading by hand").
    pub fn upgrade(&self) -> Vec<String> {
        let mut statements: Vec<String> = self
            .added_columns()
            .into_iter()
            .filter(|(table, _, _)| *table != self.dead_table)
            .map(|(_, _, alter)| alter)
            .collect();
        statements.push(dead_letters::table(&self.dead_table));
        statements.push(publish::keys_table(&self.keys_table));
        statements.push(pause::table(&self.pauses_table));
        statements.push(archive::table(&self.archive_table));
        statements.push(limits::table(&self.limits_table));
        statements.extend(self.our_indexes());
        statements
    }

    /// Ours: the indexes harel 0.9 lacks (the archive's too), and the pauses' triggers.
    fn our_indexes(&self) -> Vec<String> {
        let (g, m, d) = (&self.groups_table, &self.messages_table, &self.dead_table);
        vec![
            // partial: groups without a key (most) cost it nothing when they move; a
            // claim's `routing_key = ?` implies the condition, so it still serves them
            format!(
                "CREATE INDEX IF NOT EXISTS {g}_by_routing_key ON {g} (routing_key, last_claimed_at) \
                 WHERE routing_key IS NOT NULL"
            ),
            // the claim's candidates for a priority floor walk this; partial, so the many
            // priority-0 groups cost it nothing when they move
            format!(
                "CREATE INDEX IF NOT EXISTS {g}_by_priority ON {g} (priority, last_claimed_at) \
                 WHERE priority > 0"
            ),
            format!("CREATE INDEX IF NOT EXISTS {d}_by_group ON {d} (group_id, seq)"),
            publish::keys_index(&self.keys_table),
            unique::index(m),
            expiry::index(m),
            expiry::dead_index(d),
        ]
        .into_iter()
        .chain(archive::indexes(&self.archive_table))
        .chain(limits::indexes(m, g, &self.limits_table))
        .chain(pause::triggers(g, &self.pauses_table))
        .collect()
    }
}

/// Which groups a claim's candidate walks (`filter`, on the group `g`), and the expression
/// of their turn it orders by: `g.last_claimed_at`, or `+g.last_claimed_at` to keep SQLite
/// off that column's indexes.
struct Candidate {
    filter: String,
    ready_at: &'static str,
}

impl Candidate {
    /// A candidate that walks `last_claimed_at`'s index (or an index ending in it).
    fn on_index(filter: String) -> Candidate {
        Candidate { filter, ready_at: "g.last_claimed_at" }
    }
}

fn unrouted_candidates(min_priority: i32) -> Vec<Candidate> {
    if min_priority == 0 {
        return vec![Candidate::on_index("1".into())];
    }
    // "priority > 0" lets SQLite use the partial index.
    let mut candidates: Vec<Candidate> = (min_priority..=MAX_PRIORITY)
        .map(|p| Candidate::on_index(format!("g.priority = {p} AND g.priority > 0")))
        .collect();
    candidates.push(Candidate {
        filter: format!("g.priority > {MAX_PRIORITY} AND g.priority > 0"),
        ready_at: "+g.last_claimed_at",
    });
    candidates
}

/// The candidates of `Statements::claim` and their parameters, as `claim`'s.
fn claim_candidates(now: f64, min_priority: i32, routing_keys: &[&str]) -> (Vec<Candidate>, Vec<Value>) {
    if routing_keys.is_empty() {
        return (unrouted_candidates(min_priority), vec![now.into()]);
    }
    // One candidate per distinct key: a key given twice would list its groups twice, and
    // a claim of several would lease a head twice.
    let mut seen = std::collections::HashSet::with_capacity(routing_keys.len());
    let distinct: Vec<&str> = routing_keys.iter().copied().filter(|key| seen.insert(*key)).collect();
    let routing_keys = distinct.as_slice();
    let mut params = vec![now.into(), min_priority.into()];
    let candidates = if routing_keys.len() <= MAX_ROUTING_CANDIDATES {
        params.extend(routing_keys.iter().map(|&k| Value::from(k)));
        (0..routing_keys.len())
            .map(|i| Candidate::on_index(format!("g.routing_key = ?{} AND g.priority >= ?2", i + 3)))
            .collect()
    } else {
        params.push(serde_json::to_string(routing_keys).unwrap_or_default().into());
        vec![Candidate::on_index("g.routing_key IN (SELECT value FROM json_each(?3)) AND g.priority >= ?2".into())]
    };
    (candidates, params)
}

/// ?1 seq, ?2 group_id, ?3 worker_id: the lease of a statement that acts only on a message
/// still leased to its worker; then `more` (?4, ...).
fn leased<const N: usize>(lease: &Lease, more: [Value; N]) -> Vec<Value> {
    let mut values = Vec::with_capacity(3 + N);
    values.extend([lease.seq.into(), lease.group_id.as_str().into(), lease.worker_id.as_str().into()]);
    values.extend(more);
    values
}

/// Statements as text for a migration tool: one per line, each ending in ';'.
pub fn as_script(statements: &[String]) -> String {
    statements.iter().map(|s| format!("{s};\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DeadLetters, GroupState, PauseTarget, UniqueMode};

    /// How many values a statement takes: its highest ?N, a bare `?` one more than the
    /// highest before it (SQLite's numbering).
    pub(super) fn highest_parameter(sql: &str) -> usize {
        let mut highest = 0;
        let mut rest = sql;
        while let Some(at) = rest.find('?') {
            rest = &rest[at + 1..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            highest = if digits.is_empty() { highest + 1 } else { highest.max(digits.parse().unwrap()) };
        }
        highest
    }

    /// Every statement sql/ hands out comes with exactly the values it numbers: a libSQL
    /// server refuses extra ones, and SQLite would run a missing one as NULL.
    #[test]
    fn every_statement_comes_with_exactly_its_values() {
        let lease = Lease {
            seq: 7,
            group_id: "g".into(),
            event: "{}".into(),
            worker_id: "w".into(),
            lock_expiry: 1030.0,
            attempts: 1,
            headers: Headers::none(),
        };
        let headers = Headers::new(&[("a", "1")]).unwrap();
        let message =
            Message { group_id: "g", event_json: "{}", priority: 1, routing_key: Some("k"), headers: Some(&headers) };
        let mut sql = Statements::new("t");
        let lacking_all = Lacks {
            attempts: true,
            enqueued_at: true,
            routing_key: true,
            dead: true,
            keys: true,
            headers: true,
            dead_headers: true,
            expires_at: true,
            pauses: true,
            archive: true,
            limits: true,
            retry: true,
        };
        for lacks in [Lacks::default(), lacking_all] {
            sql.read_around(lacks);
            let p = &sql.publish_with;
            let mut all = vec![
                sql.set_group_ready_at("g", 1.0),
                sql.lease_message(7, "w", (1.0, 2.0), (Some("[1,2,60,1]"), Some("k"))),
                sql.retry.nack((7, "g", "w"), 1.0, 0.0),
                sql.retry.stamp_nacked("g", 1.0, 7),
                sql.retry.stamp_leased("g", 2.0, 7),
                sql.ack_message(&lease),
                sql.requeue_group_if_not_empty("g", 1.0),
                sql.requeue_group_if_acked("g", 1.0),
                sql.drop_group_if_empty("g"),
                sql.release_message(&lease, Some(PARKED), Some(2.0)),
                sql.extend_lease(&lease, 2.0),
                sql.next_ready_at(1.0),
                sql.undated_turns(1.0),
                sql.bury_leased(&lease, "why", 1.0),
                sql.bury_head(7, "why", 1.0),
                sql.bury_claimed(7, ("w", 2.0), "why", 1.0),
                sql.delete_buried(7),
                sql.requeue_buried_group(7, 1.0),
                sql.drop_buried_group_if_empty(7),
                sql.delete_message(7),
                sql.stats(1.0),
                sql.messages_page("g", 0, 10),
                sql.shard.insert_record("q", 0, 2),
                p.sweep_keys(1.0),
                p.forget_key("k", 1.0),
                p.take_key("k", 2.0),
                p.insert_message(1.0, &message, Timing::default()),
                p.insert_message_if_new(1.0, &message, Timing { due: Some(2.0), expires_at: Some(3.0), retry: None }),
                p.bind_key("k"),
                p.published("k"),
                p.published_unkeyed(),
                p.insert_group(&message),
                p.insert_group_if_new(&message),
                p.stamp_delayed_head("g"),
                sql.unique.pending("u"),
                sql.unique.insert("u", 1.0, &message, Timing { due: Some(2.0), ..Timing::default() }),
                sql.unique.stamp("u"),
            ];
            for mode in [UniqueMode::Replace, UniqueMode::Debounce { delay: 1.0, max_delay: 2.0 }] {
                all.extend(sql.unique.replace("u", mode, (1.0, Some(2.0)), &message));
            }
            for n in [1, 5, 100, 300] {
                let (rows, statements) = sql.publish_rows(1.0, &vec![message; n]);
                assert!(rows <= n && INSERT_ROWS.contains(&rows));
                all.extend(statements);
            }
            for which in [DeadLetters::All, DeadLetters::Group("g"), DeadLetters::Seqs(&[1])] {
                all.extend(sql.redrive(which, 1.0));
                all.push(sql.purge_dead(which));
            }
            for group_id in [None, Some("g")] {
                all.push(sql.dead_page(group_id, 0, 10));
            }
            let states = [
                None,
                Some(GroupState::Ready),
                Some(GroupState::Leased),
                Some(GroupState::Parked),
                Some(GroupState::Delayed),
                Some(GroupState::Paused),
                Some(GroupState::Held),
                Some(GroupState::Retrying),
            ];
            for state in states {
                for after in [None, Some(&b"g"[..])] {
                    all.push(sql.groups_page(state, after, 10, 1.0));
                }
            }
            all.extend(sql.purge_group("g"));
            all.extend(sql.purge_all());
            all.extend(sql.release_head("g", 1.0));
            for target in [PauseTarget::Queue, PauseTarget::Group("g"), PauseTarget::RoutingKey("k")] {
                all.extend(sql.pause.pause(&target, 1.0));
                all.extend(sql.pause.resume(&target, 1.0));
            }
            all.push(sql.pause.list());
            all.push(sql.expiry.any(1.0));
            all.extend(sql.expiry.sweep(1.0));
            all.push(sql.limit.give_back(1.0));
            all.push(sql.limit.hold("g", 1.0));
            all.push(sql.limit.give_back_due(1.0));
            all.push(sql.limit.take_token("k", 1.0));
            all.push(sql.limit.take_marked_token(1.0));
            all.push(sql.limit.set("k", Some(3), Some((2.0, 5.0)), 1.0));
            all.push(sql.limit.set("k", None, None, 1.0));
            all.extend(sql.limit.remove("k"));
            all.push(sql.limit.list(1.0));
            all.push(sql.archive.copy(&lease, 1.0));
            all.push(sql.archive.prune(1.0));
            for group_id in [None, Some("g")] {
                all.push(sql.archive.page(group_id, 0, 10));
            }
            for (statement, values) in all {
                assert_eq!(highest_parameter(statement), values.len(), "{statement}");
            }
        }
    }
}
