//! Waiting claims and watches on a local file, where only a file shows it: a wake by
//! another process's commit (heard through the WAL), idle waiters that take no write lock,
//! idle watches that never fire, and a lease whose end the queue does not record.
//! The other processes are this test binary run again (`publisher`) and python3 with its
//! own sqlite3 (holding the write lock).

use harel_transport_testkit as common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::poll::{readable_within, work_within};
use common::procs::{env, nanos, tagged};
use common::{event, expect_success, temp_db, this_test_binary, ChildGuard};
use harel_transport::{AsyncTransport, Message, Options, Transport, Wait};

const V: f64 = 30.0;

fn open(path: &str) -> Transport {
    let mut options = Options::new();
    options.busy_timeout(10.0).unwrap();
    Transport::open(path, &options).expect("open a local file")
}

/// The other process: after HAREL_TEST_DELAY_MS, prints `SENT <ns>` (system time, one clock
/// for every process) and publishes one message.
#[test]
#[ignore = "a publisher process for the tests of this file; does nothing on its own"]
fn publisher() {
    let _limit = common::time_limit();
    let Ok(path) = std::env::var("HAREL_TEST_DB") else { return };
    let t = open(&path);
    std::thread::sleep(Duration::from_millis(env("HAREL_TEST_DELAY_MS").parse().unwrap()));
    println!("SENT {}", nanos());
    t.publish("g", &event(1), 0, None).unwrap();
}

#[test]
fn a_waiting_claim_is_woken_by_another_process_publishing() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let t = open(&path);
    for round in 0..3 {
        let mut command = this_test_binary("publisher");
        command.env("HAREL_TEST_DB", &path).env("HAREL_TEST_DELAY_MS", "400").stdout(Stdio::piped());
        let child = command.spawn().expect("spawn the publisher");
        let started = Instant::now();
        let lease = t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(30))).unwrap();
        let returned = nanos();
        // libtest writes "test publisher ... " before the line
        let out = expect_success(child, "the publisher");
        let sent: Vec<u128> = tagged(
            &out.split("SENT ").skip(1).map(|l| format!("SENT {}", l.lines().next().unwrap_or(""))).collect::<Vec<_>>(),
            "SENT",
        );
        let lease = lease.expect("woken with the other process's message");
        t.ack(&lease).unwrap();
        let latency_ms = (returned - sent[0]) as f64 / 1e6;
        println!("round {round}: woken {latency_ms:.2} ms after the other process began its publish");
        assert!(started.elapsed() < Duration::from_secs(10), "woken by the commit, not by a poll or the timeout");
        assert!(latency_ms < 900.0, "heard, not found by the 1 s safety poll: {latency_ms} ms");
    }
}

#[test]
fn idle_waiters_take_no_write_lock_and_commit_nothing() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let waiters: Vec<Transport> = (0..8).map(|_| open(&path)).collect();
    let wal = format!("{path}-wal");
    let started = Instant::now();
    let outcomes = std::thread::scope(|s| {
        let waiting: Vec<_> = waiters
            .iter()
            .map(|t| s.spawn(move || t.claim_many("w", V, 0, &[], 10, &Wait::up_to(Duration::from_millis(3500)))))
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let wal_before = std::fs::metadata(&wal).map(|m| m.len()).unwrap();
        // Another program takes the write lock and keeps it past the waits' end: a waiter that
        // began a write transaction while idle would be held until after it (busy timeout 10 s).
        let holder = Command::new("python3")
            .args([
                "-c",
                "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); \
                          c.execute('BEGIN IMMEDIATE'); print('HELD', flush=True); time.sleep(5)",
                &path,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut holder = ChildGuard(holder);
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.0.stdout.as_mut().unwrap()), &mut line)
            .unwrap();
        assert_eq!(line.trim(), "HELD");
        let outcomes: Vec<_> = waiting.into_iter().map(|w| w.join().unwrap()).collect();
        let wal_after = std::fs::metadata(&wal).map(|m| m.len()).unwrap();
        assert_eq!(wal_before, wal_after, "idle waiters wrote nothing");
        outcomes
    });
    let took = started.elapsed();
    assert!(
        outcomes.iter().all(|o| matches!(o, Ok(v) if v.is_empty())),
        "{:?}",
        outcomes.iter().filter(|o| o.is_err()).collect::<Vec<_>>()
    );
    assert!(
        took < Duration::from_millis(4500),
        "every waiter returned at its deadline, none held by the lock: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_async_wait_leaves_nothing_behind_and_async_waiters_share_a_transport() {
    let (_dir, path) = temp_db();
    let t = std::sync::Arc::new(AsyncTransport::open(&path, &Options::new()).await.unwrap());
    let wait = Wait::up_to(Duration::from_secs(30));
    let dropped = tokio::time::timeout(Duration::from_millis(300), t.claim_wait("w", V, 0, &[], &wait)).await;
    assert!(dropped.is_err(), "the future was dropped while it waited");
    let waiters: Vec<_> = (0..4)
        .map(|i| {
            let (t, wait) = (t.clone(), wait.clone());
            tokio::spawn(async move { t.claim_many(&format!("w{i}"), V, 0, &[], 10, &wait).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    t.publish_many(&[
        Message { group_id: "a", event_json: &event(0), priority: 0, routing_key: None, headers: None },
        Message { group_id: "b", event_json: &event(1), priority: 0, routing_key: None, headers: None },
    ])
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    t.interrupt();
    let mut claimed = 0;
    for w in waiters {
        match tokio::time::timeout(Duration::from_secs(10), w).await.expect("interrupted at once").unwrap() {
            Ok(leases) => claimed += leases.len(),
            Err(harel_transport::Error::Interrupted(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(claimed, 2, "both messages claimed, each once");
    assert!(started.elapsed() < Duration::from_secs(10));
    let s = t.stats().await.unwrap();
    assert_eq!(s.leased, 2, "the dropped wait left no lease of its own");
}

/// Serves `w` as an event loop would for `how_long`, asserting a claim would find nothing.
fn serve_idle(t: &Transport, w: &harel_transport::Watch, how_long: Duration) {
    assert!(work_within(w, how_long, || t.rearm(w).unwrap()).is_none(), "nothing to claim");
}

#[test]
fn a_watch_hears_another_process_publishing_and_idles_without_a_wake() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let t = open(&path);
    let w = t.watch(0, &[]).unwrap();
    assert!(!t.rearm(&w).unwrap());
    assert!(readable_within(&w, Duration::from_millis(1500)).is_none(), "an idle watch of an empty queue never fires");
    for round in 0..3 {
        let mut command = this_test_binary("publisher");
        command.env("HAREL_TEST_DB", &path).env("HAREL_TEST_DELAY_MS", "300").stdout(Stdio::piped());
        let child = command.spawn().expect("spawn the publisher");
        let took = work_within(&w, Duration::from_secs(20), || t.rearm(&w).unwrap());
        expect_success(child, "the publisher");
        let took = took.expect("the other process's message");
        println!("round {round}: work seen {took:?} after the publisher started");
        let lease = t.claim("w", V, 0, &[]).unwrap().expect("the other process's message");
        t.ack(&lease).unwrap();
        // Our own ack's WAL write is heard and looked into for about a second; then silence.
        serve_idle(&t, &w, Duration::from_millis(1500));
        assert!(readable_within(&w, Duration::from_secs(1)).is_none(), "idle again: no wake, no look");
    }
}

#[test]
fn a_watch_looks_each_second_while_a_lease_of_harels_holds_a_group() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let t = open(&path);
    t.publish("g", &event(0), 0, None).unwrap();
    // What harel 0.9's claim writes: the head locked to its expiry, the group stamped with
    // the claim's instant (not the lease's end), from another process.
    let script = "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); now=time.time(); \
                  c.execute(\"UPDATE harel_transport_messages SET locked_by='py', lock_expiry=?\", (now + 1.2,)); \
                  c.execute('UPDATE harel_transport_groups SET last_claimed_at=?', (now,)); c.close()";
    let status = Command::new("python3").args(["-c", script, &path]).status().expect("python3 runs");
    assert!(status.success());
    let w = t.watch(0, &[]).unwrap();
    let started = Instant::now();
    assert!(!t.rearm(&w).unwrap(), "leased by harel");
    let took = work_within(&w, Duration::from_secs(10), || t.rearm(&w).unwrap()).map(|_| started.elapsed());
    assert!(
        took.is_some_and(|d| d >= Duration::from_millis(1100) && d < Duration::from_secs(4)),
        "found by a look within a second of the lease's end: {took:?}"
    );
    assert!(t.claim("w", V, 0, &[]).unwrap().is_some());
}
