//! What each command prints: a table for people, or with `--json` one JSON document of a
//! fixed shape (README.md, "JSON"). Times in JSON are epoch seconds or spans in seconds, as
//! the library gives them; events are the exact text stored, as a JSON string.

use std::io::Write;

use harel_transport::{
    system_clock, Archived, DeadLetter, GroupInfo, Headers, Limit, LimitInfo, MessageInfo, Page, Pause, PauseKind,
    PauseTarget, Stats, DELAYED, PARKED,
};
use serde::Serialize;

use crate::args::Selector;
use crate::time;

/// How many characters of an event (and of a dead letter's reason) a table shows: in peek,
/// and in the wider tables of the dead letters and the archive.
const EVENT_CHARS: usize = 100;
const DEAD_EVENT_CHARS: usize = 60;
/// How many characters of a message's headers a table shows (a traceparent alone is 67).
const HEADERS_CHARS: usize = 100;

pub struct Out {
    pub json: bool,
    /// What the queue lacks of the library's schema (a harel 0.9 file): each look says so.
    pub absent: Vec<String>,
    /// How many databases the queue is sharded over: above 1, the looks show each item's shard.
    pub shards: usize,
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out { json, absent: Vec::new(), shards: 1 }
    }

    fn lacks(&self, part: &str) -> bool {
        self.absent.iter().any(|a| a.ends_with(part))
    }

    /// Under a table: what the queue lacks, and how the looks show it.
    fn absent_note(&self) {
        if !self.absent.is_empty() {
            println!(
                "\nthis queue lacks {} (a harel 0.9 file): shown as it is, with \"-\" for what it cannot hold; \
                 nothing here changes it (a worker or producer of harel-transport adds them when it opens it)",
                self.absent.join(", ")
            );
        }
    }

    fn print_json(&self, value: &impl Serialize) {
        let text = serde_json::to_string_pretty(value).expect("a document serializes");
        println!("{text}");
    }

    /// The queue's counts; `shards`, each shard's (empty unless sharded).
    pub fn stats(&self, s: &Stats, shards: &[Stats]) {
        if self.json {
            let mut doc = self.stats_json(s);
            doc.shards = shards.iter().map(|s| self.stats_json(s)).collect();
            self.print_json(&doc);
        } else {
            print!("{}", self.stats_text(s));
            if !shards.is_empty() {
                // Paused, held and retrying groups and expired dead letters are shown when there
                // are any, as in the lines above.
                let mut columns =
                    vec![("SHARD", R), ("MESSAGES", R), ("GROUPS", R), ("READY", R), ("LEASED", R), ("PARKED", R)];
                if s.paused > 0 {
                    columns.push(("PAUSED", R));
                }
                if s.held > 0 {
                    columns.push(("HELD", R));
                }
                if s.retrying > 0 {
                    columns.push(("RETRYING", R));
                }
                columns.push(("DEAD", R));
                if s.expired > 0 {
                    columns.push(("EXPIRED", R));
                }
                let mut t = Table::new(&columns);
                for (i, shard) in shards.iter().enumerate() {
                    let mut counts = vec![shard.messages, shard.groups, shard.ready, shard.leased, shard.parked];
                    if s.paused > 0 {
                        counts.push(shard.paused);
                    }
                    if s.held > 0 {
                        counts.push(shard.held);
                    }
                    if s.retrying > 0 {
                        counts.push(shard.retrying);
                    }
                    counts.push(shard.dead);
                    if s.expired > 0 {
                        counts.push(shard.expired);
                    }
                    t.row(std::iter::once(i.to_string()).chain(counts.iter().map(u64::to_string)).collect());
                }
                print!("\n{}", t.render());
            }
            self.absent_note();
        }
    }

    /// One refresh of `stats --watch`: a JSON line, or the table under a header line (the
    /// screen cleared first on a terminal).
    pub fn watched_stats(&self, s: &Stats, every: f64, shown: u64, clear: bool) {
        let mut out = std::io::stdout().lock();
        if self.json {
            let line = serde_json::to_string(&self.stats_json(s)).expect("a document serializes");
            let _ = writeln!(out, "{line}");
        } else {
            if clear {
                let _ = write!(out, "\x1b[H\x1b[2J");
            } else if shown > 0 {
                let _ = writeln!(out);
            }
            let _ = writeln!(out, "{}  (every {}, Ctrl-C to stop)\n", time::utc(s.now), time::seconds(every));
            let _ = write!(out, "{}", self.stats_text(s));
        }
        let _ = out.flush();
    }

    pub fn groups(&self, page: &Page<GroupInfo>, state: Option<&str>) {
        if self.json {
            return self.print_json(&self.groups_json(page));
        }
        if page.items.is_empty() {
            println!("no {}groups", state.map(|s| format!("{s} ")).unwrap_or_default());
        } else {
            let now = system_clock();
            let mut t = self.sharded(&[
                ("GROUP", L),
                ("STATE", L),
                ("DEPTH", R),
                ("HEAD AGE", R),
                ("HOLDER", L),
                ("LEASE END", L),
                ("PRIORITY", R),
                ("ROUTING KEY", L),
                ("ATTEMPTS", R),
            ]);
            for g in &page.items {
                t.row(self.with_shard(
                    g.shard,
                    vec![
                        cell(&g.group_id),
                        g.state.name().to_owned(),
                        g.depth.to_string(),
                        g.head_age.map_or_else(dash, time::seconds),
                        g.holder.as_deref().map_or_else(dash, cell),
                        g.lock_expiry.map_or_else(dash, |at| time::relative(at, now)),
                        g.priority.to_string(),
                        g.routing_key.as_deref().map_or_else(dash, cell),
                        self.attempts(g.head_attempts).map_or_else(dash, |n| n.to_string()),
                    ],
                ));
            }
            print!("{}", t.render());
        }
        next_page(page.next.as_deref());
        self.absent_note();
    }

    /// A table of these columns, after a SHARD column when the queue is sharded.
    fn sharded(&self, columns: &[(&'static str, Align)]) -> Table {
        match self.shards {
            1 => Table::new(columns),
            _ => Table::new(&[&[("SHARD", R)], columns].concat()),
        }
    }

    fn with_shard(&self, shard: usize, row: Vec<String>) -> Vec<String> {
        match self.shards {
            1 => row,
            _ => std::iter::once(shard.to_string()).chain(row).collect(),
        }
    }

    /// A count of claims, or None where the queue has no column for it.
    fn attempts(&self, n: i64) -> Option<i64> {
        (!self.lacks(".attempts")).then_some(n)
    }

    pub fn peek(&self, group: &str, page: &Page<MessageInfo>) {
        if self.json {
            return self.print_json(&self.peek_json(group, page));
        }
        if page.items.is_empty() {
            println!("group {group:?} holds no messages");
        } else {
            let now = system_clock();
            // A HEADERS column when a message of the page has headers (most queues' have none),
            // a RETRY column when one has a backoff drawn under a retry policy (likewise).
            let with_headers = page.items.iter().any(|m| !m.headers.is_empty());
            let with_retry = page.items.iter().any(|m| m.retry_delay.is_some());
            let mut columns =
                vec![("SEQ", R), ("ATTEMPTS", R), ("LOCKED BY", L), ("LEASE END", L), ("PUBLISHED", L)];
            if with_retry {
                columns.push(("RETRY", L));
            }
            if with_headers {
                columns.push(("HEADERS", L));
            }
            columns.push(("EVENT", L));
            // One group's messages are on one shard: no SHARD column (its rows have no shard cell).
            let mut t = Table::new(&columns);
            for m in &page.items {
                let mut row = vec![
                    m.seq.to_string(),
                    self.attempts(m.attempts).map_or_else(dash, |n| n.to_string()),
                    match m.locked_by.as_deref() {
                        None => dash(),
                        Some(PARKED) => "(parked)".to_owned(),
                        Some(DELAYED) => "(delayed)".to_owned(),
                        Some(worker) => cell(worker),
                    },
                    m.lock_expiry.map_or_else(dash, |at| time::relative(at, now)),
                    m.published_at.map_or_else(dash, |at| time::relative(at, now)),
                ];
                if with_retry {
                    row.push(m.retry_delay.map_or_else(dash, retry_cell));
                }
                if with_headers {
                    row.push(headers_cell(&m.headers, HEADERS_CHARS));
                }
                row.push(cut(&m.event, EVENT_CHARS));
                t.row(row);
            }
            print!("{}", t.render());
        }
        next_page(page.next.as_deref());
        self.absent_note();
    }

    pub fn dead_letters(&self, page: &Page<DeadLetter>, group: Option<&str>) {
        if self.json {
            return self.print_json(&dead_letters_json(page));
        }
        if self.lacks("_dead") {
            println!("no dead letters: this queue has no dead-letter table");
        } else if page.items.is_empty() {
            match group {
                Some(g) => println!("no dead letters of group {g:?}"),
                None => println!("no dead letters"),
            }
        } else {
            let now = system_clock();
            let with_headers = page.items.iter().any(|d| !d.headers.is_empty());
            let mut columns =
                vec![("SEQ", R), ("GROUP", L), ("ATTEMPTS", R), ("LAST WORKER", L), ("DIED", L), ("REASON", L)];
            if with_headers {
                columns.push(("HEADERS", L));
            }
            columns.push(("EVENT", L));
            let mut t = self.sharded(&columns);
            for d in &page.items {
                let mut row = vec![
                    d.seq.to_string(),
                    cell(&d.group_id),
                    d.attempts.to_string(),
                    d.last_worker.as_deref().map_or_else(dash, cell),
                    time::relative(d.dead_at, now),
                    cut(&d.reason, DEAD_EVENT_CHARS),
                ];
                if with_headers {
                    row.push(headers_cell(&d.headers, HEADERS_CHARS));
                }
                row.push(cut(&d.event, DEAD_EVENT_CHARS));
                t.row(self.with_shard(d.shard, row));
            }
            print!("{}", t.render());
        }
        next_page(page.next.as_deref());
        self.absent_note();
    }

    /// The archive: as the dead letters are listed, with the worker that acked each and when
    /// it was published, claimed (the claim that was acked) and acked.
    pub fn archive(&self, page: &Page<Archived>, group: Option<&str>) {
        if self.json {
            return self.print_json(&archive_json(page));
        }
        if self.lacks("_archive") {
            println!("no archived messages: this queue has no archive table");
        } else if page.items.is_empty() {
            let of = group.map(|g| format!(" of group {g:?}")).unwrap_or_default();
            println!(
                "no archived messages{of} (an ack archives its message only when its transport has the archive \
                 option on)"
            );
        } else {
            let now = system_clock();
            let with_headers = page.items.iter().any(|a| !a.headers.is_empty());
            let mut columns = vec![
                ("SEQ", R),
                ("GROUP", L),
                ("ATTEMPTS", R),
                ("WORKER", L),
                ("PUBLISHED", L),
                ("CLAIMED", L),
                ("ACKED", L),
            ];
            if with_headers {
                columns.push(("HEADERS", L));
            }
            columns.push(("EVENT", L));
            let mut t = self.sharded(&columns);
            for a in &page.items {
                let mut row = vec![
                    a.seq.to_string(),
                    cell(&a.group_id),
                    a.attempts.to_string(),
                    cell(&a.worker_id),
                    a.published_at.map_or_else(dash, |at| time::relative(at, now)),
                    a.claimed_at.map_or_else(dash, |at| time::relative(at, now)),
                    time::relative(a.acked_at, now),
                ];
                if with_headers {
                    row.push(headers_cell(&a.headers, HEADERS_CHARS));
                }
                row.push(cut(&a.event, DEAD_EVENT_CHARS));
                t.row(self.with_shard(a.shard, row));
            }
            print!("{}", t.render());
        }
        next_page(page.next.as_deref());
        self.absent_note();
    }

    pub fn redriven(&self, n: u64, which: &Selector) {
        if self.json {
            return self.print_json(&Redriven { redriven: n });
        }
        let into = match &which.group {
            Some(g) => format!("into group {g:?} (as its newest messages)"),
            None if n == 1 => "into its group (as the group's newest message)".to_owned(),
            None => "into their groups (each as its group's newest message)".to_owned(),
        };
        println!("redrove {} {} {into}", n, plural(n, "dead letter"));
    }

    pub fn dead_purged(&self, n: u64, which: &Selector) {
        if self.json {
            return self.print_json(&DeadPurged { purged: n });
        }
        let of = which.group.as_ref().map(|g| format!(" of group {g:?}")).unwrap_or_default();
        println!("purged {} {}{of}", n, plural(n, "dead letter"));
    }

    pub fn purged(&self, n: u64, group: Option<&str>) {
        if self.json {
            return self.print_json(&Purged { purged: n, group_id: group });
        }
        match group {
            Some(g) => println!("purged {} {} of group {g:?}", n, plural(n, "message")),
            None => println!("purged {} {} and every group (dead letters kept)", n, plural(n, "message")),
        }
    }

    pub fn released(&self, group: &str, released: bool) {
        if self.json {
            return self.print_json(&Released { group_id: group, released });
        }
        if released {
            println!("released group {group:?}: its head can be claimed now");
        } else {
            println!(
                "group {group:?}: nothing to release (its head is neither leased nor parked, or it has no messages)"
            );
        }
    }

    /// `pause`: `new`, whether the pause is new (false: it was there already).
    pub fn paused(&self, target: PauseTarget<'_>, new: bool) {
        if self.json {
            return self.print_json(&PauseDone { kind: target.kind().name(), name: target.name(), paused: new });
        }
        let what = pause_target(target);
        match (new, target) {
            (false, _) => println!("{what} was already paused: nothing changed"),
            (true, PauseTarget::Group(_)) => println!("paused {what}: no claim takes its messages until it is resumed"),
            (true, PauseTarget::RoutingKey(_)) => {
                println!("paused {what}: no claim takes the messages of its groups until it is resumed")
            }
            (true, PauseTarget::Queue) => println!("paused {what}: no claim takes a message until it is resumed"),
        }
    }

    /// `resume`: `was`, whether there was such a pause (false: nothing changed).
    pub fn resumed(&self, target: PauseTarget<'_>, was: bool) {
        if self.json {
            return self.print_json(&Resumed { kind: target.kind().name(), name: target.name(), resumed: was });
        }
        let what = pause_target(target);
        if !was {
            println!("{what}: no such pause, nothing changed (`pauses` lists those in force)");
        } else if let PauseTarget::Group(_) = target {
            println!("resumed {what}: its messages are served again, unless another pause names it");
        } else {
            println!("resumed {what}: its groups are served again, except those another pause names");
        }
    }

    pub fn pauses(&self, pauses: &[Pause]) {
        if self.json {
            return self.print_json(&pauses_json(pauses));
        }
        if pauses.is_empty() {
            println!("no pauses");
        } else {
            let now = system_clock();
            let mut t = Table::new(&[("KIND", L), ("NAME", L), ("PAUSED", L)]);
            for p in pauses {
                let name = match p.kind {
                    PauseKind::Queue => dash(),
                    _ => cell(&p.name),
                };
                t.row(vec![p.kind.name().to_owned(), name, time::relative(p.paused_at, now)]);
            }
            print!("{}", t.render());
        }
        self.absent_note();
    }
}

impl Out {
    /// `limit set`: what was set (the key's limits now: a kind not given is off).
    pub fn limit_set(&self, routing_key: &str, limit: Limit) {
        if self.json {
            return self.print_json(&LimitDone::new(routing_key, limit));
        }
        let concurrency = match limit.concurrency {
            Some(n) => format!("at most {n} of its messages leased at once"),
            None => "no concurrency limit".to_owned(),
        };
        let rate = match limit.rate {
            Some(r) => format!("at most {} leases a second (burst {})", r.per_second, r.burst),
            None => "no rate limit".to_owned(),
        };
        println!("limited routing key {routing_key:?}: {concurrency}, {rate}; in force at every process's next claim");
    }

    /// `limit remove`: done (a key without a limit is the library's refusal).
    pub fn limit_removed(&self, routing_key: &str) {
        if self.json {
            return self.print_json(&LimitRemoved { routing_key, removed: true });
        }
        println!("removed the limits of routing key {routing_key:?}: its held groups are served again");
    }

    /// `limit list`: each limit in force with its use now, by key.
    pub fn limits(&self, limits: &[LimitInfo]) {
        if self.json {
            return self.print_json(&limits_json(limits));
        }
        if limits.is_empty() {
            println!("no limits");
        } else {
            let mut t = Table::new(&[
                ("ROUTING KEY", L),
                ("CONCURRENCY", R),
                ("IN USE", R),
                ("RATE", R),
                ("BURST", R),
                ("TOKENS", R),
                ("HELD", R),
            ]);
            for l in limits {
                let concurrency = l.limit.concurrency;
                let rate = l.limit.rate;
                t.row(vec![
                    cell(&l.routing_key),
                    concurrency.map_or_else(dash, |n| n.to_string()),
                    // Leases are counted against a concurrency limit only.
                    concurrency.map_or_else(dash, |_| l.in_use.to_string()),
                    rate.map_or_else(dash, |r| format!("{}/s", r.per_second)),
                    rate.map_or_else(dash, |r| r.burst.to_string()),
                    l.tokens.map_or_else(dash, tokens),
                    l.held.to_string(),
                ]);
            }
            print!("{}", t.render());
            if self.shards > 1 {
                println!(
                    "\nsharded over {} databases: each shard holds each limit for its own groups (a key's ceiling is \
                     the limit times {}); IN USE, TOKENS and HELD are summed over the shards",
                    self.shards, self.shards
                );
            }
        }
        self.absent_note();
    }
}

/// A bucket's tokens, to two decimals at most: "3", "0.25".
fn tokens(n: f64) -> String {
    let text = format!("{n:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A pause's target as the text says it: group "G", routing key "K", the queue.
fn pause_target(target: PauseTarget<'_>) -> String {
    match target {
        PauseTarget::Group(g) => format!("group {g:?}"),
        PauseTarget::RoutingKey(k) => format!("routing key {k:?}"),
        PauseTarget::Queue => "the queue".to_owned(),
    }
}

fn next_page(next: Option<&str>) {
    if let Some(cursor) = next {
        println!("\nmore: go on with --cursor {cursor} (or list every page with --all)");
    }
}

// The JSON documents, field by field in this order (README.md, "JSON"); `serve`'s API
// answers with the same ones.

#[derive(Serialize)]
pub struct Listed<'a> {
    groups: Vec<GroupDoc<'a>>,
    next: Option<&'a str>,
}

#[derive(Serialize)]
pub struct Peeked<'a> {
    group_id: &'a str,
    messages: Vec<MessageDoc<'a>>,
    next: Option<&'a str>,
}

#[derive(Serialize)]
pub struct DeadListed<'a> {
    dead_letters: Vec<DeadDoc<'a>>,
    next: Option<&'a str>,
}

#[derive(Serialize)]
pub struct ArchiveListed<'a> {
    archived: Vec<ArchivedDoc<'a>>,
    next: Option<&'a str>,
}

#[derive(Serialize)]
pub struct Redriven {
    pub redriven: u64,
}

#[derive(Serialize)]
pub struct DeadPurged {
    pub purged: u64,
}

#[derive(Serialize)]
struct Purged<'a> {
    purged: u64,
    group_id: Option<&'a str>,
}

#[derive(Serialize)]
pub struct Released<'a> {
    pub group_id: &'a str,
    pub released: bool,
}

/// `pause`: its target (`kind` queue, group or routing_key; `name` "" for the queue), and
/// whether the pause is new.
#[derive(Serialize)]
pub struct PauseDone<'a> {
    pub kind: &'static str,
    pub name: &'a str,
    pub paused: bool,
}

/// `resume`: its target, as `pause`'s, and whether there was such a pause.
#[derive(Serialize)]
pub struct Resumed<'a> {
    pub kind: &'static str,
    pub name: &'a str,
    pub resumed: bool,
}

/// `pauses`: those in force, the queue's first, then by kind and name.
#[derive(Serialize)]
pub struct PausesDoc<'a> {
    pauses: Vec<PauseDoc<'a>>,
}

#[derive(Serialize)]
struct PauseDoc<'a> {
    kind: &'static str,
    name: &'a str,
    paused_at: f64,
}

pub fn pauses_json(pauses: &[Pause]) -> PausesDoc<'_> {
    let pauses = pauses.iter().map(|p| PauseDoc { kind: p.kind.name(), name: &p.name, paused_at: p.paused_at });
    PausesDoc { pauses: pauses.collect() }
}

/// `limit set`: the key and its limits now (`null`: that kind is off).
#[derive(Serialize)]
pub struct LimitDone<'a> {
    pub routing_key: &'a str,
    pub concurrency: Option<u32>,
    pub rate: Option<f64>,
    pub burst: Option<f64>,
}

impl LimitDone<'_> {
    pub fn new(routing_key: &str, limit: Limit) -> LimitDone<'_> {
        LimitDone {
            routing_key,
            concurrency: limit.concurrency,
            rate: limit.rate.map(|r| r.per_second),
            burst: limit.rate.map(|r| r.burst),
        }
    }
}

/// `limit remove`: the key (a key without a limit is refused, so `removed` is true).
#[derive(Serialize)]
pub struct LimitRemoved<'a> {
    pub routing_key: &'a str,
    pub removed: bool,
}

/// `limit list`: the limits in force, by key.
#[derive(Serialize)]
pub struct LimitsDoc<'a> {
    limits: Vec<LimitDoc<'a>>,
}

/// A limit and its use now: `concurrency` and `rate`/`burst` null where off; `in_use` the
/// leases running now (0 without a concurrency limit), `tokens` the bucket's now (null
/// without a rate limit), `held` the groups a claim holds until the key has room.
#[derive(Serialize)]
struct LimitDoc<'a> {
    routing_key: &'a str,
    concurrency: Option<u32>,
    in_use: u64,
    rate: Option<f64>,
    burst: Option<f64>,
    tokens: Option<f64>,
    held: u64,
}

pub fn limits_json(limits: &[LimitInfo]) -> LimitsDoc<'_> {
    let limits = limits.iter().map(|l| LimitDoc {
        routing_key: &l.routing_key,
        concurrency: l.limit.concurrency,
        in_use: l.in_use,
        rate: l.limit.rate.map(|r| r.per_second),
        burst: l.limit.rate.map(|r| r.burst),
        tokens: l.tokens,
        held: l.held,
    });
    LimitsDoc { limits: limits.collect() }
}

/// `stats`, one refresh of `stats --watch`. `dead` is null where the queue has no
/// dead-letter table; `absent` names what the queue lacks (empty for a queue of ours).
#[derive(Serialize)]
pub struct StatsDoc {
    now: f64,
    messages: u64,
    groups: u64,
    ready: u64,
    leased: u64,
    parked: u64,
    delayed: u64,
    paused: u64,
    /// Groups a limit holds (their routing key had no room when a claim met them).
    held: u64,
    /// Groups whose head's lease lapsed and that wait its retry policy's backoff. Neither is
    /// in `ready`: ready, leased, parked, delayed, paused, held and retrying add up to groups.
    retrying: u64,
    next_due_at: Option<f64>,
    dead: Option<u64>,
    /// Of `dead`, the messages that expired undelivered (reason "expired"); null as `dead`.
    expired: Option<u64>,
    oldest_ready_age: Option<f64>,
    oldest_ready_seq: Option<i64>,
    next_release_at: Option<f64>,
    oldest_overdue_lease: Option<f64>,
    by_priority: Vec<PriorityDoc>,
    absent: Vec<String>,
    /// Each shard's counts, in shard order (only for a sharded queue).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shards: Vec<StatsDoc>,
}

#[derive(Serialize)]
struct PriorityDoc {
    priority: i32,
    groups: u64,
    ready: u64,
    leased: u64,
    parked: u64,
    delayed: u64,
    paused: u64,
    held: u64,
    retrying: u64,
}

impl Out {
    pub fn stats_json(&self, s: &Stats) -> StatsDoc {
        StatsDoc {
            now: s.now,
            messages: s.messages,
            groups: s.groups,
            ready: s.ready,
            leased: s.leased,
            parked: s.parked,
            delayed: s.delayed,
            paused: s.paused,
            held: s.held,
            retrying: s.retrying,
            next_due_at: s.next_due_at,
            dead: (!self.lacks("_dead")).then_some(s.dead),
            expired: (!self.lacks("_dead")).then_some(s.expired),
            oldest_ready_age: s.oldest_ready_age,
            oldest_ready_seq: s.oldest_ready_seq,
            next_release_at: s.next_release_at,
            oldest_overdue_lease: s.oldest_overdue_lease,
            by_priority: s
                .by_priority
                .iter()
                .map(|p| PriorityDoc {
                    priority: p.priority,
                    groups: p.groups,
                    ready: p.ready,
                    leased: p.leased,
                    parked: p.parked,
                    delayed: p.delayed,
                    paused: p.paused,
                    held: p.held,
                    retrying: p.retrying,
                })
                .collect(),
            absent: self.absent.clone(),
            shards: Vec::new(),
        }
    }

    fn stats_text(&self, s: &Stats) -> String {
        // The expired among the dead letters are shown when there are any, as delayed and
        // paused groups are below.
        let dead = match self.lacks("_dead") {
            true => "- (no dead-letter table)".to_owned(),
            false if s.expired > 0 => format!("{} ({} expired)", s.dead, s.expired),
            false => s.dead.to_string(),
        };
        // Delayed, paused, held (by a limit) and retrying (a lapsed lease's backoff) groups
        // are shown when there are any: most queues never delay, pause, limit nor retry.
        let shown = |n: u64, state: &str| if n > 0 { format!(", {n} {state}") } else { String::new() };
        let others = [(s.delayed, "delayed"), (s.paused, "paused"), (s.held, "held"), (s.retrying, "retrying")]
            .map(|(n, state)| shown(n, state))
            .concat();
        let lines = [
            ("messages", s.messages.to_string()),
            ("groups", format!("{} ({} ready, {} leased, {} parked{others})", s.groups, s.ready, s.leased, s.parked)),
            ("dead letters", dead),
            ("oldest ready", self.oldest_ready(s)),
            ("next release", s.next_release_at.map_or_else(dash, |at| time::relative(at, s.now))),
        ];
        let mut t = Table::bare(&[("", L), ("", L)]);
        for (label, value) in lines {
            t.row(vec![label.to_owned(), value]);
        }
        if let Some(at) = s.next_due_at {
            t.row(vec!["next due".to_owned(), time::relative(at, s.now)]);
        }
        let mut text = t.render();
        if !s.by_priority.is_empty() {
            let mut columns = vec![("PRIORITY", R), ("GROUPS", R), ("READY", R), ("LEASED", R), ("PARKED", R)];
            if s.delayed > 0 {
                columns.push(("DELAYED", R));
            }
            if s.paused > 0 {
                columns.push(("PAUSED", R));
            }
            if s.held > 0 {
                columns.push(("HELD", R));
            }
            if s.retrying > 0 {
                columns.push(("RETRYING", R));
            }
            let mut p = Table::new(&columns);
            for level in &s.by_priority {
                let mut row = vec![
                    level.priority.to_string(),
                    level.groups.to_string(),
                    level.ready.to_string(),
                    level.leased.to_string(),
                    level.parked.to_string(),
                ];
                if s.delayed > 0 {
                    row.push(level.delayed.to_string());
                }
                if s.paused > 0 {
                    row.push(level.paused.to_string());
                }
                if s.held > 0 {
                    row.push(level.held.to_string());
                }
                if s.retrying > 0 {
                    row.push(level.retrying.to_string());
                }
                p.row(row);
            }
            text.push('\n');
            text.push_str(&p.render());
        }
        text
    }

    /// Its age when its writer stamped the publish time; else which message it is, and why
    /// its age is not known.
    fn oldest_ready(&self, s: &Stats) -> String {
        match (s.oldest_ready_age, s.oldest_ready_seq) {
            (Some(age), _) => format!("{} old", time::seconds(age)),
            (None, Some(seq)) if self.lacks(".enqueued_at") => {
                format!("seq {seq}, age unknown: this queue has no publish times (no enqueued_at column)")
            }
            (None, Some(seq)) => {
                format!("seq {seq}, age unknown: its writer stamped no publish time (harel's Python transports)")
            }
            (None, None) => "- (no group is ready)".to_owned(),
        }
    }

    pub fn groups_json<'p>(&self, page: &'p Page<GroupInfo>) -> Listed<'p> {
        let groups = page.items.iter().map(|g| self.group_json(g)).collect();
        Listed { groups, next: page.next.as_deref() }
    }

    pub fn peek_json<'p>(&self, group: &'p str, page: &'p Page<MessageInfo>) -> Peeked<'p> {
        let messages = page.items.iter().map(|m| self.message_json(m)).collect();
        Peeked { group_id: group, messages, next: page.next.as_deref() }
    }

    fn group_json<'g>(&self, g: &'g GroupInfo) -> GroupDoc<'g> {
        GroupDoc {
            group_id: &g.group_id,
            state: g.state.name(),
            depth: g.depth,
            head_seq: g.head_seq,
            head_age: g.head_age,
            holder: g.holder.as_deref(),
            lock_expiry: g.lock_expiry,
            priority: g.priority,
            routing_key: g.routing_key.as_deref(),
            head_attempts: self.attempts(g.head_attempts),
            shard: g.shard,
        }
    }

    fn message_json<'m>(&self, m: &'m MessageInfo) -> MessageDoc<'m> {
        MessageDoc {
            seq: m.seq,
            event: &m.event,
            attempts: self.attempts(m.attempts),
            locked_by: m.locked_by.as_deref(),
            lock_expiry: m.lock_expiry,
            published_at: m.published_at,
            headers: m.headers.pairs(),
            retry_delay: m.retry_delay,
        }
    }
}

#[derive(Serialize)]
struct GroupDoc<'a> {
    group_id: &'a str,
    state: &'static str,
    depth: u64,
    head_seq: i64,
    head_age: Option<f64>,
    holder: Option<&'a str>,
    lock_expiry: Option<f64>,
    priority: i32,
    routing_key: Option<&'a str>,
    head_attempts: Option<i64>,
    shard: usize,
}

#[derive(Serialize)]
struct MessageDoc<'a> {
    seq: i64,
    event: &'a str,
    attempts: Option<i64>,
    locked_by: Option<&'a str>,
    lock_expiry: Option<f64>,
    published_at: Option<f64>,
    /// `[[name, value], ...]`, in the order published (`[]`: none).
    headers: &'a [(String, String)],
    /// The backoff, in seconds, its last claim drew under a retry policy: what its nack
    /// without a delay, or its lease's lapse, waits. null: no policy, or never claimed.
    retry_delay: Option<f64>,
}

#[derive(Serialize)]
struct DeadDoc<'a> {
    seq: i64,
    group_id: &'a str,
    event: &'a str,
    attempts: i64,
    last_worker: Option<&'a str>,
    reason: &'a str,
    dead_at: f64,
    shard: usize,
    /// As a message's: `[[name, value], ...]`, kept from its publish.
    headers: &'a [(String, String)],
}

pub fn dead_letters_json(page: &Page<DeadLetter>) -> DeadListed<'_> {
    DeadListed { dead_letters: page.items.iter().map(dead_json).collect(), next: page.next.as_deref() }
}

fn dead_json(d: &DeadLetter) -> DeadDoc<'_> {
    DeadDoc {
        seq: d.seq,
        group_id: &d.group_id,
        event: &d.event,
        attempts: d.attempts,
        last_worker: d.last_worker.as_deref(),
        reason: &d.reason,
        dead_at: d.dead_at,
        shard: d.shard,
        headers: d.headers.pairs(),
    }
}

/// An archived message: as a dead letter, with the worker that acked it and when it was
/// published (null: its writer stamped no time), claimed (null: unknown) and acked.
#[derive(Serialize)]
struct ArchivedDoc<'a> {
    seq: i64,
    group_id: &'a str,
    event: &'a str,
    attempts: i64,
    worker_id: &'a str,
    published_at: Option<f64>,
    claimed_at: Option<f64>,
    acked_at: f64,
    shard: usize,
    headers: &'a [(String, String)],
}

pub fn archive_json(page: &Page<Archived>) -> ArchiveListed<'_> {
    ArchiveListed { archived: page.items.iter().map(archived_json).collect(), next: page.next.as_deref() }
}

fn archived_json(a: &Archived) -> ArchivedDoc<'_> {
    ArchivedDoc {
        seq: a.seq,
        group_id: &a.group_id,
        event: &a.event,
        attempts: a.attempts,
        worker_id: &a.worker_id,
        published_at: a.published_at,
        claimed_at: a.claimed_at,
        acked_at: a.acked_at,
        shard: a.shard,
        headers: a.headers.pairs(),
    }
}

fn dash() -> String {
    "-".to_owned()
}

/// A message's retry backoff for a cell: "retry in 6.0 s".
fn retry_cell(seconds: f64) -> String {
    format!("retry in {seconds:.1} s")
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        one.to_owned()
    } else {
        format!("{one}s")
    }
}

/// Text for one cell: control characters (a newline, a NUL, an escape sequence) shown
/// escaped so a value cannot break the table or the terminal; "" for the empty string.
fn cell(text: &str) -> String {
    if text.is_empty() {
        return "\"\"".to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `cell`, cut to `max` characters with "…" at the end when longer.
fn cut(text: &str, max: usize) -> String {
    shorten(cell(text), max)
}

/// `shown` cut to `max` characters with "…" at the end when longer.
fn shorten(shown: String, max: usize) -> String {
    if shown.chars().count() <= max {
        return shown;
    }
    let mut kept: String = shown.chars().take(max - 1).collect();
    kept.push('…');
    kept
}

/// A message's headers for one cell, cut to `max` characters: `name=value` pairs in order,
/// a space apart ("-" for none). A name is visible ASCII without '=' or space, so it is
/// shown as it is; a value that is empty or holds a space, a '"', a '\' or a control
/// character is quoted, its '"' and '\' escaped with a '\' and its control characters as
/// every cell escapes them, so the list reads back one way and cannot break the table.
fn headers_cell(headers: &Headers, max: usize) -> String {
    if headers.is_empty() {
        return dash();
    }
    let mut out = String::new();
    for (i, (name, value)) in headers.pairs().iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&cell(name));
        out.push('=');
        let quoted = value.is_empty() || value.chars().any(|c| c == ' ' || c == '"' || c == '\\' || c.is_control());
        if !quoted {
            out.push_str(value);
            continue;
        }
        out.push('"');
        for c in value.chars() {
            match c {
                '"' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => out.extend(c.escape_default()),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    shorten(out, max)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}
const L: Align = Align::Left;
const R: Align = Align::Right;

/// Columns padded to their widest cell, two spaces apart, no trailing spaces.
struct Table {
    header: Option<Vec<String>>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            header: Some(columns.iter().map(|(name, _)| (*name).to_owned()).collect()),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    fn bare(columns: &[(&str, Align)]) -> Table {
        Table { header: None, ..Table::new(columns) }
    }

    fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.align.len());
        self.rows.push(cells);
    }

    fn render(&self) -> String {
        let lines: Vec<&Vec<String>> = self.header.iter().chain(&self.rows).collect();
        let mut widths = vec![0; self.align.len()];
        for line in &lines {
            for (w, c) in widths.iter_mut().zip(line.iter()) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        for line in lines {
            let mut text = String::new();
            for (i, c) in line.iter().enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                let pad = " ".repeat(widths[i] - c.chars().count());
                match self.align[i] {
                    Align::Left => {
                        text.push_str(c);
                        text.push_str(&pad);
                    }
                    Align::Right => {
                        text.push_str(&pad);
                        text.push_str(c);
                    }
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_cells_are_escaped() {
        let mut t = Table::new(&[("NAME", L), ("N", R)]);
        t.row(vec![cell("a\nb"), "7".to_owned()]);
        t.row(vec![cell(""), "12".to_owned()]);
        assert_eq!(t.render(), "NAME   N\na\\nb   7\n\"\"    12\n");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
    }

    #[test]
    fn headers_are_name_value_pairs_quoted_when_they_must_be() {
        let h = Headers::new(&[
            ("traceparent", "00-ab-01"),
            ("empty", ""),
            ("note", "a b"),
            ("q", "say \"hi\" \\o/"),
            ("ctl", "x\n\u{1b}[31m\t"),
            ("utf", "caf\u{e9}=1,2"),
            ("traceparent", "again"),
        ])
        .unwrap();
        assert_eq!(
            headers_cell(&h, 1000),
            r#"traceparent=00-ab-01 empty="" note="a b" q="say \"hi\" \\o/" ctl="x\n\u{1b}[31m\t" utf=café=1,2 traceparent=again"#
        );
        assert_eq!(headers_cell(&Headers::none(), 10), "-");
        assert_eq!(headers_cell(&h, 8), "tracepa…");
    }

    #[test]
    fn a_retry_backoff_reads_in_seconds() {
        assert_eq!(retry_cell(6.0), "retry in 6.0 s");
        assert_eq!(retry_cell(0.004), "retry in 0.0 s");
        assert_eq!(retry_cell(3600.0), "retry in 3600.0 s");
    }
}
