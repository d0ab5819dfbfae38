//! Limits under contention (issue 39, docs/queue.md "Limits"): 8 processes of 4 workers
//! each on one file. The test binary runs itself again, one `#[ignore]`d test (`worker`)
//! per process, told what to do through the environment.
//!
//! Each worker logs, per lease: the instant before its claim was called, the instant after
//! it returned and the instant before its ack (system time in nanoseconds, one clock for
//! every process on the machine). The lease was granted between the first two, and the
//! window from the second to the third lies inside it: more windows overlapping than the
//! limit are more leases at once than the limit.

use harel_transport_testkit as common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::procs::{env, nanos};
use common::{temp_db, this_test_binary, ChildGuard};
use harel_transport::{Limit, Message, Options, Rate, Synchronous, Transport, Wait};

const PROCESSES: usize = 8;
const WORKERS: usize = 4;

fn open(path: &str) -> Transport {
    let mut o = Options::new();
    o.synchronous(Synchronous::Normal).busy_timeout(60.0).unwrap();
    Transport::open(path, &o).expect("open")
}

/// A lease as a worker logged it: (before the claim, after it, before the ack), in ns.
type Logged = (u128, u128, u128);

/// Publishes `groups` groups of `per_group` messages under `routing_key`.
fn publish(t: &Transport, routing_key: &str, groups: usize, per_group: usize) {
    let names: Vec<String> = (0..groups).map(|g| format!("{routing_key}{g}")).collect();
    let event = r#"{"kind":"tick"}"#;
    for _ in 0..per_group {
        let batch: Vec<Message<'_>> = names
            .iter()
            .map(|g| Message {
                group_id: g,
                event_json: event,
                priority: 0,
                routing_key: Some(routing_key),
                headers: None,
            })
            .collect();
        t.publish_many(&batch).unwrap();
    }
}

/// Runs PROCESSES worker processes of `role` on `path` until they end; every lease they logged.
fn run_workers(role: &str, path: &str, seconds: u64) -> Vec<Logged> {
    let children: Vec<ChildGuard> = (0..PROCESSES)
        .map(|_| {
            let mut command = this_test_binary("worker");
            command.env("HAREL_TEST_ROLE", role).env("HAREL_TEST_DB", path);
            command.env("HAREL_TEST_SECONDS", seconds.to_string());
            ChildGuard(command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn a worker"))
        })
        .collect();
    let mut logged = Vec::new();
    for mut child in children {
        let out = BufReader::new(child.0.stdout.take().unwrap());
        for line in out.lines().map(Result::unwrap) {
            if let Some(rest) = line.strip_prefix("LEASE ") {
                let n: Vec<u128> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
                logged.push((n[0], n[1], n[2]));
            }
        }
        assert!(child.0.wait().unwrap().success(), "a worker failed");
    }
    logged
}

/// The most windows (after the claim, before the ack) open at one instant.
fn most_at_once(logged: &[Logged]) -> usize {
    let mut edges: Vec<(u128, i32)> = logged.iter().flat_map(|&(_, from, to)| [(from, 1), (to, -1)]).collect();
    edges.sort_by_key(|&(at, step)| (at, step)); // an end before a start at the same instant
    let (mut open, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        open += step;
        most = most.max(open);
    }
    most as usize
}

/// A concurrency limit of 3 on a key: 32 workers in 8 processes never hold more than 3 of
/// its leases at once, by their own logs and by the rows sampled meanwhile; the groups
/// without the key are served meanwhile.
#[test]
fn thirty_two_workers_never_hold_more_than_a_concurrency_limit() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let t = open(&path);
    t.set_limit("k", Limit { concurrency: Some(3), rate: None }).unwrap();
    publish(&t, "k", 20, 10);
    publish(&t, "free", 20, 10);
    let sampler = {
        let path = path.clone();
        std::thread::spawn(move || {
            let t = open(&path);
            let (mut most, started) = (0, Instant::now());
            while started.elapsed() < Duration::from_secs(120) {
                let limits = t.limits().unwrap();
                most = most.max(limits[0].in_use);
                if t.stats().unwrap().messages == 0 {
                    return most;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            panic!("not drained in two minutes");
        })
    };
    let logged = run_workers("concurrency", &path, 0);
    let sampled = sampler.join().unwrap();
    assert_eq!(logged.len(), 400, "every message once");
    let keyed: Vec<Logged> = logged.iter().copied().filter(|l| l.0 > 0).collect();
    let at_once = most_at_once(&keyed);
    let n = keyed.len();
    println!("concurrency 3: {n} leases of k; at most {at_once} at once by the logs, {sampled} by the rows");
    assert!(at_once <= 3 && sampled <= 3, "{at_once} by the logs, {sampled} by the rows");
    assert!(at_once >= 2, "the limit was reached ({at_once}): else this test proves little");
}

/// A rate limit of 20 a second with a burst of 5: over a 30 s run of 32 waiting workers,
/// every window t holds at most 5 + 20·t of the key's grants.
#[test]
fn thirty_two_workers_take_at_most_a_rate_limit() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let t = open(&path);
    t.set_limit("r", Limit { concurrency: None, rate: Some(Rate { per_second: 20.0, burst: 5.0 }) }).unwrap();
    publish(&t, "r", 100, 10);
    let logged = run_workers("rate", &path, 30);
    let mut grants: Vec<(u128, u128)> = logged.iter().map(|&(before, after, _)| (before, after)).collect();
    grants.sort_by_key(|&(_, after)| after);
    // Leases i..=j (by return) were granted in [the earliest call among them, j's return].
    let mut worst = (0.0f64, 0usize, 0.0f64);
    for i in 0..grants.len() {
        let mut earliest = u128::MAX;
        for j in i..grants.len() {
            earliest = earliest.min(grants[j].0);
            let t = (grants[j].1 - earliest) as f64 / 1e9;
            let (count, bound) = (j - i + 1, 5.0 + 20.0 * t);
            assert!(count as f64 <= bound, "{count} grants within {t:.3} s: at most {bound:.1}");
            if count as f64 / bound > worst.0 {
                worst = (count as f64 / bound, count, t);
            }
        }
    }
    println!(
        "rate 20/s, burst 5: {} grants in 30 s; the fullest window: {} in {:.3} s ({:.0}% of its bound)",
        grants.len(),
        worst.1,
        worst.2,
        worst.0 * 100.0
    );
    // 605 at most; half of it shows the workers kept the key busy, on a loaded machine too
    assert!(grants.len() >= 300, "the workers kept the key busy: {} grants", grants.len());
}

#[test]
#[ignore = "run as a process of its own by the tests above"]
fn worker() {
    let _limit = common::time_limit();
    let Ok(role) = std::env::var("HAREL_TEST_ROLE") else {
        return;
    };
    let path = env("HAREL_TEST_DB");
    let seconds: u64 = env("HAREL_TEST_SECONDS").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let threads: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (path, role) = (path.clone(), role.clone());
            std::thread::spawn(move || {
                let t = open(&path);
                let id = format!("{}-{w}", std::process::id());
                let mut log = Vec::new();
                loop {
                    let before = nanos();
                    let wait = Wait::up_to(Duration::from_millis(300));
                    let Some(lease) = t.claim_wait(&id, 30.0, 0, &[], &wait).unwrap() else {
                        let drained = role == "concurrency" && t.stats().unwrap().messages == 0;
                        if drained || Instant::now() >= deadline {
                            return log;
                        }
                        continue;
                    };
                    let after = nanos();
                    if role == "concurrency" {
                        std::thread::sleep(Duration::from_millis(2)); // the work
                    }
                    let keyed = lease.group_id.starts_with('k') || role == "rate";
                    log.push((if keyed { before } else { 0 }, after, nanos()));
                    t.ack(&lease).unwrap();
                    if role == "rate" && Instant::now() >= deadline {
                        return log;
                    }
                }
            })
        })
        .collect();
    println!(); // libtest has printed "test worker ... " on this line
    for thread in threads {
        for (before, after, acked) in thread.join().unwrap() {
            println!("LEASE {before} {after} {acked}");
        }
    }
}
