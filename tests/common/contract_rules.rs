//! The contract's checks of the rules a message lives by (docs/queue.md, "Unique keys"):
//! listed in contract.rs's `CHECKS` with the others, and run wherever they run.

use harel_transport::{Delivery, Error, Headers, Lease, Message, Options, Published, Unique, UniqueMode, Value};

use super::contract::{app_table, count, Open};
use super::{event, TestClock};

const V: f64 = 30.0;

fn msg<'a>(group_id: &'a str, event_json: &'a str) -> Message<'a> {
    Message { group_id, event_json, priority: 0, routing_key: None, headers: None }
}

fn unique(key: &str, mode: UniqueMode) -> Delivery<'_> {
    Delivery { unique: Some(Unique { key, mode }), ..Delivery::default() }
}

fn keep(key: &str) -> Delivery<'_> {
    unique(key, UniqueMode::Keep)
}

fn claim(t: &harel_transport::Transport) -> Option<Lease> {
    t.claim("w", V, 0, &[]).unwrap()
}

fn stored(seq: i64) -> impl Fn(&Published) -> bool {
    move |p| !p.duplicate && !p.replaced && p.seq != seq
}

pub fn a_unique_key_holds_one_pending_message_until_it_is_processed(open: Open<'_>) {
    let t = open(&Options::new());
    let (e0, e1) = (event(0), event(1));
    let first = t.publish_with(msg("g", &e0), keep("job-1")).unwrap();
    assert!(!first.duplicate);
    let ready = t.publish_with(msg("g", &e1), keep("job-1")).unwrap();
    assert_eq!(ready, Published { seq: first.seq, duplicate: true, replaced: false }, "pending: its seq");
    let lease = claim(&t).unwrap();
    assert_eq!((lease.seq, lease.event.as_str()), (first.seq, e0.as_str()), "the first event, kept");
    assert!(t.publish_with(msg("g", &e1), keep("job-1")).unwrap().duplicate, "leased is still pending");
    assert_eq!(t.stats().unwrap().messages, 1, "no duplicate stored");
    t.ack(&lease).unwrap();
    // Freed by the ack: the next publish with the key is a new message.
    let second = t.publish_with(msg("g", &e1), keep("job-1")).unwrap();
    assert!(stored(first.seq)(&second), "{second:?}");
    t.dead_letter(&claim(&t).unwrap(), "failed").unwrap();
    let third = t.publish_with(msg("g", &e0), keep("job-1")).unwrap();
    assert!(stored(second.seq)(&third), "freed by the dead letter: {third:?}");
    assert_eq!(t.purge_group("g").unwrap(), 1);
    let fourth = t.publish_with(msg("other", &e0), keep("job-1")).unwrap();
    assert!(stored(third.seq)(&fourth), "freed by the purge: {fourth:?}");
    // A redrive brings the dead letter back without its key.
    assert_eq!(t.redrive(harel_transport::DeadLetters::All).unwrap(), 1);
    assert!(t.publish_with(msg("other", &e1), keep("job-1")).unwrap().duplicate, "the key is still the fourth's");
    assert_eq!(t.stats().unwrap().messages, 2);
    let plain = t.publish_with(msg("g", &e1), Delivery::default()).unwrap();
    assert!(!plain.duplicate && !plain.replaced);
}

pub fn replace_gives_the_pending_message_the_new_event_in_its_place(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e: Vec<String> = (0..6).map(event).collect();
    let replace = |key| unique(key, UniqueMode::Replace);
    t.publish("g", &e[0], 0, None).unwrap();
    let pending = t.publish_with(msg("g", &e[1]), replace("u")).unwrap();
    t.publish("g", &e[2], 0, None).unwrap();
    let headers = Headers::new(&[("why", "newer")]).unwrap();
    let newer = Message { headers: Some(&headers), ..msg("g", &e[3]) };
    let replaced = t.publish_with(newer, replace("u")).unwrap();
    assert_eq!(replaced, Published { seq: pending.seq, duplicate: true, replaced: true });
    let head = claim(&t).unwrap();
    assert_eq!(head.event, e[0]);
    t.ack(&head).unwrap();
    let lease = claim(&t).unwrap();
    assert_eq!((lease.seq, lease.event.as_str()), (pending.seq, e[3].as_str()), "the new event, in the old place");
    assert_eq!(lease.headers.get("why"), Some("newer"));
    // Never replaced under a worker: the publish is a duplicate, the event is the one it holds.
    let refused = t.publish_with(msg("g", &e[4]), replace("u")).unwrap();
    assert_eq!(refused, Published { seq: pending.seq, duplicate: true, replaced: false });
    // A lapsed lease is no worker's: replaced, and the old holder's ack is refused.
    clock.advance(V + 1.0);
    assert!(t.publish_with(msg("g", &e[5]), replace("u")).unwrap().replaced);
    assert!(matches!(t.ack(&lease), Err(Error::LeaseLost(_))), "its holder never saw the new event");
    let again = claim(&t).unwrap();
    assert_eq!((again.seq, again.event.as_str()), (pending.seq, e[5].as_str()));
    t.ack(&again).unwrap();
    assert_eq!(claim(&t).unwrap().event, e[2], "the group's order kept");
}

pub fn debounce_moves_the_due_time_never_past_max_delay(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let debounce = unique("recompute", UniqueMode::Debounce { delay: 10.0, max_delay: 25.0 });
    let e: Vec<String> = (0..4).map(event).collect();
    let first = t.publish_with(msg("g", &e[0]), debounce).unwrap();
    assert_eq!(t.stats().unwrap().delayed, 1, "due in 10 s");
    for (at, i) in [(1005.0, 1), (1012.0, 2), (1020.0, 3)] {
        clock.advance(at - clock.now());
        let p = t.publish_with(msg("g", &e[i]), debounce).unwrap();
        assert_eq!(p, Published { seq: first.seq, duplicate: true, replaced: true });
    }
    // Due at 1015, then 1022, then 1025: min(1020 + 10, 1000 + 25).
    assert_eq!(t.stats().unwrap().next_due_at, Some(1025.0));
    clock.advance(4.9);
    assert!(claim(&t).is_none(), "not before its due time");
    clock.advance(0.2);
    let lease = claim(&t).expect("due at its first publish + max_delay");
    assert_eq!((lease.seq, lease.event.as_str()), (first.seq, e[3].as_str()));
    // A debounce may bring a due time forward (a longer plain delay, a park): the group's
    // turn comes with it.
    let again = unique("other", UniqueMode::Debounce { delay: 10.0, max_delay: 25.0 });
    let parked = t.publish_with(msg("h", &e[0]), Delivery { delay: 100.0, ..again }).unwrap();
    clock.advance(1.0);
    assert!(t.publish_with(msg("h", &e[1]), again).unwrap().replaced);
    clock.advance(10.1);
    assert_eq!(claim(&t).map(|l| l.seq), Some(parked.seq), "due 10 s after the last publish, not 100");
}

pub fn unique_keys_in_a_batch_are_checked_in_order(open: Open<'_>) {
    let t = open(&Options::new());
    let e: Vec<String> = (0..5).map(event).collect();
    let batch = [
        (msg("a", &e[0]), keep("k1")),
        (msg("b", &e[1]), keep("k2")),
        (msg("a", &e[2]), keep("k1")),
        (msg("a", &e[3]), unique("k2", UniqueMode::Replace)),
    ];
    let out = t.publish_many_with(&batch).unwrap();
    assert_eq!(out.iter().map(|p| (p.duplicate, p.replaced)).collect::<Vec<_>>(), [
        (false, false),
        (false, false),
        (true, false),
        (true, true)
    ]);
    assert_eq!((out[2].seq, out[3].seq), (out[0].seq, out[1].seq), "the earlier messages of the batch");
    assert_eq!(t.stats().unwrap().messages, 2);
    let lease = claim(&t).unwrap();
    assert_eq!(lease.event, e[0], "the first event of k1, kept");
}

/// In the application's transaction a duplicate is an answer, never an error: the
/// transaction's own statements commit with it.
pub fn a_unique_duplicate_in_a_transaction_is_an_answer(open: Open<'_>) {
    let t = open(&Options::new());
    let (e0, e1) = (event(0), event(1));
    let first = t.publish_with(msg("a", &e0), keep("k1")).unwrap();
    let table = app_table(&t, "unique");
    let mut tx = t.begin();
    tx.execute(&format!("INSERT INTO {table} (id) VALUES (?1)"), [Value::Integer(1)]).unwrap();
    tx.publish_with(msg("a", &e1), keep("k1")).unwrap();
    tx.publish_with(msg("c", &e1), keep("k3")).unwrap();
    let committed = tx.commit().unwrap();
    assert_eq!(committed[0], Published { seq: first.seq, duplicate: true, replaced: false });
    assert!(!committed[1].duplicate);
    assert_eq!(count(&t, &table), 1, "the transaction's row committed with it");
    assert_eq!(t.stats().unwrap().messages, 2);
}

pub fn bad_unique_keys_are_refused_and_change_nothing(open: Open<'_>) {
    let t = open(&Options::new());
    let e0 = event(0);
    let long = "k".repeat(257);
    let debounce = |delay, max_delay| unique("k", UniqueMode::Debounce { delay, max_delay });
    let both = Delivery { key: Some("idem"), ..keep("k") };
    let cases: Vec<(Delivery<'_>, &str)> = vec![
        (keep(""), "unique_key is empty"),
        (keep(&long), "unique_key is 257 bytes; at most 256"),
        (both, "key and unique_key are both given"),
        (debounce(f64::NAN, 10.0), "debounce delay is NaN"),
        (debounce(-1.0, 10.0), "debounce delay is -1"),
        (debounce(1.0, f64::INFINITY), "debounce max_delay is inf"),
        (debounce(10.0, 5.0), "debounce max_delay is 5; it must be >= its delay (10)"),
    ];
    for (delivery, says) in cases {
        match t.publish_with(msg("g", &e0), delivery) {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{says}: {other:?}"),
        }
        let batch = [(msg("g", &e0), Delivery::default()), (msg("g", &e0), delivery)];
        match t.publish_many_with(&batch) {
            Err(Error::Argument(m)) => {
                let both = "messages[1].key and messages[1].unique_key";
                assert!(m.contains(&format!("messages[1].{says}")) || m.contains(both), "{m:?}")
            }
            other => panic!("{says}: {other:?}"),
        }
    }
    assert_eq!(t.stats().unwrap().messages, 0, "nothing written");
}
