//! Every SQL statement the transport runs, written for one table prefix — the one place
//! SQL lives. The tables and the first four indexes are SPEC.md's, so harel's Python
//! transports share the file; the last two indexes are ours and make the claim's cost
//! independent of the queue's size (see README, "How the claim finds a group").

use crate::validate::MAX_PRIORITY;

/// Above this many routing keys a claim uses one `IN` arm instead of one arm per key
/// (SQLite caps a compound SELECT at 500 arms).
const MAX_ROUTING_ARMS: usize = 32;

#[derive(Debug, Clone)]
pub struct Sql {
    pub messages: String,
    pub groups: String,
    /// The claim for `min_priority` 0..=4 without routing keys, built once.
    unrouted_claims: Vec<String>,
    pub publish_message: String,
    pub publish_group: String,
    pub set_group_turn: String,
    pub lease_message: String,
    pub ack_message: String,
    pub drop_group_if_empty: String,
    pub release_message: String,
    pub has_routing_key: String,
    pub count_tables: String,
}

impl Sql {
    /// `prefix` must already be validated (`validate::prefix`): it is spliced into names.
    pub fn new(prefix: &str) -> Sql {
        let m = format!("{prefix}_transport_messages");
        let g = format!("{prefix}_transport_groups");
        let mut sql = Sql {
            unrouted_claims: Vec::new(),
            publish_message: format!("INSERT INTO {m} (group_id, event) VALUES (?1, ?2)"),
            publish_group: format!(
                "INSERT OR IGNORE INTO {g} (group_id, priority, routing_key) VALUES (?1, ?2, ?3)"
            ),
            set_group_turn: format!("UPDATE {g} SET last_claimed_at = ?2 WHERE group_id = ?1"),
            lease_message: format!("UPDATE {m} SET locked_by = ?2, lock_expiry = ?3 WHERE seq = ?1"),
            ack_message: format!("DELETE FROM {m} WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"),
            drop_group_if_empty: format!(
                "DELETE FROM {g} WHERE group_id = ?1 AND NOT EXISTS (SELECT 1 FROM {m} WHERE group_id = ?1)"
            ),
            release_message: format!(
                "UPDATE {m} SET locked_by = ?4, lock_expiry = ?5 \
                 WHERE seq = ?1 AND group_id = ?2 AND locked_by = ?3"
            ),
            has_routing_key: format!("SELECT 1 FROM pragma_table_info('{g}') WHERE name = 'routing_key'"),
            count_tables: format!(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('{m}', '{g}')"
            ),
            messages: m,
            groups: g,
        };
        sql.unrouted_claims = (0..=MAX_PRIORITY).map(|p| sql.build_unrouted_claim(p)).collect();
        sql
    }

    /// One candidate group: the first, in turn order, that passes `filter` and is
    /// deliverable now (?1). `last_claimed_at <= now` is what makes this cheap: a claim
    /// stamps a group with its lease's end and a park with the park's end, so groups in
    /// flight or parked lie beyond `now` and the index range never reaches them. The
    /// NOT EXISTS still guards against groups leased by a harel Python transport, which
    /// stamps the claim instant instead.
    fn arm(&self, filter: &str) -> String {
        let (g, m) = (&self.groups, &self.messages);
        format!(
            "SELECT * FROM (SELECT g.last_claimed_at AS turn, g.rowid AS arrival, g.group_id AS gid \
             FROM {g} g WHERE {filter} AND g.last_claimed_at <= ?1 \
             AND NOT EXISTS (SELECT 1 FROM {m} x WHERE x.group_id = g.group_id \
                             AND x.locked_by IS NOT NULL AND x.lock_expiry >= ?1) \
             AND EXISTS (SELECT 1 FROM {m} y WHERE y.group_id = g.group_id) \
             ORDER BY g.last_claimed_at, g.rowid LIMIT 1)"
        )
    }

    /// The best of the arms' candidates, with its head message. Columns: seq, group_id, event.
    fn pick(&self, arms: Vec<String>) -> String {
        let m = &self.messages;
        format!(
            "SELECT h.seq, c.gid, h.event FROM ({}) c \
             JOIN {m} h ON h.seq = (SELECT MIN(seq) FROM {m} WHERE group_id = c.gid) \
             ORDER BY c.turn, c.arrival LIMIT 1",
            arms.join(" UNION ALL ")
        )
    }

    /// One arm per priority level at or above the floor, each an index range on
    /// (priority, last_claimed_at): a high-priority group is found without walking
    /// past lower ones. A last arm takes priorities above 4, which harel's Python publish
    /// does not reject.
    fn build_unrouted_claim(&self, min_priority: i32) -> String {
        let mut arms: Vec<String> =
            (min_priority..=MAX_PRIORITY).map(|p| self.arm(&format!("g.priority = {p}"))).collect();
        arms.push(self.arm(&format!("g.priority > {MAX_PRIORITY}")));
        self.pick(arms)
    }

    /// The claim statement. Parameters: ?1 now, ?2 min_priority, then the routing keys
    /// (?3, ?4, ... one each; or ?3 as a JSON array when there are many).
    pub fn claim(&self, min_priority: i32, n_routing_keys: usize) -> std::borrow::Cow<'_, str> {
        if n_routing_keys == 0 {
            return self.unrouted_claims[min_priority as usize].as_str().into();
        }
        let arms = if n_routing_keys <= MAX_ROUTING_ARMS {
            (0..n_routing_keys)
                .map(|i| self.arm(&format!("g.routing_key = ?{} AND g.priority >= ?2", i + 3)))
                .collect()
        } else {
            vec![self.arm("g.routing_key IN (SELECT value FROM json_each(?3)) AND g.priority >= ?2")]
        };
        self.pick(arms).into()
    }

    pub fn routing_keys_as_one_parameter(n_routing_keys: usize) -> bool {
        n_routing_keys > MAX_ROUTING_ARMS
    }

    /// The idempotent statements of a fresh schema: tables, then indexes.
    pub fn schema(&self) -> Vec<String> {
        let mut statements = self.tables();
        statements.extend(self.indexes());
        statements
    }

    pub fn tables(&self) -> Vec<String> {
        let (g, m) = (&self.groups, &self.messages);
        vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {m} (seq INTEGER PRIMARY KEY AUTOINCREMENT, \
                 group_id TEXT NOT NULL, event TEXT NOT NULL, locked_by TEXT, lock_expiry REAL)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {g} (group_id TEXT PRIMARY KEY, \
                 last_claimed_at REAL NOT NULL DEFAULT 0.0, priority INT NOT NULL DEFAULT 0, \
                 routing_key TEXT)"
            ),
        ]
    }

    pub fn indexes(&self) -> Vec<String> {
        let (g, m) = (&self.groups, &self.messages);
        let mut statements = vec![
            format!("CREATE INDEX IF NOT EXISTS {g}_by_last_claimed ON {g} (last_claimed_at)"),
            format!("CREATE INDEX IF NOT EXISTS {m}_by_group ON {m} (group_id, seq)"),
        ];
        statements.extend(self.routing_and_claim_indexes());
        statements
    }

    /// Adds the column harel 0.9's groups table lacks; SQLite has no ADD COLUMN IF NOT EXISTS.
    pub fn add_routing_key(&self) -> String {
        format!("ALTER TABLE {} ADD COLUMN routing_key TEXT", self.groups)
    }

    /// What upgrades a harel 0.9 groups table (no `routing_key`); the ALTER runs once.
    pub fn upgrade(&self) -> Vec<String> {
        let mut statements = vec![self.add_routing_key()];
        statements.extend(self.routing_and_claim_indexes());
        statements
    }

    fn routing_and_claim_indexes(&self) -> Vec<String> {
        let (g, m) = (&self.groups, &self.messages);
        vec![
            format!("CREATE INDEX IF NOT EXISTS {g}_by_routing_key ON {g} (routing_key, last_claimed_at)"),
            // ours: a claim's arm per priority level walks this
            format!("CREATE INDEX IF NOT EXISTS {g}_by_priority ON {g} (priority, last_claimed_at)"),
            // ours: "has this group anything in flight?" without reading a deep group's messages
            format!(
                "CREATE INDEX IF NOT EXISTS {m}_in_flight ON {m} (group_id, lock_expiry) \
                 WHERE locked_by IS NOT NULL"
            ),
        ]
    }
}

/// Statements as text for a migration tool: one per line, each ending in ';'.
pub fn as_script(statements: &[String]) -> String {
    statements.iter().map(|s| format!("{s};\n")).collect()
}
