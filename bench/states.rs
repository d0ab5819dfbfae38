//! The queue states the benchmark measures in, built fast: one transaction of bulk
//! `INSERT ... SELECT` over a recursive series, straight through the `libsql` crate.
//! Only the state is built this way; every measured operation goes through the queue
//! under test (our `Transport`, the raw SPEC loop, or harel's Python transports).
//!
//! Each state is built in three schema styles, because each implementation must find the
//! rows it would have written itself:
//! - `Ours`: our schema (`harel_transport::schema_sql`), and `last_claimed_at` stamped the
//!   way our claim/nack do it: with the instant the group can next be served (a lease's
//!   or a park's end).
//! - `Spec`: the SPEC's tables and indexes (with its `routing_key` column and index), and
//!   `last_claimed_at` = the claim instant, as the SPEC's claim writes it.
//! - `Harel09`: what harel 0.9.0's Python transports create (no `routing_key`), stamped
//!   like `Spec`.
//!
//! Templates are built once in journal_mode DELETE (the SQLite default) and copied to a
//! fresh file for every measurement: a queue that sets WAL (ours, the raw loop, harel's
//! SqliteTransport) converts its copy; harel's LibsqlTransport keeps its own default.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use libsql::Builder;

/// Leases and parks in a built state last this long: nothing lapses during the run.
pub const HOLD: f64 = 3600.0;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Style {
    Ours,
    Spec,
    Harel09,
}

impl Style {
    pub fn name(self) -> &'static str {
        match self {
            Style::Ours => "ours",
            Style::Spec => "spec",
            Style::Harel09 => "harel09",
        }
    }

    fn has_routing_key(self) -> bool {
        self != Style::Harel09
    }

    /// The schema as one script.
    pub fn schema_script(self) -> String {
        match self {
            Style::Ours => harel_transport::schema_sql("harel").expect("the default prefix is valid"),
            Style::Spec => SPEC_SCHEMA.iter().map(|s| format!("{s};\n")).collect(),
            Style::Harel09 => SPEC_SCHEMA[..4].iter().map(|s| format!("{s};\n")).collect(),
        }
    }
}

/// the SPEC's schema. The first four statements are exactly harel 0.9.0's
/// (`harel.engine.schema.transport_schema("sqlite")`); the SPEC's "Routing by machine"
/// adds the `routing_key` column and its index (the table is created with the column
/// here, which is what the ALTER TABLE upgrade leaves).
pub const SPEC_SCHEMA: [&str; 6] = [
    "CREATE TABLE IF NOT EXISTS harel_transport_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, \
     group_id TEXT NOT NULL, event TEXT NOT NULL, locked_by TEXT, lock_expiry REAL)",
    "CREATE TABLE IF NOT EXISTS harel_transport_groups (group_id TEXT PRIMARY KEY, \
     last_claimed_at REAL NOT NULL DEFAULT 0.0, priority INT NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS harel_transport_groups_by_last_claimed ON harel_transport_groups (last_claimed_at)",
    "CREATE INDEX IF NOT EXISTS harel_transport_messages_by_group ON harel_transport_messages (group_id, seq)",
    "ALTER TABLE harel_transport_groups ADD COLUMN routing_key TEXT",
    "CREATE INDEX IF NOT EXISTS harel_transport_groups_by_routing_key ON harel_transport_groups (routing_key, last_claimed_at)",
];

/// A queue state.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum State {
    /// `messages` over `groups` (message i in group i % groups), nothing claimed yet.
    Backlog { messages: usize, groups: usize },
    /// `groups` groups of one free message each, never claimed.
    Ready { groups: usize },
    /// `groups` groups each with its one message leased (or parked by `nack(delay)`), and
    /// optionally one more group, "ready", with a free message and the newest turn (it
    /// was served last): the SPEC's walk passes every held group before reaching it.
    Held { groups: usize, parked: bool, one_ready: bool },
    /// One group, "deep", of `messages` free messages, served before.
    Deep { messages: usize },
    /// `groups` ready priority-0 groups, all waiting longer than one priority-3 group, "urgent".
    PriorityBehind { groups: usize },
    /// `groups` ready groups with keys "key-0".."key-9", all waiting longer than one group,
    /// "routed", with the key "target".
    RoutingAmong { groups: usize },
}

impl State {
    pub fn file_name(&self, style: Style) -> String {
        let s = match *self {
            State::Backlog { messages, groups } => format!("backlog-{messages}-{groups}"),
            State::Ready { groups } => format!("ready-{groups}"),
            State::Held { groups, parked, one_ready } => {
                format!(
                    "{}-{groups}{}",
                    if parked { "parked" } else { "leased" },
                    if one_ready { "-1ready" } else { "" }
                )
            }
            State::Deep { messages } => format!("deep-{messages}"),
            State::PriorityBehind { groups } => format!("priority-{groups}"),
            State::RoutingAmong { groups } => format!("routing-{groups}"),
        };
        format!("{}-{s}.db", style.name())
    }
}

/// What a claim in a state must return: the state is checked by the measurement itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Expect {
    Any,
    Group(&'static str),
    Nothing,
}

/// A claim-latency case: a state, the claim's arguments, and what it must return.
#[derive(Clone, Debug)]
pub struct ClaimCase {
    pub id: &'static str,
    pub label: &'static str,
    pub section: u8,
    pub state: State,
    pub min_priority: i32,
    pub routing_keys: &'static [&'static str],
    pub expect: Expect,
}

pub fn claim_cases() -> Vec<ClaimCase> {
    let case = |id, label, section, state, expect| ClaimCase {
        id,
        label,
        section,
        state,
        min_priority: 0,
        routing_keys: &[],
        expect,
    };
    let held = |groups, parked, one_ready| State::Held { groups, parked, one_ready };
    vec![
        case("claim_ready_100", "claim, 100 ready groups", 1, State::Ready { groups: 100 }, Expect::Any),
        case("claim_ready_10k", "claim, 10,000 ready groups", 1, State::Ready { groups: 10_000 }, Expect::Any),
        case("claim_ready_100k", "claim, 100,000 ready groups", 1, State::Ready { groups: 100_000 }, Expect::Any),
        case(
            "leased_10k_1ready",
            "claim, 10,000 leased + 1 ready",
            2,
            held(10_000, false, true),
            Expect::Group("ready"),
        ),
        case(
            "leased_100k_1ready",
            "claim, 100,000 leased + 1 ready",
            2,
            held(100_000, false, true),
            Expect::Group("ready"),
        ),
        case(
            "parked_10k_1ready",
            "claim, 10,000 parked + 1 ready",
            2,
            held(10_000, true, true),
            Expect::Group("ready"),
        ),
        case(
            "parked_100k_1ready",
            "claim, 100,000 parked + 1 ready",
            2,
            held(100_000, true, true),
            Expect::Group("ready"),
        ),
        case("idle_leased_100k", "idle claim, 100,000 leased", 2, held(100_000, false, false), Expect::Nothing),
        case("deep_100k", "claim, 1 group 100,000 deep", 2, State::Deep { messages: 100_000 }, Expect::Group("deep")),
        ClaimCase {
            min_priority: 3,
            ..case(
                "priority3_behind_10k",
                "claim min_priority=3, 10,000 lower",
                2,
                State::PriorityBehind { groups: 10_000 },
                Expect::Group("urgent"),
            )
        },
        ClaimCase {
            routing_keys: &["target"],
            ..case(
                "routing_1_of_10k",
                "claim 1 routing key, 10,000 others",
                2,
                State::RoutingAmong { groups: 10_000 },
                Expect::Group("routed"),
            )
        },
    ]
}

/// The event every benchmark message carries: harel's `Event.model_dump_json()` shape, so
/// harel's Python transports can parse what they claim.
pub fn event_json(i: usize) -> String {
    format!(r#"{{"id":"ev-{i}","kind":"bench","created_time":null,"received_time":null,"data":{{"n":{i}}}}}"#)
}

pub fn group_id(i: usize) -> String {
    format!("g-{i:07}")
}

const SQL_GROUP_ID: &str = "printf('g-%07d', i)";
const SQL_EVENT: &str =
    r#"'{"id":"ev-' || i || '","kind":"bench","created_time":null,"received_time":null,"data":{"n":' || i || '}}'"#;

/// Builds templates on demand, one file per (style, state).
pub struct Templates {
    dir: PathBuf,
    /// The instant the states are built at (epoch seconds); leases and parks run to `now + HOLD`.
    now: f64,
    built: HashMap<(Style, State), PathBuf>,
    rt: tokio::runtime::Runtime,
    pub build_secs: f64,
}

impl Templates {
    pub fn new(dir: &Path, now: f64) -> Templates {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        Templates { dir: dir.to_owned(), now, built: HashMap::new(), rt, build_secs: 0.0 }
    }

    pub fn get(&mut self, style: Style, state: State) -> Result<PathBuf, String> {
        if let Some(p) = self.built.get(&(style, state)) {
            return Ok(p.clone());
        }
        let path = self.dir.join(state.file_name(style));
        let started = std::time::Instant::now();
        let statements = bulk(style, state, self.now);
        let script = style.schema_script();
        let p = path.to_str().ok_or("template path is not UTF-8")?.to_owned();
        self.rt
            .block_on(async {
                let db = Builder::new_local(&p).build().await?;
                let conn = db.connect()?;
                conn.execute_batch(&script).await?;
                conn.execute("BEGIN", ()).await?;
                for s in &statements {
                    conn.execute(s, ()).await?;
                }
                conn.execute("COMMIT", ()).await?;
                Ok::<_, libsql::Error>(())
            })
            .map_err(|e| format!("building {}: {e}", path.display()))?;
        self.build_secs += started.elapsed().as_secs_f64();
        self.built.insert((style, state), path.clone());
        Ok(path)
    }
}

/// The rows of a state, as `INSERT ... SELECT` statements.
fn bulk(style: Style, state: State, now: f64) -> Vec<String> {
    let spec = matches!(style, Style::Spec | Style::Harel09);
    let key_col = if style.has_routing_key() { ", routing_key" } else { "" };
    // groups: (rows, id expression, last_claimed_at expression, priority, routing key expression)
    let groups = |n: usize, id: &str, turn: &str, priority: i32, key: &str| {
        let key_val = if style.has_routing_key() { format!(", {key}") } else { String::new() };
        format!(
            "{} INSERT INTO harel_transport_groups (group_id, last_claimed_at, priority{key_col}) \
             SELECT {id}, {turn}, {priority}{key_val} FROM c",
            series(n)
        )
    };
    // messages: (rows, group expression, locked_by expression, lock_expiry expression)
    let messages = |n: usize, group: &str, locked_by: &str, expiry: &str| {
        format!(
            "{} INSERT INTO harel_transport_messages (group_id, event, locked_by, lock_expiry) \
             SELECT {group}, {SQL_EVENT}, {locked_by}, {expiry} FROM c",
            series(n)
        )
    };
    let served_before = format!("{}", now - 1.0);
    match state {
        State::Backlog { messages: m, groups: g } => vec![
            groups(g, SQL_GROUP_ID, "0", 0, "NULL"),
            messages(m, &format!("printf('g-%07d', i % {g})"), "NULL", "NULL"),
        ],
        State::Ready { groups: g } => {
            vec![groups(g, SQL_GROUP_ID, "0", 0, "NULL"), messages(g, SQL_GROUP_ID, "NULL", "NULL")]
        }
        State::Held { groups: g, parked, one_ready } => {
            // Group i was claimed at `claimed` (spread over the last minute, in order); its
            // message is leased until claimed + HOLD, or parked until now + HOLD.
            let claimed = format!("({} + i * {})", now - 70.0, 60.0 / g as f64);
            let expiry = if parked { format!("{}", now + HOLD) } else { format!("({claimed} + {HOLD})") };
            // SPEC: the claim instant. Ours: the instant the group can next be served.
            let turn = if spec { claimed.clone() } else { expiry.clone() };
            let locked_by = if parked { "'__parked__'" } else { "'w-' || (i % 4)" };
            let mut s = vec![groups(g, SQL_GROUP_ID, &turn, 0, "NULL"), messages(g, SQL_GROUP_ID, locked_by, &expiry)];
            if one_ready {
                s.push(groups(1, "'ready'", &served_before, 0, "NULL"));
                s.push(messages(1, "'ready'", "NULL", "NULL"));
            }
            s
        }
        State::Deep { messages: m } => {
            vec![groups(1, "'deep'", &served_before, 0, "NULL"), messages(m, "'deep'", "NULL", "NULL")]
        }
        State::PriorityBehind { groups: g } => vec![
            groups(g, SQL_GROUP_ID, "0", 0, "NULL"),
            messages(g, SQL_GROUP_ID, "NULL", "NULL"),
            groups(1, "'urgent'", &served_before, 3, "NULL"),
            messages(1, "'urgent'", "NULL", "NULL"),
        ],
        State::RoutingAmong { groups: g } => vec![
            groups(g, SQL_GROUP_ID, "0", 0, "'key-' || (i % 10)"),
            messages(g, SQL_GROUP_ID, "NULL", "NULL"),
            groups(1, "'routed'", &served_before, 0, "'target'"),
            messages(1, "'routed'", "NULL", "NULL"),
        ],
    }
}

/// `WITH RECURSIVE c(i)` over 0..n.
fn series(n: usize) -> String {
    format!("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {}) ", n.saturating_sub(1))
}

/// Copies a template to `dst` (a fresh file: any old one and its WAL, SHM and journal go first).
pub fn fresh_copy(template: &Path, dst: &Path) -> Result<(), String> {
    remove_db(dst);
    std::fs::copy(template, dst).map_err(|e| format!("copy {} -> {}: {e}", template.display(), dst.display()))?;
    Ok(())
}

pub fn remove_db(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}
