//! Issue 16: on a libSQL server every worker operation is one HTTP request, one
//! transaction on the server, with the guarantees it has on a local file. A counting proxy
//! (tests/common/http_proxy.rs) sits between the transport and a sqld on loopback, in both
//! server modes: remote, and embedded replica (whose writes go to the primary).
//!
//! sqld comes from `HAREL_SQLD` or `PATH`, as for tests/server.rs; without it the tests
//! that need it pass as skipped and say so on stderr. The proxy's own test needs no sqld.

use harel_transport_testkit as common;

use std::time::Duration;

use common::http_proxy::{CountingProxy, RequestCounter};
use common::sqld::{serial, Client, ServerSql, Sqld, Via};
use common::sqld_or_skip;
use common::{event, hostile, TestClock};
use harel_transport::{DeadLetters, Error, Lease, Message, Options, Transport, Wait};

const V: f64 = 30.0;

/// A transport on the server (directly or through a proxy) at `url`.
fn open(via: Via, url: &str, server: &Sqld, options: &Options) -> Transport {
    Client::new(via, url, server.token(), server.scratch()).open(options)
}

fn with_prefix(clock: &TestClock, prefix: &str) -> Options {
    let mut o = clock.options();
    o.prefix(prefix).unwrap();
    o
}

/// How many requests `call` made through `proxy`, with its result.
fn requests<T>(proxy: &CountingProxy, call: impl FnOnce() -> T) -> (usize, T) {
    let before = proxy.requests();
    let out = call();
    // The proxy counts a request as its bytes pass; they have all passed once the answer is back.
    (proxy.requests() - before, out)
}

#[test]
fn the_counting_proxy_finds_each_request_however_its_bytes_arrive() {
    let _limit = common::time_limit();
    let one = b"POST /v3/pipeline HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello";
    let two = [&one[..], b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n"].concat();
    let mut counter = RequestCounter::default();
    assert_eq!(counter.feed(&two), 2);
    let mut counter = RequestCounter::default();
    let total: usize = [&one[..], &one[..]].concat().iter().map(|b| counter.feed(&[*b])).sum();
    assert_eq!(total, 2, "one byte at a time, a body that looks like nothing is not a request");
    let body_like_a_request =
        [&b"POST / HTTP/1.1\r\nContent-Length: 24\r\n\r\n"[..], b"GET / HTTP/1.1\r\n\r\nxxxxxx"].concat();
    assert_eq!(RequestCounter::default().feed(&body_like_a_request), 1);
    let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
    assert_eq!(RequestCounter::default().feed(chunked), 2);
    // HTTP/2: the preface, SETTINGS, HEADERS opening streams 1 and 3, DATA, HEADERS again on 3 (trailers).
    let frame = |kind: u8, stream: u32, payload: &[u8]| {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend([kind, 0]);
        f.extend(stream.to_be_bytes());
        f.extend(payload);
        f
    };
    let h2 = [
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        frame(4, 0, &[]),
        frame(1, 1, b"hdr"),
        frame(0, 1, b"data"),
        frame(1, 3, b"hdr"),
        frame(1, 3, b"trailers"),
    ]
    .concat();
    let mut counter = RequestCounter::default();
    let split = h2.len() / 2;
    assert_eq!(counter.feed(&h2[..split]) + counter.feed(&h2[split..]), 2);
}

/// Every operation is one request, in both modes: the worker's, the administration's, and
/// (remote: a replica reads its local copy after a sync) the looks. A time that cannot be
/// sent fails before any request.
#[test]
fn each_operation_is_one_request() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("each_operation_is_one_request");
    let _serial = serial();
    let server = Sqld::start(&binary, false);
    let proxy = CountingProxy::start(server.port(), Duration::ZERO);
    let clock = TestClock::at(1000.0);
    let mut report = Vec::new();
    for via in Via::BOTH {
        {
            let options = with_prefix(&clock, &format!("r{}", report.len()));
            let t = open(via, &proxy.url(), &server, &options);
            let mut counts: Vec<(&str, usize)> = Vec::new();
            let mut count = |name, (n, ok): (usize, bool)| {
                assert!(ok, "{via:?}: {name} did not do what it should");
                counts.push((name, n));
            };
            count("publish", requests(&proxy, || t.publish("a", &event(1), 0, None).is_ok()));
            let batch: Vec<String> = (0..300).map(event).collect();
            let messages: Vec<Message> = batch
                .iter()
                .enumerate()
                .map(|(i, e)| Message {
                    group_id: ["a", "b", "c"][i % 3],
                    event_json: e,
                    priority: 0,
                    routing_key: None,
                    headers: None,
                })
                .collect();
            count("publish_many (300)", requests(&proxy, || t.publish_many(&messages).is_ok()));
            let (n, lease) = requests(&proxy, || t.claim("w", V, 0, &[]).unwrap());
            count("claim", (n, lease.is_some()));
            let lease = lease.unwrap();
            count("ack", requests(&proxy, || t.ack(&lease).is_ok()));
            let (n, lost) = requests(&proxy, || t.ack(&lease));
            count("ack (lease lost)", (n, matches!(lost, Err(Error::LeaseLost(_)))));
            let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
            let (n, next) = requests(&proxy, || t.ack_and_claim(&lease, "w", V, 0, &[]).unwrap());
            count("ack_and_claim", (n, next.is_some()));
            let lease = next.unwrap();
            count("nack", requests(&proxy, || t.nack(&lease, 0.0).is_ok()));
            let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
            count("nack with a delay", requests(&proxy, || t.nack(&lease, 5.0).is_ok()));
            let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
            count("dead_letter", requests(&proxy, || t.dead_letter(&lease, "no good").is_ok()));
            // The worker loop's batch operations.
            let (n, batch) = requests(&proxy, || t.claim_many("w", V, 0, &[], 2, &Wait::none()).unwrap());
            count("claim_many (2)", (n, batch.len() == 2));
            let mut lost = batch.clone();
            lost[1].worker_id = "someone-else".into();
            let (n, outcomes) = requests(&proxy, || t.ack_many(&lost[..2]).unwrap());
            count("ack_many (2, one lost)", (n, matches!(outcomes[..], [Ok(()), Err(Error::LeaseLost(_))])));
            let (n, acked_and_claimed) =
                requests(&proxy, || t.ack_and_claim_many(&batch[1..], "w", V, 0, &[], 2).unwrap());
            count(
                "ack_and_claim_many (2, 2)",
                (n, acked_and_claimed.0.iter().all(Result::is_ok) && acked_and_claimed.1.len() == 2),
            );
            let mut extended = acked_and_claimed.1[0].clone();
            let (n, ok) = requests(&proxy, || t.extend(&mut extended, 2.0 * V).is_ok());
            count("extend", (n, ok && extended.lock_expiry == acked_and_claimed.1[0].lock_expiry + V));
            let (n, routed) = requests(&proxy, || t.claim("w", V, 0, &["nowhere"]).unwrap());
            count("claim (nothing)", (n, routed.is_none()));
            // A head claimed max_attempts times is buried by the claim that finds it.
            let mut limited_options = with_prefix(&clock, &format!("r{}m", report.len()));
            limited_options.max_attempts(1);
            let limited = open(via, &proxy.url(), &server, &limited_options);
            limited.publish("p", &event(1), 0, None).unwrap();
            assert_eq!(limited.claim("w", V, 0, &[]).unwrap().map(|l| l.attempts), Some(1));
            clock.advance(V + 1.0);
            limited.publish("q", &event(2), 0, None).unwrap();
            let (n, next) = requests(&proxy, || limited.claim("w", V, 0, &[]).unwrap());
            count("claim burying a head over max_attempts", (n, next.is_some_and(|l| l.group_id == "q")));
            // Administration and looks.
            let (n, released) = requests(&proxy, || limited.release("q").unwrap());
            count("release", (n, released));
            count("purge_group", requests(&proxy, || limited.purge_group("q").unwrap() == 1));
            // p, lapsed and claimed max_attempts times, is buried by the next claim.
            assert!(limited.claim("w", V, 0, &[]).unwrap().is_none());
            count("redrive", requests(&proxy, || limited.redrive(DeadLetters::All).unwrap() == 1));
            count("purge_dead", requests(&proxy, || limited.purge_dead(DeadLetters::All).unwrap() == 0));
            count("purge", requests(&proxy, || limited.purge().unwrap() == 1));
            if via == Via::Remote {
                count("stats", requests(&proxy, || t.stats().unwrap().messages > 0));
                count("groups", requests(&proxy, || !t.groups(None, None, 10).unwrap().items.is_empty()));
                count("peek", requests(&proxy, || t.peek("c", None, 10).is_ok()));
                count("dead_letters", requests(&proxy, || t.dead_letters(None, None, 10).unwrap().items.len() == 1));
            }
            {
                let huge = with_prefix(&TestClock::at(1e308), &format!("r{}", report.len()));
                let far = open(via, &proxy.url(), &server, &huge);
                far.publish("far", &event(1), 0, None).unwrap();
                let (n, refused) = requests(&proxy, || far.claim("w", 1e308, 0, &[]));
                assert!(matches!(&refused, Err(Error::Argument(m)) if m.contains("finite")), "{refused:?}");
                assert_eq!(n, 0, "refused before any request");
            }
            // Publishing inside the application's transaction: with nothing to read, the
            // commit is the one request; a query begins it, and the commit ends it.
            let table = format!("app_orders_{}", report.len());
            t.transaction(|tx| tx.execute(&format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY)"), [])).unwrap();
            let created = event(0);
            let order = Message { group_id: "orders", event_json: &created, priority: 0, routing_key: None, headers: None };
            let (n, ok) = requests(&proxy, || {
                t.transaction(|tx| {
                    tx.execute(&format!("INSERT INTO {table} (id) VALUES (1)"), [])?;
                    tx.publish(order)
                })
                .is_ok()
            });
            count("transaction (INSERT + publish)", (n, ok));
            let mut tx = t.begin();
            tx.execute(&format!("INSERT INTO {table} (id) VALUES (2)"), []).unwrap();
            let (n, rows) = requests(&proxy, || tx.query(&format!("SELECT count(*) FROM {table}"), []).unwrap());
            count("transaction: the query that begins it", (n, rows == [vec![harel_transport::Value::Integer(2)]]));
            tx.publish(order).unwrap();
            count("transaction: the commit after a query", requests(&proxy, || tx.commit().is_ok()));
            report.push((via, counts));
        }
    }
    for (via, counts) in &report {
        println!("{via:?}: {counts:?}");
    }
    for (via, counts) in &report {
        let not_one: Vec<_> = counts.iter().filter(|c| c.1 != 1).collect();
        assert!(not_one.is_empty(), "{via:?}: operations that were not one request: {not_one:?}");
    }
}

/// A chain whose later statement fails applies nothing of what came before it: a trigger
/// on the server refuses a group in the middle of a 300-message batch (the groups' INSERT
/// of its second 128 messages), and the lease UPDATE of an ack_and_claim after its ack.
#[test]
fn a_batch_that_fails_half_way_applies_nothing() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_batch_that_fails_half_way_applies_nothing");
    let _serial = serial();
    let server = Sqld::start(&binary, false);
    let sql = ServerSql::new(&server.url(), None);
    let clock = TestClock::at(1000.0);
    for (n, via) in Via::BOTH.into_iter().enumerate() {
        let p = format!("h{n}");
        let t = open(via, &server.url(), &server, &with_prefix(&clock, &p));
        sql.execute(&format!(
            "CREATE TRIGGER {p}_refuse_group BEFORE INSERT ON {p}_transport_groups WHEN NEW.group_id = 'refused' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        ));
        let events: Vec<String> = (0..300).map(event).collect();
        let messages: Vec<Message> = events
            .iter()
            .enumerate()
            .map(|(i, e)| Message {
                group_id: if i == 250 { "refused" } else { "ok" },
                event_json: e,
                priority: 0,
                routing_key: None,
                headers: None,
            })
            .collect();
        match t.publish_many(&messages) {
            Err(Error::Database(m)) => assert!(m.contains("refused by the test"), "{m}"),
            other => panic!("{via:?}: publish_many past a refused group: {other:?}"),
        }
        let count = |table: &str| sql.count(&format!("SELECT count(*) FROM {p}_transport_{table}"));
        assert_eq!((count("messages"), count("groups")), (0, 0), "{via:?}: the first 256 messages were not kept");

        t.publish("g", &event(1), 0, None).unwrap();
        t.publish("g", &event(2), 0, None).unwrap();
        let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
        sql.execute(&format!(
            "CREATE TRIGGER {p}_refuse_lease BEFORE UPDATE OF locked_by ON {p}_transport_messages \
             WHEN NEW.locked_by = 'refused-worker' BEGIN SELECT RAISE(ABORT, 'lease refused by the test'); END"
        ));
        match t.ack_and_claim(&lease, "refused-worker", V, 0, &[]) {
            Err(Error::Database(m)) => assert!(m.contains("lease refused by the test"), "{m}"),
            other => panic!("{via:?}: ack_and_claim with a refused lease: {other:?}"),
        }
        let rows = sql.rows(&format!("SELECT seq, locked_by FROM {p}_transport_messages ORDER BY seq"));
        assert_eq!(rows, [[lease.seq.to_string(), "w".to_owned()], [(lease.seq + 1).to_string(), "NULL".to_owned()]]);
        assert_eq!(sql.rows(&format!("SELECT last_claimed_at FROM {p}_transport_groups")), [["1030"]], "{via:?}");
        t.ack(&lease).expect("the ack, alone, still applies");
    }
}

/// The hostile strings of tests/hostile_input.rs as group id, worker id, routing key and
/// event, NUL bytes another writer stored, and the largest event sqld stores, through the
/// server byte for byte, with nothing else touched; a 10 MB event fails cleanly.
#[test]
fn hostile_strings_round_trip_on_the_server() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("hostile_strings_round_trip_on_the_server");
    let _serial = serial();
    let server = Sqld::start(&binary, false);
    let sql = ServerSql::new(&server.url(), None);
    let clock = TestClock::at(1000.0);
    let strings = hostile::strings();
    for (n, via) in Via::BOTH.into_iter().enumerate() {
        let p = format!("x{n}");
        let t = open(via, &server.url(), &server, &with_prefix(&clock, &p));
        t.publish("canary", "{\"canary\":true}", 0, None).unwrap();
        let canary = t.claim("canary-holder", 1e6, 0, &[]).unwrap().unwrap();
        let stored = |what: &str, seq: i64| {
            sql.rows(&format!("SELECT hex({what}) FROM {p}_transport_messages WHERE seq = {seq}"))[0][0].clone()
        };
        let hex = |s: &str| s.bytes().map(|b| format!("{b:02X}")).collect::<String>();
        for (i, s) in strings.iter().enumerate() {
            let what =
                format!("{via:?} string {i} ({} bytes, {:?}...)", s.len(), s.chars().take(12).collect::<String>());
            let event = hostile::event_with(s, i);
            t.publish(s, &event, 2, Some(s)).unwrap_or_else(|e| panic!("{what}: publish: {e}"));
            let lease = t.claim(s, V, 2, &[s.as_str()]).unwrap_or_else(|e| panic!("{what}: claim: {e}")).expect(&what);
            assert_eq!((&lease.group_id, &lease.event, &lease.worker_id), (s, &event, s), "{what}");
            assert_eq!((stored("group_id", lease.seq), stored("event", lease.seq)), (hex(s), hex(&event)), "{what}");
            assert_eq!(stored("locked_by", lease.seq), hex(s), "{what}: worker id");
            t.nack(&lease, 0.0).unwrap_or_else(|e| panic!("{what}: nack: {e}"));
            let lease = t.claim(s, V, 2, &[s.as_str()]).unwrap().expect(&what);
            t.ack(&lease).unwrap_or_else(|e| panic!("{what}: ack: {e}"));
        }
        // NUL bytes, stored by another writer.
        sql.execute(&format!(
            "INSERT INTO {p}_transport_messages (group_id, event) VALUES (CAST(X'61006227' AS TEXT), CAST(X'7B7D0074' AS TEXT))"
        ));
        sql.execute(&format!("INSERT INTO {p}_transport_groups (group_id) VALUES (CAST(X'61006227' AS TEXT))"));
        let nul = t.claim("w", V, 0, &[]).unwrap().expect("the message with NUL bytes");
        assert_eq!((nul.group_id.as_str(), nul.event.as_str()), ("a\0b'", "{}\0t"), "{via:?}");
        t.ack(&nul).expect("its ack finds it");
        // sqld stores no value or row over 5,000,000 bytes (its SQLite length limit): a 10 MB
        // event fails cleanly, and a 4.9 MB one (a row just under the limit) comes back whole.
        let big = |bytes: usize| format!("{{\"blob\":\"{}\"}}", "x\\\"'\u{1F980}".repeat((bytes - 12) / 8));
        match t.publish("big", &big(10 * 1024 * 1024), 0, None) {
            Err(Error::Database(m)) => assert!(m.contains("too big"), "{via:?}: {m}"),
            other => panic!("{via:?}: a 10 MB event on sqld: {other:?}"),
        }
        assert_eq!(sql.count(&format!("SELECT count(*) FROM {p}_transport_groups WHERE group_id = 'big'")), 0);
        let largest = big(4_900_000);
        assert!(largest.len() > 4_899_000);
        t.publish("big", &largest, 0, None).expect("an event under sqld's limit");
        let lease = t.claim("w", V, 0, &[]).unwrap().expect("the large event");
        assert!(lease.event == largest, "{via:?}: the large event came back changed");
        t.ack(&lease).unwrap();
        assert_eq!(sql.count(&format!("SELECT count(*) FROM {p}_transport_messages")), 1, "{via:?}: only the canary");
        t.ack(&canary).expect("the canary's lease is intact");
    }
}

/// The README's rule for an answer that is lost after the server committed: the call fails
/// with Error::Connect saying the operation may have been applied, and it was: a claim's
/// lease lapses after its visibility, a publish is in the queue, an ack is done (so trying
/// it again finds the lease lost).
#[test]
fn an_answer_lost_after_the_commit_is_a_connect_error_and_the_operation_applied() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("an_answer_lost_after_the_commit_is_a_connect_error_and_the_operation_applied");
    let _serial = serial();
    let server = Sqld::start(&binary, false);
    let proxy = CountingProxy::start(server.port(), Duration::ZERO);
    let sql = ServerSql::new(&server.url(), None);
    let clock = TestClock::at(1000.0);
    let lost = |what: &str, result: harel_transport::Result<()>| match result {
        Err(Error::Connect(m)) => assert!(m.contains("may have been applied"), "{what}: {m}"),
        other => panic!("{what}: want Error::Connect, got {other:?}"),
    };
    for (n, via) in Via::BOTH.into_iter().enumerate() {
        let p = format!("l{n}");
        let t = open(via, &proxy.url(), &server, &with_prefix(&clock, &p));
        proxy.lose_next_answer();
        lost("publish", t.publish("g", &event(1), 0, None));
        assert_eq!(sql.count(&format!("SELECT count(*) FROM {p}_transport_messages")), 1, "{via:?}: it was published");
        proxy.lose_next_answer();
        lost("claim", t.claim("w", V, 0, &[]).map(drop));
        assert_eq!(t.claim("w", V, 0, &[]).unwrap().map(|l| l.seq), None, "{via:?}: the lost claim's lease holds");
        clock.advance(V + 1.0);
        let lease: Lease = t.claim("w", V, 0, &[]).unwrap().expect("claimable once the lease lapsed");
        assert_eq!(lease.attempts, 2, "{via:?}: the lost claim counted");
        proxy.lose_next_answer();
        lost("ack", t.ack(&lease));
        assert!(matches!(t.ack(&lease), Err(Error::LeaseLost(_))), "{via:?}: the lost ack was applied");
        assert_eq!(sql.count(&format!("SELECT count(*) FROM {p}_transport_messages")), 0);
    }
}

/// Heads a claim cannot hand out are buried on its way: three over max_attempts (two per
/// request, then the next request), and one whose group id another writer stored as
/// invalid UTF-8 (leased by the request that found it, buried by the next); the good
/// message behind them is served.
#[test]
fn a_claim_buries_the_heads_it_cannot_hand_out() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_claim_buries_the_heads_it_cannot_hand_out");
    let _serial = serial();
    let server = Sqld::start(&binary, false);
    let proxy = CountingProxy::start(server.port(), Duration::ZERO);
    let sql = ServerSql::new(&server.url(), None);
    let clock = TestClock::at(1000.0);
    for (n, via) in Via::BOTH.into_iter().enumerate() {
        let p = format!("b{n}");
        let mut options = with_prefix(&clock, &p);
        options.max_attempts(1);
        let t = open(via, &proxy.url(), &server, &options);
        for g in ["p1", "p2", "p3"] {
            t.publish(g, &event(1), 0, None).unwrap();
            let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
            t.nack(&lease, 0.0).unwrap();
        }
        let (requests_for_poison, found) = requests(&proxy, || t.claim("w", V, 0, &[]).unwrap());
        assert!(found.is_none(), "{via:?}: only poison: {found:?}");
        sql.execute(&format!(
            "INSERT INTO {p}_transport_messages (group_id, event) VALUES (CAST(X'FF' AS TEXT), '{{}}')"
        ));
        sql.execute(&format!("INSERT INTO {p}_transport_groups (group_id) VALUES (CAST(X'FF' AS TEXT))"));
        t.publish("good", &event(2), 0, None).unwrap();
        let (requests_for_utf8, good) = requests(&proxy, || t.claim("w", V, 0, &[]).unwrap());
        assert_eq!(good.map(|l| l.group_id), Some("good".to_owned()), "{via:?}");
        let dead = sql.rows(&format!("SELECT hex(group_id), attempts, reason FROM {p}_transport_dead ORDER BY seq"));
        let reasons: Vec<(&str, &str, &str)> =
            dead.iter().map(|r| (r[0].as_str(), r[1].as_str(), r[2].as_str())).collect();
        assert_eq!(
            reasons,
            [
                ("7031", "1", "claimed 1 times: max_attempts is 1"),
                ("7032", "1", "claimed 1 times: max_attempts is 1"),
                ("7033", "1", "claimed 1 times: max_attempts is 1"),
                ("FF", "0", "its group_id is not valid UTF-8 (written by another program)"),
            ],
            "{via:?}"
        );
        assert_eq!(sql.count(&format!("SELECT count(*) FROM {p}_transport_groups")), 1, "{via:?}: only 'good' is left");
        println!("{via:?}: three heads over max_attempts buried in {requests_for_poison} requests; a head not UTF-8 in {requests_for_utf8}");
        assert_eq!((requests_for_poison, requests_for_utf8), (2, 2), "{via:?}");
    }
}
