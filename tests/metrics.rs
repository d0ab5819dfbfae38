//! What only a local file shows of the metrics (the counts after known operations are a
//! contract check, tests/common/contract.rs): busy retries while another connection holds
//! the write lock, and the wait in the latency of the call that met it.

use harel_transport_testkit as common;

use std::time::Duration;

use common::{event, temp_db, Raw};
use harel_transport::{Options, Transport, LATENCY_BOUNDS};

#[test]
fn a_publish_that_meets_a_held_write_lock_counts_its_retries_and_its_wait() {
    let (_dir, path) = temp_db();
    let t = Transport::open(&path, &Options::new()).unwrap();
    assert_eq!(t.metrics().busy_retries, 0);
    let raw = Raw::open(&path);
    raw.batch("BEGIN IMMEDIATE");
    std::thread::scope(|s| {
        let publish = s.spawn(|| t.publish("g", &event(0), 0, None));
        std::thread::sleep(Duration::from_millis(100));
        raw.batch("COMMIT");
        publish.join().unwrap().expect("the publish goes through once the lock is free");
    });
    let m = t.metrics();
    assert!(m.busy_retries > 0, "{m:?}");
    assert_eq!((m.published, m.latency.publish.count), (1, 1));
    assert!(m.latency.publish.sum >= 0.1, "the wait is in the publish's latency: {:?}", m.latency.publish);
    let under_50ms = LATENCY_BOUNDS.iter().position(|&b| b == 0.05).unwrap();
    assert_eq!(m.latency.publish.buckets[under_50ms], 0, "{:?}", m.latency.publish);
}

#[test]
fn a_transport_without_contention_counts_no_busy_retries() {
    let (_dir, path) = temp_db();
    let t = Transport::open(&path, &Options::new()).unwrap();
    for n in 0..20 {
        t.publish("g", &event(n), 0, None).unwrap();
        let lease = t.claim("w", 30.0, 0, &[]).unwrap().unwrap();
        t.ack(&lease).unwrap();
    }
    let m = t.metrics();
    assert_eq!((m.busy_retries, m.published, m.claimed, m.acked), (0, 20, 20, 20));
}
