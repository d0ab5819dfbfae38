//! Hostile input (issue #7): group ids, worker ids, routing keys and events made of quotes,
//! SQL-injection text, control characters (all but NUL), emoji and other awkward Unicode,
//! and 64 KB strings go in and come out byte for byte, through the Rust API and the C ABI,
//! and touch nothing else in the file; a 10 MB event works or fails cleanly; a prefix
//! that is not an identifier is refused before any SQL is built.

use harel_transport_testkit as common;

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use ::harel_transport::ffi::*;
use ::harel_transport::{Error, Lease, Options, Transport};
use common::hostile::{event_with, strings as hostile};
use common::{temp_db, Raw, TestClock};

const T0: f64 = 1000.0;

fn open(path: &str) -> Transport {
    Transport::open(path, &TestClock::at(T0).options()).unwrap()
}

/// Canaries: messages in ordinary groups, one leased, one parked, that no hostile call may
/// touch. Returns the file's snapshot of them and its list of tables and indexes.
fn canaries(t: &Transport, raw: &Raw) -> (Vec<Vec<String>>, Vec<(String, String)>) {
    for n in 0..6 {
        t.publish(
            &format!("canary{}", n % 3),
            &format!(r#"{{"kind":"canary","id":"c{n}","data":{{}}}}"#),
            1,
            Some("canary-key"),
        )
        .unwrap();
    }
    let leased = t.claim("canary-holder", 1e6, 0, &["canary-key"]).unwrap().unwrap();
    let parked = t.claim("canary-parker", 1e6, 0, &["canary-key"]).unwrap().unwrap();
    t.nack(&parked, 1e6).unwrap();
    let _ = leased;
    (canary_rows(raw), raw.objects())
}

fn canary_rows(raw: &Raw) -> Vec<Vec<String>> {
    raw.snapshot("harel").into_iter().filter(|r| r[2].starts_with("canary")).collect()
}

#[test]
fn hostile_strings_round_trip_exactly_and_touch_nothing_else() {
    let (_dir, path) = temp_db();
    let t = open(&path);
    let raw = Raw::open(&path);
    let (canary, objects) = canaries(&t, &raw);
    let strings = hostile();
    for (n, s) in strings.iter().enumerate() {
        let what = format!("string {n} ({} bytes, {:?}...)", s.len(), s.chars().take(12).collect::<String>());
        let event = event_with(s, n);
        t.publish(s, &event, 2, Some(s)).unwrap_or_else(|e| panic!("{what}: publish: {e}"));
        // As one routing key, and among 40 (past 32 the keys travel as one JSON array).
        let mut many: Vec<String> = (0..39).map(|i| format!("{}{i}", strings[(n + i + 1) % strings.len()])).collect();
        many.insert(17, s.clone());
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        for keys in [vec![s.as_str()], many] {
            let lease = t
                .claim(s, 30.0, 2, &keys)
                .unwrap_or_else(|e| panic!("{what}: claim: {e}"))
                .unwrap_or_else(|| panic!("{what}: not found by its routing key"));
            assert_eq!(lease.group_id, *s, "{what}: group_id");
            assert_eq!(lease.event, event, "{what}: event");
            assert_eq!(lease.worker_id, *s, "{what}: worker_id");
            let row = raw.rows(&format!(
                "SELECT group_id, event, locked_by FROM harel_transport_messages WHERE seq = {}",
                lease.seq
            ));
            assert_eq!(row, [[s.clone(), event.clone(), s.clone()]], "{what}: stored as given");
            let stored_key = raw.rows(&format!(
                "SELECT routing_key FROM harel_transport_groups WHERE group_id = (SELECT group_id FROM harel_transport_messages WHERE seq = {})",
                lease.seq
            ));
            assert_eq!(stored_key, [[s.clone()]], "{what}: routing key stored as given");
            t.nack(&lease, 0.0).unwrap_or_else(|e| panic!("{what}: nack: {e}"));
        }
        let lease = t.claim(s, 30.0, 2, &[s.as_str()]).unwrap().unwrap();
        t.ack(&lease).unwrap_or_else(|e| panic!("{what}: ack: {e}"));
        assert!(t.claim(s, 30.0, 2, &[s.as_str()]).unwrap().is_none(), "{what}: acked, so gone");
        assert_eq!(canary_rows(&raw), canary, "{what}: the canaries changed");
        assert_eq!(raw.objects(), objects, "{what}: tables or indexes changed");
    }
    // Only the canaries are left.
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages WHERE group_id NOT LIKE 'canary%'"), 0);
    println!("{} hostile strings round-tripped as group id, worker id, routing key and in the event", strings.len());
}

/// Worker ids that pretend to be the park marker get nowhere: "__parked__" is refused for
/// claim, ack and nack, so no one can ack or free a parked message by naming it.
#[test]
fn the_park_marker_cannot_be_used_as_a_worker_id() {
    let (_dir, path) = temp_db();
    let t = open(&path);
    let raw = Raw::open(&path);
    t.publish("g", r#"{"kind":"k","id":"1","data":{}}"#, 0, None).unwrap();
    let lease = t.claim("w", 30.0, 0, &[]).unwrap().unwrap();
    t.nack(&lease, 1e6).unwrap();
    let before = raw.snapshot("harel");
    assert!(matches!(t.claim("__parked__", 30.0, 0, &[]), Err(Error::Argument(m)) if m.contains("worker_id")));
    let forged = Lease { worker_id: "__parked__".into(), ..lease.clone() };
    assert!(matches!(t.ack(&forged), Err(Error::Argument(m)) if m.contains("worker_id")));
    assert!(matches!(t.nack(&forged, 0.0), Err(Error::Argument(m)) if m.contains("worker_id")));
    assert!(matches!(t.ack(&lease), Err(Error::LeaseLost(_))), "the nacked lease is over");
    assert_eq!(raw.snapshot("harel"), before, "the parked message is as it was");
}

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

fn last_error() -> String {
    let p = harel_last_error();
    assert!(!p.is_null(), "an error without a message");
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The same through the C ABI: what goes in as C strings comes out of harel_lease's
/// strings byte for byte; strings that are not UTF-8 are refused, naming the parameter.
#[test]
fn hostile_strings_round_trip_through_the_c_abi() {
    let (_dir, path) = temp_db();
    let raw = Raw::open(&path);
    let mut t: *mut harel_transport = ptr::null_mut();
    assert_eq!(harel_transport_open(c(&path).as_ptr(), ptr::null(), &mut t, ptr::null_mut()), harel_status::HAREL_OK);
    let strings = hostile();
    for (n, s) in strings.iter().enumerate() {
        let (group, event, key) = (c(s), c(&event_with(s, n)), c(s));
        assert_eq!(
            harel_transport_publish(t, group.as_ptr(), event.as_ptr(), 0, key.as_ptr(), ptr::null_mut()),
            harel_status::HAREL_OK,
            "{n}"
        );
        let keys = [key.as_ptr()];
        let mut lease: *mut harel_lease = ptr::null_mut();
        let status = harel_transport_claim(t, group.as_ptr(), 30.0, 0, keys.as_ptr(), 1, &mut lease, ptr::null_mut());
        assert_eq!(status, harel_status::HAREL_OK, "{n}");
        let l = unsafe { &*lease };
        unsafe {
            assert_eq!(CStr::from_ptr(l.group_id), group.as_c_str(), "{n}: group_id");
            assert_eq!(CStr::from_ptr(l.event), event.as_c_str(), "{n}: event");
            assert_eq!(CStr::from_ptr(l.worker_id), group.as_c_str(), "{n}: worker_id");
        }
        assert_eq!(harel_transport_ack(t, lease, ptr::null_mut()), harel_status::HAREL_OK, "{n}");
        harel_lease_free(lease);
    }
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), 0);

    // Not UTF-8: refused before anything is stored, the message naming the parameter.
    let bad: &[&[u8]] = &[b"\xff", b"ab\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"ok\xf4\x90\x80\x80"];
    let ok = c(r#"{"kind":"k","id":"1","data":{}}"#);
    for b in bad {
        let s = CString::new(*b).unwrap();
        let p = harel_transport_publish(t, s.as_ptr(), ok.as_ptr(), 0, ptr::null(), ptr::null_mut());
        assert_eq!((p, last_error().contains("group_id")), (harel_status::HAREL_ERR_ARGUMENT, true), "{b:?}");
        let p = harel_transport_publish(t, c("g").as_ptr(), ok.as_ptr(), 0, s.as_ptr(), ptr::null_mut());
        assert_eq!((p, last_error().contains("routing_key")), (harel_status::HAREL_ERR_ARGUMENT, true), "{b:?}");
        let mut lease: *mut harel_lease = ptr::null_mut();
        let p = harel_transport_claim(t, s.as_ptr(), 30.0, 0, ptr::null(), 0, &mut lease, ptr::null_mut());
        assert_eq!(
            (p, last_error().contains("worker_id"), lease.is_null()),
            (harel_status::HAREL_ERR_ARGUMENT, true, true),
            "{b:?}"
        );
        let keys = [c("fine").into_raw() as *const c_char, s.as_ptr()];
        let p = harel_transport_claim(t, c("w").as_ptr(), 30.0, 0, keys.as_ptr(), 2, &mut lease, ptr::null_mut());
        assert_eq!((p, last_error().contains("routing_keys[1]")), (harel_status::HAREL_ERR_ARGUMENT, true), "{b:?}");
        drop(unsafe { CString::from_raw(keys[0] as *mut c_char) });
    }
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), 0, "nothing stored by refused calls");
    harel_transport_close(t);
}

/// A 10 MB event (and a 1 MB group id and routing key) through both faces: stored and
/// given back whole.
#[test]
fn a_ten_megabyte_event_round_trips_or_fails_cleanly() {
    let (_dir, path) = temp_db();
    let t = open(&path);
    let blob: String = (0..10 * 1024 * 1024).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let event = format!(r#"{{"kind":"big","id":"b","data":{{"blob":"{blob}"}}}}"#);
    let group = "g".repeat(1024 * 1024);
    match t.publish(&group, &event, 0, Some(&group)) {
        Ok(()) => {
            let lease = t.claim("w", 30.0, 0, &[group.as_str()]).unwrap().expect("the big message");
            assert_eq!(lease.event.len(), event.len());
            assert!(lease.event == event, "the 10 MB event came back changed");
            assert!(lease.group_id == group);
            t.ack(&lease).unwrap();
        }
        Err(e) => {
            assert!(matches!(e, Error::Database(_)), "a clean failure is Error::Database, not {e:?}");
            println!("a 10 MB event was refused: {e}");
        }
    }
    // Through the C ABI.
    drop(t);
    let mut h: *mut harel_transport = ptr::null_mut();
    assert_eq!(harel_transport_open(c(&path).as_ptr(), ptr::null(), &mut h, ptr::null_mut()), harel_status::HAREL_OK);
    let ev = c(&event);
    let status = harel_transport_publish(h, c("big").as_ptr(), ev.as_ptr(), 0, ptr::null(), ptr::null_mut());
    if status == harel_status::HAREL_OK {
        let mut lease: *mut harel_lease = ptr::null_mut();
        assert_eq!(
            harel_transport_claim(h, c("w").as_ptr(), 30.0, 0, ptr::null(), 0, &mut lease, ptr::null_mut()),
            harel_status::HAREL_OK
        );
        assert!(unsafe { CStr::from_ptr((*lease).event) } == ev.as_c_str(), "the 10 MB event through C");
        assert_eq!(harel_transport_ack(h, lease, ptr::null_mut()), harel_status::HAREL_OK);
        harel_lease_free(lease);
    } else {
        assert_eq!(status, harel_status::HAREL_ERR_DATABASE, "{}", last_error());
    }
    harel_transport_close(h);
    let raw = Raw::open(&path);
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages"), 0);
}

fn bad_prefixes() -> Vec<String> {
    let mut p: Vec<String> = [
        "",
        "1abc",
        "9",
        "a-b",
        "a b",
        "a;b",
        "a.b",
        "harel; DROP TABLE harel_transport_messages; --",
        "x\"",
        "x'",
        "x`",
        "x]",
        "a\u{0}b",
        "ä",
        "é_prefix",
        "ａ", // fullwidth a
        "a\u{200b}",
        "\u{1F980}",
        "a\n",
        " a",
        "a ",
        "harel_transport_messages--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    p.push("a".repeat(31));
    p.push("_".repeat(64));
    p
}

/// Prefixes that are not identifiers are refused where they are given, by the Rust API and
/// the C ABI alike (setter and schema_sql), and never reach a statement: the options keep
/// the prefix they had, and a database opened with them has only that prefix's tables.
#[test]
fn a_prefix_that_is_not_an_identifier_is_refused_before_any_sql() {
    let (_dir, path) = temp_db();
    for good in ["a", "_", "A1_", "harel", &"z".repeat(30)] {
        Options::new().prefix(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        ::harel_transport::schema_sql(good).unwrap();
    }
    let o = harel_options_new();
    assert_eq!(harel_options_set_prefix(o, c("mine").as_ptr(), ptr::null_mut()), harel_status::HAREL_OK);
    for bad in bad_prefixes() {
        let mut options = Options::new();
        let e = options.prefix(&bad).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
        assert!(matches!(&e, Error::Argument(m) if m.contains("prefix")), "{bad:?}: {e:?}");
        assert!(matches!(::harel_transport::schema_sql(&bad), Err(Error::Argument(_))), "{bad:?}");
        assert!(matches!(::harel_transport::schema_upgrade_sql(&bad), Err(Error::Argument(_))), "{bad:?}");
        if bad.contains('\0') {
            continue; // C can't pass it; the Rust checks above are what count
        }
        let cbad = c(&bad);
        assert_eq!(harel_options_set_prefix(o, cbad.as_ptr(), ptr::null_mut()), harel_status::HAREL_ERR_ARGUMENT, "{bad:?}");
        assert!(last_error().contains("prefix"), "{bad:?}: {}", last_error());
        let mut out: *mut c_char = ptr::dangling_mut(); // not NULL: the call must set it
        assert_eq!(harel_schema_sql(cbad.as_ptr(), &mut out, ptr::null_mut()), harel_status::HAREL_ERR_ARGUMENT, "{bad:?}");
        assert!(out.is_null());
        assert_eq!(harel_schema_upgrade_sql(cbad.as_ptr(), &mut out, ptr::null_mut()), harel_status::HAREL_ERR_ARGUMENT, "{bad:?}");
        assert!(out.is_null());
    }
    let mut t: *mut harel_transport = ptr::null_mut();
    assert_eq!(harel_transport_open(c(&path).as_ptr(), o, &mut t, ptr::null_mut()), harel_status::HAREL_OK);
    harel_transport_close(t);
    harel_options_free(o);
    let objects = Raw::open(&path).objects();
    assert!(!objects.is_empty());
    for (kind, name) in &objects {
        assert!(name.starts_with("mine_transport_"), "{kind} {name}: not the prefix the options kept");
    }
}

// ---- found by the fuzzer (fuzz/), kept as regression tests -------------------------------

/// Was a KNOWN BUG (found by fuzz/ in its first minute): a busy timeout or sync interval
/// that is finite and > 0 but too big for `std::time::Duration` (2^64 s, 1e30 s) panics in
/// `Duration::from_secs_f64` (src/options.rs, `busy_timeout` and `sync_interval`). The FFI
/// boundary catches it, so the caller gets HAREL_ERR_PANIC ("a bug; close the handle")
/// where docs/abi.md promises HAREL_OK or HAREL_ERR_ARGUMENT for a setter's value. Reproduce:
/// `harel_options_set_busy_timeout(harel_options_new(), 18446744073709551616.0)`, or
/// `cargo fuzz run abi fuzz/regressions/busy-timeout-2e64`. Fix: refuse (or clamp) values
/// past a bound in `validate::*_seconds` / use `Duration::try_from_secs_f64`. Remove the
/// regression test since it was fixed (`validate::duration`).
#[test]
fn fuzz_regression_a_huge_busy_timeout_or_sync_interval_is_not_a_panic() {
    for seconds in [1.8446744073709552e19, 1e30, f64::MAX] {
        let o = harel_options_new();
        let b = harel_options_set_busy_timeout(o, seconds, ptr::null_mut());
        let s = harel_options_set_sync_interval(o, seconds, ptr::null_mut());
        harel_options_free(o);
        for (what, status) in [("set_busy_timeout", b), ("set_sync_interval", s)] {
            assert!(
                matches!(status, harel_status::HAREL_OK | harel_status::HAREL_ERR_ARGUMENT),
                "{what}({seconds:e}) returned {status:?}"
            );
        }
        let mut options = Options::new();
        assert!(
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _ = options.busy_timeout(seconds);
                let _ = options.sync_interval(seconds);
            }))
            .is_ok(),
            "Options::busy_timeout/sync_interval({seconds:e}) panicked"
        );
    }
}

/// Found reading where the fuzzer's numbers go: libsql 0.10's `Connection::busy_timeout`
/// passes `timeout.as_millis() as i32` to sqlite3_busy_timeout, so a busy timeout of 2^31 ms
/// (about 24.9 days) or more wraps to zero or below, which turns SQLite's waiting *off*. A
/// local file's transport now waits for the lock itself (src/db.rs), so a caller asking for
/// a very long wait (30 days) does wait; this keeps it so.
#[test]
fn a_busy_timeout_of_thirty_days_still_waits() {
    let (_dir, path) = temp_db();
    drop(open(&path));
    let holder = Raw::open(&path);
    holder.batch("BEGIN IMMEDIATE");
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        holder.batch("COMMIT");
    });
    let mut o = TestClock::at(T0).options();
    o.busy_timeout(30.0 * 86400.0).unwrap();
    let started = std::time::Instant::now();
    let result = Transport::open(&path, &o).and_then(|t| t.publish("g", r#"{"kind":"k","id":"1","data":{}}"#, 0, None));
    release.join().unwrap();
    assert!(result.is_ok(), "a 30-day busy timeout gave up: {result:?}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(250), "it did not wait for the lock");
}
