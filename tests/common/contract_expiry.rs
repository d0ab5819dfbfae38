//! The contract's checks of expiry (docs/queue.md, "Expiry"): listed in contract.rs's
//! `CHECKS` with the others, and run wherever they run. Each lets every claim it makes find
//! nothing at the end, so on a sharded queue every shard was asked (and swept).

use harel_transport::{DeadLetters, Delivery, Error, Lease, Message, PauseTarget, Transport, Unique};

use super::contract::Open;
use super::{event, TestClock};

const V: f64 = 30.0;

fn msg<'a>(group_id: &'a str, event_json: &'a str) -> Message<'a> {
    Message { group_id, event_json, priority: 0, routing_key: None, headers: None }
}

fn ttl(seconds: f64) -> Delivery<'static> {
    Delivery { ttl: Some(seconds), ..Delivery::default() }
}

fn claim(t: &Transport) -> Option<Lease> {
    t.claim("w", V, 0, &[]).unwrap()
}

/// The dead letters' (group, reason), in order.
fn dead(t: &Transport) -> Vec<(String, String)> {
    t.dead_letters(None, None, 100).unwrap().items.into_iter().map(|d| (d.group_id, d.reason)).collect()
}

fn expired(group_id: &str) -> (String, String) {
    (group_id.to_owned(), "expired".to_owned())
}

pub fn an_expired_message_is_dead_lettered_and_its_group_goes_on(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e: Vec<String> = (0..3).map(event).collect();
    t.publish_with(msg("g", &e[0]), ttl(10.0)).unwrap();
    t.publish_with(msg("g", &e[1]), Delivery { expires_at: Some(1100.0), ..ttl(500.0) }).unwrap();
    t.publish("g", &e[2], 0, None).unwrap();
    clock.advance(9.5);
    let lease = claim(&t).expect("the first, before it expires");
    assert_eq!(lease.event, e[0]);
    t.nack(&lease, 0.0).unwrap();
    clock.advance(0.5);
    let lease = claim(&t).expect("the second: the first expired");
    assert_eq!(lease.event, e[1], "its group goes on behind the expired one");
    t.nack(&lease, 0.0).unwrap();
    clock.advance(100.0);
    let lease = claim(&t).expect("the third: the second expired at 1100, the earlier of its two");
    assert_eq!(lease.event, e[2]);
    t.ack(&lease).unwrap();
    assert!(claim(&t).is_none());
    assert_eq!(dead(&t), [expired("g"), expired("g")]);
    let stats = t.stats().unwrap();
    assert_eq!((stats.messages, stats.groups, stats.dead, stats.expired), (0, 0, 2, 2));
}

/// More expired messages than one sweep takes, the earliest behind a leased head: the
/// claim meets expired heads the sweep left, buries each, and never hands one out.
pub fn a_claim_never_hands_out_an_expired_head(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let (old, live) = (event(0), event(1));
    t.publish("busy", &live, 0, None).unwrap();
    let busy = claim(&t).unwrap();
    for _ in 0..150 {
        t.publish_with(msg("busy", &old), ttl(1.0)).unwrap();
    }
    for g in 0..3 {
        let group = format!("g{g}");
        t.publish_with(msg(&group, &old), ttl(5.0)).unwrap();
        t.publish(&group, &live, 0, None).unwrap();
    }
    clock.advance(5.0);
    let mut served = Vec::new();
    while let Some(lease) = claim(&t) {
        assert_eq!(lease.event, live, "{}: never an expired head", lease.group_id);
        t.ack(&lease).unwrap();
        served.push(lease.group_id);
    }
    served.sort();
    assert_eq!(served, ["g0", "g1", "g2"]);
    assert_eq!(t.stats().unwrap().expired, 153);
    t.ack(&busy).unwrap();
}

/// A worker finishes what it holds: its lease outlives the message's expiry. A lease that
/// lapsed is no worker's: the message expires then.
pub fn a_leased_message_never_expires_under_its_worker(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e0 = event(0);
    t.publish_with(msg("held", &e0), ttl(5.0)).unwrap();
    let mut lease = claim(&t).unwrap();
    clock.advance(20.0);
    assert!(claim(&t).is_none());
    t.extend(&mut lease, V).unwrap();
    t.ack(&lease).expect("its worker's ack, past the expiry");
    t.publish_with(msg("lapsed", &e0), ttl(5.0)).unwrap();
    let lapsed = t.claim("w", 2.0, 0, &[]).unwrap().unwrap();
    clock.advance(10.0);
    assert!(claim(&t).is_none(), "expired once its lease lapsed: not handed out again");
    assert!(matches!(t.ack(&lapsed), Err(Error::LeaseLost(_))));
    assert_eq!(dead(&t), [expired("lapsed")]);
}

/// The sweep takes what no claim passes: a message behind a leased head, a parked head, a
/// paused group's (one of them published with a delay, its hold long past).
pub fn the_sweep_expires_messages_behind_a_head_parked_and_paused(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e: Vec<String> = (0..5).map(event).collect();
    t.publish("busy", &e[0], 0, None).unwrap();
    t.publish_with(msg("busy", &e[1]), ttl(5.0)).unwrap();
    t.publish("busy", &e[2], 0, None).unwrap();
    let busy = claim(&t).unwrap();
    t.publish_with(msg("parked", &e[3]), ttl(5.0)).unwrap();
    t.nack(&claim(&t).unwrap(), 60.0).unwrap();
    t.publish_with(msg("paused", &e[4]), ttl(5.0)).unwrap();
    t.pause(PauseTarget::Group("paused")).unwrap();
    t.publish_with(msg("paused", &e[4]), Delivery { delay: 1.0, ..ttl(5.0) }).unwrap();
    clock.advance(6.0);
    assert!(claim(&t).is_none(), "each group is leased, parked or paused");
    let mut swept = dead(&t);
    swept.sort();
    assert_eq!(swept, [expired("busy"), expired("parked"), expired("paused"), expired("paused")]);
    let letters = t.dead_letters(None, None, 10).unwrap().items;
    assert!(letters.iter().all(|d| d.last_worker.is_none()), "no worker held them: {letters:?}");
    let stats = t.stats().unwrap();
    assert_eq!((stats.expired, stats.groups, stats.parked), (4, 1, 0), "the parked and paused groups are gone");
    t.ack(&busy).unwrap();
    assert_eq!(claim(&t).unwrap().event, e[2], "behind the lease, the expired one is gone");
    t.resume(PauseTarget::Group("paused")).unwrap();
}

/// What expires frees its unique key, as any removal does.
pub fn an_expired_message_frees_its_unique_key(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e0 = event(0);
    let unique = Delivery { unique: Some(Unique { key: "job", mode: Default::default() }), ..ttl(5.0) };
    let first = t.publish_with(msg("g", &e0), unique).unwrap();
    assert!(t.publish_with(msg("g", &e0), unique).unwrap().duplicate);
    clock.advance(5.0);
    assert!(claim(&t).is_none());
    let again = t.publish_with(msg("g", &e0), unique).unwrap();
    assert!(!again.duplicate && again.seq != first.seq, "{again:?}");
    assert_eq!(t.redrive(DeadLetters::All).unwrap(), 1, "an expired message can be redriven");
    let back = claim(&t).unwrap();
    assert_eq!(back.group_id, "g");
}

pub fn bad_expiries_are_refused_and_change_nothing(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e0 = event(0);
    let at = |t: f64| Delivery { expires_at: Some(t), ..Delivery::default() };
    let cases = [
        (ttl(0.0), "ttl is 0; it must be a finite number of seconds > 0"),
        (ttl(-1.0), "ttl is -1"),
        (ttl(f64::NAN), "ttl is NaN"),
        (ttl(f64::INFINITY), "ttl is inf"),
        (ttl(400_000_000.0), "at most 315360000 (ten years)"),
        (at(f64::NAN), "expires_at is NaN"),
        (at(-1.0), "expires_at is -1"),
        (at(1000.0), "expires_at is 1000: not after now (1000)"),
        (Delivery { delay: 60.0, ..ttl(30.0) }, "expires_at is 1030: not after the message is due (1060)"),
        (Delivery { not_before: Some(1100.0), ..at(1100.0) }, "expires_at is 1100: not after the message is due"),
    ];
    for (delivery, says) in cases {
        match t.publish_with(msg("g", &e0), delivery) {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{says}: {other:?}"),
        }
        match t.publish_many_with(&[(msg("g", &e0), Delivery::default()), (msg("g", &e0), delivery)]) {
            Err(Error::Argument(m)) => assert!(m.contains("messages[1]."), "{m:?}"),
            other => panic!("{says}: {other:?}"),
        }
    }
    assert_eq!(t.stats().unwrap().messages, 0, "nothing written");
}

/// In the application's transaction an expiry is checked as the publish is queued, so
/// the transaction goes on; the commit stores what expires as any publish.
pub fn an_expiry_in_a_transaction_is_checked_as_it_is_queued(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e0 = event(0);
    let mut tx = t.begin();
    match tx.publish_with(msg("g", &e0), Delivery { delay: 60.0, ..ttl(30.0) }) {
        Err(Error::Argument(m)) => assert!(m.contains("not after the message is due (1060)"), "{m}"),
        other => panic!("{other:?}"),
    }
    tx.publish_with(msg("g", &e0), ttl(5.0)).expect("the transaction goes on");
    assert_eq!(tx.commit().unwrap().len(), 1);
    clock.advance(5.0);
    assert!(claim(&t).is_none());
    assert_eq!(dead(&t), [expired("g")]);
}
