//! Contention (issue #7): many processes on one file for a bounded time, each mixing
//! publish, claim, ack, nack and park at random, with the default options (busy timeout
//! 5 s, the system clock, synchronous FULL). Every process logs what it did with the
//! instants around each call (system time in nanoseconds: one clock for all processes on
//! the machine); the logs and the file at the end must show
//!
//! - no error at all, HAREL_ERR_BUSY included;
//! - no overlap in any group: from a claim's return to the start of its ack/nack (a window
//!   inside the real lease), no other claim of that group returns;
//! - per-group FIFO: a claim gets the group's oldest message; every older one had been
//!   acked before it; a nacked message is the next one its group gives out;
//! - a parked group is given out no sooner than its park's end;
//! - conservation: published = acked + remaining, each acked once, nothing unknown.
//!
//! The first test runs 8 of our processes; the second mixes in harel 0.9's Python
//! `SqliteTransport` workers (HAREL_PYTHON, as in tests/interop.rs) under the same checks.
//! HAREL_CONTENTION_SECONDS runs them longer than the default 3 s.

use harel_transport_testkit as common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::procs::{self, env, harel_python, nanos, Rng, Watched};
use common::{temp_db, this_test_binary, Raw};
use harel_transport::{Error, Options, Transport};

const GROUPS: u64 = 12;
/// How long the processes run: `default`, or HAREL_CONTENTION_SECONDS for a longer look.
fn run_time(default: Duration) -> Duration {
    let seconds = std::env::var("HAREL_CONTENTION_SECONDS").ok().and_then(|s| s.parse::<f64>().ok());
    seconds.map_or(default, Duration::from_secs_f64)
}
const VISIBILITY: f64 = 30.0;
const PARK: f64 = 0.02;

/// The two tests share the machine's two cores; run one at a time so each has them.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn event(id: &str, g: u64, n: u64) -> String {
    format!(r#"{{"id":"{id}","kind":"tick","data":{{"g":{g},"n":{n}}}}}"#)
}

fn id_of(event: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(event).expect("an event");
    v["id"].as_str().expect("id").to_owned()
}

/// A worker's mix of operations, the same in Rust and Python: out of 100, PUBLISH
/// publishes; the rest claim, and a claimed message is acked, nacked (back at once) or
/// parked (for PARK seconds) as ACK/NACK say (the rest of 100 parks).
const PUBLISH: u64 = 35;
const ACK: u64 = 78;
const NACK: u64 = 14;

/// One of our processes, by the environment: HAREL_TEST_DB, HAREL_TEST_ID, HAREL_TEST_START
/// (epoch ns to begin at), HAREL_TEST_RUN_NS (for how long), HAREL_TEST_LOG. Log lines:
///   P <id> <group> <t_before> <t_after>          a publish that returned OK
///   C <group> <seq> <id> <t_after>               a claim that returned a lease
///   A|N|K <group> <seq> <id> <t_before>          ack / nack / park that returned OK
///   E <kind> <message>                           any error
#[test]
#[ignore = "a worker process for the tests of this file; does nothing on its own"]
fn worker() {
    let _limit = common::time_limit();
    let Ok(path) = std::env::var("HAREL_TEST_DB") else {
        return;
    };
    let me = env("HAREL_TEST_ID");
    let start: u128 = env("HAREL_TEST_START").parse().unwrap();
    let run: u128 = env("HAREL_TEST_RUN_NS").parse().unwrap();
    let t = Transport::open(&path, &Options::new()).expect("open with the default options");
    let mut rng = Rng::new(me.bytes().map(u64::from).sum::<u64>() + 99);
    let mut log = Vec::new();
    let error = |log: &mut Vec<String>, e: Error| {
        let kind = match e {
            Error::Busy(_) => "Busy",
            Error::Database(_) => "Database",
            Error::LeaseLost(_) => "LeaseLost",
            Error::Argument(_) => "Argument",
            Error::Connect(_) => "Connect",
            _ => "Other",
        };
        log.push(format!("E {kind} {}", e.message().replace('\n', " ")));
    };
    while nanos() < start {
        std::thread::sleep(Duration::from_millis(1));
    }
    let end = start + run;
    let (mut n, mut claims) = (0, 0);
    while nanos() < end {
        if rng.below(100) < PUBLISH {
            let g = rng.below(GROUPS);
            let id = format!("{me}-{n}");
            n += 1;
            let before = nanos();
            match t.publish(&format!("g{g}"), &event(&id, g, n), 0, None) {
                Ok(()) => log.push(format!("P {id} g{g} {before} {}", nanos())),
                Err(e) => error(&mut log, e),
            }
            continue;
        }
        let lease = match t.claim(&me, VISIBILITY, 0, &[]) {
            Ok(Some(lease)) => lease,
            Ok(None) => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Err(e) => {
                error(&mut log, e);
                continue;
            }
        };
        let id = id_of(&lease.event);
        log.push(format!("C {} {} {id} {}", lease.group_id, lease.seq, nanos()));
        std::thread::sleep(Duration::from_micros(rng.below(400))); // handling it
                                                                   // Each worker's first claims nack and park, so both happen however slow the machine.
        claims += 1;
        let what = match claims {
            1 => ACK,
            2 => ACK + NACK,
            _ => rng.below(100),
        };
        let before = nanos();
        let (tag, result) = if what < ACK {
            ("A", t.ack(&lease))
        } else if what < ACK + NACK {
            ("N", t.nack(&lease, 0.0))
        } else {
            ("K", t.nack(&lease, PARK))
        };
        match result {
            Ok(()) => log.push(format!("{tag} {} {} {id} {before}", lease.group_id, lease.seq)),
            Err(e) => error(&mut log, e),
        }
    }
    std::fs::write(env("HAREL_TEST_LOG"), log.join("\n") + "\n").unwrap();
}

/// harel 0.9's SqliteTransport as a worker of the same mix, logging the same lines.
const PYTHON_WORKER: &str = r#"
import sqlite3, sys, time, random, json
from harel.engine.transport import SqliteTransport, Lease
from harel.spec.states import Event

path, me, start, run_ns, groups, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
PUBLISH, ACK, NACK, PARK, VISIBILITY = int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9]), float(sys.argv[10]), float(sys.argv[11])
t = SqliteTransport(path)
rng = random.Random(me)
log = []
def error(e):
    kind = "Busy" if "locked" in str(e) or "busy" in str(e) else type(e).__name__
    log.append("E %s %s" % (kind, str(e).replace("\n", " ")))
print("READY", flush=True)
while time.time_ns() < start:
    time.sleep(0.001)
n = claims = 0
while time.time_ns() < start + run_ns:
    if rng.randrange(100) < PUBLISH:
        g = rng.randrange(groups)
        eid = "%s-%d" % (me, n)
        n += 1
        before = time.time_ns()
        try:
            t.publish("g%d" % g, Event(id=eid, kind="tick", data={"g": g, "n": n}), 0)
            log.append("P %s g%d %d %d" % (eid, g, before, time.time_ns()))
        except Exception as e:
            error(e)
        continue
    try:
        lease = t.claim(me, VISIBILITY, 0)
    except Exception as e:
        error(e)
        continue
    if lease is None:
        time.sleep(0.001)
        continue
    log.append("C %s %d %s %d" % (lease.group_id, lease.seq, lease.event.id, time.time_ns()))
    time.sleep(rng.randrange(400) / 1e6)
    claims += 1
    what = ACK if claims == 1 else ACK + NACK if claims == 2 else rng.randrange(100)
    before = time.time_ns()
    try:
        if what < ACK:
            tag = "A"; t.ack(lease)
        elif what < ACK + NACK:
            tag = "N"; t.nack(lease, 0.0)
        else:
            tag = "K"; t.nack(lease, PARK)
        log.append("%s %s %d %s %d" % (tag, lease.group_id, lease.seq, lease.event.id, before))
    except Exception as e:
        error(e)
t.close()
open(log_path, "w").write("\n".join(log) + "\n")
"#;

#[derive(Debug, Clone)]
struct Op {
    tag: char,
    group: String,
    seq: i64,
    id: String,
    at: u128,
    worker: String,
}

struct Outcome {
    per_worker: Vec<(String, usize)>,
    published: usize,
    acked: usize,
    remaining: usize,
    claims: usize,
    nacks: usize,
    parks: usize,
}

/// Seeds the queue, runs `rust` of our processes and `python` harel workers on it for
/// run_time(), then checks the logs and the file. Python workers need `python`.
fn run(rust: usize, python: Option<(&str, usize)>, default_run: Duration) -> Outcome {
    let run = run_time(default_run);
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (dir, path) = temp_db();
    let mut published: HashMap<String, (String, u128, u128)> = HashMap::new(); // id -> group, t0, t1
    {
        let t = Transport::open(&path, &Options::new()).unwrap();
        for n in 0..120u64 {
            let (id, g) = (format!("seed-{n}"), n % GROUPS);
            let before = nanos();
            t.publish(&format!("g{g}"), &event(&id, g, n), 0, None).unwrap();
            published.insert(id, (format!("g{g}"), before, nanos()));
        }
    }
    // Python takes a while to import harel: everyone starts together once it is ready.
    let lead = if python.is_some() { Duration::from_millis(3500) } else { Duration::from_millis(800) };
    let start = nanos() + lead.as_nanos();
    let mut children = Vec::new();
    let mut logs = Vec::new();
    for i in 0..rust {
        let log = dir.path().join(format!("r{i}.log"));
        let mut c = this_test_binary("worker");
        c.env("HAREL_TEST_DB", &path)
            .env("HAREL_TEST_ID", format!("r{i}"))
            .env("HAREL_TEST_START", start.to_string())
            .env("HAREL_TEST_RUN_NS", run.as_nanos().to_string())
            .env("HAREL_TEST_LOG", &log);
        children.push(Watched::spawn(c, &format!("worker r{i}")));
        logs.push((format!("r{i}"), log));
    }
    if let Some((python, n)) = python {
        for i in 0..n {
            let log = dir.path().join(format!("y{i}.log"));
            let mut c = Command::new(python);
            c.arg("-c").arg(PYTHON_WORKER).arg(&path).arg(format!("y{i}")).arg(start.to_string());
            c.arg(run.as_nanos().to_string()).arg(GROUPS.to_string()).arg(&log);
            c.args([PUBLISH, ACK, NACK].map(|v| v.to_string())).arg(PARK.to_string()).arg(VISIBILITY.to_string());
            children.push(Watched::spawn(c, &format!("python worker y{i}")));
            logs.push((format!("y{i}"), log));
        }
    }
    for c in children {
        c.expect_success();
    }

    // Read the logs.
    let mut ops: Vec<Op> = Vec::new();
    let mut errors = Vec::new();
    let mut per_worker = Vec::new();
    for (worker, log) in &logs {
        let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{worker}'s log: {e}"));
        per_worker.push((worker.clone(), text.lines().filter(|l| !l.is_empty()).count()));
        for line in text.lines().filter(|l| !l.is_empty()) {
            let f: Vec<&str> = line.splitn(3, ' ').collect();
            match f[0] {
                "E" => errors.push(format!("{worker}: {line}")),
                "P" => {
                    let f: Vec<&str> = line.split(' ').collect();
                    let old = published
                        .insert(f[1].to_owned(), (f[2].to_owned(), f[3].parse().unwrap(), f[4].parse().unwrap()));
                    assert!(old.is_none(), "{worker}: id {} published twice", f[1]);
                }
                tag => {
                    let f: Vec<&str> = line.split(' ').collect();
                    ops.push(Op {
                        tag: tag.chars().next().unwrap(),
                        group: f[1].to_owned(),
                        seq: f[2].parse().unwrap(),
                        id: f[3].to_owned(),
                        at: f[4].parse().unwrap(),
                        worker: worker.clone(),
                    });
                }
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} errors (HAREL_ERR_BUSY or other), first ones:\n{}",
        errors.len(),
        errors[..errors.len().min(10)].join("\n")
    );

    // What the file holds at the end: nothing in flight, each remaining message once.
    let raw = Raw::open(&path);
    let remaining: Vec<(i64, String, String, String)> = raw
        .rows("SELECT seq, group_id, event, locked_by FROM harel_transport_messages ORDER BY seq")
        .into_iter()
        .map(|r| (r[0].parse().unwrap(), r[1].clone(), id_of(&r[2]), r[3].clone()))
        .collect();
    assert_eq!(procs::integrity(&path), "ok");

    // seq of every message: from its claims and from the file.
    let mut seq_of: HashMap<String, i64> = HashMap::new();
    for op in &ops {
        if let Some(old) = seq_of.insert(op.id.clone(), op.seq) {
            assert_eq!(old, op.seq, "id {} under two seqs", op.id);
        }
    }
    for (seq, group, id, _) in &remaining {
        if let Some(old) = seq_of.insert(id.clone(), *seq) {
            assert_eq!(old, *seq, "id {id} under two seqs");
        }
        assert_eq!(
            published.get(id).map(|p| p.0.as_str()),
            Some(group.as_str()),
            "{id} in the file: not published into {group}"
        );
    }

    // Conservation: published = acked + remaining.
    let acked: Vec<&Op> = ops.iter().filter(|o| o.tag == 'A').collect();
    let acked_ids: BTreeSet<&str> = acked.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(acked_ids.len(), acked.len(), "a message acked twice");
    let remaining_ids: BTreeSet<&str> = remaining.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(remaining_ids.len(), remaining.len(), "a message stored twice");
    assert!(acked_ids.is_disjoint(&remaining_ids), "acked, yet still in the file");
    let all: BTreeSet<&str> = acked_ids.union(&remaining_ids).copied().collect();
    let published_ids: BTreeSet<&str> = published.keys().map(String::as_str).collect();
    assert_eq!(all, published_ids, "published != acked + remaining");
    for op in &ops {
        assert_eq!(published.get(&op.id).map(|p| p.0.as_str()), Some(op.group.as_str()), "{op:?}: not its group");
    }
    let in_flight: Vec<_> = remaining.iter().filter(|r| r.3 != "NULL" && r.3 != harel_transport::PARKED).collect();
    assert!(in_flight.is_empty(), "leases left behind by workers that ended: {in_flight:?}");

    // Per group, in time order: no overlap, FIFO, parks respected.
    let mut by_group: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &ops {
        by_group.entry(op.group.as_str()).or_default().push(op);
    }
    let ack_at: HashMap<&str, u128> = acked.iter().map(|o| (o.id.as_str(), o.at)).collect();
    let mut seqs_of_group: HashMap<&str, Vec<(i64, &str)>> = HashMap::new();
    for (id, (group, _, _)) in &published {
        if let Some(&seq) = seq_of.get(id) {
            seqs_of_group.entry(group.as_str()).or_default().push((seq, id.as_str()));
        }
    }
    for (group, mut group_ops) in by_group {
        group_ops.sort_by_key(|o| (o.at, o.tag != 'C'));
        let mut holder: Option<&Op> = None; // the claim whose lease is running
        let mut must_be_next: Option<i64> = None; // nacked: the group's head still
        let mut parked_until: u128 = 0;
        for op in group_ops {
            match op.tag {
                'C' => {
                    assert!(holder.is_none(), "{group}: {op:?} claimed while {:?} held it", holder.unwrap());
                    if let Some(seq) = must_be_next {
                        assert_eq!(op.seq, seq, "{group}: after a nack of seq {seq}, {op:?} came first");
                    }
                    assert!(
                        op.at + 1_000_000 >= parked_until,
                        "{group}: {op:?} given out {} ms before its park ended",
                        (parked_until - op.at) / 1_000_000
                    );
                    // FIFO: every older message of the group was acked before this claim returned.
                    for (seq, id) in seqs_of_group.get(group).into_iter().flatten() {
                        if *seq < op.seq {
                            let done = ack_at.get(id).is_some_and(|&a| a < op.at);
                            assert!(done, "{group}: {op:?} given out while older seq {seq} ({id}) was still queued");
                        }
                    }
                    holder = Some(op);
                }
                tag => {
                    let h = holder.take().unwrap_or_else(|| panic!("{group}: {op:?} without a claim before it"));
                    assert_eq!((h.seq, &h.worker), (op.seq, &op.worker), "{group}: {op:?} is not the running lease's");
                    must_be_next = (tag != 'A').then_some(op.seq);
                    parked_until = if tag == 'K' { op.at + (PARK * 1e9) as u128 } else { 0 };
                }
            }
        }
    }
    let count = |tag| ops.iter().filter(|o| o.tag == tag).count();
    Outcome {
        per_worker,
        published: published.len(),
        acked: acked.len(),
        remaining: remaining.len(),
        claims: count('C'),
        nacks: count('N'),
        parks: count('K'),
    }
}

fn report(what: &str, o: &Outcome) {
    println!(
        "{what}: published {} = acked {} + remaining {}; {} claims, {} nacks, {} parks; log lines per worker {:?}",
        o.published, o.acked, o.remaining, o.claims, o.nacks, o.parks, o.per_worker
    );
    assert!(o.claims >= 30 && o.nacks > 0 && o.parks > 0, "{what}: too little happened to prove anything");
}

#[test]
fn eight_processes_mixing_every_operation_on_one_file_keep_every_guarantee() {
    let _limit = common::time_limit();
    let o = run(8, None, Duration::from_secs(3));
    report("8 processes", &o);
    // Turns are shared (src/lock_sharing.rs): nobody is left with a sliver of the work.
    let mean = o.per_worker.iter().map(|(_, n)| n).sum::<usize>() / o.per_worker.len();
    for (w, lines) in &o.per_worker {
        assert!(*lines * 4 >= mean, "worker {w} starved: {lines} operations against a mean of {mean}");
    }
}

/// Our processes and harel's Python ones on one file, under every check of `run`. Ours
/// wait for the write lock with retries every 20..1000 µs; harel's Python
/// SqliteTransport waits in SQLite's busy handler (one try after sleeps of up to 100 ms, 5 s
/// in all). Before src/lock_sharing.rs, a Python worker got 2-11 operations done in 3 s
/// against ~1000 for each of ours, and a 10 s run ended in "database is locked". Now ours
/// leave the lock free in short quiet parts of the wall clock while another program uses
/// it: over 10 s, no errors anywhere and every Python worker gets a real share.
#[test]
fn harel_python_workers_mixed_in_keep_every_guarantee_and_get_their_turns() {
    let _limit = common::time_limit();
    let Some(python) =
        harel_python("contention::harel_python_workers_mixed_in_keep_every_guarantee_and_get_their_turns")
    else {
        return;
    };
    let o = run(6, Some((&python, 3)), Duration::from_secs(10));
    report("10 s: 6 of ours + 3 harel SqliteTransport", &o);
    for (w, lines) in o.per_worker.iter().filter(|(w, _)| w.starts_with('y')) {
        // ~500 each on the 2-core development machine under load; starved, a few dozen.
        assert!(*lines >= 100, "python worker {w} starved: {lines} operations in 10 s");
    }
}
