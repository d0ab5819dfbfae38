//! Fuzzing the C ABI (issue #7): each input is a program, a sequence of calls on up to two
//! option sets, two open transports and four claimed leases, with arbitrary bytes for every
//! string (invalid UTF-8 included; a C string simply ends at the first NUL) and arbitrary
//! numbers (raw bit patterns, or picks from a table of edge values). Every call is checked
//! against ABI.md's conventions, and a broken one aborts the run as a finding:
//!
//! - no status but the eight of the header; never HAREL_ERR_PANIC (a caught bug);
//! - harel_last_error() is NULL after HAREL_OK/HAREL_EMPTY, a non-empty UTF-8 message after an
//!   error, and harel_transport_last_error(t) agrees with it after a call on t;
//! - an out-pointer is set on HAREL_OK and NULL otherwise; a claimed lease has its strings;
//! - an argument the ABI calls bad gets HAREL_ERR_ARGUMENT;
//! - AddressSanitizer (the build's -Zsanitizer=address) for memory errors and leaks; every
//!   handle, lease, option set and string is freed when an input ends.
//!
//! The one limit on "arbitrary": the database argument of open is a file inside a scratch
//! directory (emptied before each input), ":memory:", NULL, "" or bytes that are not UTF-8,
//! and a server URL (or an embedded replica's sync_url) is only ever a closed port on the
//! loopback, so the fuzzer neither writes outside its directory nor sends traffic anywhere.
//! An embedded replica is opened only with HAREL_FUZZ_REPLICA=1 (each open of one waits 3 s
//! for libsql's handshake timeout). HAREL_FUZZ_TRACE=1 prints each step with its time and
//! message, for reading a reproduction.

#![no_main]

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use ::harel_transport::ffi::*;
use libfuzzer_sys::fuzz_target;

/// Where a loopback URL points: a port nothing listens on, so a connect fails at once.
const CLOSED_PORT_URL: &str = "http://127.0.0.1:1";

const DICTIONARY: &[&[u8]] = &[
    b"",
    b"g",
    b"w",
    b"k",
    b"__parked__",
    b":memory:",
    b"harel",
    b"_",
    b"p1",
    b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",  // 30: the longest prefix
    b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", // 31: one too long
    b"1abc",
    b"a-b",
    b"x; DROP TABLE harel_transport_messages; --",
    b"'); DELETE FROM harel_transport_groups; --",
    b"{}",
    b"[]",
    b"null",
    b"1",
    b"\"s\"",
    b"{\"kind\":\"tick\",\"id\":\"e1\",\"data\":{\"n\":1}}",
    b"{\"a\":",
    b"1e400",
    b"[1,2",
    b"\xff",
    b"ab\xc3",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    "\u{e9}\u{1F600}\u{7f}\u{1}\t\n\r\"'\\".as_bytes(),
    b"http://127.0.0.1:1",
    b"libsql://x",
    b"file:x?mode=ro",
];

const F64S: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    30.0,
    -1.0,
    0.001,
    1000.0,
    1.7e9,
    1e10,
    1e18,
    1e30,
    1e300,
    5e-324,
    f64::EPSILON,
    f64::MAX,
    f64::MIN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    9.2233720368547758e18, // 2^63
    1.8446744073709552e19, // 2^64
    4294967.296,           // 2^32 ms
    2147483.648,           // 2^31 ms
];

const I32S: &[i32] = &[0, 1, 2, 3, 4, -1, 5, i32::MIN, i32::MAX, 100];

/// The fuzzed input, read front to back; past its end every read is 0.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        &self.data[start..end]
    }

    fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b[..].iter_mut().zip(self.take(8)).for_each(|(d, s)| *d = *s);
        u64::from_le_bytes(b)
    }

    fn i32(&mut self) -> i32 {
        let sel = self.byte();
        if sel < 200 {
            I32S[sel as usize % I32S.len()]
        } else {
            self.u64() as i32
        }
    }

    fn f64(&mut self) -> f64 {
        let sel = self.byte();
        if sel < 192 {
            F64S[sel as usize % F64S.len()]
        } else {
            f64::from_bits(self.u64())
        }
    }

    /// Bytes for a string: a dictionary word, fuzzed bytes, or a long run of one byte.
    fn bytes(&mut self) -> Vec<u8> {
        let sel = self.byte();
        match sel {
            0..=95 => DICTIONARY[sel as usize % DICTIONARY.len()].to_vec(),
            96..=250 => {
                let n = self.byte() as usize;
                self.take(n).to_vec()
            }
            _ => {
                let (b, n) = (self.byte(), (self.byte() as usize + 1) * 512);
                vec![b; n]
            }
        }
    }

    /// A C string of fuzzed bytes (ending at the first NUL, as C would read it).
    fn cstring(&mut self) -> CString {
        let mut b = self.bytes();
        if let Some(nul) = b.iter().position(|&c| c == 0) {
            b.truncate(nul);
        }
        CString::new(b).expect("no NUL left")
    }

    /// A string or, one time in eight, NULL.
    fn optional_cstring(&mut self) -> Option<CString> {
        if self.byte() % 8 == 0 {
            None
        } else {
            Some(self.cstring())
        }
    }
}

fn ptr_of(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

static CLOCK: AtomicU64 = AtomicU64::new(0);

extern "C" fn fuzz_clock(ctx: *mut c_void) -> f64 {
    // SAFETY: ctx is &CLOCK, a static.
    f64::from_bits(unsafe { &*(ctx as *const AtomicU64) }.load(Ordering::Relaxed))
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
}

extern "C" fn remove_scratch() {
    if let Some(dir) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

static SCRATCH: OnceLock<PathBuf> = OnceLock::new();

/// The directory the fuzzer's database files live in: in memory (/dev/shm) where there is
/// one, so a file's fsync costs nothing; removed when the fuzzer exits.
fn scratch() -> &'static PathBuf {
    SCRATCH.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        let dir = base.join(format!("harel-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the scratch directory");
        // SAFETY: registers a plain function; libFuzzer ends with exit(), which runs it.
        unsafe { atexit(remove_scratch) };
        dir
    })
}

fn empty_scratch() {
    if let Ok(entries) = std::fs::read_dir(scratch()) {
        for e in entries.flatten() {
            let p = e.path();
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        }
    }
}

fn message(p: *const c_char) -> String {
    // SAFETY: checked non-NULL by the caller; the library promises a C string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// ABI.md's rules for a status and the thread's last error after a call.
fn check(what: &str, status: harel_status) {
    let err = harel_last_error();
    match status {
        harel_status::HAREL_ERR_PANIC => {
            let m = if err.is_null() { "(no message)".into() } else { message(err) };
            panic!("{what} returned HAREL_ERR_PANIC: {m}");
        }
        harel_status::HAREL_OK | harel_status::HAREL_EMPTY => {
            assert!(err.is_null(), "{what}: harel_last_error() is not NULL after {status:?}: {}", message(err));
        }
        _ => {
            assert!(!err.is_null(), "{what}: {status:?} but harel_last_error() is NULL");
            // SAFETY: non-NULL, the library's C string.
            let m = unsafe { CStr::from_ptr(err) };
            assert!(!m.to_bytes().is_empty(), "{what}: {status:?} with an empty message");
            assert!(m.to_str().is_ok(), "{what}: the message is not UTF-8");
        }
    }
}

/// The same, for a call on a handle: the handle's last error must be the thread's.
fn check_on(what: &str, status: harel_status, t: *mut harel_transport) {
    check(what, status);
    if !t.is_null() {
        let on_handle = harel_transport_last_error(t);
        let on_thread = harel_last_error();
        assert_eq!(on_handle.is_null(), on_thread.is_null(), "{what}: handle and thread last errors disagree");
        if !on_handle.is_null() {
            assert_eq!(message(on_handle), message(on_thread), "{what}: handle and thread last errors differ");
        }
    }
}

fn is_utf8(s: &Option<CString>) -> bool {
    s.as_ref().is_some_and(|s| s.to_str().is_ok())
}

/// A string argument the ABI rejects: NULL, not UTF-8, or empty.
fn bad_string(s: &Option<CString>) -> bool {
    !is_utf8(s) || s.as_ref().is_some_and(|s| s.as_bytes().is_empty())
}

fn expect_argument(what: &str, status: harel_status) {
    assert_eq!(status, harel_status::HAREL_ERR_ARGUMENT, "{what}: a bad argument must be HAREL_ERR_ARGUMENT");
}

#[derive(Default)]
struct State {
    options: [Option<*mut harel_options>; 2],
    /// A sync_url is set on these options: open must not reach anything but the loopback.
    sync_url: [bool; 2],
    handles: [Option<*mut harel_transport>; 2],
    leases: [Option<*mut harel_lease>; 4],
}

impl State {
    fn option_ptr(&self, sel: u8) -> *mut harel_options {
        self.options[sel as usize % 2].unwrap_or(ptr::null_mut())
    }

    /// A handle, or NULL one time in four.
    fn handle(&self, sel: u8) -> *mut harel_transport {
        if sel % 4 == 3 {
            return ptr::null_mut();
        }
        self.handles[sel as usize % 2].unwrap_or(ptr::null_mut())
    }

    fn clear(&mut self) {
        for l in self.leases.iter_mut() {
            if let Some(l) = l.take() {
                harel_lease_free(l);
            }
        }
        for (i, h) in self.handles.iter_mut().enumerate() {
            if let Some(h) = h.take() {
                check(&format!("close(handle {i}) at the end"), harel_transport_close(h));
            }
        }
        for o in self.options.iter_mut() {
            if let Some(o) = o.take() {
                harel_options_free(o);
            }
        }
    }
}

fn open(input: &mut Input, state: &mut State) {
    let slot = input.byte() as usize % 2;
    let opt_sel = input.byte();
    let options = if opt_sel % 3 == 2 { ptr::null() } else { state.option_ptr(opt_sel) as *const harel_options };
    let db_choice = input.byte() % 8;
    let raw = input.cstring();
    let database: Option<CString> = match db_choice {
        0 => Some(c":memory:".into()),
        1..=3 => Some(CString::new(format!("{}/db{db_choice}.db", scratch().display())).unwrap()),
        4 => None,
        5 => {
            let text = String::from_utf8_lossy(raw.as_bytes());
            if ["libsql://", "http://", "https://"].iter().any(|s| text.starts_with(s)) {
                // A server's open costs ~40 ms (an HTTP client, a runtime thread) even when
                // refused at once: one in eight, or it would take most of the time.
                Some(CString::new(if input.byte() % 8 == 0 { CLOSED_PORT_URL } else { ":memory:" }).unwrap())
            } else {
                // A file name, never a directory ("", ".", "..") nor longer than a name may be:
                // libsql 0.10 leaks the handle of an sqlite3_open_v2 that fails (see README).
                let mut name: Vec<u8> = raw.as_bytes().iter().take(100).map(|&b| if b == b'/' { b'_' } else { b }).collect();
                if name.is_empty() || name == b"." || name == b".." {
                    name = b"db.db".to_vec();
                }
                let mut path = format!("{}/", scratch().display()).into_bytes();
                path.extend(name);
                Some(CString::new(path).unwrap())
            }
        }
        6 => Some(CString::default()),
        _ if raw.to_str().is_err() => Some(raw),
        _ => Some(c":memory:".into()),
    };
    // An embedded replica only ever of a closed loopback port, and with its files (libsql
    // adds some beside the database, ":memory:" or not) in the scratch directory.
    let mut database = database;
    if !options.is_null() && state.sync_url[opt_sel as usize % 2] {
        // A replica's open waits out libsql's handshake timeout (3 s) before it reports the
        // closed port: only with HAREL_FUZZ_REPLICA=1, or the fuzzer would do little else.
        let replica = input.byte() % 16 == 0 && std::env::var_os("HAREL_FUZZ_REPLICA").is_some();
        let url = if replica { Some(CString::new(CLOSED_PORT_URL).unwrap()) } else { None };
        check("set_sync_url before open", harel_options_set_sync_url(options as *mut _, ptr_of(&url)));
        state.sync_url[opt_sel as usize % 2] = url.is_some();
        if url.is_some() && database.as_ref().is_some_and(|d| d.to_str().is_ok() && !d.as_bytes().is_empty()) {
            database = Some(CString::new(format!("{}/replica.db", scratch().display())).unwrap());
        }
    }
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_transport = 0x1 as *mut _; // must be overwritten
    let status = harel_transport_open(ptr_of(&database), options, if use_out { &mut out } else { ptr::null_mut() });
    check("open", status);
    if !use_out || bad_string(&database) {
        expect_argument("open with a NULL out, or a NULL, empty or non-UTF-8 database", status);
    }
    if use_out {
        if status == harel_status::HAREL_OK {
            assert!(!out.is_null(), "open: HAREL_OK but *out is NULL");
            if let Some(old) = state.handles[slot].replace(out) {
                check("close a replaced handle", harel_transport_close(old));
            }
        } else {
            assert!(out.is_null(), "open: {status:?} but *out is not NULL");
        }
    }
}

fn publish(input: &mut Input, state: &mut State) {
    let t = state.handle(input.byte());
    let group = input.optional_cstring();
    let event = input.optional_cstring();
    let priority = input.i32();
    let key = input.optional_cstring();
    let status = harel_transport_publish(t, ptr_of(&group), ptr_of(&event), priority, ptr_of(&key));
    check_on("publish", status, t);
    let bad_key = key.is_some() && bad_string(&key);
    if t.is_null() || bad_string(&group) || !is_utf8(&event) || bad_key || !(0..=4).contains(&priority) {
        expect_argument("publish", status);
    }
}

/// A batch of 0..5 messages, any of whose fields may be bad: the whole batch is refused then.
fn publish_many(input: &mut Input, state: &mut State) {
    let t = state.handle(input.byte());
    let n = input.byte() as usize % 6;
    let fields: Vec<_> =
        (0..n).map(|_| (input.optional_cstring(), input.optional_cstring(), input.i32(), input.optional_cstring())).collect();
    let messages: Vec<harel_message> = fields
        .iter()
        .map(|(g, e, p, k)| harel_message { group_id: ptr_of(g), event_json: ptr_of(e), priority: *p, routing_key: ptr_of(k) })
        .collect();
    let null_array = n > 0 && input.byte() % 16 == 0;
    let array = if null_array { ptr::null() } else { messages.as_ptr() };
    let status = harel_transport_publish_many(t, array, n);
    check_on("publish_many", status, t);
    let bad = |(g, e, p, k): &(Option<CString>, Option<CString>, i32, Option<CString>)| {
        bad_string(g) || !is_utf8(e) || (k.is_some() && bad_string(k)) || !(0..=4).contains(p)
    };
    if t.is_null() || null_array || fields.iter().any(bad) {
        expect_argument("publish_many", status);
    }
}

fn claim(input: &mut Input, state: &mut State) {
    let t = state.handle(input.byte());
    let worker = input.optional_cstring();
    let visibility = input.f64();
    let min_priority = input.i32();
    let n_sel = input.byte();
    let n = match n_sel % 8 {
        6 => 40, // past 32 keys the claim passes them as one JSON array
        7 => 0,
        k => k as usize,
    };
    let keys: Vec<Option<CString>> = (0..n).map(|_| input.optional_cstring()).collect();
    let key_ptrs: Vec<*const c_char> = keys.iter().map(ptr_of).collect();
    let null_array = input.byte() % 16 == 0;
    let slot = input.byte() as usize % 4;
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_lease = 0x1 as *mut _;
    let status = harel_transport_claim(
        t,
        ptr_of(&worker),
        visibility,
        min_priority,
        if null_array { ptr::null() } else { key_ptrs.as_ptr() },
        n,
        if use_out { &mut out } else { ptr::null_mut() },
    );
    check_on("claim", status, t);
    let bad_keys = (null_array && n > 0) || (!null_array && keys.iter().any(bad_string));
    let reserved = worker.as_ref().is_some_and(|w| w.as_bytes() == b"__parked__");
    if t.is_null()
        || !use_out
        || bad_string(&worker)
        || reserved
        || !(visibility.is_finite() && visibility > 0.0)
        || !(0..=4).contains(&min_priority)
        || bad_keys
    {
        expect_argument("claim", status);
    }
    if !use_out {
        return;
    }
    if status == harel_status::HAREL_OK {
        assert!(!out.is_null(), "claim: HAREL_OK but *out is NULL");
        // SAFETY: a lease from the library.
        let lease = unsafe { &*out };
        for (name, s) in [("group_id", lease.group_id), ("event", lease.event), ("worker_id", lease.worker_id)] {
            assert!(!s.is_null(), "claim: lease.{name} is NULL");
            // SAFETY: non-NULL, the library's C string.
            assert!(unsafe { CStr::from_ptr(s) }.to_str().is_ok(), "claim: lease.{name} is not UTF-8");
        }
        assert_eq!(
            unsafe { CStr::from_ptr(lease.worker_id) }.to_bytes(),
            worker.as_ref().unwrap().as_bytes(),
            "claim: the lease is not the claiming worker's"
        );
        if let Some(old) = state.leases[slot].replace(out) {
            harel_lease_free(old);
        }
    } else {
        assert!(out.is_null(), "claim: {status:?} but *out is not NULL");
    }
}

/// ack (or nack): of a lease the library handed out, one the caller built, or NULL.
fn finish(input: &mut Input, state: &mut State, nack: bool) {
    let t = state.handle(input.byte());
    let kind = input.byte() % 4;
    let slot = input.byte() as usize % 4;
    let seq = if input.bool() { input.u64() as i64 } else { (input.byte() % 8) as i64 };
    let group = input.optional_cstring();
    let worker = input.optional_cstring();
    let expiry = input.f64();
    let delay = if nack { input.f64() } else { 0.0 };
    let forged = harel_lease {
        seq,
        group_id: ptr_of(&group) as *mut c_char,
        event: ptr::null_mut(),
        worker_id: ptr_of(&worker) as *mut c_char,
        lock_expiry: expiry,
    };
    let (lease, forged_bad): (*const harel_lease, bool) = match (kind, state.leases[slot]) {
        (0 | 1, Some(l)) => (l, false),
        (3, _) => (ptr::null(), true),
        _ => {
            let reserved = worker.as_ref().is_some_and(|w| w.as_bytes() == b"__parked__");
            (&forged, bad_string(&group) || bad_string(&worker) || reserved)
        }
    };
    let status = if nack { harel_transport_nack(t, lease, delay) } else { harel_transport_ack(t, lease) };
    let what = if nack { "nack" } else { "ack" };
    check_on(what, status, t);
    if t.is_null() || forged_bad || (nack && !(delay.is_finite() && delay >= 0.0)) {
        expect_argument(what, status);
    }
}

fn schema(input: &mut Input) {
    let upgrade = input.bool();
    let prefix = input.optional_cstring();
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut c_char = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut *mut c_char } else { ptr::null_mut() };
    let status =
        if upgrade { harel_schema_upgrade_sql(ptr_of(&prefix), out_ptr) } else { harel_schema_sql(ptr_of(&prefix), out_ptr) };
    check("schema_sql", status);
    let valid_prefix = prefix.as_ref().and_then(|p| p.to_str().ok()).is_some_and(|p| {
        let mut c = p.chars();
        matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
            && p.len() <= 30
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if !use_out || !valid_prefix {
        expect_argument("schema_sql", status);
    } else {
        assert_eq!(status, harel_status::HAREL_OK, "schema_sql of a valid prefix");
    }
    if !use_out {
        return;
    }
    if status == harel_status::HAREL_OK {
        assert!(!out.is_null());
        let text = message(out);
        let p = prefix.as_ref().unwrap().to_str().unwrap();
        for line in text.lines() {
            assert!(line.ends_with(';'), "schema_sql: {line:?} does not end in ';'");
            assert!(line.contains(&format!("{p}_transport_")), "schema_sql: {line:?} is not about prefix {p}");
        }
        harel_string_free(out);
    } else {
        assert!(out.is_null(), "schema_sql: {status:?} but *out is not NULL");
    }
}

fn step(input: &mut Input, state: &mut State) {
    let op = input.byte() % 20;
    match op {
        0 => {
            let slot = input.byte() as usize % 2;
            let o = harel_options_new();
            assert!(!o.is_null(), "harel_options_new returned NULL");
            if let Some(old) = state.options[slot].replace(o) {
                harel_options_free(old);
            }
            state.sync_url[slot] = false;
        }
        1 => {
            let slot = input.byte() as usize % 2;
            harel_options_free(state.options[slot].take().unwrap_or(ptr::null_mut()));
        }
        2 => {
            let o = state.option_ptr(input.byte());
            let p = input.optional_cstring();
            let status = harel_options_set_prefix(o, ptr_of(&p));
            check("set_prefix", status);
            if o.is_null() || bad_string(&p) {
                expect_argument("set_prefix", status);
            }
        }
        3 => {
            let o = state.option_ptr(input.byte());
            check("set_create_schema", harel_options_set_create_schema(o, input.bool()));
        }
        4 => {
            let sel = input.byte();
            let o = state.option_ptr(sel);
            let url = input.optional_cstring();
            let status = harel_options_set_sync_url(o, ptr_of(&url));
            check("set_sync_url", status);
            if status == harel_status::HAREL_OK {
                state.sync_url[sel as usize % 2] = url.is_some();
            }
        }
        5 => {
            let o = state.option_ptr(input.byte());
            let token = input.optional_cstring();
            check("set_auth_token", harel_options_set_auth_token(o, ptr_of(&token)));
        }
        6 => {
            let o = state.option_ptr(input.byte());
            let s = input.f64();
            let status = harel_options_set_sync_interval(o, s);
            check("set_sync_interval", status);
            if o.is_null() || !(s.is_finite() && s > 0.0) {
                expect_argument("set_sync_interval", status);
            }
        }
        7 => {
            let o = state.option_ptr(input.byte());
            let s = input.f64();
            let status = harel_options_set_busy_timeout(o, s);
            check("set_busy_timeout", status);
            if o.is_null() || !(s.is_finite() && s >= 0.0) {
                expect_argument("set_busy_timeout", status);
            }
        }
        8 => {
            let o = state.option_ptr(input.byte());
            let system = input.byte() % 4 == 0;
            let clock: Option<unsafe extern "C" fn(*mut c_void) -> f64> = if system { None } else { Some(fuzz_clock) };
            let ctx = &CLOCK as *const AtomicU64 as *mut c_void;
            check("set_clock", harel_options_set_clock(o, clock, ctx));
        }
        9 => CLOCK.store(input.f64().to_bits(), Ordering::Relaxed),
        10 => open(input, state),
        11 => {
            let sel = input.byte();
            let slot = sel as usize % 2;
            let t = if sel % 4 == 3 { ptr::null_mut() } else { state.handles[slot].take().unwrap_or(ptr::null_mut()) };
            check("close", harel_transport_close(t));
        }
        12 => publish(input, state),
        13 => publish_many(input, state),
        14 | 15 => claim(input, state),
        16 => {
            let nack = input.byte() % 2 == 1;
            finish(input, state, nack)
        }
        17 => {
            let slot = input.byte() as usize % 4;
            harel_lease_free(state.leases[slot].take().unwrap_or(ptr::null_mut()));
        }
        18 => schema(input),
        _ => {
            let name = harel_status_name(input.i32());
            assert!(!name.is_null());
            assert!(message(name).starts_with("HAREL_"));
            assert!(!harel_version().is_null());
            let o = state.option_ptr(input.byte());
            check("set_synchronous_full", harel_options_set_synchronous_full(o, input.bool()));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    empty_scratch();
    CLOCK.store(1000.0f64.to_bits(), Ordering::Relaxed);
    let mut input = Input { data, pos: 0 };
    let mut state = State::default();
    let mut steps = 0;
    let trace = std::env::var_os("HAREL_FUZZ_TRACE").is_some();
    while !input.done() && steps < 64 {
        let (at, started) = (input.pos, std::time::Instant::now());
        step(&mut input, &mut state);
        if trace {
            let last = harel_last_error();
            let m = if last.is_null() { String::new() } else { message(last) };
            eprintln!("step {steps} (op byte {:?}): {:?} {m}", data.get(at), started.elapsed());
        }
        steps += 1;
    }
    state.clear();
});
