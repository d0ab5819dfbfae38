//! The contract's checks of retries (docs/queue.md, "Retries"): listed in contract.rs's
//! `CHECKS` with the others, and run wherever they run. Each check's queue has one group
//! unless it says otherwise, so a sharded queue serves it as one database does.

use harel_transport::{Delivery, Error, Jitter, Lease, Message, Options, Retry, Transport};

use super::contract::Open;
use super::{event, TestClock};

const V: f64 = 30.0;

fn msg<'a>(group_id: &'a str, event_json: &'a str) -> Message<'a> {
    Message { group_id, event_json, priority: 0, routing_key: None, headers: None }
}

fn policy(base: f64, factor: f64, cap: f64, jitter: Jitter) -> Retry {
    Retry { base, factor, cap, jitter }
}

fn with_retry(clock: &TestClock, retry: Retry) -> Options {
    let mut o = clock.options();
    o.retry(Some(retry)).unwrap();
    o
}

fn claim(t: &Transport) -> Option<Lease> {
    t.claim("w", V, 0, &[]).unwrap()
}

/// The backoff the head of `group` shows (`MessageInfo::retry_delay`).
fn shown(t: &Transport, group: &str) -> Option<f64> {
    t.peek(group, None, 1).unwrap().items[0].retry_delay
}

/// Nothing is claimable just before `at` seconds from now; the message is just after.
fn waits(t: &Transport, clock: &TestClock, at: f64) -> Lease {
    clock.advance(at - 0.01);
    assert!(claim(t).is_none(), "still waiting its backoff of {at} s");
    clock.advance(0.02);
    claim(t).unwrap_or_else(|| panic!("claimable once its backoff of {at} s passed"))
}

pub fn a_nack_without_a_delay_waits_the_backoff_which_grows_to_its_cap(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&with_retry(&clock, policy(2.0, 3.0, 20.0, Jitter::None)));
    t.publish("g", &event(0), 0, None).unwrap();
    let mut lease = claim(&t).expect("the first delivery");
    for (attempt, backoff) in [(1, 2.0), (2, 6.0), (3, 18.0), (4, 20.0), (5, 20.0)] {
        assert_eq!(lease.attempts, attempt);
        assert_eq!(shown(&t, "g"), Some(backoff), "claim {attempt} drew min(cap, base * factor^{})", attempt - 1);
        t.nack(&lease, 0.0).unwrap();
        let stats = t.stats().unwrap();
        assert_eq!((stats.ready, stats.parked), (0, 1), "parked for its backoff");
        lease = waits(&t, &clock, backoff);
    }
    t.nack(&lease, 1.0).unwrap();
    let lease = waits(&t, &clock, 1.0);
    assert_eq!(lease.attempts, 7, "a worker's own delay wins over the backoff");
    t.ack(&lease).unwrap();
    assert!(claim(&t).is_none());
}

/// A lease that lapses is a failed attempt: its message waits the backoff after the lease's
/// end (an extend moves both), and max_attempts still buries it.
pub fn a_lapsed_lease_waits_the_backoff_and_counts_toward_max_attempts(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let mut options = with_retry(&clock, policy(10.0, 2.0, 100.0, Jitter::None));
    options.max_attempts(3);
    let t = open(&options);
    t.publish("g", &event(0), 0, None).unwrap();
    let mut first = claim(&t).expect("the first delivery");
    clock.advance(20.0);
    t.extend(&mut first, V).unwrap();
    clock.advance(V + 5.0);
    let stats = t.stats().unwrap();
    assert_eq!((stats.retrying, stats.ready, stats.leased), (1, 0, 0), "the lapsed lease waits its backoff");
    assert_eq!(stats.oldest_ready_seq, None);
    clock.advance(-(V + 5.0));
    let second = waits(&t, &clock, V + 10.0);
    assert_eq!((second.event.as_str(), second.attempts), (event(0).as_str(), 2), "after the extended end + 10");
    assert_eq!(shown(&t, "g"), Some(20.0));
    let _ = waits(&t, &clock, V + 20.0);
    clock.advance(V + 41.0);
    assert!(claim(&t).is_none(), "claimed 3 times: buried, not handed out");
    let dead = t.dead_letters(None, None, 10).unwrap().items;
    assert_eq!(dead.len(), 1);
    assert!(dead[0].reason.contains("max_attempts is 3"), "{}", dead[0].reason);
}

/// A message published with a policy follows it, whatever the queue's; one without
/// follows the queue's, and with neither, a nack without a delay frees it at once.
pub fn a_message_s_own_policy_wins_over_the_queue_s(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let own = Delivery { retry: Some(policy(5.0, 1.0, 5.0, Jitter::None)), ..Delivery::default() };
    let plain = open(&clock.options());
    plain.publish_with(msg("g", &event(0)), own).unwrap();
    let lease = claim(&plain).unwrap();
    plain.nack(&lease, 0.0).unwrap();
    let lease = waits(&plain, &clock, 5.0);
    plain.ack(&lease).unwrap();
    plain.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&plain).unwrap();
    assert_eq!(shown(&plain, "g"), None, "no policy: no backoff");
    plain.nack(&lease, 0.0).unwrap();
    let lease = claim(&plain).expect("no policy: a nack without a delay frees it at once");
    plain.ack(&lease).unwrap();
    let queued = open(&with_retry(&clock, policy(50.0, 1.0, 50.0, Jitter::None)));
    queued.publish_with(msg("g", &event(2)), own).unwrap();
    queued.publish("g", &event(3), 0, None).unwrap();
    for (e, backoff) in [(event(2), 5.0), (event(3), 50.0)] {
        let lease = claim(&queued).unwrap();
        assert_eq!((lease.event.as_str(), shown(&queued, "g")), (e.as_str(), Some(backoff)));
        queued.nack(&lease, 0.0).unwrap();
        let lease = waits(&queued, &clock, backoff);
        queued.ack(&lease).unwrap();
    }
}

/// A publish inside an application's transaction keeps its own policy.
pub fn a_transaction_s_publish_keeps_its_own_policy(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let own = Delivery { retry: Some(policy(5.0, 1.0, 5.0, Jitter::None)), ..Delivery::default() };
    let t = open(&clock.options());
    t.transaction(|tx| tx.publish_with(msg("g", &event(0)), own)).map(drop).unwrap_or_else(|e: Error| panic!("{e}"));
    let lease = claim(&t).unwrap();
    assert_eq!(shown(&t, "g"), Some(5.0));
    t.nack(&lease, 0.0).unwrap();
    let lease = waits(&t, &clock, 5.0);
    t.ack(&lease).unwrap();
}

/// Full jitter draws in [0, d), equal in [d/2, d), each claim anew.
pub fn jitter_spreads_the_backoff_within_its_range(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    for (jitter, low) in [(Jitter::Full, 0.0), (Jitter::Equal, 5.0)] {
        let t = open(&with_retry(&clock, policy(10.0, 1.0, 10.0, jitter)));
        let groups: Vec<String> = (0..20).map(|i| format!("{jitter:?}-{i}")).collect();
        for g in &groups {
            t.publish(g, &event(0), 0, None).unwrap();
        }
        let leases: Vec<Lease> = std::iter::from_fn(|| claim(&t)).collect();
        assert_eq!(leases.len(), groups.len());
        let drawn: Vec<f64> = groups.iter().map(|g| shown(&t, g).expect("drawn at the claim")).collect();
        assert!(drawn.iter().all(|d| (low..10.0).contains(d)), "{jitter:?}: {drawn:?}");
        assert!(drawn.windows(2).any(|w| w[0] != w[1]), "{jitter:?} draws each claim anew: {drawn:?}");
        for lease in &leases {
            t.ack(lease).unwrap();
        }
    }
}

pub fn bad_retry_policies_are_refused_naming_the_field(open: Open<'_>) {
    let good = policy(1.0, 2.0, 60.0, Jitter::Full);
    let bad = [
        (Retry { base: 0.0, ..good }, "retry.base is 0"),
        (Retry { base: -1.0, ..good }, "retry.base is -1"),
        (Retry { base: f64::NAN, ..good }, "retry.base is NaN"),
        (Retry { factor: 0.5, ..good }, "retry.factor is 0.5"),
        (Retry { factor: 17.0, ..good }, "retry.factor is 17"),
        (Retry { cap: 0.5, ..good }, "retry.cap is 0.5"),
        (Retry { cap: f64::INFINITY, ..good }, "retry.cap is inf"),
    ];
    let t = open(&Options::new());
    t.publish("g", &event(0), 0, None).unwrap();
    for (retry, says) in bad {
        let refused = Options::new().retry(Some(retry)).map(drop).expect_err("refused at the setter");
        assert!(matches!(&refused, Error::Argument(m) if m.contains(says)), "{refused}");
        let delivery = Delivery { retry: Some(retry), ..Delivery::default() };
        let refused = t.publish_with(msg("g", &event(1)), delivery).expect_err("refused at the publish");
        assert!(matches!(&refused, Error::Argument(m) if m.contains(says)), "{refused}");
        let events = [event(1), event(2)];
        let batch = [(msg("g", &events[0]), Delivery::default()), (msg("g", &events[1]), delivery)];
        let refused = t.publish_many_with(&batch).expect_err("refused in a batch");
        assert!(matches!(&refused, Error::Argument(m) if m.contains(&format!("messages[1].{says}"))), "{refused}");
    }
    assert_eq!(t.stats().unwrap().messages, 1, "the queue unchanged");
}
