//! The queue on a real libSQL server (sqld), in both server modes: remote (a URL) and
//! embedded replica (a local file with `sync_url`). Every test starts its own sqld on a
//! loopback port, with a database directory of its own, and stops it at the end.
//!
//! sqld comes from `HAREL_SQLD` (the path to the binary) or `sqld` on `PATH`. Without it
//! every test here passes as skipped and prints `skipped: <test>: <reason>` on stderr.
//!
//! The tests of this file run one at a time (they share two cores with sqld, and two of
//! them measure throughput), but for those that mostly wait out a clock, which may run
//! beside each other (`sqld::mostly_waiting`). Run them with `--nocapture` to see the figures:
//! `HAREL_SQLD=/path/to/sqld cargo test --release --test server -- --nocapture`.

use harel_transport_testkit as common;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::drain::{fill, parse_message, GroupLedger, GROUPS, PER_GROUP, TOTAL};
use common::procs::{env, nanos};
use common::sqld::{self, serial, Client, ServerSql, Sqld, StallProxy, Via};
use common::sqld_or_skip;
use common::{contract, event, expect_success, this_test_binary, TestClock};
use harel_transport::{Error, Lease, Options, Transport};

const V: f64 = 30.0;

/// Options for a transport among several that write to one sqld at once. sqld 0.24's write
/// queue (libsql-server's `connection_manager.rs`) can keep a waiter's entry after handing
/// that waiter SQLITE_BUSY (a checkpoint running, or a forced queue sync); when the stale
/// entry comes up, the write lock goes to a connection that is not waiting, and every
/// writer waits out its 5 s deadline. Under load these stalls chain (20 s and more, seen on
/// 2 cores). A worker then gets `Error::Connect` ("may have been applied"), which these
/// tests cannot tell from a fault of ours; with a busy timeout of two minutes they wait the
/// stall out, and the slowest call they print shows it.
fn contended(clock: &TestClock) -> Options {
    let mut o = clock.options();
    o.busy_timeout(120.0).unwrap();
    o
}

fn claim(t: &Transport, worker: &str) -> Option<Lease> {
    t.claim(worker, V, 0, &[]).expect("claim")
}

// ---------------------------------------------------------------------------------------
// The transport contract, in both modes: every check of tests/common/contract.rs, each on
// tables of its own (a prefix per check) on one server, and what only a server shows.

fn run_contract(via: Via, test: &str) {
    let binary = sqld_or_skip!(test);
    let _serial = serial();
    // A new replica copies the server's whole log when it opens, and every check writes to
    // it: on one server, each check's replicas opened slower than the last (the run took
    // minutes). So a replica's checks get a server each; remote ones share one.
    let shared = (via == Via::Remote).then(|| Sqld::start(&binary, false));
    let shared_checks = contract::CHECKS.iter().enumerate().map(|(i, &(name, check))| {
        let run = move |c: &Client| check(&|options: &Options| c.with_prefix(&format!("c{i}"), options));
        (name, Box::new(run) as Box<dyn Fn(&Client)>)
    });
    let checks = shared_checks.chain([("schema_off_and_idempotent", Box::new(check_schema) as Box<dyn Fn(&Client)>)]);
    let mut failed = Vec::new();
    for (name, check) in checks {
        let own;
        let server = match &shared {
            Some(server) => server,
            None => {
                own = Sqld::start(&binary, false);
                &own
            }
        };
        let client = Client::of(via, server);
        let started = Instant::now();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&client))) {
            Ok(()) => println!("{} contract: {name}: ok ({:.2} s)", via.name(), started.elapsed().as_secs_f64()),
            Err(panic) => {
                let text = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                println!("{} contract: {name}: FAILED: {text}", via.name());
                failed.push(format!("{name}: {text}\n{}", server.log_tail()));
            }
        }
    }
    assert!(failed.is_empty(), "{} contract checks failed:\n{}", via.name(), failed.join("\n"));
}

#[test]
fn remote_contract() {
    let _limit = common::time_limit();
    run_contract(Via::Remote, "remote_contract");
}

#[test]
fn replica_contract() {
    let _limit = common::time_limit();
    run_contract(Via::Replica, "replica_contract");
}

/// `create_schema` off on a server without the tables, then with them.
fn check_schema(c: &Client) {
    let clock = TestClock::at(1000.0);
    let mut off = clock.options();
    off.prefix("c_schema").unwrap().create_schema(false);
    match c.try_open(&off) {
        Err(Error::Database(m)) => assert!(m.contains("c_schema_transport_messages"), "names the table: {m}"),
        other => panic!("create_schema off, no tables: want Error::Database at open, got {:?}", other.map(|_| ())),
    }
    let first = c.with_prefix("c_schema", &clock.options());
    let second = c.with_prefix("c_schema", &clock.options());
    first.publish("g", &event(1), 0, None).unwrap();
    let checked = c.open(&off);
    assert_eq!(claim(&checked, "w").unwrap().event, event(1));
    drop(second);
}

// ---------------------------------------------------------------------------------------
// Eight threads, each with a transport of its own, drain one queue. The clock stands
// still: no lease lapses, so every claim's lease must be acked, and a group seen in flight
// twice, or out of order, is a clash in the queue.

/// The groups' ledger (tests/common/drain.rs), with counts and the slowest call.
#[derive(Default)]
struct Ledger {
    groups: GroupLedger,
    done: AtomicUsize,
    claims: AtomicUsize,
    empty: AtomicUsize,
    /// The slowest claim or ack call.
    slowest: Mutex<Duration>,
}

impl Ledger {
    fn finished(&self) -> bool {
        self.done.load(Ordering::SeqCst) >= TOTAL
    }

    fn took(&self, since: Instant) {
        let mut slowest = self.slowest.lock().unwrap();
        *slowest = (*slowest).max(since.elapsed());
    }
}

fn work(t: &Transport, worker: &str, ledger: &Ledger) {
    while !ledger.finished() {
        let started = Instant::now();
        let claimed = t.claim(worker, V, 0, &[]).unwrap_or_else(|e| panic!("{worker}: claim: {e:?}"));
        ledger.took(started);
        match claimed {
            Some(lease) => {
                ledger.groups.claimed(&lease);
                ledger.claims.fetch_add(1, Ordering::SeqCst);
                std::thread::yield_now();
                ledger.groups.acking(&lease);
                let started = Instant::now();
                t.ack(&lease).unwrap_or_else(|e| panic!("{worker}: ack: {e:?}"));
                ledger.took(started);
                ledger.done.fetch_add(1, Ordering::SeqCst);
            }
            None => {
                ledger.empty.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn eight_threads(via: Via, test: &str) {
    let binary = sqld_or_skip!(test);
    let _serial = serial();
    let server = Sqld::start(&binary, true);
    let client = Client::of(via, &server);
    let clock = TestClock::at(1000.0);
    let publish_time = fill(&client.open(&clock.options()), GROUPS, PER_GROUP);
    // Every transport is open (and a replica synced) before the clock of the run starts.
    let transports: Vec<Transport> = (0..8).map(|_| client.open(&contended(&clock))).collect();
    let ledger = Ledger::default();
    let started = Instant::now();
    std::thread::scope(|s| {
        for (n, t) in transports.iter().enumerate() {
            let ledger = &ledger;
            s.spawn(move || work(t, &format!("w{n}"), ledger));
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(ledger.done.load(Ordering::SeqCst), TOTAL);
    ledger.groups.assert_complete();
    let server_sql = ServerSql::new(&server.url(), server.token());
    assert_eq!(server_sql.count("SELECT count(*) FROM harel_transport_messages"), 0);
    assert_eq!(server_sql.count("SELECT count(*) FROM harel_transport_groups"), 0, "drained groups are dropped");
    let claims = ledger.claims.load(Ordering::SeqCst);
    println!(
        "{} x8 threads: {TOTAL} messages in {GROUPS} groups, each claimed and acked once, 0 overlaps; \
         publish {:.0}/s (1 thread); drain {elapsed:.2} s = {:.0} claims/s ({:.0} transactions/s with acks, \
         {} empty claims); slowest call {:.3} s; per worker {:?}",
        via.name(),
        TOTAL as f64 / publish_time.as_secs_f64(),
        claims as f64 / elapsed,
        (2 * claims + ledger.empty.load(Ordering::SeqCst)) as f64 / elapsed,
        ledger.empty.load(Ordering::SeqCst),
        ledger.slowest.lock().unwrap().as_secs_f64(),
        ledger.groups.by_worker()
    );
}

#[test]
fn remote_eight_threads_drain_exactly_once() {
    let _limit = common::time_limit();
    eight_threads(Via::Remote, "remote_eight_threads_drain_exactly_once");
}

#[test]
fn replica_eight_threads_drain_exactly_once() {
    let _limit = common::time_limit();
    eight_threads(Via::Replica, "replica_eight_threads_drain_exactly_once");
}

// ---------------------------------------------------------------------------------------
// Four OS processes: the test binary runs itself again, one `server_worker` per process.
// Each logs, per message, the instant after its claim returned and the instant before it
// acked (system time, one clock for the machine): two windows of one group that overlap
// are two leases that overlapped.

#[test]
#[ignore = "a worker process for the tests of this file; does nothing on its own"]
fn server_worker() {
    let _limit = common::time_limit();
    let Ok(via) = std::env::var("HAREL_SERVER_TEST_VIA") else {
        return;
    };
    let via = Via::parse(&via);
    let url = env("HAREL_SERVER_TEST_URL");
    let token = std::env::var("HAREL_SERVER_TEST_TOKEN").ok();
    let id = env("HAREL_SERVER_TEST_WORKER_ID");
    let dir = PathBuf::from(env("HAREL_SERVER_TEST_DIR"));
    let client = Client::new(via, &url, token.as_deref(), &dir);
    let t = client.open(&contended(&TestClock::at(1000.0)));
    std::fs::write(dir.join(format!("ready-{id}")), "").unwrap();
    let server_sql = ServerSql::new(&url, token.as_deref());
    let mut log = String::new();
    let (mut claims, mut empty) = (0usize, 0usize);
    // Every process is open before any starts: the parent says go.
    while !dir.join("go").exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    loop {
        match t.claim(&id, V, 0, &[]).expect("claim") {
            Some(lease) => {
                let claimed = nanos();
                claims += 1;
                std::thread::yield_now();
                let acking = nanos();
                log.push_str(&format!("{} {} {} {claimed} {acking}\n", lease.group_id, lease.seq, lease.event));
                t.ack(&lease).expect("ack: the lease cannot have lapsed");
            }
            // Empty now, but another process may still hold a message with more behind it.
            None if server_sql.count("SELECT count(*) FROM harel_transport_messages") == 0 => break,
            None => {
                empty += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    std::fs::write(env("HAREL_SERVER_TEST_LOG"), log).unwrap();
    println!("\nWORKER {id} claims={claims} empty={empty} seconds={elapsed:.3}");
}

fn four_processes(via: Via, test: &str) {
    let binary = sqld_or_skip!(test);
    let _serial = serial();
    let server = Sqld::start(&binary, true);
    let client = Client::of(via, &server);
    let clock = TestClock::at(1000.0);
    fill(&client.open(&clock.options()), GROUPS, PER_GROUP);
    let dir = server.scratch().to_owned();
    let logs: Vec<PathBuf> = (0..4).map(|n| dir.join(format!("worker-{n}.log"))).collect();
    let mut children: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(n, log)| {
            let mut command = this_test_binary("server_worker");
            command
                .env("HAREL_SERVER_TEST_VIA", via.name())
                .env("HAREL_SERVER_TEST_URL", server.url())
                .env("HAREL_SERVER_TEST_TOKEN", server.token().unwrap())
                .env("HAREL_SERVER_TEST_WORKER_ID", format!("p{n}"))
                .env("HAREL_SERVER_TEST_DIR", &dir)
                .env("HAREL_SERVER_TEST_LOG", log)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            command.spawn().expect("spawn a worker process")
        })
        .collect();
    // Let them open (a replica syncs at open), then start them together. A worker that
    // exited instead is reported below.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(0..4).all(|n| dir.join(format!("ready-p{n}")).exists()) {
        if children.iter_mut().any(|c| !matches!(c.try_wait(), Ok(None))) {
            break;
        }
        if Instant::now() > deadline {
            children.iter_mut().for_each(|c| drop(c.kill()));
            panic!("the worker processes did not all open within 120 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(dir.join("go"), "").unwrap();
    let started = Instant::now();
    let mut reports = Vec::new();
    for (n, child) in children.into_iter().enumerate() {
        let out = expect_success(child, &format!("worker process {n}"));
        reports.extend(out.lines().filter(|l| l.starts_with("WORKER ")).map(str::to_owned));
    }
    let elapsed = started.elapsed().as_secs_f64();

    let mut by_group: BTreeMap<String, Vec<(i64, usize, u128, u128)>> = BTreeMap::new();
    let mut seen = HashSet::new();
    for log in &logs {
        for line in std::fs::read_to_string(log).expect("a worker's log").lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let (g, i) = parse_message(f[0], f[2]);
            assert!(seen.insert((g, i)), "g{g} message {i} was handled twice");
            by_group.entry(f[0].to_owned()).or_default().push((
                f[1].parse().unwrap(),
                i,
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            ));
        }
    }
    assert_eq!(seen.len(), TOTAL, "every message handled once");
    let mut overlaps = 0;
    for (g, mut handled) in by_group {
        handled.sort_by_key(|h| h.2);
        for pair in handled.windows(2) {
            if pair[0].3 > pair[1].2 {
                overlaps += 1;
            }
            assert!(pair[0].0 < pair[1].0, "{g}: out of FIFO order");
        }
        assert_eq!(handled.iter().map(|h| h.1).collect::<Vec<_>>(), (0..PER_GROUP).collect::<Vec<_>>(), "{g}: FIFO");
    }
    assert_eq!(overlaps, 0, "two leases of one group overlapped");
    let server_sql = ServerSql::new(&server.url(), server.token());
    assert_eq!(server_sql.count("SELECT count(*) FROM harel_transport_messages"), 0);
    assert_eq!(server_sql.count("SELECT count(*) FROM harel_transport_groups"), 0);
    println!(
        "{} x4 processes: {TOTAL} messages handled exactly once, 0 overlaps, FIFO in every group; \
         {elapsed:.2} s = {:.0} claims/s; {reports:?}",
        via.name(),
        TOTAL as f64 / elapsed
    );
}

#[test]
fn remote_four_processes_drain_exactly_once() {
    let _limit = common::time_limit();
    four_processes(Via::Remote, "remote_four_processes_drain_exactly_once");
}

#[test]
fn replica_four_processes_drain_exactly_once() {
    let _limit = common::time_limit();
    four_processes(Via::Replica, "replica_four_processes_drain_exactly_once");
}

// ---------------------------------------------------------------------------------------
// Refusals and absences: a wrong token, no token, nothing listening, a server that never
// answers. Each fails `open` with Error::Connect within seconds.

const CONNECT_BOUND: Duration = Duration::from_secs(15);

fn expect_connect_error(client: &Client, what: &str) -> String {
    let started = Instant::now();
    let result = client.try_open(&Options::new());
    let took = started.elapsed();
    let message = match result {
        Err(Error::Connect(m)) => m,
        Err(other) => panic!("{what} ({}): want Error::Connect, got {other:?}", client.via.name()),
        Ok(_) => panic!("{what} ({}): opened", client.via.name()),
    };
    assert!(took < CONNECT_BOUND, "{what} ({}): Error::Connect took {took:?}", client.via.name());
    println!("{what} ({}): Error::Connect after {:.2} s: {message}", client.via.name(), took.as_secs_f64());
    message
}

#[test]
fn a_wrong_or_missing_token_is_refused_at_open() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_wrong_or_missing_token_is_refused_at_open");
    let _serial = serial();
    let server = Sqld::start(&binary, true);
    for via in Via::BOTH {
        let good = Client::of(via, &server);
        let t = good.open(&Options::new());
        t.publish("g", &event(1), 0, None).expect("the right token works");
        let wrong = Client::new(via, &server.url(), Some(sqld::WRONG_TOKEN), server.scratch());
        expect_connect_error(&wrong, "a token signed by another key");
        let none = Client::new(via, &server.url(), None, server.scratch());
        expect_connect_error(&none, "no token");
    }
}

#[test]
fn an_unreachable_server_fails_open_within_seconds() {
    let _limit = common::time_limit();
    let _binary = sqld_or_skip!("an_unreachable_server_fails_open_within_seconds");
    let _serial = sqld::mostly_waiting();
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens: the connection is refused at once.
    let nobody = format!("http://127.0.0.1:{}", sqld::free_port());
    // Something listens and accepts, and never answers: only a timeout ends the wait.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let held = Arc::new(Mutex::new(Vec::new()));
    let held2 = held.clone();
    std::thread::spawn(move || {
        for stream in silent.incoming().flatten() {
            held2.lock().unwrap().push(stream);
        }
    });
    // The four cases at once: the silent server's bound is waited out once, not twice.
    std::thread::scope(|s| {
        let mut cases = Vec::new();
        for via in Via::BOTH {
            for (url, what) in [(&nobody, "nothing listening"), (&silent_url, "a server that never answers")] {
                let client = Client::new(via, url, None, dir.path());
                cases.push(s.spawn(move || expect_connect_error(&client, what)));
            }
        }
        for case in cases {
            case.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
    });
}

// ---------------------------------------------------------------------------------------
// The server is killed (SIGKILL) and started again on the same port and database while
// four workers claim and ack. Calls in flight fail with an error (never a panic); no claim
// is left half-applied; every worker's calls succeed again once the server is back; and
// after the run every message has been handled.

/// A lease a claim returned, and what became of it.
struct Handled {
    group_id: String,
    index: usize,
    claimed_at: u128,
    acking_at: u128,
    ack: Result<(), String>,
}

#[derive(Default)]
struct RestartLog {
    handled: Vec<Handled>,
    errors: Vec<String>,
}

fn restart_mid_run(via: Via, test: &str) {
    let binary = sqld_or_skip!(test);
    let _serial = serial();
    let mut server = Sqld::start(&binary, false);
    let client = Client::of(via, &server);
    let clock = TestClock::at(1000.0);
    let (groups, per_group) = (20, 30);
    let total = groups * per_group;
    fill(&client.open(&clock.options()), groups, per_group);
    let transports: Vec<Transport> = (0..4).map(|_| client.open(&clock.options())).collect();

    let log = Mutex::new(RestartLog::default());
    let acked = AtomicUsize::new(0);
    let down = AtomicBool::new(false);
    let back_at: Mutex<Option<Instant>> = Mutex::new(None);
    let recovered: Mutex<Vec<Option<f64>>> = Mutex::new(vec![None; 4]);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for (n, t) in transports.iter().enumerate() {
            let (log, acked, recovered, back_at, stop, down) = (&log, &acked, &recovered, &back_at, &stop, &down);
            s.spawn(move || {
                let worker = format!("w{n}");
                let mut since_restart_ok = false;
                while !stop.load(Ordering::SeqCst) {
                    let note = |r: &mut Vec<Option<f64>>| {
                        if let Some(at) = *back_at.lock().unwrap() {
                            r[n].get_or_insert(at.elapsed().as_secs_f64());
                        }
                    };
                    match t.claim(&worker, V, 0, &[]) {
                        Ok(Some(lease)) => {
                            if !since_restart_ok && back_at.lock().unwrap().is_some() {
                                since_restart_ok = true;
                                note(&mut recovered.lock().unwrap());
                            }
                            let (_, i) = parse_message(&lease.group_id, &lease.event);
                            let claimed = nanos();
                            let acking = nanos();
                            let outcome = t.ack(&lease).map_err(|e| format!("{e:?}"));
                            if outcome.is_ok() {
                                acked.fetch_add(1, Ordering::SeqCst);
                            }
                            let mut l = log.lock().unwrap();
                            if let Err(e) = &outcome {
                                l.errors.push(format!("{worker} ack: {e}"));
                            }
                            l.handled.push(Handled {
                                group_id: lease.group_id.clone(),
                                index: i,
                                claimed_at: claimed,
                                acking_at: acking,
                                ack: outcome,
                            });
                        }
                        Ok(None) => {
                            if !since_restart_ok && back_at.lock().unwrap().is_some() {
                                since_restart_ok = true;
                                note(&mut recovered.lock().unwrap());
                            }
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => {
                            let phase = if down.load(Ordering::SeqCst) { "server down" } else { "server up" };
                            log.lock().unwrap().errors.push(format!("{worker} claim ({phase}): {e:?}"));
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            });
        }
        // Kill the server in the middle of the run.
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked.load(Ordering::SeqCst) < total / 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        down.store(true, Ordering::SeqCst);
        server.kill();
        println!("{}: killed sqld after {} acks", via.name(), acked.load(Ordering::SeqCst));
        std::thread::sleep(Duration::from_millis(1500));
        server.restart();
        down.store(false, Ordering::SeqCst);
        *back_at.lock().unwrap() = Some(Instant::now());
        println!("{}: sqld restarted on the same port and database", via.name());
        // Let them drain what they can (a lease whose claim answer was lost stays until it lapses).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = (acked.load(Ordering::SeqCst), Instant::now());
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            let now = acked.load(Ordering::SeqCst);
            let all_back = recovered.lock().unwrap().iter().all(Option::is_some);
            if now != last.0 {
                last = (now, Instant::now());
            } else if all_back && last.1.elapsed() > Duration::from_secs(2) {
                break;
            }
        }
        stop.store(true, Ordering::SeqCst);
    });

    let log = log.into_inner().unwrap();
    let recovered = recovered.into_inner().unwrap();
    println!("{}: errors seen by the workers ({}):", via.name(), log.errors.len());
    let mut distinct: BTreeMap<String, usize> = BTreeMap::new();
    for e in &log.errors {
        // Group by the text without the worker's name and numbers that vary.
        let key: String = e.split_once(' ').map(|x| x.1).unwrap_or(e).chars().filter(|c| !c.is_ascii_digit()).collect();
        *distinct.entry(key).or_default() += 1;
    }
    for (e, n) in &distinct {
        println!("  {n} x {e}");
    }
    println!("{}: first success after the restart, per worker (s): {recovered:?}", via.name());

    // No claim half-applied: a group is stamped with a lease's end exactly when one of its
    // messages is leased (the clock stood still at 1000; a lease runs to 1030).
    let server_sql = ServerSql::new(&server.url(), server.token());
    let half = server_sql.rows(
        "SELECT g.group_id, g.last_claimed_at, \
           (SELECT count(*) FROM harel_transport_messages m WHERE m.group_id = g.group_id AND m.locked_by IS NOT NULL) \
         FROM harel_transport_groups g",
    );
    let inconsistent: Vec<_> = half.iter().filter(|r| (r[1] == "1030") != (r[2] != "0")).collect();
    assert!(inconsistent.is_empty(), "half-applied claims (group, turn, leased messages): {inconsistent:?}");
    let leased = server_sql.count("SELECT count(*) FROM harel_transport_messages WHERE locked_by IS NOT NULL");

    // Windows of one group never overlap while the clock stands still.
    let mut by_group: BTreeMap<&str, Vec<(u128, u128)>> = BTreeMap::new();
    for h in &log.handled {
        by_group.entry(h.group_id.as_str()).or_default().push((h.claimed_at, h.acking_at));
    }
    for (g, mut w) in by_group {
        w.sort();
        assert!(w.windows(2).all(|p| p[0].1 <= p[1].0), "{g}: two leases overlapped");
    }

    assert!(
        recovered.iter().all(Option::is_some),
        "{}: a worker never succeeded again after the restart: {recovered:?}; errors: {distinct:#?}",
        via.name()
    );

    // What is left: messages whose claim or ack answer was lost, held by leases nobody
    // knows of. Let them lapse and drain with a fresh transport.
    clock.advance(V + 1.0);
    let sweeper = client.open(&clock.options());
    let mut swept = Vec::new();
    while let Some(lease) = sweeper.claim("sweeper", V, 0, &[]).expect("sweep claim") {
        swept.push(parse_message(&lease.group_id, &lease.event));
        sweeper.ack(&lease).expect("sweep ack");
    }
    let mut seen: HashSet<(usize, usize)> =
        log.handled.iter().map(|h| (h.group_id[1..].parse().unwrap(), h.index)).collect();
    seen.extend(swept.iter().copied());
    let failed_acks = log.handled.iter().filter(|h| h.ack.is_err()).count();
    let repeats = log.handled.len() + swept.len() - seen.len();
    println!(
        "{}: {} handled by the workers, {failed_acks} acks failed, {leased} messages stuck under a lease nobody held \
         after the run, {} swept after the leases lapsed, {repeats} handled twice",
        via.name(),
        log.handled.len(),
        swept.len()
    );
    assert_eq!(seen.len(), total, "every message handled");
    assert!(repeats <= failed_acks + leased as usize, "a message came twice without a lost answer to explain it");
    assert_eq!(server_sql.count("SELECT count(*) FROM harel_transport_messages"), 0);
}

#[test]
fn remote_server_killed_and_restarted_mid_run() {
    let _limit = common::time_limit();
    restart_mid_run(Via::Remote, "remote_server_killed_and_restarted_mid_run");
}

#[test]
fn replica_server_killed_and_restarted_mid_run() {
    let _limit = common::time_limit();
    restart_mid_run(Via::Replica, "replica_server_killed_and_restarted_mid_run");
}

/// A transport idle while its server restarts goes on at its next call, every time: the
/// connection the old server closed is dropped before the call, not written to (the
/// request would be lost with it: `Error::Connect`, "may have been applied"), and the
/// stream it left is replaced. Nothing is repeated or lost.
#[test]
fn a_transport_idle_while_its_server_restarts_goes_on_at_its_next_call() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_transport_idle_while_its_server_restarts_goes_on_at_its_next_call");
    let _serial = serial();
    let mut server = Sqld::start(&binary, false);
    let client = Client::of(Via::Remote, &server);
    let t = client.open(&Options::new());
    t.publish("g", &event(0), 0, None).unwrap();
    const RESTARTS: usize = 5;
    for n in 1..=RESTARTS {
        server.restart();
        let after = t.publish("g", &event(n), 0, None);
        assert!(after.is_ok(), "the first call after restart {n}: {after:?}\n{}", server.log_tail());
    }
    for n in 0..=RESTARTS {
        let lease = claim(&t, "w").expect("every message published is there");
        assert_eq!(lease.event, event(n));
        t.ack(&lease).unwrap();
    }
    assert!(claim(&t, "w").is_none());
}

// ---------------------------------------------------------------------------------------
// sqld's clocks. A write transaction held more than 5 s while another writer waits is
// rolled back by the server; a remote stream (a connection's server-side session) idle for
// 10 s expires. A client stalled with a claim on its way (a proxy holds back the request
// with its UPDATE) must come out of it with an error or a whole lease, nothing half-done,
// the other client must get a message, and the stalled transport's next call must
// succeed. (Since a claim is one request, the stall comes before the server's transaction:
// the other client no longer waits for the lock.)

/// The first UPDATE of a claim: the group's turn.
const CLAIM_UPDATE: &str = "SET last_claimed_at";

fn stalled_claim(via: Via, stall: Duration, contender: bool, test: &str) {
    let binary = sqld_or_skip!(test);
    let _serial = sqld::mostly_waiting();
    let server = Sqld::start(&binary, false);
    let proxy = StallProxy::start(server.port());
    let clock = TestClock::at(1000.0);
    let direct = Client::of(via, &server);
    let through_proxy = Client::new(via, &proxy.url(), None, server.scratch());
    let stalled = through_proxy.open(&clock.options());
    let other = direct.open(&clock.options());
    other.publish("g", &event(1), 0, None).unwrap();
    other.publish("h", &event(2), 0, None).unwrap();

    proxy.stall_next(CLAIM_UPDATE, stall);
    let started = Instant::now();
    let (stalled_result, contender_result) = std::thread::scope(|s| {
        let a = s.spawn(|| stalled.claim("stalled", V, 0, &[]));
        let b = contender.then(|| {
            s.spawn(|| {
                // The stalled claim's UPDATE is held back now (or the claim failed before it).
                let deadline = Instant::now() + Duration::from_secs(10);
                while !proxy.has_stalled() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                std::thread::sleep(Duration::from_millis(300));
                let t0 = Instant::now();
                (other.claim("contender", V, 0, &[]), t0.elapsed())
            })
        });
        (a.join().expect("the stalled claim panicked"), b.map(|b| b.join().expect("the contender panicked")))
    });
    assert!(proxy.has_stalled(), "the claim never reached its UPDATE: {stalled_result:?}");
    println!(
        "{} stalled {:.0} s mid-claim ({}): the stalled claim returned after {:.2} s: {:?}",
        via.name(),
        stall.as_secs_f64(),
        if contender { "a writer waiting" } else { "nobody waiting" },
        started.elapsed().as_secs_f64(),
        stalled_result.as_ref().map(|l| l.as_ref().map(|l| &l.group_id))
    );
    if let Some((result, waited)) = &contender_result {
        println!(
            "  the waiting writer's claim took {:.2} s: {:?}",
            waited.as_secs_f64(),
            result.as_ref().map(|l| l.as_ref().map(|l| &l.group_id))
        );
    }

    let server_sql = ServerSql::new(&server.url(), server.token());
    let rows = server_sql.rows("SELECT group_id, locked_by, lock_expiry FROM harel_transport_messages ORDER BY seq");
    let groups = server_sql.rows("SELECT group_id, last_claimed_at FROM harel_transport_groups ORDER BY rowid");
    println!("  messages after: {rows:?}; groups: {groups:?}");

    let mut holders: Vec<(String, String)> = Vec::new();
    if let Ok(Some(lease)) = &stalled_result {
        holders.push((lease.group_id.clone(), "stalled".into()));
    }
    if let Some((Ok(Some(lease)), _)) = &contender_result {
        holders.push((lease.group_id.clone(), "contender".into()));
    }
    // What the server holds is exactly what the claims returned: no lease nobody was told
    // of, no lease overwritten.
    let mut leased: Vec<(String, String)> =
        rows.iter().filter(|r| r[1] != "NULL").map(|r| (r[0].clone(), r[1].clone())).collect();
    leased.sort();
    holders.sort();
    assert_eq!(leased, holders, "leases in the database vs leases the claims returned");
    let distinct: HashSet<&String> = holders.iter().map(|h| &h.0).collect();
    assert_eq!(distinct.len(), holders.len(), "one group leased twice");
    if let Some((result, _)) = &contender_result {
        assert!(matches!(result, Ok(Some(_))), "the waiting writer gets a message: {result:?}");
        let lease = result.as_ref().unwrap().as_ref().unwrap();
        other.ack(lease).expect("the waiting writer's lease is intact");
    }

    // The stalled transport's next calls work.
    let next = stalled.claim("stalled", V, 0, &[]);
    let next = match next {
        Ok(x) => x,
        Err(e) => {
            let again = stalled.claim("stalled", V, 0, &[]);
            panic!(
                "{}: the call after the stall failed: {e:?}; and the one after: {:?}",
                via.name(),
                again.map(|x| x.map(|l| l.group_id))
            );
        }
    };
    if let Some(lease) = next {
        stalled.ack(&lease).expect("ack after the stall");
    }
    stalled.publish("k", &event(3), 0, None).expect("publish after the stall");
}

#[test]
fn remote_claim_stalled_past_the_5s_transaction_timeout() {
    let _limit = common::time_limit();
    stalled_claim(Via::Remote, Duration::from_secs(7), true, "remote_claim_stalled_past_the_5s_transaction_timeout");
}

#[test]
fn replica_claim_stalled_past_the_5s_transaction_timeout() {
    let _limit = common::time_limit();
    stalled_claim(Via::Replica, Duration::from_secs(7), true, "replica_claim_stalled_past_the_5s_transaction_timeout");
}

#[test]
fn remote_claim_stalled_past_the_10s_stream_expiry() {
    let _limit = common::time_limit();
    stalled_claim(Via::Remote, Duration::from_secs(12), false, "remote_claim_stalled_past_the_10s_stream_expiry");
}

#[test]
fn replica_claim_stalled_past_the_10s_stream_expiry() {
    let _limit = common::time_limit();
    stalled_claim(Via::Replica, Duration::from_secs(12), false, "replica_claim_stalled_past_the_10s_stream_expiry");
}

/// Another client holds a write transaction and goes quiet: our claim waits for the
/// server to take the lock back (5 s), then succeeds.
#[test]
fn a_claim_waits_out_another_clients_abandoned_transaction() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_claim_waits_out_another_clients_abandoned_transaction");
    let _serial = sqld::mostly_waiting();
    // Both modes at once, so sqld's 5 s is waited out once; a server each, or one mode's
    // claim would wait behind the other's abandoned transaction too.
    let servers: Vec<Sqld> = Via::BOTH.iter().map(|_| Sqld::start(&binary, false)).collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = Via::BOTH
            .iter()
            .zip(&servers)
            .map(|(&via, server)| s.spawn(move || behind_an_abandoned_transaction(via, server)))
            .collect();
        for run in runs {
            run.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
    });
}

fn behind_an_abandoned_transaction(via: Via, server: &Sqld) {
    let clock = TestClock::at(1000.0);
    let t = Client::of(via, server).open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_db, conn) = rt.block_on(async {
        let db = libsql::Builder::new_remote(server.url(), String::new()).build().await.unwrap();
        let conn = db.connect().unwrap();
        conn.execute("BEGIN IMMEDIATE", ()).await.unwrap();
        conn.execute("UPDATE harel_transport_groups SET priority = priority", ()).await.unwrap();
        (db, conn)
    });
    let started = Instant::now();
    let result = t.claim("w", V, 0, &[]);
    println!(
        "{}: a claim behind an abandoned transaction returned after {:.2} s: {:?}",
        via.name(),
        started.elapsed().as_secs_f64(),
        result.as_ref().map(|l| l.as_ref().map(|l| &l.group_id))
    );
    let lease = result.expect("the claim gets the lock once the server takes it back").expect("the message");
    t.ack(&lease).unwrap();
    let after = rt.block_on(conn.execute("COMMIT", ()));
    println!("  {}: the abandoned transaction's COMMIT afterwards: {after:?}", via.name());
    assert!(after.is_err(), "the server rolled the abandoned transaction back");
}

/// A remote connection left idle for more than 10 s, outside any transaction.
#[test]
fn remote_calls_after_an_idle_stream_expired() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("remote_calls_after_an_idle_stream_expired");
    let _serial = sqld::mostly_waiting();
    let server = Sqld::start(&binary, false);
    let clock = TestClock::at(1000.0);
    let client = Client::of(Via::Remote, &server);
    let busy = client.open(&clock.options());
    busy.publish("g", &event(1), 0, None).unwrap();
    busy.publish("h", &event(2), 0, None).unwrap();
    busy.publish("i", &event(3), 0, None).unwrap();
    // create_schema off: open only reads (checks the tables), outside a transaction.
    let mut off = clock.options();
    off.create_schema(false);
    let checked = client.open(&off);
    let fresh = client.open(&clock.options());
    std::thread::sleep(Duration::from_secs(12));
    let mut failures = Vec::new();
    for (name, t) in [("create_schema off", &checked), ("create_schema on", &fresh), ("after a publish", &busy)] {
        match t.claim("w", V, 0, &[]) {
            Ok(lease) => {
                println!("idle 12 s, {name}: claim ok");
                if let Some(lease) = lease {
                    t.ack(&lease).unwrap();
                }
            }
            Err(e) => {
                let again = t.claim("w", V, 0, &[]).map(|l| l.map(|l| l.group_id));
                println!("idle 12 s, {name}: claim failed: {e:?}; the next claim: {again:?}");
                failures.push(format!("{name}: {e:?}; next: {again:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "calls after an idle stream failed:\n{}", failures.join("\n"));
}

/// A primary that compacts its log every second answers a replica that needs the new
/// snapshot "snapshot not found" until it is written (libsql issue #1310): replicas opened
/// one after another while a writer publishes all open, each seeing what was published
/// before it opened, and their looks (a sync each) work.
#[test]
fn replicas_open_while_the_primary_compacts_its_log() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("replicas_open_while_the_primary_compacts_its_log");
    let _serial = serial();
    let server = Sqld::start_with(&binary, false, &["--max-log-duration", "1"]);
    let client = Client::of(Via::Replica, &server);
    let writer = Transport::open(&server.url(), &Options::new()).unwrap();
    let published = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = {
        let (published, stop) = (published.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let n = published.load(Ordering::SeqCst);
                writer.publish(&format!("g{}", n % 50), &event(n), 0, None).unwrap();
                published.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut opened = 0;
    while Instant::now() < deadline {
        let before = published.load(Ordering::SeqCst) as u64;
        let replica = client.try_open(&Options::new()).unwrap_or_else(|e| panic!("replica {opened}: {e:?}"));
        let seen = replica.stats().unwrap_or_else(|e| panic!("replica {opened}'s stats: {e:?}")).messages;
        assert!(seen >= before, "replica {opened} sees {seen} messages, {before} were published before it opened");
        opened += 1;
    }
    stop.store(true, Ordering::SeqCst);
    publishing.join().unwrap();
    println!("{opened} replicas opened while {} messages were published", published.load(Ordering::SeqCst));
}

/// A real embedded replica's file opened without `sync_url` is refused (written to
/// locally it would part from the server's queue), and a local queue file is refused as a
/// replica; neither file is touched.
#[test]
fn replica_and_local_files_are_never_mixed() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("replica_and_local_files_are_never_mixed");
    let _serial = serial();
    let server = Sqld::start(&binary, false);
    let clock = TestClock::at(1000.0);
    let client = Client::of(Via::Replica, &server);
    let replica_path = client.next_replica_path();
    let mut with_server = clock.options();
    with_server.sync_url(Some(&server.url())).unwrap();
    Transport::open(&replica_path, &with_server).unwrap().publish("g", &event(1), 0, None).unwrap();
    match Transport::open(&replica_path, &clock.options()) {
        Err(Error::Argument(m)) => assert!(m.contains("embedded replica"), "{m}"),
        other => panic!("a replica opened as a local file: {:?}", other.map(drop)),
    }
    let again = Transport::open(&replica_path, &with_server).unwrap();
    assert_eq!(again.claim("w", V, 0, &[]).unwrap().expect("the server's message").event, event(1));

    let local = server.scratch().join("local.db").to_str().unwrap().to_owned();
    Transport::open(&local, &clock.options()).unwrap().publish("l", &event(2), 0, None).unwrap();
    match Transport::open(&local, &with_server) {
        Err(Error::Argument(m)) => assert!(m.contains("local queue file"), "{m}"),
        other => panic!("a local file opened as a replica: {:?}", other.map(drop)),
    }
    let local_again = Transport::open(&local, &clock.options()).unwrap();
    assert_eq!(local_again.claim("w", V, 0, &[]).unwrap().expect("the local message").event, event(2));
    assert_eq!(
        ServerSql::new(&server.url(), None).count("SELECT count(*) FROM harel_transport_messages WHERE group_id = 'l'"),
        0
    );
}

/// The server stops answering (SIGSTOP: its sockets stay open) while a claim is in flight:
/// the claim fails within a bounded time instead of hanging, and once the server answers
/// again the transport's next calls succeed.
#[test]
fn a_server_that_stops_answering_fails_the_call_within_a_bound() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_server_that_stops_answering_fails_the_call_within_a_bound");
    let _serial = sqld::mostly_waiting();
    let mut server = Sqld::start(&binary, false);
    let clock = TestClock::at(1000.0);
    let mut failures = Vec::new();
    // Both modes' claims during one pause, so the bound is waited out once; each mode on
    // tables of its own, so each finds its own one message afterwards.
    let transports: Vec<(Via, Transport)> = Via::BOTH
        .iter()
        .map(|&via| {
            let mut o = clock.options();
            o.busy_timeout(1.0).unwrap();
            let t = Client::of(via, &server).with_prefix(via.name(), &o);
            t.publish("g", &event(1), 0, None).unwrap();
            (via, t)
        })
        .collect();
    server.pause();
    let results: Vec<_> = std::thread::scope(|s| {
        let calls: Vec<_> = transports
            .iter()
            .map(|(_, t)| {
                s.spawn(move || {
                    let started = Instant::now();
                    (t.claim("w", V, 0, &[]), started.elapsed())
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !calls.iter().all(|c| c.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let done: Vec<bool> = calls.iter().map(|c| c.is_finished()).collect();
        // Let a call still hanging finish, so the scope can end.
        server.resume();
        calls.into_iter().zip(done).map(|(call, done)| (done, call.join().expect("the claim panicked"))).collect()
    });
    // The server answers again: the transports work, and each message is there once.
    clock.advance(V + 1.0);
    for ((via, t), (done, (outcome, took))) in transports.iter().zip(results) {
        println!(
            "{}: a claim on a server that stopped answering {} after {:.2} s: {:?}",
            via.name(),
            if done { "returned" } else { "was still waiting" },
            took.as_secs_f64(),
            outcome.as_ref().map(|l| l.as_ref().map(|l| &l.group_id))
        );
        if !done {
            failures.push(format!("{}: the claim hung for 60 s", via.name()));
        } else if outcome.is_ok() {
            failures.push(format!("{}: the claim returned Ok while the server was stopped", via.name()));
        }
        let mut got = 0;
        loop {
            match t.claim("w", V, 0, &[]) {
                Ok(Some(lease)) => {
                    got += 1;
                    t.ack(&lease).expect("ack after the server came back");
                }
                Ok(None) => break,
                Err(e) => {
                    failures.push(format!("{}: a claim after the server came back: {e:?}", via.name()));
                    break;
                }
            }
        }
        if got != 1 {
            failures.push(format!("{}: {got} messages after the server came back, want 1", via.name()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Publishing inside the application's transaction, past what the shared contract shows:
// sqld's 5 s rule for a transaction that holds the write lock across the network.

/// A transaction begun by a query holds the server's write lock between its requests. When
/// another writer waits for it, sqld rolls the transaction back once it has held the lock for
/// 5 s: the other writer goes ahead, and the transaction's commit fails with
/// `Error::Database` naming the rule, keeping nothing. A transaction with no query never
/// holds the lock between requests, so the rule cannot reach it.
#[test]
fn a_transaction_holding_the_lock_over_5_s_while_another_writes_is_rolled_back() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_transaction_holding_the_lock_over_5_s_while_another_writes_is_rolled_back");
    let _serial = sqld::mostly_waiting();
    let server = Sqld::start(&binary, false);
    let client = Client::of(Via::Remote, &server);
    let clock = TestClock::at(1000.0);
    let mut options = clock.options();
    options.busy_timeout(30.0).unwrap();
    let holder = client.with_prefix("rule", &options);
    let other = client.with_prefix("rule", &options);
    let mut tx = holder.begin();
    tx.publish(harel_transport::Message { group_id: "held", event_json: &event(1), priority: 0, routing_key: None, headers: None })
        .unwrap();
    tx.query("SELECT 1", []).expect("the query begins the transaction");
    let started = Instant::now();
    other.publish("other", &event(2), 0, None).expect("the other writer gets the lock once sqld takes it back");
    let waited = started.elapsed();
    println!("the other writer waited {:.2} s for the transaction's lock", waited.as_secs_f64());
    assert!(waited >= Duration::from_secs(4), "it waited for the held lock: {waited:?}");
    let committed = tx.commit();
    assert!(matches!(&committed, Err(Error::Database(m)) if m.contains("5 s")), "{committed:?}");
    let lease = claim(&other, "w").expect("the other writer's message");
    assert_eq!(lease.group_id, "other");
    other.ack(&lease).unwrap();
    assert!(claim(&other, "w").is_none(), "nothing of the rolled-back transaction");
    // The holder's transport goes on working.
    holder.publish("after", &event(3), 0, None).unwrap();
    assert_eq!(claim(&holder, "w").unwrap().group_id, "after");
}
