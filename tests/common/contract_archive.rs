//! The contract's checks of the archive (docs/queue.md, "The archive"): listed in
//! contract.rs's `CHECKS` with the others, and run wherever they run. None expects one group
//! served before another, and what one check prunes is one group's, on one shard.

use harel_transport::{Archived, DeadLetters, Delivery, Error, Headers, Lease, Message, Options, Transport, Wait};

use super::contract::Open;
use super::{event, TestClock};

const V: f64 = 30.0;
const HOUR: f64 = 3600.0;

fn msg<'a>(group_id: &'a str, event_json: &'a str) -> Message<'a> {
    Message { group_id, event_json, priority: 0, routing_key: None, headers: None }
}

fn archiving(clock: &TestClock, retention: f64) -> Options {
    let mut options = clock.options();
    options.archive(retention).unwrap();
    options
}

fn claim(t: &Transport) -> Option<Lease> {
    t.claim("w", V, 0, &[]).unwrap()
}

/// Every archived message, page after page of `limit`, with the pages' count.
fn archived(t: &Transport, group_id: Option<&str>, limit: usize) -> (Vec<Archived>, usize) {
    let (mut all, mut pages, mut cursor) = (Vec::new(), 0, None);
    loop {
        let page = t.archive(group_id, cursor.as_deref(), limit).unwrap();
        assert!(page.items.len() <= limit);
        all.extend(page.items);
        pages += 1;
        match page.next {
            Some(next) => cursor = Some(next),
            None => return (all, pages),
        }
    }
}

/// One acked message, claimed twice (a nack between): everything the archive keeps of it.
pub fn an_acked_message_is_archived_with_what_was_done(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&archiving(&clock, HOUR));
    let headers = Headers::new(&[("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]).unwrap();
    let e0 = event(0);
    let seq = t.publish_with(Message { headers: Some(&headers), ..msg("g", &e0) }, Delivery::default()).unwrap().seq;
    clock.advance(1.0);
    t.nack(&claim(&t).unwrap(), 0.0).unwrap();
    clock.advance(1.0);
    let lease = t.claim("worker-7", V, 0, &[]).unwrap().unwrap();
    clock.advance(2.5);
    assert!(t.archive(None, None, 10).unwrap().items.is_empty(), "nothing before the ack");
    t.ack(&lease).unwrap();
    let page = t.archive(None, None, 10).unwrap();
    assert_eq!(page.next, None);
    let [a] = page.items.as_slice() else { panic!("one archived: {page:?}") };
    assert_eq!((a.seq, a.group_id.as_str(), a.event.as_str()), (seq, "g", e0.as_str()));
    assert_eq!((a.attempts, a.worker_id.as_str()), (2, "worker-7"));
    assert_eq!(a.headers, headers);
    assert_eq!((a.published_at, a.claimed_at, a.acked_at), (Some(1000.0), Some(1002.0), 1004.5));
    assert_eq!(t.stats().unwrap().messages, 0, "acked: gone from the queue");
}

/// Every way of acking archives, and only an ack does: a lost lease's, a dead letter, an
/// expired message and a purge keep nothing there.
pub fn every_ack_archives_and_nothing_else_does(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&archiving(&clock, HOUR));
    let e: Vec<String> = (0..8).map(event).collect();
    for (i, e) in e.iter().enumerate() {
        t.publish(&format!("g{i}"), e, 0, None).unwrap();
    }
    t.ack(&claim(&t).unwrap()).unwrap();
    let some = t.claim_many("w", V, 0, &[], 2, &Wait::none()).unwrap();
    assert!(t.ack_many(&some).unwrap().iter().all(Result::is_ok));
    let one = claim(&t).unwrap();
    let next = t.ack_and_claim(&one, "w", V, 0, &[]).unwrap().unwrap();
    let (outcomes, mut rest) = t.ack_and_claim_many(&[next], "w", V, 0, &[], 3).unwrap();
    assert!(outcomes[0].is_ok());
    let acked = 3 + some.len();
    assert_eq!(archived(&t, None, 100).0.len(), acked, "ack, ack_many, ack_and_claim, ack_and_claim_many");
    rest.extend(std::iter::from_fn(|| claim(&t)));
    let [lost, dead, kept] = rest.as_slice() else { panic!("three left: {rest:?}") };
    let forged = Lease { worker_id: "someone-else".into(), ..lost.clone() };
    assert!(matches!(t.ack(&forged), Err(Error::LeaseLost(_))));
    assert!(t.ack_many(std::slice::from_ref(&forged)).unwrap()[0].is_err());
    t.dead_letter(dead, "poison").unwrap();
    t.ack(kept).unwrap();
    t.ack(lost).unwrap();
    t.publish_with(msg("expiring", &e[0]), Delivery { ttl: Some(5.0), ..Delivery::default() }).unwrap();
    t.publish("purged", &e[0], 0, None).unwrap();
    t.purge_group("purged").unwrap();
    clock.advance(5.0);
    assert!(claim(&t).is_none(), "the expired one is buried, not handed out");
    let (all, _) = archived(&t, None, 100);
    let mut events: Vec<&str> = all.iter().map(|a| a.event.as_str()).collect();
    events.sort_unstable();
    let mut acked: Vec<&str> = e.iter().map(String::as_str).filter(|e| *e != dead.event).collect();
    acked.sort_unstable();
    assert_eq!(events, acked, "every acked one, once; not the dead letter, the expired or the purged");
    assert_eq!(t.dead_letters(None, None, 10).unwrap().items.len(), 2, "the dead letter and the expired one");
    assert_eq!(t.redrive(DeadLetters::All).unwrap(), 2);
}

/// Off (the default), an ack archives nothing; a transport that keeps the archive beside
/// one that does not archives only its own acks.
pub fn the_archive_is_off_by_default(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let off = open(&clock.options());
    let on = open(&archiving(&clock, HOUR));
    let (e0, e1) = (event(0), event(1));
    off.publish("g", &e0, 0, None).unwrap();
    off.publish("g", &e1, 0, None).unwrap();
    off.ack(&claim(&off).unwrap()).unwrap();
    assert!(off.archive(None, None, 10).unwrap().items.is_empty());
    on.ack(&claim(&on).unwrap()).unwrap();
    let items = off.archive(None, None, 10).unwrap().items;
    assert_eq!(items.iter().map(|a| a.event.as_str()).collect::<Vec<_>>(), [e1.as_str()], "read by either");
}

/// A group's history reads in order, in pages; every group's, page after page, lists each
/// archived message once.
pub fn a_groups_history_reads_in_order_in_pages(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&archiving(&clock, HOUR));
    let e: Vec<String> = (0..5).map(event).collect();
    let mut published = Vec::new();
    for e in &e {
        for g in ["a", "b", "c"] {
            published.push((g, t.publish_with(msg(g, e), Delivery::default()).unwrap().seq));
        }
    }
    while let Some(lease) = claim(&t) {
        clock.advance(0.25);
        t.ack(&lease).unwrap();
    }
    for g in ["a", "b", "c"] {
        let (history, pages) = archived(&t, Some(g), 2);
        assert_eq!(pages, 3, "5 in pages of 2");
        let seqs: Vec<i64> = history.iter().map(|a| a.seq).collect();
        let want: Vec<i64> = published.iter().filter(|(group, _)| *group == g).map(|(_, seq)| *seq).collect();
        assert_eq!(seqs, want, "{g}'s history in order");
        assert!(history.iter().map(|a| &a.event).eq(e.iter()));
        assert!(history.windows(2).all(|w| w[0].acked_at < w[1].acked_at));
    }
    let (all, _) = archived(&t, None, 4);
    let mut seen: Vec<(String, i64)> = all.into_iter().map(|a| (a.group_id, a.seq)).collect();
    seen.sort();
    let mut want: Vec<(String, i64)> = published.iter().map(|(g, seq)| ((*g).to_owned(), *seq)).collect();
    want.sort();
    assert_eq!(seen, want, "every one once");
}

/// Past the retention an ack prunes what is older, at most 100 rows a call: a backlog goes
/// over several acks. One group, so every row is on one shard.
pub fn the_archive_is_pruned_after_its_retention_a_bounded_number_per_ack(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&archiving(&clock, 100.0));
    let e0 = event(0);
    let batch: Vec<Message<'_>> = (0..150).map(|_| msg("g", &e0)).collect();
    t.publish_many(&batch).unwrap();
    while let Some(lease) = claim(&t) {
        t.ack(&lease).unwrap();
    }
    t.publish_many(&batch[..3]).unwrap();
    clock.advance(100.0);
    t.ack(&claim(&t).unwrap()).unwrap();
    assert_eq!(archived(&t, Some("g"), 500).0.len(), 151, "not older than the retention yet: nothing pruned");
    clock.advance(0.5);
    t.ack(&claim(&t).unwrap()).unwrap();
    let (left, _) = archived(&t, Some("g"), 500);
    assert_eq!(left.len(), 52, "100 of the 150 pruned, oldest first");
    assert!(left[..50].iter().all(|a| a.acked_at == 1000.0) && left[50].acked_at == 1100.0);
    t.ack(&claim(&t).unwrap()).unwrap();
    let (left, _) = archived(&t, Some("g"), 500);
    assert_eq!(left.iter().map(|a| a.acked_at).collect::<Vec<_>>(), [1100.0, 1100.5, 1100.5]);
}

/// The archive's option and look refuse bad input, naming it.
pub fn bad_archive_arguments_are_refused(open: Open<'_>) {
    let t = open(&archiving(&TestClock::at(1000.0), HOUR));
    let mut options = Options::new();
    let cases = [
        (0.0, "archive_retention is 0; it must be a finite number of seconds > 0"),
        (-1.0, "archive_retention is -1"),
        (f64::NAN, "archive_retention is NaN"),
        (f64::INFINITY, "archive_retention is inf"),
        (400_000_000.0, "archive_retention is 400000000; at most 315360000 (ten years)"),
    ];
    for (retention, says) in cases {
        match options.archive(retention) {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{says}: {other:?}"),
        }
    }
    let looks = [
        (t.archive(Some(""), None, 10), "group_id"),
        (t.archive(None, None, 0), "limit"),
        (t.archive(None, Some("d1.00"), 10), "cursor"),
        (t.archive(Some("g"), Some("nonsense"), 10), "cursor"),
    ];
    for (look, says) in looks {
        match look {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{says}: {other:?}"),
        }
    }
}
