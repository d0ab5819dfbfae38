//! What only a local file shows of the metrics (the counts after known operations are a
//! contract check, tests/common/contract.rs): busy retries while another connection holds
//! the write lock, and the wait in the latency of the call that met it.

use harel_transport_testkit as common;

use std::time::{Duration, Instant};

use common::{event, temp_db, Raw};
use harel_transport::{Options, Transport, LATENCY_BOUNDS};

#[test]
fn a_publish_that_meets_a_held_write_lock_counts_its_retries_and_its_wait() {
    let (_dir, path) = temp_db();
    let t = Transport::open(&path, &Options::new()).unwrap();
    assert_eq!(t.metrics().busy_retries, 0);
    let raw = Raw::open(&path);
    raw.batch("BEGIN IMMEDIATE");
    // How long the publish surely waited: from its start (on a busy machine, maybe well
    // after the thread's spawn) to the lock's release.
    let waited = std::thread::scope(|s| {
        let publish = s.spawn(|| (Instant::now(), t.publish("g", &event(0), 0, None)));
        std::thread::sleep(Duration::from_millis(100));
        let freed = Instant::now();
        raw.batch("COMMIT");
        let (started, published) = publish.join().unwrap();
        published.expect("the publish goes through once the lock is free");
        freed.saturating_duration_since(started).as_secs_f64()
    });
    let m = t.metrics();
    assert!(m.busy_retries > 0 || waited == 0.0, "{m:?}");
    assert_eq!((m.published, m.latency.publish.count), (1, 1));
    let latency = &m.latency.publish;
    assert!(latency.sum >= waited, "the wait ({waited} s) is in the publish's latency: {latency:?}");
    for (bound, count) in LATENCY_BOUNDS.iter().zip(&latency.buckets) {
        assert!(*bound >= waited || *count == 0, "waited {waited} s, counted at most {bound} s: {latency:?}");
    }
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
