//! Many workers in one process draining one file: every message handled exactly once, in
//! FIFO order within its group, and never two messages of one group in flight at once.
//! The clock stands still, so no lease ever lapses and every claim's lease must be acked.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{file, temp_db, Raw, TestClock};
use harel_transport::{AsyncTransport, Lease, Synchronous, Transport};

const GROUPS: usize = 40;
const PER_GROUP: usize = 25;
const TOTAL: usize = GROUPS * PER_GROUP;
const V: f64 = 30.0;

fn group(g: usize) -> String {
    format!("g{g:02}")
}

fn message(g: usize, i: usize) -> String {
    format!(r#"{{"kind":"tick","id":"{g}-{i}","data":{{"g":{g},"i":{i}}}}}"#)
}

/// Publishes round by round, so every group's messages are spread over the whole file.
fn fill(t: &Transport) {
    for i in 0..PER_GROUP {
        for g in 0..GROUPS {
            t.publish(&group(g), &message(g, i), 0, None).unwrap();
        }
    }
}

fn index_of(lease: &Lease) -> usize {
    let v: serde_json::Value = serde_json::from_str(&lease.event).unwrap();
    assert_eq!(v["id"], format!("{}-{}", v["data"]["g"], v["data"]["i"]));
    assert_eq!(lease.group_id, group(v["data"]["g"].as_u64().unwrap() as usize), "the event is its group's");
    v["data"]["i"].as_u64().unwrap() as usize
}

#[derive(Default)]
struct GroupState {
    in_flight: Option<i64>,
    next: usize,
    last_seq: i64,
}

/// What the workers saw, checked as they go: a claim of a group already in flight, or a
/// message out of its group's order, fails the test. A worker marks a message in flight
/// after its claim returns and clears it before acking, inside the real lease, so a
/// clash seen here is a clash in the queue.
#[derive(Default)]
struct Ledger {
    groups: Mutex<HashMap<String, GroupState>>,
    done: AtomicUsize,
    by_worker: Mutex<HashMap<String, usize>>,
}

impl Ledger {
    fn claimed(&self, lease: &Lease) {
        let i = index_of(lease);
        let mut groups = self.groups.lock().unwrap();
        let state = groups.entry(lease.group_id.clone()).or_default();
        assert_eq!(state.in_flight, None, "{} claimed while seq {:?} is in flight", lease.seq, state.in_flight);
        assert_eq!(i, state.next, "group {} out of order", lease.group_id);
        assert!(lease.seq > state.last_seq, "seqs rise within a group");
        state.in_flight = Some(lease.seq);
        state.last_seq = lease.seq;
    }

    fn acking(&self, lease: &Lease) {
        let mut groups = self.groups.lock().unwrap();
        let state = groups.get_mut(&lease.group_id).unwrap();
        assert_eq!(state.in_flight, Some(lease.seq));
        state.in_flight = None;
        state.next += 1;
        *self.by_worker.lock().unwrap().entry(lease.worker_id.clone()).or_default() += 1;
    }

    fn acked(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
    }

    fn finished(&self) -> bool {
        self.done.load(Ordering::SeqCst) >= TOTAL
    }

    fn check_complete(&self, path: &str) {
        assert_eq!(self.done.load(Ordering::SeqCst), TOTAL);
        let groups = self.groups.lock().unwrap();
        assert_eq!(groups.len(), GROUPS);
        assert!(groups.values().all(|s| s.next == PER_GROUP && s.in_flight.is_none()));
        let raw = Raw::open(path);
        assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), 0);
        assert_eq!(raw.count("SELECT count(*) FROM harel_transport_groups"), 0, "drained groups are dropped");
        println!("messages per worker: {:?}", self.by_worker.lock().unwrap());
    }
}

fn options(clock: &TestClock) -> harel_transport::Options {
    let mut o = clock.options();
    o.synchronous(Synchronous::Normal).busy_timeout(60.0).unwrap();
    o
}

fn work(t: &Transport, worker: &str, ledger: &Ledger) {
    while !ledger.finished() {
        match t.claim(worker, V, 0, &[]).expect("claim") {
            Some(lease) => {
                ledger.claimed(&lease);
                std::thread::yield_now(); // "handling": let others try the same group meanwhile
                ledger.acking(&lease);
                t.ack(&lease).expect("ack: the lease cannot have lapsed");
                ledger.acked();
            }
            None => std::thread::yield_now(),
        }
    }
}

#[test]
fn eight_threads_share_one_transport() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = Arc::new(Transport::open(&path, &options(&clock)).unwrap());
    fill(&t);
    let ledger = Arc::new(Ledger::default());
    let workers: Vec<_> = (0..8)
        .map(|n| {
            let (t, ledger) = (Arc::clone(&t), Arc::clone(&ledger));
            std::thread::spawn(move || work(&t, &format!("w{n}"), &ledger))
        })
        .collect();
    for w in workers {
        w.join().expect("a worker thread failed");
    }
    ledger.check_complete(&path);
}

#[test]
fn four_threads_with_a_transport_each() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    fill(&file(&path, &clock));
    let ledger = Ledger::default();
    std::thread::scope(|s| {
        for n in 0..4 {
            let (path, clock, ledger) = (&path, &clock, &ledger);
            s.spawn(move || {
                let t = Transport::open(path, &options(clock)).unwrap();
                work(&t, &format!("w{n}"), ledger);
            });
        }
    });
    ledger.check_complete(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn async_tasks_share_one_async_transport() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = Arc::new(AsyncTransport::open(&path, &options(&clock)).await.unwrap());
    for i in 0..PER_GROUP {
        for g in 0..GROUPS {
            t.publish(&group(g), &message(g, i), 0, None).await.unwrap();
        }
    }
    let ledger = Arc::new(Ledger::default());
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let (t, ledger) = (Arc::clone(&t), Arc::clone(&ledger));
            tokio::spawn(async move {
                let worker = format!("task{n}");
                while !ledger.finished() {
                    match t.claim(&worker, V, 0, &[]).await.expect("claim") {
                        Some(lease) => {
                            ledger.claimed(&lease);
                            tokio::task::yield_now().await;
                            ledger.acking(&lease);
                            t.ack(&lease).await.expect("ack");
                            ledger.acked();
                        }
                        None => tokio::task::yield_now().await,
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a worker task failed");
    }
    // Raw blocks on a runtime of its own: not from inside this one.
    tokio::task::spawn_blocking(move || ledger.check_complete(&path)).await.unwrap();
}
