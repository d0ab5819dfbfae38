//! `publish_many`: a batch of messages in one transaction, all or nothing, in order.

use harel_transport_testkit as common;

use common::drain::claim_and_ack_all as drain;
use common::{event, file, memory, temp_db, Raw, TestClock};
use harel_transport::{Error, Message, Transport};

const V: f64 = 30.0;

/// Messages into `group` with the events `events`, priority 0, no routing key.
fn plain<'a>(group: &'a str, events: &'a [String]) -> Vec<Message<'a>> {
    events.iter().map(|e| Message { group_id: group, event_json: e, priority: 0, routing_key: None, headers: None }).collect()
}

/// A queue file holding one message, and a view of it of its own to compare what it
/// holds before and after a call.
fn one_message_in_a_file() -> (tempfile::TempDir, Transport, Raw) {
    let (dir, path) = temp_db();
    let t = file(&path, &TestClock::at(1000.0));
    t.publish("g", &event(1), 0, None).unwrap();
    (dir, t, Raw::open(&path))
}

#[test]
fn a_batch_keeps_its_order_within_a_group() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    let events: Vec<String> = (0..20).map(event).collect();
    t.publish_many(&plain("g", &events)).unwrap();
    let delivered: Vec<String> = drain(&t).into_iter().map(|(_, e)| e).collect();
    assert_eq!(delivered, events);
}

#[test]
fn interleaved_groups_keep_each_group_in_batch_order() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    let events: Vec<String> = (0..9).map(event).collect();
    let groups = ["a", "b", "c"];
    let batch: Vec<Message> = events
        .iter()
        .enumerate()
        .map(|(i, e)| Message { group_id: groups[i % 3], event_json: e, priority: 0, routing_key: None, headers: None })
        .collect();
    t.publish_many(&batch).unwrap();
    let delivered = drain(&t);
    assert_eq!(delivered.len(), 9);
    for (n, g) in groups.iter().enumerate() {
        let of_group: Vec<&str> = delivered.iter().filter(|(group, _)| group == g).map(|(_, e)| e.as_str()).collect();
        let expected: Vec<&str> = events.iter().skip(n).step_by(3).map(String::as_str).collect();
        assert_eq!(of_group, expected, "group {g} in its batch order");
    }
    let first_three: Vec<&str> = delivered.iter().take(3).map(|(g, _)| g.as_str()).collect();
    assert_eq!(first_three, groups, "new groups are served in the order they arrived");
}

#[test]
fn a_batch_follows_earlier_publishes_of_its_groups() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(0), 0, None).unwrap();
    let events: Vec<String> = (1..4).map(event).collect();
    t.publish_many(&plain("g", &events)).unwrap();
    t.publish("g", &event(4), 0, None).unwrap();
    let delivered: Vec<String> = drain(&t).into_iter().map(|(_, e)| e).collect();
    assert_eq!(delivered, (0..5).map(event).collect::<Vec<_>>());
}

#[test]
fn the_first_message_into_a_group_fixes_priority_and_routing_key() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    let (e1, e2, e3) = (event(1), event(2), event(3));
    t.publish_many(&[
        Message { group_id: "g", event_json: &e1, priority: 4, routing_key: Some("east"), headers: None },
        Message { group_id: "g", event_json: &e2, priority: 0, routing_key: Some("west"), headers: None },
        Message { group_id: "h", event_json: &e3, priority: 1, routing_key: None, headers: None },
    ])
    .unwrap();
    assert!(t.claim("w", V, 0, &["west"]).unwrap().is_none(), "g's routing key stayed east");
    let first = t.claim("w", V, 4, &["east"]).unwrap().expect("g's priority stayed 4");
    assert_eq!(first.event, e1);
    t.ack(&first).unwrap();
    assert_eq!(t.claim("w", V, 4, &["east"]).unwrap().expect("g's second message").event, e2);
    assert!(t.claim("w", V, 2, &[]).unwrap().is_none(), "h has priority 1");
    assert_eq!(t.claim("w", V, 1, &[]).unwrap().expect("h").event, e3);
}

#[test]
fn a_batch_does_not_change_an_existing_group() {
    let clock = TestClock::at(1000.0);
    let t = memory(&clock);
    t.publish("g", &event(1), 3, Some("east")).unwrap();
    let e2 = event(2);
    t.publish_many(&[Message { group_id: "g", event_json: &e2, priority: 0, routing_key: Some("west"), headers: None }]).unwrap();
    assert!(t.claim("w", V, 0, &["west"]).unwrap().is_none());
    let first = t.claim("w", V, 3, &["east"]).unwrap().unwrap();
    t.ack(&first).unwrap();
    assert_eq!(t.claim("w", V, 3, &["east"]).unwrap().unwrap().event, e2);
}

#[test]
fn an_empty_batch_does_nothing() {
    let (_dir, t, raw) = one_message_in_a_file();
    let before = raw.snapshot("harel");
    t.publish_many(&[]).unwrap();
    assert_eq!(raw.snapshot("harel"), before);
}

#[test]
fn one_bad_message_rejects_the_whole_batch() {
    let (_dir, t, raw) = one_message_in_a_file();
    let before = raw.snapshot("harel");
    let (good, bad) = (event(2), "{not json".to_owned());
    let batch = [
        Message { group_id: "g", event_json: &good, priority: 0, routing_key: None, headers: None },
        Message { group_id: "new", event_json: &good, priority: 2, routing_key: Some("k"), headers: None },
        Message { group_id: "g", event_json: &bad, priority: 0, routing_key: None, headers: None },
        Message { group_id: "g", event_json: &good, priority: 0, routing_key: None, headers: None },
    ];
    match t.publish_many(&batch) {
        Err(Error::Argument(m)) => assert!(m.contains("messages[2].event_json"), "{m}"),
        other => panic!("want Error::Argument, got {other:?}"),
    }
    assert_eq!(raw.snapshot("harel"), before, "nothing of the batch was stored");
}

#[test]
fn a_database_failure_rolls_the_whole_batch_back() {
    let (_dir, t, raw) = one_message_in_a_file();
    // The database refuses the third message, after two were written in the transaction.
    raw.batch(
        "CREATE TRIGGER poison BEFORE INSERT ON harel_transport_messages \
         WHEN NEW.event = '\"poison\"' BEGIN SELECT RAISE(ABORT, 'poisoned'); END;",
    );
    let before = raw.snapshot("harel");
    let events = [event(2), event(3), "\"poison\"".to_owned(), event(4)];
    let batch: Vec<Message> = events
        .iter()
        .enumerate()
        .map(|(i, e)| Message { group_id: ["g", "new"][i % 2], event_json: e, priority: 0, routing_key: None, headers: None })
        .collect();
    match t.publish_many(&batch) {
        Err(Error::Database(m)) => {
            assert!(m.contains("publish_many") && m.contains("poisoned"), "{m}")
        }
        other => panic!("want Error::Database, got {other:?}"),
    }
    assert_eq!(raw.snapshot("harel"), before, "the batch was rolled back");
    raw.batch("DROP TRIGGER poison;");
    t.publish_many(&batch).expect("the same batch once the database accepts it");
    assert_eq!(drain(&t).len(), 5);
}

#[test]
fn a_batch_from_the_async_face() {
    let clock = TestClock::at(1000.0);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let t = harel_transport::AsyncTransport::open(":memory:", &clock.options()).await.unwrap();
        let events: Vec<String> = (0..3).map(event).collect();
        t.publish_many(&plain("g", &events)).await.unwrap();
        for e in &events {
            let lease = t.claim("w", V, 0, &[]).await.unwrap().expect("a message");
            assert_eq!(&lease.event, e);
            t.ack(&lease).await.unwrap();
        }
    });
}
