//! The cost of the rules a message lives by (issue #38, `make bench-rules`), each against
//! its yardstick in the same run, on a local file at synchronous FULL, in memory (the work
//! without a sync) and on sqld, measured as pairs.rs says:
//!
//! - a publish with a unique key (each new: the message is stored) against a plain publish
//!   (target <= 1.3x);
//! - a publish whose unique key finds its message pending and replaces it, against the same
//!   plain publish (reported; the target is the stored publish's);
//! - a claim on a queue beside 10,000 paused groups (each with a message), against the
//!   claim on a queue without them (target <= 1.2x);
//! - claims that pass an expired head in each group (they dead-letter it and serve the
//!   message behind it), against claims of the same messages with nothing expired: the
//!   cost per expired message reported (no target);
//! - claim+ack with the archive on, against the same with it off (target <= 1.3x): with a
//!   day's retention (every ack copies, none prunes) and with one so short that every ack
//!   prunes what the acks before it archived (the steady state of a long-lived archive);
//! - a claim by a transport with a retry policy (each lease draws its backoff), against the
//!   same claim without one (target <= 1.2x);
//! - a claim of groups whose keys are among 100 limited keys (room to spare: the limits are
//!   read and taken), against the same claim with no limits (target <= 1.3x);
//! - a claim with 1,000 groups of a key at its limit standing before the free ones (held
//!   by the claims that met them), against a claim among 100 ready groups (target <= 2x);
//!   the one claim that holds the 1,000 reported apart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod pairs;
use pairs::{header, pair, places, row};

use harel_transport::{
    Delivery, Jitter, Limit, Message, Options, PauseTarget, Rate, Retry, Transport, Unique, UniqueMode,
};
use harel_transport_testkit::sqld::Sqld;

/// Each publish's own event: a replace writes what it carries.
fn event(i: usize) -> String {
    format!("{{\"n\":{i}}}")
}

fn plain(t: &Transport, n: usize) -> Duration {
    let started = Instant::now();
    for i in 0..n {
        t.publish(&format!("g{}", i % 50), &event(i), 0, None).unwrap();
    }
    started.elapsed()
}

/// `n` publishes with unique keys: `round`'s own keys (each stored), or the same 50 keys
/// every round with `mode` (each finds its message pending).
fn with_unique(t: &Transport, n: usize, keys: impl Fn(usize) -> String, mode: UniqueMode) -> Duration {
    let started = Instant::now();
    for i in 0..n {
        let (group, key, event) = (format!("g{}", i % 50), keys(i), event(i));
        let message = Message { group_id: &group, event_json: &event, priority: 0, routing_key: None, headers: None };
        let delivery = Delivery { unique: Some(Unique { key: &key, mode }), ..Delivery::default() };
        let published = t.publish_with(message, delivery).unwrap();
        assert_eq!(published.replaced, mode != UniqueMode::Keep, "{published:?}");
    }
    started.elapsed()
}

/// `n` claims (each timed alone; its ack is not) of `n` messages published first, over 50 groups.
fn claims(t: &Transport, n: usize) -> Duration {
    claims_keyed(t, n, |_| None)
}

/// `claims`, message i published with the routing key `key(i)`.
fn claims_keyed(t: &Transport, n: usize, key: impl Fn(usize) -> Option<String>) -> Duration {
    for i in 0..n {
        t.publish(&format!("g{}", i % 50), &event(i), 0, key(i).as_deref()).unwrap();
    }
    let mut spent = Duration::ZERO;
    for _ in 0..n {
        let started = Instant::now();
        let lease = t.claim("w", 30.0, 0, &[]).unwrap().expect("a ready group");
        spent += started.elapsed();
        t.ack(&lease).unwrap();
    }
    spent
}

/// `n` claim+ack pairs (timed together) of `n` messages published first, over 50 groups.
fn claims_and_acks(t: &Transport, n: usize) -> Duration {
    for i in 0..n {
        t.publish(&format!("g{}", i % 50), &event(i), 0, None).unwrap();
    }
    let started = Instant::now();
    for _ in 0..n {
        let lease = t.claim("w", 30.0, 0, &[]).unwrap().expect("a ready group");
        t.ack(&lease).unwrap();
    }
    started.elapsed()
}

/// Limits on `k0`..`k99` with room to spare: every claim reads and takes them.
fn hundred_limits(t: &Transport) {
    let rate = Rate { per_second: 1e6, burst: 1e6 };
    for k in 0..100 {
        t.set_limit(&format!("k{k}"), Limit { concurrency: Some(1_000_000), rate: Some(rate) }).unwrap();
    }
}

/// A key at its limit (one lease held, concurrency 1) with 1,000 more groups published
/// before any other; the time of the one claim that meets and holds them.
fn beside_a_full_key(t: &Transport) -> Duration {
    t.set_limit("full", Limit { concurrency: Some(1), rate: None }).unwrap();
    let events: Vec<String> = (0..1001).map(event).collect();
    let groups: Vec<String> = (0..1001).map(|i| format!("full{i}")).collect();
    let batch: Vec<Message<'_>> = (0..1001)
        .map(|i| Message {
            group_id: &groups[i],
            event_json: &events[i],
            priority: 0,
            routing_key: Some("full"),
            headers: None,
        })
        .collect();
    t.publish_many(&batch).unwrap();
    t.claim("holder", 3600.0, 0, &[]).unwrap().expect("the key's one lease");
    t.publish("other", &event(0), 0, None).unwrap();
    let started = Instant::now();
    let lease = t.claim("w", 30.0, 0, &[]).unwrap().expect("the free group, past the 1,000");
    let spent = started.elapsed();
    assert_eq!(lease.group_id, "other");
    t.ack(&lease).unwrap();
    assert_eq!(t.limits().unwrap()[0].held, 1000);
    spent
}

/// 10,000 groups of one message each, paused by their routing key.
fn beside_paused_groups(t: &Transport) {
    let events: Vec<String> = (0..10_000).map(event).collect();
    let groups: Vec<String> = (0..10_000).map(|i| format!("paused{i}")).collect();
    t.pause(PauseTarget::RoutingKey("held")).unwrap();
    for chunk in (0..10_000).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<Message<'_>> = chunk
            .iter()
            .map(|&i| Message {
                group_id: &groups[i],
                event_json: &events[i],
                priority: 0,
                routing_key: Some("held"),
                headers: None,
            })
            .collect();
        t.publish_many(&batch).unwrap();
    }
    assert_eq!(t.stats().unwrap().paused, 10_000);
}

/// A clock the bench moves past the messages' expiry.
#[derive(Clone, Default)]
struct Clock(Arc<AtomicU64>);

impl Clock {
    fn now(&self) -> f64 {
        1_000_000.0 + f64::from_bits(self.0.load(Ordering::SeqCst))
    }

    fn advance(&self, seconds: f64) {
        let at = f64::from_bits(self.0.load(Ordering::SeqCst)) + seconds;
        self.0.store(at.to_bits(), Ordering::SeqCst);
    }
}

/// `n` claims (each timed alone) of `n` groups' messages, published first, each behind a
/// head that expired when `expiring`.
fn claims_past_expired(t: &Transport, clock: &Clock, n: usize, expiring: bool) -> Duration {
    let round = clock.now();
    for i in 0..n {
        let (group, old, live) = (format!("r{round}-{i}"), event(i), event(i + 1));
        if expiring {
            let message = Message { group_id: &group, event_json: &old, priority: 0, routing_key: None, headers: None };
            t.publish_with(message, Delivery { ttl: Some(1.0), ..Delivery::default() }).unwrap();
        }
        t.publish(&group, &live, 0, None).unwrap();
    }
    clock.advance(2.0);
    let mut spent = Duration::ZERO;
    for _ in 0..n {
        let started = Instant::now();
        let lease = t.claim("w", 30.0, 0, &[]).unwrap().expect("a live message");
        spent += started.elapsed();
        t.ack(&lease).unwrap();
    }
    spent
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let sqld = harel_transport_testkit::sqld::binary().ok().map(|b| Sqld::start(&b, false));
    let places = places(dir.path(), sqld.as_ref());
    header();
    for (p, place) in places.iter().enumerate() {
        let mut queues = 0;
        let mut open = || {
            queues += 1;
            let mut options = Options::new();
            options.prefix(&format!("q{p}_{queues}")).unwrap();
            Transport::open(&(place.url)(&format!("q{queues}")), &options).unwrap()
        };
        let (yardstick, keyed) = (open(), open());
        let mut round = 0;
        let stored = pair(place.n, |n| plain(&yardstick, n), |n| {
            round += 1;
            with_unique(&keyed, n, |i| format!("r{round}-{i}"), UniqueMode::Keep)
        });
        row(place.name, "publish with a unique key, stored / plain publish", stored, 1.3);
        let (yardstick, replacing) = (open(), open());
        // The 50 messages each later publish finds pending.
        with_unique(&replacing, 50, |i| format!("k{i}"), UniqueMode::Keep);
        row(place.name, "publish replacing its pending message / plain publish", pair(place.n, |n| {
            plain(&yardstick, n)
        }, |n| with_unique(&replacing, n, |i| format!("k{}", i % 50), UniqueMode::Replace)), 1.3);
        let (yardstick, crowded) = (open(), open());
        beside_paused_groups(&crowded);
        let beside = pair(place.n, |n| claims(&yardstick, n), |n| claims(&crowded, n));
        row(place.name, "claim beside 10,000 paused groups / claim alone", beside, 1.2);
        let retentions = [
            (86_400.0, "claim+ack, archive on (a day's retention) / off"),
            (0.001, "claim+ack, archive on, each ack pruning / off"),
        ];
        for (i, (retention, what)) in retentions.into_iter().enumerate() {
            let yardstick = open();
            let mut options = Options::new();
            options.prefix(&format!("q{p}_archive{i}")).unwrap().archive(retention).unwrap();
            let archiving = Transport::open(&(place.url)(&format!("archive{i}")), &options).unwrap();
            let on = pair(place.n, |n| claims_and_acks(&yardstick, n), |n| claims_and_acks(&archiving, n));
            row(place.name, what, on, 1.3);
        }
        let (yardstick, limited) = (open(), open());
        hundred_limits(&limited);
        // each group's routing key one of the 100 (a group keeps its first publish's)
        let key = |i: usize| Some(format!("k{}", i % 100));
        let keyed = pair(place.n, |n| claims_keyed(&yardstick, n, key), |n| claims_keyed(&limited, n, key));
        row(place.name, "claim, 100 limited keys defined / no limits", keyed, 1.3);
        let yardstick = open();
        let mut options = Options::new();
        let policy = Retry { base: 1.0, factor: 2.0, cap: 60.0, jitter: Jitter::Full };
        options.prefix(&format!("q{p}_retry")).unwrap().retry(Some(policy)).unwrap();
        let retrying = Transport::open(&(place.url)("retry"), &options).unwrap();
        let drawn = pair(place.n, |n| claims(&yardstick, n), |n| claims(&retrying, n));
        row(place.name, "claim, drawing a backoff (retry policy) / none", drawn, 1.2);
        let (yardstick, crowded) = (open(), open());
        let first = beside_a_full_key(&crowded);
        let beside = pair(place.n, |n| claims(&yardstick, n), |n| claims(&crowded, n));
        row(place.name, "claim beside 1,000 held groups / claim", beside, 2.0);
        let what = "the one claim that holds the 1,000";
        println!("{:<18} {what:<52} {:>9.1} ms", place.name, first.as_secs_f64() * 1e3);
        let clock = Clock::default();
        let mut clocked = || {
            queues += 1;
            let mut options = Options::new();
            options.prefix(&format!("q{p}_{queues}")).unwrap();
            let c = clock.clone();
            options.clock(move || c.now());
            Transport::open(&(place.url)(&format!("q{queues}")), &options).unwrap()
        };
        let (yardstick, expiring) = (clocked(), clocked());
        let (plain, past) = pair(
            place.n,
            |n| claims_past_expired(&yardstick, &clock, n, false),
            |n| claims_past_expired(&expiring, &clock, n, true),
        );
        println!(
            "{:<18} {:<52} {plain:>9.1} {past:>9.1} {:>6.2}x (cost per expired message: {:.1} µs)",
            place.name,
            "claim past an expired head / claim",
            past / plain,
            past - plain
        );
    }
}
