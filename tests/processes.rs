//! Several OS processes on one file. The test binary runs itself again, one `#[ignore]`d
//! test (`worker`) per process, told what to do through the environment.
//!
//! Draining: each worker writes a line per message to its own log: the message, the
//! instant after its claim returned and the instant before it acked (system time in
//! nanoseconds, one clock for every process on the machine). That window lies inside the
//! real lease, so two windows of one group that overlap are two leases that overlapped.
//! The queue's own clock is injected and stands still: no lease lapses while draining.

use harel_transport_testkit as common;

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::procs::{env, nanos};
use common::{expect_success, file, temp_db, this_test_binary, ChildGuard, Raw, TestClock};
use harel_transport::{Delivery, Error, Lease, Message, Options, Synchronous, Transport};

const GROUPS: usize = 40;
const PER_GROUP: usize = 25;

fn message(g: usize, i: usize) -> String {
    format!(r#"{{"kind":"tick","id":"{g}-{i}","data":{{"g":{g},"i":{i}}}}}"#)
}

/// The worker's transport: the clock stands at HAREL_TEST_CLOCK.
fn worker_transport(path: &str) -> Transport {
    let now: f64 = env("HAREL_TEST_CLOCK").parse().unwrap();
    let mut o = Options::new();
    o.clock(move || now).synchronous(Synchronous::Normal).busy_timeout(60.0).unwrap();
    Transport::open(path, &o).expect("open in a worker process")
}

fn spawn_worker(role: &str, path: &str, clock: f64, extra: &[(&str, String)]) -> Command {
    let mut command = this_test_binary("worker");
    command.env("HAREL_TEST_ROLE", role).env("HAREL_TEST_DB", path).env("HAREL_TEST_CLOCK", clock.to_string());
    for (k, v) in extra {
        command.env(k, v);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// The `keyed` role: publishes KEYS messages, key i to group i % 50, in a shuffled order of
/// its own (each process another), alone and in batches of 10; prints how many it stored.
fn publish_keys(t: &Transport, id: &str) {
    let seed: usize = id.bytes().map(usize::from).sum();
    let mut order: Vec<usize> = (0..KEYS).collect();
    for i in 0..KEYS {
        order.swap(i, (i * 7919 + seed * 104_729) % KEYS);
    }
    let (keys, events): (Vec<String>, Vec<String>) =
        order.iter().map(|i| (format!("key-{i}"), format!(r#"{{"i":{i},"by":"{id}"}}"#))).unzip();
    let groups: Vec<String> = order.iter().map(|i| format!("g{}", i % 50)).collect();
    let item = |j: usize| {
        (
            Message { group_id: &groups[j], event_json: &events[j], priority: 0, routing_key: None, headers: None },
            Delivery { key: Some(keys[j].as_str()), ..Delivery::default() },
        )
    };
    let mut stored = 0;
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(10) {
        let outcomes = if chunk[0] % 20 == 0 {
            t.publish_many_with(&chunk.iter().map(|&j| item(j)).collect::<Vec<_>>()).unwrap()
        } else {
            chunk.iter().map(|&j| t.publish_with(item(j).0, item(j).1).unwrap()).collect()
        };
        stored += outcomes.iter().filter(|p| !p.duplicate).count();
    }
    println!("\nSTORED {stored}");
}

const KEYS: usize = 1000;

/// One process's part, by HAREL_TEST_ROLE:
/// - `drain`: claim and ack until the queue is empty, logging to HAREL_TEST_LOG;
/// - `hold`: claim one message (visibility HAREL_TEST_VISIBILITY), print `HELD <seq>`, sleep;
/// - `try`: claim once, print `GOT <seq>` or `NONE`.
#[test]
#[ignore = "a worker process for the tests of this file; does nothing on its own"]
fn worker() {
    let _limit = common::time_limit();
    let Ok(role) = std::env::var("HAREL_TEST_ROLE") else {
        return;
    };
    let path = env("HAREL_TEST_DB");
    let id = env("HAREL_TEST_WORKER_ID");
    let t = worker_transport(&path);
    match role.as_str() {
        "drain" => drain(&t, &path, &id),
        "hold" => {
            let visibility: f64 = env("HAREL_TEST_VISIBILITY").parse().unwrap();
            let lease = t.claim(&id, visibility, 0, &[]).unwrap().expect("something to hold");
            println!("\nHELD {}", lease.seq); // libtest has printed "test worker ... " on this line
            std::io::stdout().flush().unwrap();
            std::thread::sleep(std::time::Duration::from_secs(120)); // killed long before
        }
        "try" => match t.claim(&id, 30.0, 0, &[]).unwrap() {
            Some(lease) => println!("\nGOT {}", lease.seq),
            None => println!("\nNONE"),
        },
        "keyed" => publish_keys(&t, &id),
        other => panic!("unknown role {other}"),
    }
}

fn drain(t: &Transport, path: &str, id: &str) {
    let raw = Raw::open(path);
    let mut log = String::new();
    loop {
        match t.claim(id, 30.0, 0, &[]).expect("claim") {
            Some(lease) => {
                let claimed = nanos();
                std::thread::yield_now();
                let acking = nanos();
                log.push_str(&format!("{} {} {} {claimed} {acking}\n", lease.group_id, lease.seq, lease.event));
                t.ack(&lease).expect("ack: the lease cannot have lapsed");
            }
            // Empty now, but another process may still hold a message with more behind it.
            None if raw.count("SELECT count(*) FROM harel_transport_messages") == 0 => break,
            None => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
    std::fs::write(env("HAREL_TEST_LOG"), log).unwrap();
}

struct Handled {
    seq: i64,
    index: usize,
    claimed: u128,
    acking: u128,
}

#[test]
fn four_processes_drain_one_file_exactly_once_without_overlap() {
    let _limit = common::time_limit();
    let (dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);
    for i in 0..PER_GROUP {
        for g in 0..GROUPS {
            t.publish(&format!("g{g}"), &message(g, i), 0, None).unwrap();
        }
    }
    drop(t);

    let logs: Vec<_> = (0..4).map(|n| dir.path().join(format!("worker-{n}.log"))).collect();
    let children: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(n, log)| {
            let extra =
                [("HAREL_TEST_WORKER_ID", format!("p{n}")), ("HAREL_TEST_LOG", log.to_str().unwrap().to_owned())];
            spawn_worker("drain", &path, 1000.0, &extra).spawn().expect("spawn a worker")
        })
        .collect();
    // Meanwhile a look inside, over and over: it must never fail or hold the workers up
    // (a busy timeout of 0 would fail at once if it waited for the write lock).
    let stop = std::sync::atomic::AtomicBool::new(false);
    let looks = std::thread::scope(|s| {
        let looker = s.spawn(|| {
            let mut o = clock.options();
            o.busy_timeout(0.0).unwrap().create_schema(false);
            let t = Transport::open(&path, &o).unwrap();
            let (mut looks, mut last) = (0, u64::MAX);
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let stats = t.stats().expect("stats while workers drain");
                assert_eq!(stats.ready + stats.leased + stats.parked, stats.groups, "{stats:?}");
                assert!(stats.messages <= last, "messages only go down while draining: {stats:?}");
                last = stats.messages;
                let leased = t.groups(Some(harel_transport::GroupState::Leased), None, 100).expect("groups");
                assert!(leased.items.len() <= 4, "at most one lease per worker: {:?}", leased.items);
                t.peek("g0", None, 10).expect("peek");
                looks += 1;
            }
            looks
        });
        for (n, child) in children.into_iter().enumerate() {
            expect_success(child, &format!("worker {n}"));
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        looker.join().expect("the looker")
    });
    println!("{looks} looks inside while the workers drained");
    assert!(looks > 0);

    let mut by_group: BTreeMap<String, Vec<Handled>> = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut per_worker = Vec::new();
    for log in &logs {
        let text = std::fs::read_to_string(log).expect("a worker's log");
        per_worker.push(text.lines().count());
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let event: serde_json::Value = serde_json::from_str(f[2]).unwrap();
            let (g, index) =
                (event["data"]["g"].as_u64().unwrap() as usize, event["data"]["i"].as_u64().unwrap() as usize);
            assert_eq!(f[0], format!("g{g}"), "the event is its group's");
            assert!(seen.insert((g, index)), "g{g} message {index} was handled twice");
            let handled = Handled {
                seq: f[1].parse().unwrap(),
                index,
                claimed: f[3].parse().unwrap(),
                acking: f[4].parse().unwrap(),
            };
            by_group.entry(f[0].to_owned()).or_default().push(handled);
        }
    }
    println!("messages per process: {per_worker:?}");
    assert_eq!(seen.len(), GROUPS * PER_GROUP, "every message handled once");
    for (g, mut handled) in by_group {
        handled.sort_by_key(|h| h.claimed);
        for pair in handled.windows(2) {
            assert!(
                pair[0].acking <= pair[1].claimed,
                "{g}: seq {} claimed while seq {} was in flight",
                pair[1].seq,
                pair[0].seq
            );
            assert!(pair[0].seq < pair[1].seq, "{g}: out of FIFO order");
        }
        assert_eq!(
            handled.iter().map(|h| h.index).collect::<Vec<_>>(),
            (0..PER_GROUP).collect::<Vec<_>>(),
            "{g}: FIFO"
        );
    }
    let raw = Raw::open(&path);
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), 0);
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_groups"), 0);
}

/// A worker holding a lease is killed (SIGKILL). While its lease runs nobody gets the
/// group; once it has lapsed, of several processes claiming at once exactly one gets the
/// message, and the dead worker's lease is lost. Time moves by the processes' clocks.
#[test]
fn a_killed_workers_message_goes_to_exactly_one_new_holder_after_its_lease() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);
    t.publish("g", &message(0, 0), 0, None).unwrap();
    t.publish("g", &message(0, 1), 0, None).unwrap();

    let extra = [("HAREL_TEST_WORKER_ID", "holder".to_owned()), ("HAREL_TEST_VISIBILITY", "2".to_owned())];
    let mut holder = ChildGuard(spawn_worker("hold", &path, 1000.0, &extra).spawn().unwrap());
    let mut lines = BufReader::new(holder.0.stdout.take().unwrap()).lines();
    let held: i64 = loop {
        let line = lines.next().expect("the holder ended before it held a lease").unwrap();
        if let Some(seq) = line.strip_prefix("HELD ") {
            break seq.parse().unwrap();
        }
    };
    holder.0.kill().expect("SIGKILL the holder");
    holder.0.wait().unwrap();
    let raw = Raw::open(&path);
    let row =
        |seq: i64| raw.rows(&format!("SELECT locked_by, lock_expiry FROM harel_transport_messages WHERE seq = {seq}"));
    assert_eq!(row(held), [["holder", "1002"]], "the dead worker's lease outlives it");

    let try_all = |now: f64| -> Vec<String> {
        let children: Vec<_> = (0..3)
            .map(|n| spawn_worker("try", &path, now, &[("HAREL_TEST_WORKER_ID", format!("new{n}"))]).spawn().unwrap())
            .collect();
        children
            .into_iter()
            .map(|c| {
                let out = expect_success(c, "a claiming process");
                out.lines().find(|l| l.starts_with("GOT ") || *l == "NONE").expect("an answer").to_owned()
            })
            .collect()
    };
    assert_eq!(try_all(1002.0), ["NONE"; 3], "the lease runs to 1002 inclusive; nor is the next message given out");
    let answers = try_all(1003.0);
    let got: Vec<usize> = (0..3).filter(|&n| answers[n] != "NONE").collect();
    assert_eq!(got.len(), 1, "exactly one new holder: {answers:?}");
    assert_eq!(answers[got[0]], format!("GOT {held}"), "the same message, not the one behind it");
    let new_holder = format!("new{}", got[0]);
    assert_eq!(row(held), [[new_holder.as_str(), "1033"]]);

    clock.advance(3.0);
    let dead = Lease {
        seq: held,
        group_id: "g".into(),
        event: message(0, 0),
        worker_id: "holder".into(),
        lock_expiry: 1002.0,
        attempts: 0,
        headers: Default::default(),
    };
    assert!(matches!(t.ack(&dead), Err(Error::LeaseLost(_))), "the dead worker's lease is lost");
    t.ack(&Lease { worker_id: new_holder, ..dead }).expect("the new holder acks");
    assert_eq!(t.claim("w", 30.0, 0, &[]).unwrap().unwrap().event, message(0, 1));
}

/// 8 processes publish the same 1,000 keys at once, each in its own order: 1,000 messages
/// are stored, each key once, and the processes' own counts of what they stored add up.
#[test]
fn eight_processes_publishing_the_same_keys_store_each_once() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    drop(file(&path, &TestClock::at(1000.0)));
    let children: Vec<_> = (0..8)
        .map(|w| {
            let mut command = spawn_worker("keyed", &path, 1000.0, &[("HAREL_TEST_WORKER_ID", format!("p{w}"))]);
            command.spawn().expect("spawn a publisher")
        })
        .collect();
    let mut stored = 0;
    for child in children {
        let out = expect_success(child, "a publishing process");
        let line = out.lines().find_map(|l| l.strip_prefix("STORED ")).unwrap_or_else(|| panic!("no count: {out}"));
        stored += line.trim().parse::<usize>().unwrap();
    }
    let raw = Raw::open(&path);
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), KEYS as i64, "each key's message once");
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_keys"), KEYS as i64);
    assert_eq!(stored, KEYS, "the processes' own counts of what they stored add up");
}
