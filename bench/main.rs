//! The benchmark of issue #6 (`make bench`): a release-built harness, not a test. It
//! prints a table and, last, one line of JSON with every figure.
//!
//! On fresh local files (each measurement gets its own copy of a state built in bulk,
//! see bench/states.rs), single process unless said:
//! 1. publish rate (N messages over G groups; and the same messages through
//!    `publish_many`, 100 per call, and from 8 threads sharing one transport), drain rate
//!    (one worker until empty: claim then ack as two calls; and fused, claim once then
//!    `ack_and_claim` per message),
//!    claim latency at 100 / 10,000 / 100,000 ready groups;
//! 2. the states that break the SPEC's claim: 10,000 / 100,000 groups leased or parked
//!    plus one ready group served last; an idle claim at 100,000 leased; one group
//!    100,000 deep; min_priority=3 behind 10,000 lower groups; one routing key among
//!    10,000 groups with other keys;
//! 3. 1, 2 and 4 worker processes draining one file (aggregate messages acked/s; each
//!    worker drains as ours would: claim once, then `ack_and_claim`);
//! 4. side by side: the raw SPEC loop (bench/raw.rs; "the SPEC" is harel's reference
//!    design of this queue: the statements harel's LibsqlTransport runs, on its tables)
//!    at the same synchronous setting, and harel 0.9.0's Python LibsqlTransport and SqliteTransport at their own defaults
//!    (bench/peers.py, run with the venv's python). Neither has a fused ack+claim, a
//!    batch publish nor shared commits: the raw loop's `ack_and_claim` is an ack then a
//!    claim (two transactions), its `publish_many` one publish per message, and its
//!    threads' publishes one at a time on its connection; the Python peers' fused-drain,
//!    batched and threaded publish figures are their drain and publish figures (the same
//!    calls), not measured twice.
//!
//! 5. on a libSQL server (bench/server.rs), when sqld is found (`HAREL_SQLD` or PATH):
//!    publish and an 8-worker drain through a local file, a remote URL and embedded
//!    replicas.
//!
//! 7. `harel-transport serve` polled beside 8 worker processes (bench/serve.rs): the
//!    workers' rate with and without it.
//! 8. watching for work (bench/watch.rs): another process's publish to the lease in hand
//!    through a watch's descriptor vs the blocking wait; 1,000 idle watches' CPU.
//! 9. producers' options (bench/producers.rs): a keyed publish vs a plain one; a claim
//!    beside 10,000 delayed messages vs alone; an INSERT and a publish in one transaction
//!    vs separately.
//! 10. the server's own limit (bench/server_limit.rs, issue #28), when sqld is found: on one
//!     fresh sqld, 1, 2, 4, 8 and 16 workers (threads, each with its own connection or
//!     transport): sqld's own rate of one-request write transactions (raw Hrana, no library)
//!     beside ours' claim + ack, `ack_and_claim` and `claim_many` + `ack_and_claim_many` of
//!     10, as a ratio in transactions (target: >= 0.8 at every worker count).
//!
//! Ours is measured at synchronous FULL (our default: a committed publish survives
//! power loss) and NORMAL. A claim latency is the median over many claims, each
//! followed by an untimed nack(0) that restores the state.
//!
//! Usage: bench [--python PATH] [--peers bench/peers.py] [--cli PATH] [--no-peers] [--no-procs] [--no-server]
//!              [--only ID,ID...]      (case ids: "publish", "publish_many", "publish_threads",
//!                                      "publish_new_groups", "drain", "drain_fused", "procs",
//!                                      "server", "looks", "serve", "watch", "producers", "server_limit",
//!                                      "shards",
//!                                      or a claim case's id)
//!        bench worker ...             (internal: one worker process of part 3)
//!        bench publisher ...          (internal: the publishing process of part 8)
//!        bench profile <ours|raw> <full|normal> <case id> [seconds]
//!                                     (one queue, one case, for perf/strace; prints its figure)

mod backlog;
mod looks;
mod measure;
mod ours;
mod peers;
mod procs;
mod producers;
mod raw;
mod report;
mod serve;
mod server;
mod server_limit;
mod shards;
mod states;
mod watch;

use std::path::Path;
use std::time::{Duration, Instant};

use harel_transport::{system_clock, Synchronous};
use harel_transport_testkit::sqld;
use serde_json::{json, Value};

use measure::{interleave, ClaimJob, DrainJob, Figure, Job, PublishJob, Queue};
use ours::Ours;
use raw::Raw;
use report::Row;
use states::{fresh_copy, remove_db, ClaimCase, State, Style, Templates};

/// Part 1's publish: N messages round-robin over G groups, into a new file.
const PUBLISH: (usize, usize) = (10_000, 1_000);
/// Part 1's batched publish: the same messages as PUBLISH, `publish_many` this many at a time.
const PUBLISH_BATCH: usize = 100;
/// Threads publishing through one transport in the publish_threads row.
const PUBLISH_THREADS: usize = 8;
/// The same with every publish creating its group: where the SPEC's second autocommit
/// statement (INSERT OR IGNORE into groups) writes too, so costs a commit of its own.
const PUBLISH_NEW_GROUPS: (usize, usize) = (10_000, 10_000);
/// One publish row of part 1.
struct PublishCase {
    id: &'static str,
    label: &'static str,
    /// (messages, groups)
    work: (usize, usize),
    /// Messages per call (more than 1: `publish_many`).
    batch: usize,
    threads: usize,
}

const PUBLISH_CASES: [PublishCase; 4] = [
    PublishCase {
        id: "publish",
        label: "publish (10,000 msgs over 1,000 groups)",
        work: PUBLISH,
        batch: 1,
        threads: 1,
    },
    PublishCase {
        id: "publish_many",
        label: "publish_many, batches of 100 (peers: publish)",
        work: PUBLISH,
        batch: PUBLISH_BATCH,
        threads: 1,
    },
    PublishCase {
        id: "publish_threads",
        label: "publish from 8 threads, one transport",
        work: PUBLISH,
        batch: 1,
        threads: PUBLISH_THREADS,
    },
    PublishCase {
        id: "publish_new_groups",
        label: "publish (10,000 msgs, each a new group)",
        work: PUBLISH_NEW_GROUPS,
        batch: 1,
        threads: 1,
    },
];
/// `bench profile`'s publish cases publish this many messages (as many as time allows).
const PROFILE_MESSAGES: usize = 1_000_000;
/// Part 1's drain: a backlog of N messages over G groups, drained by one worker.
const DRAIN: State = State::Backlog { messages: 10_000, groups: 1_000 };
/// A rate stops after this long even if unfinished (the rate is over what was done).
const RATE_CAP: Duration = Duration::from_secs(3);
/// A claim latency is measured over at most this long (at least 3 claims) ...
const CLAIM_BUDGET: Duration = Duration::from_millis(800);
/// ... and at most this many claims.
const MAX_CLAIMS: usize = 2_000;
/// Part 3: the backlog the processes drain, and how long each run lasts.
const PROCS_BACKLOG: State = State::Backlog { messages: 100_000, groups: 2_000 };
const PROCS_SECS: f64 = 2.0;
const PROCS: [usize; 3] = [1, 2, 4];
/// The longer run of 4 processes at FULL, and the open races.
const SUSTAINED_SECS: f64 = 7.0;
const OPEN_RACES: usize = 5;

pub const SYNCS: [Synchronous; 2] = [Synchronous::Full, Synchronous::Normal];

pub fn sync_name(s: Synchronous) -> &'static str {
    match s {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    }
}

struct Config {
    python: String,
    peers_script: String,
    /// The ops CLI, for part 7.
    cli: String,
    peers: bool,
    procs: bool,
    server: bool,
    only: Option<Vec<String>>,
}

impl Config {
    fn from_args(args: &[String]) -> Config {
        let mut c = Config {
            python: ".venv/bin/python".into(),
            peers_script: "bench/peers.py".into(),
            cli: "target/release/harel-transport".into(),
            peers: true,
            procs: true,
            server: true,
            only: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--python" => c.python = it.next().cloned().unwrap_or_default(),
                "--peers" => c.peers_script = it.next().cloned().unwrap_or_default(),
                "--cli" => c.cli = it.next().cloned().unwrap_or_default(),
                "--no-peers" => c.peers = false,
                "--no-procs" => c.procs = false,
                "--no-server" => c.server = false,
                "--only" => c.only = it.next().map(|s| s.split(',').map(str::to_owned).collect()),
                other => {
                    eprintln!("bench: unknown argument {other:?}");
                    std::process::exit(2);
                }
            }
        }
        c
    }

    fn wants(&self, id: &str) -> bool {
        self.only.as_ref().is_none_or(|ids| ids.iter().any(|i| i == id))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("worker") {
        std::process::exit(procs::worker_main(&args[2..]));
    }
    if args.get(1).map(String::as_str) == Some("publisher") {
        std::process::exit(watch::publisher_main(&args[2..]));
    }
    if args.get(1).map(String::as_str) == Some("profile") {
        std::process::exit(profile(&args[2..]));
    }
    let config = Config::from_args(&args[1..]);
    if let Err(e) = run(&config) {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}

fn progress(what: &str) {
    eprintln!("[bench] {what}");
}

fn loadavg() -> Value {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .map_or(Value::Null, Value::from)
}

fn run(config: &Config) -> Result<(), String> {
    let started = Instant::now();
    let load_start = loadavg();
    let tmp = tempfile::Builder::new().prefix("harel-bench-").tempdir().map_err(|e| e.to_string())?;
    let work = tmp.path();
    let mut templates = Templates::new(work, system_clock());
    let cases: Vec<ClaimCase> = states::claim_cases().into_iter().filter(|c| config.wants(c.id)).collect();

    // Parts 1, 2 and 4 (raw loop): per case, ours and the raw loop at both settings,
    // each on its own fresh file, taking turns (see measure::interleave).
    let mut rows = Vec::new();
    for &PublishCase { id, label, work: (n, groups), batch, threads } in &PUBLISH_CASES {
        if !config.wants(id) {
            continue;
        }
        progress(id);
        let mut row = Row::new(id, label, 1);
        if batch > 1 {
            row.note = Some(format!(
                "the publish row's messages; ours publishes them with publish_many, {batch} \
                 per call (one transaction, one commit per batch). The raw SPEC loop has no \
                 batch: its figure is one publish per message, as in the publish row. The \
                 Python peers' figures are their publish figures, reused, not measured twice."
            ));
        }
        if threads > 1 {
            row.note = Some(format!(
                "the publish row's messages, published by {threads} threads sharing one \
                 transport: publishes that arrive while one commits share the next commit. \
                 The raw SPEC loop has one connection, one publish at a time (threads \
                 sharing it could do no better). The Python peers' figures are their \
                 publish figures, reused, not measured twice."
            ));
        }
        let figures = side_by_side(
            work,
            None,
            &mut templates,
            |imp, sync, path| {
                Ok(Box::new(PublishJob::new(new_file(imp, sync, path)?, n, groups, batch, threads)) as Box<dyn Job>)
            },
            RATE_CAP,
            false,
        );
        row.set(figures);
        rows.push(row);
    }
    for (id, label, fused) in [
        ("drain", "drain, 1 worker (10,000 over 1,000)", false),
        ("drain_fused", "drain, 1 worker, ack_and_claim (peers: ack then claim)", true),
    ] {
        if !config.wants(id) {
            continue;
        }
        progress(id);
        let mut row = Row::new(id, label, 1);
        if fused {
            row.note = Some(
                "the same backlog; ours claims once, then ack_and_claim (ack + next claim in \
                 one transaction) until empty. The raw SPEC loop has no fused op: its \
                 ack_and_claim is an ack then a claim (two transactions). The Python peers' \
                 figures are their drain figures (claim, ack), reused, not measured twice."
                    .into(),
            );
        }
        let figures = side_by_side(
            work,
            Some(DRAIN),
            &mut templates,
            |imp, sync, path| Ok(Box::new(DrainJob::new(open(imp, sync, path)?, fused)) as Box<dyn Job>),
            RATE_CAP,
            false,
        );
        row.set(figures);
        rows.push(row);
    }
    for c in &cases {
        progress(&format!("{} ({})", c.id, c.label));
        let mut row = Row::new(c.id, c.label, c.section);
        let mut figures = side_by_side(
            work,
            Some(c.state),
            &mut templates,
            |imp, sync, path| {
                let q = open(imp, sync, path)?;
                Ok(Box::new(ClaimJob::new(q, c.min_priority, c.routing_keys, c.expect.clone(), MAX_CLAIMS))
                    as Box<dyn Job>)
            },
            CLAIM_BUDGET,
            c.section == 2,
        );
        if c.section == 2 {
            let base = figures.split_off(4);
            row.base = Some([base[0].clone(), base[1].clone()]);
        }
        row.set(figures);
        rows.push(row);
    }

    // Part 4: harel's Python transports.
    let mut peer_settings = Value::Null;
    let mut peer_error = None;
    if config.peers && config.only.is_none() {
        progress("python peers (harel 0.9.0 LibsqlTransport, SqliteTransport)");
        let plan = peers::Plan {
            python: &config.python,
            script: &config.peers_script,
            work,
            publish: vec![("publish", PUBLISH), ("publish_new_groups", PUBLISH_NEW_GROUPS)],
            drain: DRAIN,
            rate_cap: RATE_CAP,
            claim_budget: CLAIM_BUDGET,
            max_iters: 500,
        };
        match peers::run(&plan, &cases, &mut templates) {
            Ok(results) => {
                for (p, (_, figures)) in results.figures.into_iter().enumerate() {
                    for (id, f) in figures {
                        // The peers have no fused ack+claim, no batch publish and no
                        // shared commits: their drain and publish figures stand for
                        // those rows too.
                        for (from, to) in
                            [("drain", "drain_fused"), ("publish", "publish_many"), ("publish", "publish_threads")]
                        {
                            if id == from {
                                if let Some(row) = rows.iter_mut().find(|r| r.id == to) {
                                    row.py[p] = f.clone();
                                }
                            }
                        }
                        if let Some(row) = rows.iter_mut().find(|r| r.id == id) {
                            row.py[p] = f;
                        }
                    }
                }
                peer_settings = results.settings;
                let _ = results.raw;
            }
            Err(e) => {
                progress(&format!("python peers failed: {e}"));
                peer_error = Some(e);
            }
        }
    }
    if let Some(e) = &peer_error {
        for row in rows.iter_mut() {
            row.py = [Figure::Failed(e.clone()), Figure::Failed(e.clone())];
        }
    }

    // Part 3: processes. Each run drains a fresh copy that has been opened once before
    // (so it is already in WAL mode, as a deployed queue is: see the open race below).
    // Two passes in the order 1, 2, 4, 4, 2, 1 (a drift in the shared machine's load then
    // weighs on every count alike); each count's figures are summed. Then one longer run
    // of 4 processes at our default FULL, to see whether anyone meets the busy timeout.
    let mut procs = Vec::new();
    let mut open_race = Value::Null;
    let mut sustained = Value::Null;
    if config.procs && config.wants("procs") {
        let template = templates.get(Style::Ours, PROCS_BACKLOG)?;
        let path = work.join("procs.db");
        let fresh_wal = |path: &Path| -> Result<(), String> {
            fresh_copy(&template, path)?;
            Ours::open(path.to_str().unwrap_or_default(), Synchronous::Full).map(drop)
        };
        for &sync in &SYNCS {
            let mut runs: Vec<(usize, Value)> = Vec::new();
            for k in PROCS.iter().chain(PROCS.iter().rev()) {
                progress(&format!("{k} worker process(es), synchronous {}", sync_name(sync)));
                let r = fresh_wal(&path)
                    .and_then(|()| procs::run(path.to_str().unwrap_or_default(), sync, *k, PROCS_SECS))
                    .unwrap_or_else(|e| json!({"workers": k, "error": e}));
                remove_db(&path);
                runs.push((*k, r));
            }
            for k in PROCS {
                procs.push((sync, k, procs::combine(k, runs.iter().filter(|(rk, _)| *rk == k).map(|(_, v)| v))));
            }
        }
        progress(&format!("4 worker processes for {SUSTAINED_SECS} s, synchronous FULL"));
        sustained = fresh_wal(&path)
            .and_then(|()| procs::run(path.to_str().unwrap_or_default(), Synchronous::Full, 4, SUSTAINED_SECS))
            .unwrap_or_else(|e| json!({"workers": 4, "error": e}));
        remove_db(&path);
        // The open race: 4 processes opening at once a file still in journal_mode DELETE
        // (a new queue file, or one harel's LibsqlTransport made), several times.
        progress("4 processes opening one DELETE-mode file at once");
        let (mut busy, mut other) = (0, 0);
        for _ in 0..OPEN_RACES {
            if let Ok((b, o)) =
                fresh_copy(&template, &path).and_then(|()| procs::open_race(&path, Synchronous::Full, 4))
            {
                busy += b;
                other += o;
            }
            remove_db(&path);
        }
        open_race = json!({"opens": 4 * OPEN_RACES, "busy": busy, "other_errors": other});
    }

    // Part 6: a look inside.
    let looks = if config.wants("looks") {
        progress("a look inside (100,000 groups, 1,000,000 messages)");
        looks::run(work, &mut templates).unwrap_or_else(|e| json!({"error": e}))
    } else {
        Value::Null
    };

    // Part 7: serve polled beside a fleet.
    let serve = if config.wants("serve") {
        progress("serve polled beside 8 worker processes");
        serve::run(Path::new(&config.cli), work, &mut templates).unwrap_or_else(|e| {
            println!("\n7. serve beside worker processes: FAILED: {e}");
            json!({"error": e})
        })
    } else {
        Value::Null
    };

    // Part 8: watching for work.
    let watch = if config.wants("watch") {
        progress("watching for work: wake latency, 1,000 idle watches");
        watch::run(work).unwrap_or_else(|e| {
            println!("\n8. Watching for work: FAILED: {e}");
            json!({"error": e})
        })
    } else {
        Value::Null
    };

    // Part 9: producers' options.
    let producers = if config.wants("producers") {
        progress("producers: keyed publishes, claims beside delayed messages");
        producers::run(work).unwrap_or_else(|e| {
            println!("\n9. Producers' options: FAILED: {e}");
            json!({"error": e})
        })
    } else {
        Value::Null
    };

    // Part 5: on a libSQL server.
    let server = match sqld::binary() {
        Ok(binary) if config.server && config.wants("server") => server::run(&binary, work),
        Ok(_) => Value::Null,
        Err(reason) => {
            progress(&format!("server part skipped: {reason}"));
            json!({"skipped": reason})
        }
    };

    // Part 10: the server's own limit, beside ours.
    let server_limit = match sqld::binary() {
        Ok(binary) if config.server && config.wants("server_limit") => server_limit::run(&binary),
        Ok(_) => Value::Null,
        Err(reason) if config.server && config.wants("server_limit") => {
            progress(&format!("server limit part skipped: {reason}"));
            println!("\n10. The server's own limit: skipped: {reason}");
            json!({"skipped": reason})
        }
        Err(_) => Value::Null,
    };

    // Part 11: a queue sharded over several databases, on sqld and on local files.
    let shards = match config.wants("shards") {
        true => shards::run(sqld::binary().ok().filter(|_| config.server).as_deref(), work),
        false => Value::Null,
    };

    let meta = json!({
        "machine": {"cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                    "loadavg_1min_start": load_start, "loadavg_1min_end": loadavg(),
                    "note": "2 cores shared with other work while measured"},
        "ours_default_synchronous": "FULL",
        "config": {
            "publish": {"messages": PUBLISH.0, "groups": PUBLISH.1},
            "publish_many": {"messages": PUBLISH.0, "groups": PUBLISH.1, "batch": PUBLISH_BATCH},
            "publish_threads": {"messages": PUBLISH.0, "groups": PUBLISH.1, "threads": PUBLISH_THREADS},
            "publish_new_groups": {"messages": PUBLISH_NEW_GROUPS.0, "groups": PUBLISH_NEW_GROUPS.1},
            "drain": {"messages": 10_000, "groups": 1_000},
            "rate_cap_s": RATE_CAP.as_secs_f64(),
            "claim_budget_s": CLAIM_BUDGET.as_secs_f64(), "max_claims": MAX_CLAIMS, "max_claims_python": 500,
            "procs": {"messages": 100_000, "groups": 2_000, "secs": PROCS_SECS},
            "hold_s": states::HOLD,
        },
        "peer_settings": peer_settings,
        "server": server,
        "server_limit": server_limit,
        "shards": shards,
        "looks": looks,
        "serve": serve,
        "watch": watch,
        "producers": producers,
        "template_build_s": measure::round(templates.build_secs, 2),
        "total_s": measure::round(started.elapsed().as_secs_f64(), 1),
    });
    report::print(&rows, &procs, &sustained, &open_race, meta);
    Ok(())
}

/// One queue doing one case alone, for a profiler or strace to watch.
fn profile(args: &[String]) -> i32 {
    let [imp, sync, id, rest @ ..] = args else {
        eprintln!("usage: bench profile <ours|raw> <full|normal> <case id> [seconds]");
        return 2;
    };
    let imp = match imp.as_str() {
        "raw" => Impl::Raw,
        _ => Impl::Ours,
    };
    let sync = if sync == "normal" { Synchronous::Normal } else { Synchronous::Full };
    let secs: f64 = rest.first().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let budget = Duration::from_secs_f64(secs);
    let tmp = tempfile::Builder::new().prefix("harel-bench-").tempdir().expect("a temp dir");
    let mut templates = Templates::new(tmp.path(), system_clock());
    let style = imp.style();
    let path = tmp.path().join("profile.db");
    let p = path.to_str().unwrap_or_default().to_owned();
    let publish = PUBLISH_CASES.iter().find(|c| c.id == id);
    let job: Result<Box<dyn Job>, String> = match (id.as_str(), publish) {
        (_, Some(&PublishCase { work: (n, groups), batch, threads, .. })) => {
            // The case's groups, or still one per message when each creates its group.
            let groups = if groups == n { PROFILE_MESSAGES } else { groups };
            new_file(imp, sync, &p)
                .map(|q| Box::new(PublishJob::new(q, PROFILE_MESSAGES, groups, batch, threads)) as Box<dyn Job>)
        }
        ("drain" | "drain_fused", None) => templates
            .get(style, PROCS_BACKLOG)
            .and_then(|t| fresh_copy(&t, &path))
            .and_then(|()| open(imp, sync, &p))
            .map(|q| Box::new(DrainJob::new(q, id == "drain_fused")) as Box<dyn Job>),
        (_, None) => match states::claim_cases().into_iter().find(|c| c.id == id) {
            None => Err(format!("no case {id}")),
            Some(c) => templates
                .get(style, c.state)
                .and_then(|t| fresh_copy(&t, &path))
                .and_then(|()| open(imp, sync, &p))
                .map(|q| {
                    Box::new(ClaimJob::new(q, c.min_priority, c.routing_keys, c.expect, usize::MAX)) as Box<dyn Job>
                }),
        },
    };
    eprintln!("[bench] profiling from here");
    let figure = &interleave(vec![job], budget)[0];
    println!("{}", figure.to_json());
    i32::from(matches!(figure, Figure::Failed(_)))
}

/// A queue on a new file (each creates its own schema).
fn new_file(imp: Impl, sync: Synchronous, path: &str) -> Result<Box<dyn Queue>, String> {
    Ok(match imp {
        Impl::Ours => Box::new(Ours::open(path, sync)?),
        Impl::Raw => Box::new(Raw::open(path, sync, true)?),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Impl {
    Ours,
    Raw,
}

impl Impl {
    /// The schema and stamping its template copies need.
    fn style(self) -> Style {
        match self {
            Impl::Ours => Style::Ours,
            Impl::Raw => Style::Spec,
        }
    }
}

/// The four queues of one case, in `Row::set`'s order.
const QUEUES: [(Impl, Synchronous); 4] = [
    (Impl::Ours, Synchronous::Full),
    (Impl::Ours, Synchronous::Normal),
    (Impl::Raw, Synchronous::Full),
    (Impl::Raw, Synchronous::Normal),
];

/// Opens a template copy: ours, or the raw loop (whose copy has the SPEC's schema).
fn open(imp: Impl, sync: Synchronous, path: &str) -> Result<Box<dyn Queue>, String> {
    Ok(match imp {
        Impl::Ours => Box::new(Ours::open(path, sync)?),
        Impl::Raw => Box::new(Raw::open(path, sync, false)?),
    })
}

/// One case for the four queues, each on its own fresh file: a copy of the state's
/// template in its schema style, or (no state) a new file. They take turns (see
/// measure::interleave). With `base`, two more take turns with them: ours at FULL and
/// NORMAL claiming among 100 ready groups, the reference part 2's target compares with,
/// measured at the same moments (figures 5 and 6).
fn side_by_side(
    work: &Path,
    state: Option<State>,
    templates: &mut Templates,
    job: impl Fn(Impl, Synchronous, &str) -> Result<Box<dyn Job>, String>,
    budget: Duration,
    base: bool,
) -> Vec<Figure> {
    let mut paths = Vec::new();
    let mut jobs = Vec::new();
    for (i, &(imp, sync)) in QUEUES.iter().enumerate() {
        let path = work.join(format!("run-{i}.db"));
        remove_db(&path);
        let ready = match state {
            Some(state) => templates.get(imp.style(), state).and_then(|t| fresh_copy(&t, &path)),
            None => Ok(()),
        };
        jobs.push(ready.and_then(|()| job(imp, sync, path.to_str().unwrap_or_default())));
        paths.push(path);
    }
    if base {
        for (i, sync) in SYNCS.into_iter().enumerate() {
            let path = work.join(format!("base-{i}.db"));
            let p = path.to_str().unwrap_or_default().to_owned();
            jobs.push(
                templates
                    .get(Style::Ours, State::Ready { groups: 100 })
                    .and_then(|t| fresh_copy(&t, &path))
                    .and_then(|()| Ours::open(&p, sync))
                    .map(|q| {
                        Box::new(ClaimJob::new(Box::new(q), 0, &[], states::Expect::Any, MAX_CLAIMS)) as Box<dyn Job>
                    }),
            );
            paths.push(path);
        }
    }
    let figures = interleave(jobs, budget);
    for p in &paths {
        remove_db(p);
    }
    figures
}
