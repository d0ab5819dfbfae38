//! Every bad argument is `Error::Argument` with a message naming the parameter as the C header
//! names it, and a rejected call changes nothing in the queue.

use harel_transport_testkit as common;

use common::{event, file, temp_db, Raw, TestClock};
use harel_transport::{Error, Lease, Message, Options, Transport, PARKED};

const V: f64 = 30.0;
const NON_FINITE: [f64; 3] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];

#[track_caller]
fn assert_argument<T: std::fmt::Debug>(result: Result<T, Error>, parameter: &str, what: &str) {
    match result {
        Err(Error::Argument(m)) => assert!(m.contains(parameter), "{what}: the message does not name {parameter}: {m}"),
        other => panic!("{what}: expected Error::Argument naming {parameter}, got {other:?}"),
    }
}

/// A queue with something of every kind in it: a leased message (returned), one waiting
/// behind it, a parked one, and a free group with a routing key and a priority.
struct Fixture {
    _dir: tempfile::TempDir,
    raw: Raw,
    t: Transport,
    clock: TestClock,
    lease: Lease,
    parked_seq: i64,
}

impl Fixture {
    fn new() -> Fixture {
        let (dir, path) = temp_db();
        let clock = TestClock::at(1000.0);
        let t = file(&path, &clock);
        t.publish("a", &event(1), 0, None).unwrap();
        t.publish("a", &event(2), 0, None).unwrap();
        t.publish("b", &event(3), 0, None).unwrap();
        t.publish("c", &event(4), 3, Some("k")).unwrap();
        let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
        assert_eq!(lease.group_id, "a");
        let to_park = t.claim("w", V, 0, &[]).unwrap().unwrap();
        assert_eq!(to_park.group_id, "b");
        t.nack(&to_park, 100.0).unwrap();
        let raw = Raw::open(&path);
        Fixture { _dir: dir, raw, t, clock, lease, parked_seq: to_park.seq }
    }

    fn path(&self) -> String {
        self._dir.path().join("queue.db").to_str().unwrap().to_owned()
    }

    /// Runs `call`, expects it rejected naming `parameter`, and the queue untouched.
    #[track_caller]
    fn rejects<T: std::fmt::Debug>(
        &self,
        parameter: &str,
        what: &str,
        call: impl FnOnce(&Transport) -> Result<T, Error>,
    ) {
        let before = self.raw.snapshot("harel");
        assert_argument(call(&self.t), parameter, what);
        assert_eq!(self.raw.snapshot("harel"), before, "{what}: the queue changed");
    }

    /// After all the rejected calls the queue works as if none had been made.
    fn still_works(self) {
        self.t.ack(&self.lease).expect("the lease survived every rejected call");
        for (group, n) in [("c", 4), ("a", 2)] {
            let next = self.t.claim("w", V, 0, &[]).unwrap().unwrap();
            assert_eq!((next.group_id.as_str(), next.event.as_str()), (group, event(n).as_str()));
            self.t.ack(&next).unwrap();
        }
        assert!(self.t.claim("w", V, 0, &[]).unwrap().is_none(), "b is still parked");
        self.clock.advance(101.0);
        assert_eq!(self.t.claim("w", V, 0, &[]).unwrap().unwrap().seq, self.parked_seq);
    }
}

#[test]
fn publish_arguments() {
    let f = Fixture::new();
    f.rejects("group_id", "empty group_id", |t| t.publish("", &event(9), 0, None));
    for bad in ["", "{", "nope", "{'a':1}", "{} x", "[1,]", "{\"a\":}"] {
        f.rejects("event_json", &format!("event {bad:?}"), |t| t.publish("a", bad, 0, None));
    }
    for p in [-1, 5, i32::MIN, i32::MAX] {
        f.rejects("priority", &format!("priority {p}"), |t| t.publish("new", &event(9), p, None));
    }
    f.rejects("routing_key", "empty routing_key", |t| t.publish("new", &event(9), 0, Some("")));
    f.still_works();
}

/// A batch of good messages with `bad` at index 2.
fn batch_with<'a>(good: Message<'a>, bad: Message<'a>) -> [Message<'a>; 4] {
    [good, Message { group_id: "new", ..good }, bad, good]
}

#[test]
fn publish_many_arguments_name_the_message() {
    let f = Fixture::new();
    let ok = event(9);
    let good = Message { group_id: "a", event_json: &ok, priority: 0, routing_key: None, headers: None };
    let rejects = |what: &str, parameter: &str, bad: Message| {
        f.rejects(parameter, what, |t| t.publish_many(&batch_with(good, bad)));
    };
    rejects("empty group_id", "messages[2].group_id", Message { group_id: "", ..good });
    for bad in ["", "{", "nope", "{} x"] {
        rejects(&format!("event {bad:?}"), "messages[2].event_json", Message { event_json: bad, ..good });
    }
    for p in [-1, 5, i32::MIN, i32::MAX] {
        rejects(&format!("priority {p}"), "messages[2].priority", Message { priority: p, ..good });
    }
    rejects("empty routing_key", "messages[2].routing_key", Message { routing_key: Some(""), ..good });
    f.rejects("messages[0].group_id", "the first message", |t| t.publish_many(&[Message { group_id: "", ..good }]));
    f.still_works();
}

#[test]
fn any_json_text_is_an_event() {
    let clock = TestClock::at(1000.0);
    let t = common::memory(&clock);
    let texts = ["0", "\"text\"", "null", "[]", " {\"kind\": \"x\"} ", "{\"a\":[1,2,{\"b\":null}]}"];
    for text in texts {
        t.publish("g", text, 0, None).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
    for text in texts {
        let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
        assert_eq!(lease.event, text, "stored byte for byte");
        t.ack(&lease).unwrap();
    }
}

#[test]
fn claim_arguments() {
    let f = Fixture::new();
    f.rejects("worker_id", "empty worker_id", |t| t.claim("", V, 0, &[]));
    f.rejects("worker_id", "the reserved worker_id", |t| t.claim(PARKED, V, 0, &[]));
    for v in [0.0, -0.0, -1.0, -f64::MIN_POSITIVE].into_iter().chain(NON_FINITE) {
        f.rejects("visibility", &format!("visibility {v}"), |t| t.claim("w", v, 0, &[]));
    }
    for p in [-1, 5] {
        f.rejects("min_priority", &format!("min_priority {p}"), |t| t.claim("w", V, p, &[]));
    }
    f.rejects("routing_keys", "an empty routing key", |t| t.claim("w", V, 0, &[""]));
    f.rejects("routing_keys", "an empty routing key among others", |t| t.claim("w", V, 0, &["k", ""]));
    let many: Vec<String> = (0..40).map(|i| if i == 39 { String::new() } else { format!("k{i}") }).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    f.rejects("routing_keys", "an empty routing key among many", |t| t.claim("w", V, 0, &refs));
    f.still_works();
}

#[test]
fn lease_arguments() {
    let f = Fixture::new();
    let with_group = Lease { group_id: String::new(), ..f.lease.clone() };
    f.rejects("group_id", "ack, empty lease group_id", |t| t.ack(&with_group));
    f.rejects("group_id", "nack, empty lease group_id", |t| t.nack(&with_group, 0.0));
    for worker in ["", PARKED] {
        let with_worker = Lease { worker_id: worker.into(), ..f.lease.clone() };
        f.rejects("worker_id", &format!("ack, lease worker_id {worker:?}"), |t| t.ack(&with_worker));
        f.rejects("worker_id", &format!("nack, lease worker_id {worker:?}"), |t| t.nack(&with_worker, 0.0));
    }
    // "__parked__" is what a parked message carries in locked_by: a lease forged with it
    // must not reach the parked message.
    let forged =
        Lease { seq: f.parked_seq, group_id: "b".into(), event: event(3), worker_id: PARKED.into(), lock_expiry: 0.0, attempts: 0, headers: Default::default() };
    f.rejects("worker_id", "ack of a parked message as __parked__", |t| t.ack(&forged));
    f.rejects("worker_id", "nack of a parked message as __parked__", |t| t.nack(&forged, 0.0));
    f.still_works();
}

#[test]
fn nack_delay_arguments() {
    let f = Fixture::new();
    for d in [-1.0, -1e-9].into_iter().chain(NON_FINITE) {
        f.rejects("delay", &format!("delay {d}"), |t| t.nack(&f.lease, d));
    }
    f.still_works();
}

#[test]
fn a_clock_that_is_not_a_time_is_an_argument_error() {
    let f = Fixture::new();
    for bad in NON_FINITE {
        let mut o = Options::new();
        o.clock(move || bad);
        let broken = Transport::open(&f.path(), &o).expect("open does not read the clock");
        let before = f.raw.snapshot("harel");
        assert_argument(broken.claim("w", V, 0, &[]), "clock", &format!("claim, clock {bad}"));
        assert_argument(broken.ack(&f.lease), "clock", &format!("ack, clock {bad}"));
        assert_argument(broken.nack(&f.lease, 0.0), "clock", &format!("nack, clock {bad}"));
        assert_argument(broken.nack(&f.lease, 5.0), "clock", &format!("nack with delay, clock {bad}"));
        assert_eq!(f.raw.snapshot("harel"), before, "clock {bad}: the queue changed");
    }
    f.still_works();
}

#[test]
fn option_arguments() {
    let mut o = Options::new();
    let unchanged = format!("{o:?}");
    for s in [-1.0, -1e-9].into_iter().chain(NON_FINITE) {
        assert_argument(o.busy_timeout(s).map(drop), "busy_timeout", &format!("busy_timeout {s}"));
    }
    for s in [0.0, -0.0, -1.0].into_iter().chain(NON_FINITE) {
        assert_argument(o.sync_interval(s).map(drop), "sync_interval", &format!("sync_interval {s}"));
    }
    assert_eq!(format!("{o:?}"), unchanged, "a rejected option is not kept");
    o.busy_timeout(0.0).expect("0 is a busy timeout: fail at once");
    o.sync_interval(0.5).expect("a positive interval");
}

#[test]
fn an_empty_database_is_an_argument_error() {
    assert_argument(Transport::open("", &Options::new()).map(drop), "database", "open \"\"");
}

#[test]
fn a_local_queue_file_is_not_opened_as_a_replica() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    file(&path, &clock).publish("g", &event(1), 0, None).unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut o = clock.options();
    // Refused before any server is asked: nothing listens here.
    o.sync_url(Some("http://127.0.0.1:9")).unwrap();
    match Transport::open(&path, &o) {
        Err(Error::Argument(m)) => assert!(m.contains("local queue file, not an embedded replica"), "{m}"),
        other => panic!("want Error::Argument, got {:?}", other.map(drop)),
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is untouched");
    assert_eq!(file(&path, &clock).claim("w", V, 0, &[]).unwrap().unwrap().event, event(1));
}

#[test]
fn an_embedded_replica_is_not_opened_as_a_local_file() {
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    file(&path, &clock).publish("g", &event(1), 0, None).unwrap();
    // What libsql keeps beside a replica (tests/server.rs makes real ones against sqld).
    std::fs::write(format!("{path}-client_wal_index"), [0u8; 32]).unwrap();
    let before = std::fs::read(&path).unwrap();
    match Transport::open(&path, &clock.options()) {
        Err(Error::Argument(m)) => assert!(m.contains("embedded replica") && m.contains("sync_url"), "{m}"),
        other => panic!("want Error::Argument, got {:?}", other.map(drop)),
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is untouched");
}
