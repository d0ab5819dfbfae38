//! Many workers in one process draining one file: every message handled exactly once, in
//! FIFO order within its group, and never two messages of one group in flight at once.
//! The clock stands still, so no lease ever lapses and every claim's lease must be acked.
//! Also: many threads publishing through one transport.

use harel_transport_testkit as common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::drain::{fill, group, message, GroupLedger, GROUPS, PER_GROUP, TOTAL};
use common::{file, temp_db, Raw, TestClock};
use harel_transport::{AsyncTransport, Message, Synchronous, Transport};

const V: f64 = 30.0;

/// The groups' ledger (tests/common/drain.rs) and how many messages were acked.
#[derive(Default)]
struct Ledger {
    groups: GroupLedger,
    done: AtomicUsize,
}

impl Ledger {
    fn acked(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
    }

    fn finished(&self) -> bool {
        self.done.load(Ordering::SeqCst) >= TOTAL
    }

    fn check_complete(&self, path: &str) {
        assert_eq!(self.done.load(Ordering::SeqCst), TOTAL);
        self.groups.assert_complete();
        let raw = Raw::open(path);
        assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), 0);
        assert_eq!(raw.count("SELECT count(*) FROM harel_transport_groups"), 0, "drained groups are dropped");
        println!("messages per worker: {:?}", self.groups.by_worker());
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
                ledger.groups.claimed(&lease);
                std::thread::yield_now(); // "handling": let others try the same group meanwhile
                ledger.groups.acking(&lease);
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
    fill(&t, GROUPS, PER_GROUP);
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

/// Publishes from 8 threads on one transport share commits (group_commit.rs): each
/// thread publishes its own 5 groups' messages in order, one at a time and in batches;
/// every message must land once, each group in its order.
#[test]
fn eight_threads_publish_through_one_transport() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = Transport::open(&path, &options(&clock)).unwrap();
    const THREADS: usize = 8;
    std::thread::scope(|s| {
        for k in 0..THREADS {
            let t = &t;
            s.spawn(move || {
                let mine: Vec<usize> = (k..GROUPS).step_by(THREADS).collect();
                for i in 0..PER_GROUP {
                    let round: Vec<(String, String)> = mine.iter().map(|&g| (group(g), message(g, i))).collect();
                    if i % 2 == 0 {
                        for (g, m) in &round {
                            t.publish(g, m, 0, None).expect("publish");
                        }
                    } else {
                        let batch: Vec<Message> = round
                            .iter()
                            .map(|(g, m)| Message { group_id: g, event_json: m, priority: 0, routing_key: None, headers: None })
                            .collect();
                        t.publish_many(&batch).expect("publish_many");
                    }
                }
            });
        }
    });
    assert_eq!(Raw::open(&path).count("SELECT count(*) FROM harel_transport_messages"), TOTAL as i64);
    let ledger = Ledger::default();
    std::thread::scope(|s| {
        for n in 0..4 {
            let (t, ledger) = (&t, &ledger);
            s.spawn(move || work(t, &format!("w{n}"), ledger));
        }
    });
    ledger.check_complete(&path);
}

#[test]
fn four_threads_with_a_transport_each() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    fill(&file(&path, &clock), GROUPS, PER_GROUP);
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
                            ledger.groups.claimed(&lease);
                            tokio::task::yield_now().await;
                            ledger.groups.acking(&lease);
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
