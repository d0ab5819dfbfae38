//! The contract's checks of limits per routing key (docs/queue.md, "Limits"): listed in
//! contract.rs's `CHECKS` with the others. A limit is each shard's own on a sharded queue,
//! so the checks that count a key's leases are in `OTHERWISE_SHARDED`.

use std::time::{Duration, Instant};

use harel_transport::{Error, GroupState, Jitter, Lease, Limit, Options, Rate, Retry, Transport, Wait};

use super::contract::Open;
use super::{event, TestClock};

const V: f64 = 30.0;

fn claim(t: &Transport) -> Option<Lease> {
    t.claim("w", V, 0, &[]).unwrap()
}

fn concurrency(n: u32) -> Limit {
    Limit { concurrency: Some(n), rate: None }
}

/// Every lease the claims hand out until none is left, not acked.
fn claim_all(t: &Transport) -> Vec<Lease> {
    std::iter::from_fn(|| claim(t)).collect()
}

/// How many leases the claims hand out until none is left, each acked.
fn served(t: &Transport) -> usize {
    claim_all(t).iter().map(|lease| t.ack(lease).unwrap()).count()
}

/// A queue on `clock` whose key "k" has a concurrency limit of 1, and whose failed attempts
/// wait 10 s exactly.
fn one_of_k_retried_after_10_s(open: Open<'_>, clock: &TestClock) -> Transport {
    let mut options = clock.options();
    options.retry(Some(Retry { base: 10.0, factor: 1.0, cap: 10.0, jitter: Jitter::None })).unwrap();
    let t = open(&options);
    t.set_limit("k", concurrency(1)).unwrap();
    t
}

fn groups(leases: &[Lease]) -> Vec<&str> {
    let mut groups: Vec<&str> = leases.iter().map(|l| l.group_id.as_str()).collect();
    groups.sort_unstable();
    groups
}

/// At most 2 of the key's messages leased at once, whatever else is served; each ack, nack
/// or dead letter makes room for the next group, held ones served in the order they came.
pub fn a_concurrency_limit_leases_at_most_n_of_its_key(open: Open<'_>) {
    let t = open(&TestClock::at(1000.0).options());
    t.set_limit("k", concurrency(2)).unwrap();
    let e0 = event(0);
    for g in ["k1", "k2", "k3", "k4", "k5"] {
        t.publish(g, &e0, 0, Some("k")).unwrap();
    }
    t.publish("free", &e0, 0, None).unwrap();
    t.publish("other", &e0, 0, Some("other")).unwrap();
    let first = claim_all(&t);
    assert_eq!(groups(&first), ["free", "k1", "k2", "other"], "two of k, and every group without its limit");
    let info = &t.limits().unwrap()[0];
    assert_eq!((info.routing_key.as_str(), info.in_use, info.held), ("k", 2, 3), "{info:?}");
    let stats = t.stats().unwrap();
    assert_eq!((stats.held, stats.leased, stats.ready), (3, 4, 0), "held groups are not ready: {stats:?}");
    assert_eq!(stats.by_priority[0].held, 3);
    assert_eq!(t.metrics().limit_holds, 3, "each group held counted once");
    let k1 = first.iter().find(|l| l.group_id == "k1").unwrap();
    t.ack(k1).unwrap();
    assert_eq!(groups(&claim_all(&t)), ["k3"], "an ack makes room for one");
    let k2 = first.iter().find(|l| l.group_id == "k2").unwrap();
    t.nack(k2, 0.0).unwrap();
    assert_eq!(groups(&claim_all(&t)), ["k4"], "a nack makes room, and the held group came first");
    assert_eq!(t.limits().unwrap()[0].in_use, 2);
}

/// A lease that lapses ends its slot; a dead letter frees it; a lost lease's ack does not.
pub fn a_lapse_or_a_dead_letter_ends_a_slot_and_a_lost_ack_does_not(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.set_limit("k", concurrency(1)).unwrap();
    let e0 = event(0);
    t.publish("a", &e0, 0, Some("k")).unwrap();
    t.publish("c", &e0, 0, Some("k")).unwrap();
    let a = t.claim("w1", 5.0, 0, &[]).unwrap().expect("a");
    assert!(claim(&t).is_none(), "k is at its limit");
    clock.advance(6.0);
    let c = claim(&t).expect("the lapsed lease's slot is free: the held group first");
    assert_eq!(c.group_id, "c");
    t.ack(&c).unwrap();
    let again = claim(&t).expect("the lapsed message, claimed again");
    assert_eq!((again.group_id.as_str(), again.seq), ("a", a.seq));
    t.publish("d", &e0, 0, Some("k")).unwrap();
    assert!(matches!(t.ack(&a), Err(Error::LeaseLost(_))), "the first lease was lost");
    assert!(t.ack_many(std::slice::from_ref(&a)).unwrap()[0].is_err());
    assert!(claim(&t).is_none(), "the lost acks freed nothing: the new lease holds the slot");
    t.dead_letter(&again, "poison").unwrap();
    let next = claim(&t).expect("the dead letter freed the slot");
    assert_eq!(next.group_id, "d");
    let mut extended = next.clone();
    t.extend(&mut extended, 60.0).unwrap();
    clock.advance(40.0);
    assert!(claim(&t).is_none(), "an extended lease keeps its slot past its first end");
    t.ack(&extended).unwrap();
    assert_eq!(t.limits().unwrap()[0].in_use, 0);
}

/// A park ends its lease's slot, the worker's own delay or its retry policy's backoff; when
/// the park ends, the message's next lease takes a slot again.
pub fn a_park_ends_a_slot(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = one_of_k_retried_after_10_s(open, &clock);
    let e0 = event(0);
    for group in ["a", "b"] {
        t.publish(group, &e0, 0, Some("k")).unwrap();
    }
    let a = claim(&t).expect("a");
    assert_eq!(t.limits().unwrap()[0].in_use, 1);
    t.nack(&a, 0.0).unwrap();
    assert_eq!(t.limits().unwrap()[0].in_use, 0, "parked for the policy's backoff: its slot free");
    let b = claim(&t).expect("b takes the free slot");
    t.nack(&b, 30.0).unwrap();
    assert_eq!(t.limits().unwrap()[0].in_use, 0, "parked for the worker's delay: its slot free");
    clock.advance(10.5);
    let again = claim(&t).expect("a's park is over");
    assert_eq!((again.group_id.as_str(), t.limits().unwrap()[0].in_use), ("a", 1), "its new lease has a slot");
    clock.advance(25.0);
    assert!(claim(&t).is_none(), "b's park is over, but a's lease holds the key's one slot");
    t.ack(&again).unwrap();
    assert_eq!(claim(&t).expect("b, now").group_id, "b");
}

/// A token bucket: the burst at once, then one lease per 1/rate seconds.
pub fn a_rate_limit_admits_its_burst_then_its_rate(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.set_limit("r", Limit { concurrency: None, rate: Some(Rate { per_second: 2.0, burst: 3.0 }) }).unwrap();
    let e0 = event(0);
    for i in 0..10 {
        t.publish(&format!("r{i}"), &e0, 0, Some("r")).unwrap();
    }
    t.publish("free", &e0, 0, None).unwrap();
    assert_eq!(served(&t), 4, "the burst of 3, and the group without a limit");
    clock.advance(0.25);
    assert!(claim(&t).is_none(), "half a token");
    clock.advance(0.25);
    assert_eq!(served(&t), 1, "one token a half second");
    clock.advance(1.0);
    assert_eq!(served(&t), 2);
    clock.advance(100.0);
    assert_eq!(served(&t), 3, "an idle key keeps at most its burst");
    let tokens = t.limits().unwrap()[0].tokens.unwrap();
    assert!(tokens.abs() < 1e-9, "{tokens}");
}

/// A limit changed at run time is in force at the next claim; removed, the key's held groups
/// are served at once. Limits outlive the transport that set them.
pub fn limits_change_at_run_time_and_outlive_their_setter(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let setter = open(&clock.options());
    setter.set_limit("k", concurrency(1)).unwrap();
    drop(setter);
    let t = open(&clock.options());
    let e0 = event(0);
    for i in 0..6 {
        t.publish(&format!("g{i}"), &e0, 0, Some("k")).unwrap();
    }
    assert_eq!(claim_all(&t).len(), 1);
    t.set_limit("k", concurrency(3)).unwrap();
    assert_eq!(claim_all(&t).len(), 2, "a larger limit makes room at once");
    t.remove_limit("k").unwrap();
    assert_eq!(claim_all(&t).len(), 3, "removed: every held group is served");
    assert!(t.limits().unwrap().is_empty());
    t.set_limit("k", concurrency(3)).unwrap();
    let in_use = t.limits().unwrap()[0].in_use;
    assert_eq!(in_use, 3, "set again, it counts the running leases taken under a limit, not those taken without");
    t.publish("late", &e0, 0, Some("k")).unwrap();
    assert!(claim(&t).is_none(), "so the key is over its limit");
    t.remove_limit("k").unwrap();
    match t.remove_limit("k") {
        Err(Error::Argument(m)) => assert!(m.contains("routing key \"k\" has no limit to remove"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// A waiting claim held back by a rate limit is served when the next token is due (the
/// system clock: 1 a second, the burst taken), and one held back by a concurrency limit
/// when another transport acks.
pub fn a_waiting_claim_wakes_when_its_key_has_room(open: Open<'_>) {
    let t = open(&Options::new());
    t.set_limit("r", Limit { concurrency: None, rate: Some(Rate { per_second: 1.0, burst: 1.0 }) }).unwrap();
    let e0 = event(0);
    t.publish("r1", &e0, 0, Some("r")).unwrap();
    t.publish("r2", &e0, 0, Some("r")).unwrap();
    let started = Instant::now();
    let first = claim(&t).expect("the burst's token");
    let wait = Wait::up_to(Duration::from_secs(20));
    let second = t.claim_wait("w", V, 0, &[], &wait).unwrap().expect("served when the token is due");
    let took = started.elapsed();
    assert_ne!(first.group_id, second.group_id);
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "at the next token: {took:?}");
    t.set_limit("k", concurrency(1)).unwrap();
    t.publish("k1", &e0, 0, Some("k")).unwrap();
    t.publish("k2", &e0, 0, Some("k")).unwrap();
    let held = claim(&t).expect("the key's one slot");
    let other = open(&Options::new());
    let acker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        other.ack(&held).unwrap();
    });
    let next = t.claim_wait("w", V, 0, &[], &wait).unwrap().expect("served when another transport acks");
    assert!(next.group_id.starts_with('k'));
    acker.join().unwrap();
}

pub fn bad_limits_are_refused_and_change_nothing(open: Open<'_>) {
    let t = open(&TestClock::at(1000.0).options());
    let rate = |per_second, burst| Limit { concurrency: None, rate: Some(Rate { per_second, burst }) };
    let cases = [
        ("", concurrency(1), "routing_key is empty"),
        ("k", Limit::default(), "the limit has neither a concurrency nor a rate"),
        ("k", concurrency(0), "concurrency is 0; it must be 1..1000000"),
        ("k", concurrency(1_000_001), "concurrency is 1000001"),
        ("k", rate(0.0, 1.0), "rate is 0; it must be a finite number > 0, at most 1000000"),
        ("k", rate(f64::NAN, 1.0), "rate is NaN"),
        ("k", rate(f64::INFINITY, 1.0), "rate is inf"),
        ("k", rate(2e6, 1.0), "rate is 2000000"),
        ("k", rate(1.0, 0.5), "burst is 0.5; it must be a finite number >= 1, at most 1000000"),
        ("k", rate(1.0, f64::NAN), "burst is NaN"),
    ];
    for (key, limit, says) in cases {
        match t.set_limit(key, limit) {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{says}: {other:?}"),
        }
    }
    assert!(matches!(t.remove_limit(""), Err(Error::Argument(m)) if m.contains("routing_key is empty")));
    assert!(t.limits().unwrap().is_empty(), "nothing set");
}

/// The listing agrees with `stats`: a group a limit holds lists as held, one waiting its
/// backoff after a lapse as retrying, neither as ready (no claim would take them); each
/// state's filter finds its groups, and the listing's count of each state is stats'.
pub fn held_and_retrying_groups_list_as_stats_counts_them(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = one_of_k_retried_after_10_s(open, &clock);
    let e0 = event(0);
    t.publish("lapses", &e0, 0, None).unwrap();
    t.claim("w", 5.0, 0, &[]).unwrap().expect("the lease that will lapse");
    for g in ["k1", "k2"] {
        t.publish(g, &e0, 0, Some("k")).unwrap();
    }
    assert_eq!(groups(&claim_all(&t)), ["k1"], "k2 is held");
    clock.advance(6.0);
    t.publish("fresh", &e0, 0, None).unwrap();
    let listed = |state| -> Vec<String> {
        t.groups(state, None, 10).unwrap().items.into_iter().map(|g| g.group_id).collect()
    };
    let states: Vec<(String, GroupState)> =
        t.groups(None, None, 10).unwrap().items.into_iter().map(|g| (g.group_id, g.state)).collect();
    let named = |names: &[(&str, GroupState)]| -> Vec<(String, GroupState)> {
        names.iter().map(|&(g, s)| (g.to_owned(), s)).collect()
    };
    let expected = [
        ("fresh", GroupState::Ready),
        ("k1", GroupState::Leased),
        ("k2", GroupState::Held),
        ("lapses", GroupState::Retrying),
    ];
    assert_eq!(states, named(&expected));
    for (group, state) in expected {
        assert_eq!(listed(Some(state)), [group], "the filter {} finds it alone", state.name());
    }
    let stats = t.stats().unwrap();
    let counts = [
        (GroupState::Ready, stats.ready),
        (GroupState::Leased, stats.leased),
        (GroupState::Parked, stats.parked),
        (GroupState::Delayed, stats.delayed),
        (GroupState::Paused, stats.paused),
        (GroupState::Held, stats.held),
        (GroupState::Retrying, stats.retrying),
    ];
    for (state, counted) in counts {
        let n = states.iter().filter(|(_, s)| *s == state).count();
        assert_eq!(n as u64, counted, "{} listed as stats counts it: {stats:?}", state.name());
    }
    clock.advance(10.0);
    assert_eq!(listed(Some(GroupState::Ready)), ["fresh", "lapses"], "its backoff over, ready again");
}
