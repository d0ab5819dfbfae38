//! The statements of limits per routing key (docs/queue.md, "Limits"): at most N messages
//! of the key's groups leased at once (a *concurrency* limit), and a token bucket of a
//! rate per second and a burst (a *rate* limit). Both are read and written inside the
//! claim's own write transaction, so they hold for every worker of every process at once.
//!
//! - `<prefix>_transport_limits`: one row per limited key, with its bucket's tokens as of
//!   `refilled_at` and `held`, how many of its groups are held.
//! - A lease's *slot* is its message's own row: the lease writes the key into the message's
//!   `limited_key`, and a key's slots in use are its messages whose lease runs (a partial
//!   index on `limited_key, lock_expiry`). So the slot lives and ends with the lease at no
//!   cost of its own: an ack or dead letter deletes the row, an extend moves `lock_expiry`,
//!   a lapse ends it by itself, and a nack or park clears `limited_key`.
//!
//! A claim that meets a group whose key has no room *holds* the key's ready groups: their
//! turns move up by `HOLD`, beyond every claim's range, keeping their order. Each claim
//! first gives back one held group of each key that has room again (the one served
//! longest ago), so a held group returns however the room was made (an ack, a lapse, a
//! purge, a larger limit). Two triggers keep `held` right whoever moves a group's turn.

use super::Bound;

/// What a held group's turn is raised by: beyond any epoch-seconds turn of a group ready,
/// leased or parked, and below a paused or set-aside group's (the end of year 9999).
pub(super) const HOLD: f64 = 1e10;

/// Whether a group's turn `col` is held.
pub(super) fn is_held(col: &str) -> String {
    format!("({col} >= {HOLD:.1} AND {col} < {:.1})", 2.0 * HOLD)
}

pub(super) fn table(l: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {l} (routing_key TEXT PRIMARY KEY, concurrency INTEGER, rate REAL, \
         burst REAL, tokens REAL NOT NULL DEFAULT 0, refilled_at REAL NOT NULL DEFAULT 0, \
         held INTEGER NOT NULL DEFAULT 0)"
    )
}

/// The keys holding groups (each claim's first look), the slots of a key in use (partial:
/// the messages of no limited key, harel's among them, cost it nothing), and the triggers
/// that count a key's held groups.
pub(super) fn indexes(m: &str, g: &str, l: &str) -> Vec<String> {
    let (new, old) = (is_held("new.last_claimed_at"), is_held("old.last_claimed_at"));
    vec![
        format!("CREATE INDEX IF NOT EXISTS {l}_holding ON {l} (routing_key) WHERE held > 0"),
        format!(
            "CREATE INDEX IF NOT EXISTS {m}_by_limited_key ON {m} (limited_key, lock_expiry) \
             WHERE limited_key IS NOT NULL"
        ),
        format!(
            "CREATE TRIGGER IF NOT EXISTS {g}_held AFTER UPDATE OF last_claimed_at ON {g} \
             WHEN new.routing_key IS NOT NULL AND {new} <> {old} \
             BEGIN UPDATE {l} SET held = MAX(0, held + CASE WHEN {new} THEN 1 ELSE -1 END) \
             WHERE routing_key = new.routing_key; END"
        ),
        format!(
            "CREATE TRIGGER IF NOT EXISTS {g}_held_gone AFTER DELETE ON {g} \
             WHEN old.routing_key IS NOT NULL AND {old} \
             BEGIN UPDATE {l} SET held = MAX(0, held - 1) WHERE routing_key = old.routing_key; END"
        ),
    ]
}

/// The two triggers' names, for the schema's checks.
pub(super) fn trigger_names(g: &str) -> [String; 2] {
    [format!("{g}_held"), format!("{g}_held_gone")]
}

/// The tokens of limit row `l`'s bucket at `now` (a rate limit), or a number no claim
/// reaches (none).
fn tokens_at(l: &str, now: &str) -> String {
    format!(
        "CASE WHEN {l}.rate IS NULL THEN 1e18 \
         ELSE MIN({l}.burst, {l}.tokens + ({now} - {l}.refilled_at) * {l}.rate) END"
    )
}

/// The slots of limit row `l`'s key in use at `now`: its messages whose lease runs.
fn in_use(m: &str, l: &str, now: &str) -> String {
    format!("(SELECT count(*) FROM {m} WHERE limited_key = {l}.routing_key AND lock_expiry > {now})")
}

/// Whether limit row `l` has room for one more lease at `now`.
fn has_room(m: &str, l: &str, now: &str) -> String {
    format!(
        "(({l}.concurrency IS NULL OR {l}.concurrency > {}) AND {} >= 1)",
        in_use(m, l, now),
        tokens_at(l, now)
    )
}

#[derive(Debug, Clone, Default)]
pub struct LimitSql {
    pub triggers: [String; 2],
    give_back: String,
    hold: String,
    take_token: String,
    pub(super) room_of_group: String,
    /// A server's claim chain's (sql/claim.rs): whether the groups table's row has no room
    /// at ?1, the limited key of the group it marked (`MARK`) for its lease's slot, and
    /// that key's token.
    pub(super) no_room: String,
    pub(super) marked_key: String,
    take_marked_token: String,
    pub(super) token_due: String,
    give_back_due: String,
    set: String,
    remove: [String; 2],
    list: String,
}

impl LimitSql {
    pub(super) fn new(m: &str, g: &str, l: &str, mark: &str) -> LimitSql {
        let held = is_held("h.last_claimed_at");
        LimitSql {
            triggers: trigger_names(g),
            // ?1 now: of each key holding groups that has room, the group held longest.
            give_back: format!(
                "UPDATE {g} SET last_claimed_at = last_claimed_at - {HOLD:.1} WHERE rowid IN \
                 (SELECT (SELECT h.rowid FROM {g} h WHERE h.routing_key = l.routing_key AND {held} \
                 ORDER BY h.last_claimed_at, h.rowid LIMIT 1) FROM {l} l WHERE l.held > 0 AND {})",
                has_room(m, "l", "?1")
            ),
            // ?1 group_id, ?2 now: every ready group of its key at once (by the routing
            // key's index), so a claim meets a key without room once, not once a group
            hold: format!(
                "UPDATE {g} SET last_claimed_at = last_claimed_at + {HOLD:.1} \
                 WHERE routing_key = (SELECT routing_key FROM {g} WHERE group_id = ?1) AND last_claimed_at <= ?2"
            ),
            // ?1 routing_key, ?2 now
            take_token: format!(
                "UPDATE {l} SET tokens = {} - 1, refilled_at = ?2 WHERE routing_key = ?1 AND rate IS NOT NULL",
                tokens_at(l, "?2")
            ),
            no_room: format!(
                "EXISTS (SELECT 1 FROM {l} l WHERE l.routing_key = {g}.routing_key AND NOT {})",
                has_room(m, "l", "?1")
            ),
            marked_key: format!(
                "(SELECT routing_key FROM {l} WHERE routing_key = \
                 (SELECT routing_key FROM {g} WHERE last_claimed_at = {mark}))"
            ),
            // ?1 now
            take_marked_token: format!(
                "UPDATE {l} SET tokens = {} - 1, refilled_at = ?1 WHERE rate IS NOT NULL \
                 AND routing_key = (SELECT routing_key FROM {g} WHERE last_claimed_at = {mark})",
                tokens_at(l, "?1")
            ),
            // the look's: group g's key if its limit has room at ?1, 0 if it has none, NULL
            // if it has no limit
            room_of_group: format!(
                "(SELECT CASE WHEN {} THEN l.routing_key ELSE 0 END FROM {l} l WHERE l.routing_key = g.routing_key)",
                has_room(m, "l", "?1")
            ),
            // when a rate-limited key holding groups has its next token, if not by ?1
            token_due: format!(
                "SELECT refilled_at + (1 - tokens) / rate FROM {l} \
                 WHERE held > 0 AND rate IS NOT NULL AND tokens + (?1 - refilled_at) * rate < 1"
            ),
            // ?1 now: a row when some held group would be given back
            give_back_due: format!("SELECT 1 FROM {l} l WHERE l.held > 0 AND {} LIMIT 1", has_room(m, "l", "?1")),
            // ?1 routing_key, ?2 concurrency, ?3 rate, ?4 burst, ?5 now: a new bucket is full
            set: format!(
                "INSERT INTO {l} (routing_key, concurrency, rate, burst, tokens, refilled_at) \
                 VALUES (?1, ?2, ?3, ?4, COALESCE(?4, 0), ?5) \
                 ON CONFLICT (routing_key) DO UPDATE SET concurrency = ?2, rate = ?3, burst = ?4, \
                 tokens = CASE WHEN ?3 IS NULL THEN 0 WHEN rate IS NULL THEN ?4 \
                 ELSE MIN(?4, tokens + (?5 - refilled_at) * rate) END, refilled_at = ?5"
            ),
            // ?1 routing_key: its held groups back in their turn, the row (its leases keep
            // their slots: they count again if the key is limited again while they run)
            remove: [
                format!(
                    "UPDATE {g} SET last_claimed_at = last_claimed_at - {HOLD:.1} \
                     WHERE routing_key = ?1 AND {}",
                    is_held("last_claimed_at")
                ),
                format!("DELETE FROM {l} WHERE routing_key = ?1"),
            ],
            // ?1 now: each limit, its slots in use and its tokens now
            list: format!(
                "SELECT routing_key, concurrency, rate, burst, CASE WHEN concurrency IS NULL THEN 0 \
                 ELSE {} END, CASE WHEN rate IS NULL THEN NULL ELSE {} END, held FROM {l} l ORDER BY routing_key",
                in_use(m, "l", "?1"),
                tokens_at("l", "?1")
            ),
        }
    }

    /// Each claim's first statement: one held group of each key with room again, back in
    /// its turn.
    pub fn give_back(&self, now: f64) -> Bound<'_> {
        (&self.give_back, vec![now.into()])
    }

    /// A row when a claim at `now` would give back a held group (its key has room again):
    /// a waiting claim's look takes it for a deliverable head.
    pub fn give_back_due(&self, now: f64) -> Bound<'_> {
        (&self.give_back_due, vec![now.into()])
    }

    /// A claim met group `group_id` at `now` and its key has no room: the key's ready
    /// groups held.
    pub fn hold(&self, group_id: &str, now: f64) -> Bound<'_> {
        (&self.hold, vec![group_id.into(), now.into()])
    }

    /// After a claim at `now` leased a message of `routing_key`, a limited key (its slot
    /// taken by the lease itself): its token, if it has a rate limit.
    pub fn take_token(&self, routing_key: &str, now: f64) -> Bound<'_> {
        (&self.take_token, vec![routing_key.into(), now.into()])
    }

    /// A server's claim, after its lease's UPDATE: the marked group's key's token (at
    /// `now`), if it has a rate limit.
    pub fn take_marked_token(&self, now: f64) -> Bound<'_> {
        (&self.take_marked_token, vec![now.into()])
    }

    /// Sets `routing_key`'s limits at `now` (None: that kind of limit off).
    pub fn set(&self, routing_key: &str, concurrency: Option<u32>, rate: Option<(f64, f64)>, now: f64) -> Bound<'_> {
        let (rate, burst) = rate.unzip();
        (&self.set, vec![routing_key.into(), concurrency.into(), rate.into(), burst.into(), now.into()])
    }

    /// Removes `routing_key`'s limits; the last statement changed a row if it had any.
    pub fn remove(&self, routing_key: &str) -> [Bound<'_>; 2] {
        self.remove.each_ref().map(|statement| (statement.as_str(), vec![routing_key.into()]))
    }

    /// Every limit at `now`: routing_key, concurrency, rate, burst, slots in use, tokens, held.
    pub fn list(&self, now: f64) -> Bound<'_> {
        (&self.list, vec![now.into()])
    }
}
