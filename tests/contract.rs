//! The transport contract (SPEC.md + ABI.md semantics), in-process, with a moved clock.

mod common;

use common::{event, memory, TestClock};
use harel_transport::{Error, Lease};

const V: f64 = 30.0;

fn claim(t: &harel_transport::Transport, worker: &str) -> Option<Lease> {
    t.claim(worker, V, 0, &[]).expect("claim")
}

#[test]
fn fifo_within_a_group() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    for n in 0..5 {
        t.publish("g", &event(n), 0, None).unwrap();
    }
    for n in 0..5 {
        let lease = claim(&t, "w").expect("a message");
        assert_eq!(lease.event, event(n));
        t.ack(&lease).unwrap();
    }
    assert!(claim(&t, "w").is_none());
}

#[test]
fn one_in_flight_per_group_while_others_proceed() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("a", &event(2), 0, None).unwrap();
    t.publish("b", &event(3), 0, None).unwrap();
    let first = claim(&t, "w1").unwrap();
    assert_eq!(first.group_id, "a");
    let second = claim(&t, "w2").unwrap();
    assert_eq!(second.group_id, "b", "a is in flight, b proceeds");
    assert!(claim(&t, "w3").is_none(), "both groups in flight");
    t.ack(&first).unwrap();
    let third = claim(&t, "w3").unwrap();
    assert_eq!((third.group_id.as_str(), third.event.as_str()), ("a", event(2).as_str()));
}

#[test]
fn lease_fields() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", r#" {"kind": "x"} "#, 0, None).unwrap();
    let lease = claim(&t, "worker-7").unwrap();
    assert_eq!(lease.group_id, "g");
    assert_eq!(lease.event, r#" {"kind": "x"} "#, "stored byte for byte");
    assert_eq!(lease.worker_id, "worker-7");
    assert_eq!(lease.lock_expiry, 1000.0 + V);
    assert!(lease.seq > 0);
}

#[test]
fn ack_frees_the_group_and_removes_the_message() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.ack(&lease).unwrap();
    assert!(claim(&t, "w").is_none());
    clock.advance(V * 10.0);
    assert!(claim(&t, "w").is_none(), "an acked message never comes back");
}

#[test]
fn nack_now_makes_the_message_claimable_at_once() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w1").unwrap();
    t.nack(&lease, 0.0).unwrap();
    let again = claim(&t, "w2").expect("claimable at once");
    assert_eq!(again.seq, lease.seq);
    assert_eq!(again.worker_id, "w2");
}

#[test]
fn nack_with_delay_parks_and_blocks_the_group() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    t.publish("g", &event(2), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.nack(&lease, 60.0).unwrap();
    assert!(claim(&t, "w").is_none(), "parked head blocks its group");
    clock.advance(59.0);
    assert!(claim(&t, "w").is_none(), "still parked");
    clock.advance(2.0);
    let again = claim(&t, "w").expect("park over");
    assert_eq!(again.seq, lease.seq, "the parked head comes back first");
}

#[test]
fn a_parked_group_does_not_block_others() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("b", &event(2), 0, None).unwrap();
    let a = claim(&t, "w").unwrap();
    t.nack(&a, 60.0).unwrap();
    assert_eq!(claim(&t, "w").unwrap().group_id, "b");
}

#[test]
fn a_lapsed_lease_is_claimable_again() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w1").unwrap();
    clock.advance(V);
    assert!(claim(&t, "w2").is_none(), "lock_expiry >= now is still in flight");
    clock.advance(0.5);
    let again = claim(&t, "w2").expect("lease lapsed");
    assert_eq!((again.seq, again.worker_id.as_str()), (lease.seq, "w2"));
}

#[test]
fn round_robin_a_group_just_served_yields_to_one_never_claimed() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("a", &event(2), 0, None).unwrap();
    let first = claim(&t, "w").unwrap();
    assert_eq!(first.group_id, "a");
    t.publish("b", &event(3), 0, None).unwrap();
    clock.advance(1.0);
    t.ack(&first).unwrap();
    assert_eq!(claim(&t, "w").unwrap().group_id, "b", "never-claimed b goes before served a");
}

#[test]
fn round_robin_cycles_through_groups() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    for round in 0..3 {
        for g in ["a", "b", "c"] {
            t.publish(g, &event(round), 0, None).unwrap();
        }
    }
    let mut order = Vec::new();
    for _ in 0..9 {
        clock.advance(1.0);
        let lease = claim(&t, "w").unwrap();
        order.push(lease.group_id.clone());
        t.ack(&lease).unwrap();
    }
    assert_eq!(order.join(""), "abcabcabc");
}

#[test]
fn priority_floor_skips_lower_groups() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("low", &event(1), 1, None).unwrap();
    t.publish("high", &event(2), 3, None).unwrap();
    t.publish("top", &event(3), 4, None).unwrap();
    let lease = t.claim("w", V, 3, &[]).unwrap().unwrap();
    assert_eq!(lease.group_id, "high", "oldest at or above the floor");
    let lease = t.claim("w", V, 3, &[]).unwrap().unwrap();
    assert_eq!(lease.group_id, "top");
    assert!(t.claim("w", V, 3, &[]).unwrap().is_none(), "low is below the floor");
    assert_eq!(t.claim("w", V, 0, &[]).unwrap().unwrap().group_id, "low");
}

#[test]
fn the_first_publish_fixes_priority_and_routing_key() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 4, Some("east")).unwrap();
    t.publish("g", &event(2), 0, Some("west")).unwrap();
    assert!(t.claim("w", V, 0, &["west"]).unwrap().is_none(), "the routing key stayed east");
    let first = t.claim("w", V, 4, &["east"]).unwrap().expect("priority stayed 4");
    t.ack(&first).unwrap();
    assert!(t.claim("w", V, 4, &["east"]).unwrap().is_some(), "second message: same group, same key");
}

#[test]
fn routing_keys_restrict_claims() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("a", &event(1), 0, Some("k1")).unwrap();
    t.publish("b", &event(2), 0, Some("k2")).unwrap();
    t.publish("c", &event(3), 0, None).unwrap();
    t.publish("d", &event(4), 0, Some("k3")).unwrap();
    assert_eq!(t.claim("w", V, 0, &["k2"]).unwrap().unwrap().group_id, "b");
    assert!(t.claim("w", V, 0, &["k2"]).unwrap().is_none());
    assert_eq!(t.claim("w", V, 0, &["k3", "k1"]).unwrap().unwrap().group_id, "a", "oldest of either key");
    assert_eq!(t.claim("w", V, 0, &["k3", "k1"]).unwrap().unwrap().group_id, "d");
    assert_eq!(t.claim("w", V, 0, &[]).unwrap().unwrap().group_id, "c", "no keys: any group");
}

#[test]
fn many_routing_keys_take_the_json_path() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, Some("key-40")).unwrap();
    t.publish("h", &event(2), 0, Some("elsewhere")).unwrap();
    let keys: Vec<String> = (0..50).map(|i| format!("key-{i}")).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_eq!(t.claim("w", V, 0, &refs).unwrap().unwrap().group_id, "g");
    assert!(t.claim("w", V, 0, &refs).unwrap().is_none());
}

#[test]
fn lost_leases_are_detected_and_change_nothing() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    let stale = claim(&t, "w1").unwrap();
    clock.advance(V + 1.0);
    let fresh = claim(&t, "w2").unwrap();
    assert!(matches!(t.ack(&stale), Err(Error::LeaseLost(_))), "leased to w2 now");
    assert!(matches!(t.nack(&stale, 0.0), Err(Error::LeaseLost(_))));
    t.ack(&fresh).expect("w2's lease is intact");
    assert!(matches!(t.ack(&fresh), Err(Error::LeaseLost(_))), "gone");
}

#[test]
fn a_nacked_lease_is_over() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.nack(&lease, 10.0).unwrap();
    assert!(matches!(t.ack(&lease), Err(Error::LeaseLost(_))), "parked");
    assert!(matches!(t.nack(&lease, 0.0), Err(Error::LeaseLost(_))), "parked");
    clock.advance(11.0);
    let again = claim(&t, "w").unwrap();
    t.nack(&again, 0.0).unwrap();
    assert!(matches!(t.ack(&again), Err(Error::LeaseLost(_))), "free");
    assert!(claim(&t, "w").is_some(), "the message is still there");
}

#[test]
fn a_forged_lease_for_another_group_is_lost() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    let forged = Lease { group_id: "other".into(), ..lease.clone() };
    assert!(matches!(t.ack(&forged), Err(Error::LeaseLost(_))));
    t.ack(&lease).unwrap();
}

#[test]
fn in_flight_and_parked_groups_do_not_hide_a_ready_one() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    for g in 0..50 {
        t.publish(&format!("g{g}"), &event(g), 0, None).unwrap();
    }
    t.publish("ready", &event(99), 0, None).unwrap();
    t.publish("ready", &event(100), 0, None).unwrap();
    let mut leases = Vec::new();
    for _ in 0..51 {
        leases.push(claim(&t, "w").unwrap());
    }
    for (i, lease) in leases.iter().enumerate() {
        match (lease.group_id.as_str(), i % 2) {
            ("ready", _) => t.ack(lease).unwrap(),
            (_, 0) => t.nack(lease, 100.0).unwrap(),
            _ => {}
        }
    }
    assert_eq!(claim(&t, "w").unwrap().group_id, "ready");
    assert!(claim(&t, "w").is_none());
}

#[test]
fn a_group_written_with_priority_above_4_is_still_served() {
    // harel's Python publish does not check priority; such a group must not be stranded.
    let clock = TestClock::at(1000.0);
    let (_dir, path) = common::temp_db();
    let t = common::file(&path, &clock);
    common::Raw::open(&path).batch(
        "INSERT INTO harel_transport_messages (group_id, event) VALUES ('py', '{}');
         INSERT INTO harel_transport_groups (group_id, priority) VALUES ('py', 7);",
    );
    let lease = t.claim("w", V, 4, &[]).unwrap().expect("priority 7 is above the floor 4");
    assert_eq!(lease.group_id, "py");
}

#[test]
fn ack_and_claim_acks_then_claims_in_one_go() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("a", &event(2), 0, None).unwrap();
    t.publish("b", &event(3), 0, None).unwrap();
    let first = claim(&t, "w").unwrap();
    let second = t.ack_and_claim(&first, "w", V, 0, &[]).unwrap().expect("b is ready");
    assert_eq!(second.group_id, "b", "a was just served: b first");
    let third = t.ack_and_claim(&second, "w", V, 0, &[]).unwrap().expect("a's second message");
    assert_eq!(third.event, event(2));
    assert!(t.ack_and_claim(&third, "w", V, 0, &[]).unwrap().is_none(), "acked, and nothing left");
    assert!(claim(&t, "w").is_none());
}

#[test]
fn ack_and_claim_claims_nothing_when_the_ack_fails() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("b", &event(2), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.ack(&lease).unwrap();
    assert!(matches!(t.ack_and_claim(&lease, "w", V, 0, &[]), Err(Error::LeaseLost(_))));
    assert_eq!(claim(&t, "w").expect("b was not claimed by the failed call").group_id, "b");
    let bad = t.ack_and_claim(&lease, "w", 0.0, 0, &[]);
    assert!(matches!(bad, Err(Error::Argument(m)) if m.contains("visibility")));
}
