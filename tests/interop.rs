//! harel 0.9.0's own Python transports (`SqliteTransport`, `LibsqlTransport`) on the same
//! file as ours: what one publishes the other serves, in order, and neither breaks the
//! other's leases and parks. Python runs tests/interop/peer.py, driven line by line.
//!
//! The Python is HAREL_PYTHON (`make test-rust` sets it to the venv `make venv` builds).
//! Without it these tests fail when CI is set, and otherwise say why they skip.

use harel_transport_testkit as common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::{file, temp_db, Raw, TestClock};
use harel_transport::{Error, Jitter, Lease, Limit, PauseTarget, Retry, Transport};
use serde_json::{json, Value};

const V: f64 = 30.0;
const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/peer.py");

/// The Python to run harel with, or None (after saying why) when the test should skip.
fn harel_python(test: &str) -> Option<String> {
    match std::env::var("HAREL_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => panic!(
            "HAREL_PYTHON is not set, and CI is: the interop tests must run. `make test-rust` \
             builds .venv (harel 0.9.0, libsql) and sets HAREL_PYTHON=.venv/bin/python"
        ),
        _ => {
            // Straight to stderr, past the test harness's capture, so the skip is seen.
            let _ = writeln!(
                std::io::stderr(),
                "interop::{test} skipped: HAREL_PYTHON is not set (`make venv`, then HAREL_PYTHON=.venv/bin/python)"
            );
            None
        }
    }
}

/// One harel Python transport in a child process.
struct Peer {
    kind: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    /// `kind` is "sqlite" or "libsql"; its clock stands at `now` until moved.
    fn open(python: &str, kind: &'static str, path: &str, now: f64) -> Peer {
        let mut child = Command::new(python)
            .arg(PEER)
            .args([kind, path, &now.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("HAREL_PYTHON={python} could not be run: {e}"));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut peer = Peer { kind, child, stdin, stdout };
        peer.call(json!({"op": "clock", "now": now})); // answers once harel has opened the file
        peer
    }

    fn call(&mut self, command: Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").and_then(|_| stdin.flush()).unwrap_or_else(|e| self.died(&format!("{e}")));
        let mut line = String::new();
        if self.stdout.read_line(&mut line).unwrap_or(0) == 0 {
            self.died("no answer");
        }
        let answer: Value = serde_json::from_str(&line).unwrap();
        if let Some(error) = answer.get("error") {
            panic!("python {} {command}: {error}", self.kind);
        }
        answer
    }

    fn died(&mut self, what: &str) -> ! {
        let mut stderr = String::new();
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut stderr);
        panic!("the python {} peer failed ({what}):\n{stderr}", self.kind);
    }

    fn clock(&mut self, now: f64) {
        self.call(json!({"op": "clock", "now": now}));
    }

    /// Publishes a harel Event; the JSON harel stored for it.
    fn publish(&mut self, group: &str, id: &str, n: usize) -> String {
        let answer = self.call(json!({"op": "publish", "group": group, "id": id, "kind": "tick", "data": {"n": n}}));
        answer["event"].as_str().unwrap().to_owned()
    }

    /// `(seq, group, event id)` of what it claimed, if anything.
    fn claim(&mut self, visibility: f64) -> Option<(i64, String, String)> {
        let answer = self.call(json!({"op": "claim", "worker": "py", "visibility": visibility}));
        let lease = &answer["lease"];
        (!lease.is_null()).then(|| {
            assert_eq!(lease["kind"], "tick");
            (
                lease["seq"].as_i64().unwrap(),
                lease["group"].as_str().unwrap().to_owned(),
                lease["id"].as_str().unwrap().to_owned(),
            )
        })
    }

    fn ack(&mut self, seq: i64, group: &str) {
        self.call(json!({"op": "ack", "seq": seq, "group": group}));
    }

    fn nack(&mut self, seq: i64, group: &str, delay: f64) {
        self.call(json!({"op": "nack", "seq": seq, "group": group, "delay": delay}));
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end of input: the peer closes its transport and exits
        let _ = self.child.wait();
    }
}

/// A harel Event as ours publishes it: what harel's `Event.model_validate_json` accepts.
fn harel_event(id: &str, n: usize) -> String {
    format!(r#"{{"id":"{id}","kind":"tick","data":{{"n":{n}}}}}"#)
}

fn claim_ok(t: &Transport, worker: &str) -> Option<Lease> {
    t.claim(worker, V, 0, &[]).expect("claim")
}

#[test]
fn python_publishes_and_ours_claims_in_order() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("python_publishes_and_ours_claims_in_order") else {
        return;
    };
    let (_dir, path) = temp_db();
    let mut py = Peer::open(&python, "sqlite", &path, 1000.0);
    let mut published: Vec<Vec<String>> = vec![Vec::new(); 3];
    for i in 0..4 {
        for (g, events) in published.iter_mut().enumerate() {
            events.push(py.publish(&format!("g{g}"), &format!("g{g}-{i}"), i));
        }
    }
    assert!(published[0][0].contains(r#""created_time":null"#), "harel's own serialization: {}", published[0][0]);

    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);
    let mut received: Vec<Vec<String>> = vec![Vec::new(); 3];
    while let Some(lease) = claim_ok(&t, "rust") {
        let g: usize = lease.group_id[1..].parse().unwrap();
        received[g].push(lease.event.clone());
        t.ack(&lease).unwrap();
    }
    assert_eq!(received, published, "per group FIFO, each event byte for byte as harel wrote it");
}

#[test]
fn ours_publishes_and_python_claims_in_order() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("ours_publishes_and_python_claims_in_order") else {
        return;
    };
    for kind in ["sqlite", "libsql"] {
        let (_dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let t = file(&path, &clock);
        for i in 0..4 {
            for g in 0..3 {
                t.publish(&format!("g{g}"), &harel_event(&format!("g{g}-{i}"), i), 0, None).unwrap();
            }
        }
        let mut py = Peer::open(&python, kind, &path, 1000.0);
        let mut received: Vec<Vec<String>> = vec![Vec::new(); 3];
        while let Some((seq, group, id)) = py.claim(V) {
            let g: usize = group[1..].parse().unwrap();
            received[g].push(id);
            py.ack(seq, &group);
        }
        let expected: Vec<Vec<String>> = (0..3).map(|g| (0..4).map(|i| format!("g{g}-{i}")).collect()).collect();
        assert_eq!(received, expected, "{kind}: every message, per group FIFO");
        assert!(claim_ok(&t, "rust").is_none(), "{kind}: python drained it");
        assert_eq!(Raw::open(&path).count("SELECT count(*) FROM harel_transport_groups"), 0);
    }
}

/// Python leases and parks hold against ours, and ours against Python, on one clock.
#[test]
fn leases_and_parks_hold_across_implementations() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("leases_and_parks_hold_across_implementations") else {
        return;
    };
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);
    for (group, n) in [("g", 0), ("g", 1), ("g", 2), ("h", 3)] {
        t.publish(group, &harel_event(&format!("e{n}"), n), 0, None).unwrap();
    }
    let mut py = Peer::open(&python, "sqlite", &path, 1000.0);
    let at = |py: &mut Peer, now: f64| {
        clock.advance(now - clock.now());
        py.clock(now);
    };

    // Python's lease on g's head blocks g for ours until it ends.
    let (seq0, group, id) = py.claim(V).expect("python claims g's head");
    assert_eq!((group.as_str(), id.as_str()), ("g", "e0"));
    at(&mut py, 1010.0);
    let h = claim_ok(&t, "rust").expect("h is free");
    assert_eq!(h.group_id, "h", "g is python's");
    assert!(claim_ok(&t, "rust").is_none(), "g's next message waits for python's lease");
    t.ack(&h).unwrap();
    at(&mut py, 1030.0);
    assert!(claim_ok(&t, "rust").is_none(), "python's lease runs to 1030 inclusive");
    py.ack(seq0, "g");
    let e1 = claim_ok(&t, "rust").expect("g is free again");
    assert_eq!(e1.event, harel_event("e1", 1));

    // Ours parks g: python must not claim it until the park ends.
    t.nack(&e1, 60.0).unwrap();
    at(&mut py, 1089.0);
    assert!(py.claim(V).is_none(), "parked until 1090");
    at(&mut py, 1090.0);
    assert!(py.claim(V).is_none(), "parked through 1090");
    at(&mut py, 1091.0);
    let (seq1, _, id) = py.claim(V).expect("the park is over");
    assert_eq!((seq1, id.as_str()), (e1.seq, "e1"));

    // Python parks it: ours must not claim it until that park ends.
    py.nack(seq1, "g", 20.0);
    at(&mut py, 1111.0);
    assert!(claim_ok(&t, "rust").is_none(), "python parked g until 1111");
    at(&mut py, 1112.0);
    let again = claim_ok(&t, "rust").expect("python's park is over");
    assert_eq!(again.seq, e1.seq);
    t.ack(&again).unwrap();

    // Ours leases g's last message: python waits for it.
    let e2 = claim_ok(&t, "rust").unwrap();
    assert_eq!(e2.event, harel_event("e2", 2));
    at(&mut py, 1142.0);
    assert!(py.claim(V).is_none(), "ours leased it to 1142");
    t.ack(&e2).unwrap();
    assert!(py.claim(V).is_none(), "all done");
    assert_eq!(Raw::open(&path).count("SELECT count(*) FROM harel_transport_messages"), 0);
}

/// A lapsed lease passes from one implementation to the other, and the old holder's
/// ack (ours) is refused.
#[test]
fn lapsed_leases_pass_across_implementations() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("lapsed_leases_pass_across_implementations") else {
        return;
    };
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);
    t.publish("g", &harel_event("e0", 0), 0, None).unwrap();
    let mut py = Peer::open(&python, "libsql", &path, 1000.0);

    let ours = t.claim("rust", 10.0, 0, &[]).unwrap().unwrap();
    py.clock(1010.0);
    assert!(py.claim(V).is_none(), "ours holds it to 1010");
    py.clock(1011.0);
    let (seq, _, _) = py.claim(V).expect("ours lapsed");
    assert_eq!(seq, ours.seq);
    clock.advance(11.0);
    assert!(matches!(t.ack(&ours), Err(Error::LeaseLost(_))), "python holds it now");
    assert!(claim_ok(&t, "rust").is_none(), "python holds it to 1041");
    clock.advance(31.0);
    let back = claim_ok(&t, "rust").expect("python's lease lapsed at 1041");
    assert_eq!(back.seq, seq);
    t.ack(&back).unwrap();
}

/// A file harel's Python made (no routing_key) is upgraded when ours opens it, and the
/// Python transports, open at the time or opened after, go on serving it.
#[test]
fn a_file_python_created_is_upgraded_and_python_still_serves_it() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("a_file_python_created_is_upgraded_and_python_still_serves_it") else {
        return;
    };
    let (_dir, path) = temp_db();
    let mut before = Peer::open(&python, "sqlite", &path, 1000.0);
    before.publish("a", "a0", 0);
    let raw = Raw::open(&path);
    assert_eq!(raw.columns("harel_transport_groups"), ["group_id", "last_claimed_at", "priority"], "harel 0.9's table");

    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);
    assert!(raw.columns("harel_transport_groups").contains(&"routing_key".to_owned()));
    assert_eq!(raw.count("SELECT count(*) FROM sqlite_master WHERE name = 'harel_transport_groups_by_routing_key'"), 1);
    t.publish("routed", &harel_event("r0", 0), 0, Some("east")).unwrap();

    // The Python transport that was open across the upgrade, and two opened after it.
    before.publish("a", "a1", 1);
    before.publish("b", "b0", 0);
    let mut sqlite_after = Peer::open(&python, "sqlite", &path, 1000.0);
    let mut libsql_after = Peer::open(&python, "libsql", &path, 1000.0);
    sqlite_after.publish("b", "b1", 1);
    libsql_after.publish("c", "c0", 0);

    let mut seen = Vec::new();
    let mut peers = [before, sqlite_after, libsql_after];
    for round in 0..6 {
        let py = &mut peers[round % 3];
        let (seq, group, id) = py.claim(V).expect("python claims");
        py.ack(seq, &group);
        seen.push(id);
    }
    assert_eq!(seen[..4], ["a0", "r0", "b0", "c0"], "never-claimed groups by arrival, ours among them");
    let mut rest = seen[4..].to_vec();
    rest.sort();
    assert_eq!(rest, ["a1", "b1"]);
    assert!(claim_ok(&t, "rust").is_none(), "python drained it");
}

/// Ours publishes delayed and keyed messages; harel's transports, which know nothing of
/// either, never deliver a delayed one early (it looks leased to them until its due time),
/// keep the group's order behind it, serve the other groups meanwhile, and serve keyed
/// messages as any other.
#[test]
fn harel_never_delivers_a_delayed_message_early() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("harel_never_delivers_a_delayed_message_early") else {
        return;
    };
    for kind in ["sqlite", "libsql"] {
        let (_dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let t = file(&path, &clock);
        let plain = harel_transport::Delivery::default();
        let later = harel_transport::Delivery { delay: 60.0, ..plain };
        let m = |group_id, event_json| harel_transport::Message { group_id, event_json, priority: 0, routing_key: None, headers: None };
        let (d0, d1, k0) = (harel_event("d-0", 0), harel_event("d-1", 1), harel_event("k-0", 0));
        t.publish_with(m("d", &d0), later).unwrap();
        t.publish_with(m("d", &d1), plain).unwrap();
        t.publish_with(m("k", &k0), harel_transport::Delivery { key: Some("once"), ..plain }).unwrap();
        assert!(t.publish_with(m("k", &k0), harel_transport::Delivery { key: Some("once"), ..plain }).unwrap().duplicate);
        let mut py = Peer::open(&python, kind, &path, 1000.0);
        let (seq, group, id) = py.claim(V).expect("the keyed message, as any other");
        assert_eq!((group.as_str(), id.as_str()), ("k", "k-0"), "{kind}");
        py.ack(seq, &group);
        for now in [1000.0, 1030.0, 1059.5] {
            py.clock(now);
            assert_eq!(py.claim(V), None, "{kind}: nothing of group d before its head is due (at {now})");
        }
        py.clock(1060.5);
        let (seq, group, id) = py.claim(V).expect("due");
        assert_eq!((group.as_str(), id.as_str()), ("d", "d-0"), "{kind}: the delayed message first");
        py.ack(seq, &group);
        let (seq, group, id) = py.claim(V).expect("then the one behind it");
        assert_eq!((group.as_str(), id.as_str()), ("d", "d-1"), "{kind}");
        py.ack(seq, &group);
        assert_eq!(py.claim(V), None, "{kind}: each once");
    }
}

/// A pause holds harel 0.9's own workers too, from another process: its claim never takes
/// a paused group, a group it publishes while the queue is paused is paused at birth (the
/// trigger runs in its process), its ack of a lease taken before the pause leaves the group
/// paused; resume serves them again, in order.
#[test]
fn harel_never_takes_paused_work() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("harel_never_takes_paused_work") else {
        return;
    };
    for kind in ["sqlite", "libsql"] {
        let (_dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let t = file(&path, &clock);
        for (group, n) in [("p", 0), ("p", 1), ("q", 2)] {
            t.publish(group, &harel_event(&format!("e{n}"), n), 0, None).unwrap();
        }
        let mut py = Peer::open(&python, kind, &path, 1000.0);
        let (held, group, id) = py.claim(V).expect("p's head, the first group");
        assert_eq!((group.as_str(), id.as_str()), ("p", "e0"), "{kind}");
        assert!(t.pause(PauseTarget::Group("p")).unwrap());
        let (seq, group, _) = py.claim(V).expect("q is not paused");
        assert_eq!(group, "q", "{kind}");
        py.ack(seq, &group);
        py.ack(held, "p");
        assert_eq!(py.claim(V), None, "{kind}: p's next message stays held after harel's ack");
        assert!(claim_ok(&t, "rust").is_none(), "{kind}: for ours too");

        t.pause(PauseTarget::Queue).unwrap();
        py.publish("new", "n0", 0);
        assert_eq!(py.claim(V), None, "{kind}: harel's own new group is paused at birth");
        assert_eq!(t.stats().unwrap().paused, 2, "{kind}");
        t.resume(PauseTarget::Queue).unwrap();
        let (seq, group, id) = py.claim(V).expect("the queue resumed");
        assert_eq!((group.as_str(), id.as_str()), ("new", "n0"), "{kind}: p is still paused on its own");
        py.ack(seq, &group);
        assert_eq!(py.claim(V), None, "{kind}");
        t.resume(PauseTarget::Group("p")).unwrap();
        let (seq, group, id) = py.claim(V).expect("p resumed");
        assert_eq!((group.as_str(), id.as_str()), ("p", "e1"), "{kind}");
        py.ack(seq, &group);
        assert_eq!(Raw::open(&path).count("SELECT count(*) FROM harel_transport_messages"), 0, "{kind}");
    }
}

/// harel 0.9 knows nothing of expiry; what our claims expired is gone before it looks: a
/// parked message that expired (swept by our claim) and an expired head our claim passed.
#[test]
fn harel_never_sees_what_our_claims_expired() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("harel_never_sees_what_our_claims_expired") else {
        return;
    };
    for kind in ["sqlite", "libsql"] {
        let (_dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let t = file(&path, &clock);
        let ttl = harel_transport::Delivery { ttl: Some(5.0), ..Default::default() };
        let m = |group_id, event_json| harel_transport::Message {
            group_id,
            event_json,
            priority: 0,
            routing_key: None,
            headers: None,
        };
        let (p0, h0, h1) = (harel_event("p0", 0), harel_event("h0", 0), harel_event("h1", 1));
        t.publish_with(m("parked", &p0), ttl).unwrap();
        t.nack(&claim_ok(&t, "rust").unwrap(), 60.0).unwrap();
        t.publish_with(m("head", &h0), ttl).unwrap();
        t.publish_with(m("head", &h1), harel_transport::Delivery::default()).unwrap();
        clock.advance(10.0);
        let lease = claim_ok(&t, "rust").expect("the message behind the expired head");
        assert_eq!(lease.event, h1, "{kind}");
        t.nack(&lease, 0.0).unwrap();
        let mut py = Peer::open(&python, kind, &path, 1010.0);
        let (seq, group, id) = py.claim(V).expect("h1");
        assert_eq!((group.as_str(), id.as_str()), ("head", "h1"), "{kind}");
        py.ack(seq, &group);
        py.clock(1100.0);
        assert_eq!(py.claim(V), None, "{kind}: the parked message expired, never handed to harel");
        assert_eq!(t.stats().unwrap().expired, 2, "{kind}");
    }
}

/// harel 0.9 beside our archive (the archive table, `messages.claimed_at`): what harel
/// publishes our acks archive (no publish time: harel does not stamp one), what harel
/// acks is gone and archived by no one, and a message our claim stamped and whose lease
/// lapsed is harel's to claim and ack.
#[test]
fn harel_works_beside_our_archive() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("harel_works_beside_our_archive") else {
        return;
    };
    for kind in ["sqlite", "libsql"] {
        let (_dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let mut options = clock.options();
        options.archive(3600.0).unwrap();
        let t = Transport::open(&path, &options).unwrap();
        let mut py = Peer::open(&python, kind, &path, 1000.0);
        let from_harel = py.publish("theirs", "h0", 0);
        let lease = claim_ok(&t, "rust").expect("harel's message");
        assert_eq!(lease.event, from_harel, "{kind}");
        clock.advance(1.0);
        t.ack(&lease).unwrap();
        let ours = harel_event("o0", 0);
        t.publish("ours", &ours, 0, None).unwrap();
        t.claim("rust", 5.0, 0, &[]).unwrap().expect("ours, then its lease lapses");
        py.clock(1010.0);
        let (seq, group, id) = py.claim(V).expect("harel takes the lapsed one");
        assert_eq!((group.as_str(), id.as_str()), ("ours", "o0"), "{kind}");
        py.ack(seq, &group);
        let archived = t.archive(None, None, 10).unwrap().items;
        let seen: Vec<_> =
            archived.iter().map(|a| (a.group_id.as_str(), a.worker_id.as_str(), a.published_at)).collect();
        assert_eq!(seen, [("theirs", "rust", None)], "{kind}: only our ack archived");
        assert_eq!((archived[0].claimed_at, archived[0].acked_at), (Some(1000.0), 1001.0), "{kind}");
        assert_eq!(t.stats().unwrap().messages, 0, "{kind}: harel's ack deleted ours");
    }
}

/// Limits and retries are ours alone (docs/queue.md, "Limits", "Retries"), and harel 0.9
/// keeps working beside them: its claims take a key's messages whatever its limit (a group
/// our claims hold included) and a lapsed lease's message before its backoff, since they
/// read neither the limits nor the groups' turns; a nack's park for the backoff is a lock
/// on the message, which harel respects.
#[test]
fn harel_works_beside_our_limits_and_retries() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("harel_works_beside_our_limits_and_retries") else {
        return;
    };
    for kind in ["sqlite", "libsql"] {
        let (_dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let mut options = clock.options();
        options.retry(Some(Retry { base: 50.0, factor: 1.0, cap: 50.0, jitter: Jitter::None })).unwrap();
        let t = Transport::open(&path, &options).unwrap();
        t.set_limit("k", Limit { concurrency: Some(1), rate: None }).unwrap();
        for group in ["a", "b"] {
            t.publish(group, &harel_event(&format!("{group}0"), 0), 0, Some("k")).unwrap();
        }
        let ours = claim_ok(&t, "rust").expect("a, in the limit's one slot");
        assert!(claim_ok(&t, "rust").is_none(), "{kind}: b is held, the key at its limit");
        let mut py = Peer::open(&python, kind, &path, 1000.0);
        let (seq, group, _) = py.claim(V).expect("harel takes the held group: it knows no limits");
        assert_eq!(group, "b", "{kind}");
        py.ack(seq, &group);
        t.nack(&ours, 0.0).unwrap();
        assert!(py.claim(V).is_none(), "{kind}: the park for the backoff is a lock harel respects");
        py.clock(1050.5);
        let (seq, group, _) = py.claim(V).expect("a, once its park ended");
        assert_eq!(group, "a", "{kind}");
        py.ack(seq, &group);
        t.publish("c", &harel_event("c0", 0), 0, None).unwrap();
        clock.advance(60.0);
        t.claim("rust", 5.0, 0, &[]).unwrap().expect("c, then its lease lapses");
        assert!(claim_ok(&t, "rust").is_none());
        py.clock(1070.0);
        let (seq, group, _) = py.claim(V).expect("harel takes a lapsed lease's message before our backoff");
        assert_eq!(group, "c", "{kind}");
        py.ack(seq, &group);
        clock.advance(60.0);
        assert!(claim_ok(&t, "rust").is_none(), "{kind}: all acked");
        assert_eq!(t.stats().unwrap().messages, 0, "{kind}");
        assert_eq!(t.limits().unwrap()[0].in_use, 0, "{kind}: our slot ended with our nack");
    }
}

/// harel 0.9's own contract (`harel.testing.assert_transport_contract`, sync and async) on
/// files this library prepared from another process (`prepare_a_file`): with a delayed
/// message, idempotency keys, an application transaction's rows and a paused group in
/// them, harel's transports behave as on a fresh file and never hand out the delayed
/// message nor the paused one.
#[test]
fn harels_contract_passes_on_files_with_our_delayed_messages_keys_and_transactions() {
    let _limit = common::time_limit();
    let Some(python) = harel_python("harels_contract_passes_on_files_with_our_delayed_messages_keys_and_transactions")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prepare = common::this_test_binary("prepare_a_file");
    let mut command = Command::new(python);
    command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/harel_contract.py")).arg(dir.path());
    command.arg(prepare.get_program()).args(prepare.get_args());
    let out = command.output().expect("run harel's contract");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "harel's contract failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    print!("{stdout}");
}

/// The file `harels_contract_passes_...` hands to harel: our schema, a message delayed by five
/// years (by the wall clock; harel's contract clock starts at 100), a keyed message claimed and
/// acked (its key kept), a duplicate publish, and a transaction's row and message, the
/// message acked too, both into the archive.
#[test]
#[ignore = "run in a process of its own by harels_contract_passes_on_files_with_..."]
fn prepare_a_file() {
    let _limit = common::time_limit();
    let Ok(path) = std::env::var("HAREL_TEST_DB") else {
        return;
    };
    let t = Transport::open(&path, harel_transport::Options::new().archive(3600.0).unwrap()).expect("open");
    let m = |group_id, event_json| harel_transport::Message { group_id, event_json, priority: 0, routing_key: None, headers: None };
    let (d, k) = (harel_event("ours-d", 0), harel_event("ours-k", 0));
    let years = harel_transport::Delivery { delay: 5.0 * 365.0 * 86400.0, ..Default::default() };
    t.publish_with(m("ours-delayed", &d), years).unwrap();
    let keyed = harel_transport::Delivery { key: Some("ours-once"), ..Default::default() };
    t.publish_with(m("ours-keyed", &k), keyed).unwrap();
    assert!(t.publish_with(m("ours-keyed", &k), keyed).unwrap().duplicate);
    t.transaction(|tx| {
        tx.execute("CREATE TABLE app_orders (id INTEGER PRIMARY KEY)", [])?;
        tx.execute("INSERT INTO app_orders (id) VALUES (1)", [])?;
        tx.publish_with(m("ours-tx", &k), harel_transport::Delivery { key: Some("ours-tx"), ..Default::default() })
    })
    .unwrap();
    for _ in 0..2 {
        let lease = t.claim("ours", V, 0, &[]).unwrap().expect("the keyed and the transaction's messages");
        t.ack(&lease).unwrap();
    }
    assert!(t.claim("ours", V, 0, &[]).unwrap().is_none(), "only the delayed message is left");
    assert_eq!(t.archive(None, None, 10).unwrap().items.len(), 2, "both acks archived");
    // A paused group with a message, and a pause of a routing key harel never gives.
    t.publish("ours-paused", &d, 0, None).unwrap();
    t.pause(PauseTarget::Group("ours-paused")).unwrap();
    t.pause(PauseTarget::RoutingKey("ours-held")).unwrap();
    assert!(t.claim("ours", V, 0, &[]).unwrap().is_none(), "the paused group is not served");
}
