//! Fuzzing the C ABI (issue #7): each input is a program, a sequence of calls on up to two
//! option sets, two open transports and four claimed leases (issue #14's dead letters,
//! operator's calls and looks are op 19's; so are issue #24's publishes with delivery options
//! and transactions, and issue #26's watches: abi/producers.rs), with arbitrary bytes for every string (invalid
//! UTF-8 included; a C string simply ends at the first NUL) and arbitrary numbers (raw bit
//! patterns, or picks from a table of edge values). Every call is checked against ABI.md's
//! conventions, and a broken one aborts the run as a finding:
//!
//! - no status but the eight of the header; never HAREL_ERR_PANIC (a caught bug);
//! - harel_last_error() is NULL after HAREL_OK/HAREL_EMPTY, a non-empty UTF-8 message after an
//!   error;
//! - the call's own `harel_error **err`, passed three ways (chosen by the op byte's high bits,
//!   so the corpus keeps its meaning): NULL; pointing to NULL, when it must stay NULL on
//!   success and hold an error of the call's status and harel_last_error()'s message on
//!   failure; or pointing to an error an earlier call handed out, when the call must be
//!   refused with HAREL_ERR_ARGUMENT, that error untouched and nothing handed out;
//! - an out-pointer is set on HAREL_OK and NULL otherwise; a claimed lease has its strings,
//!   each NUL-terminated at its length, and attempts within 1..=max_attempts; the stats add
//!   up and a page is whole, ordered and within its limit (see `stats`, `groups`, `peek`,
//!   `dead_letters`);
//! - an argument the ABI calls bad gets HAREL_ERR_ARGUMENT (a caller-filled lease's
//!   group_id_len 0 included; its group id is bytes of any kind, NULs too, read by length);
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
use ::harel_transport::{LATENCY_BOUNDS, LATENCY_BUCKETS};

#[path = "abi/producers.rs"]
mod producers;
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

    /// Bytes of any kind, NULs included (for a field read by its length), or one time in
    /// eight None (NULL); the same input as optional_cstring.
    fn optional_bytes(&mut self) -> Option<Vec<u8>> {
        if self.byte() % 8 == 0 {
            None
        } else {
            Some(self.bytes())
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

/// How a call gets its `harel_error **err`: NULL; pointing to a NULL `harel_error *`; or
/// pointing to an error an earlier call handed out and nobody freed (a caller's bug the call
/// must refuse). Picked from the op byte's high bits, so no input byte is spent on it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ErrArg {
    Null,
    Empty,
    Stale,
}

impl ErrArg {
    fn of(op_byte: u8) -> ErrArg {
        match op_byte / 20 {
            0..=4 => ErrArg::Null,
            5..=10 => ErrArg::Empty,
            _ => ErrArg::Stale,
        }
    }
}

/// The `err` of one call: the `harel_error *` it points to, and the input's stale error.
struct CallErr {
    arg: ErrArg,
    slot: *mut harel_error,
    stale: *mut harel_error,
}

impl CallErr {
    fn new(arg: ErrArg, state: &State) -> CallErr {
        let stale = state.stale.expect("each input starts with a stale error");
        CallErr { arg, slot: if arg == ErrArg::Stale { stale } else { ptr::null_mut() }, stale }
    }

    /// What the call gets as `err`.
    fn ptr(&mut self) -> *mut *mut harel_error {
        if self.arg == ErrArg::Null {
            ptr::null_mut()
        } else {
            &mut self.slot
        }
    }
}

/// ABI.md's rules for a status, the thread's last error and the call's own error after a
/// call; frees the error the call handed out. True when the call was refused for its stale
/// `*err` (it then did nothing).
fn check(what: &str, status: harel_status, err: CallErr, state: &State) -> bool {
    let last = harel_last_error();
    if status == harel_status::HAREL_ERR_PANIC {
        let m = if last.is_null() { "(no message)".into() } else { message(last) };
        panic!("{what} returned HAREL_ERR_PANIC: {m}");
    }
    if err.arg == ErrArg::Stale {
        assert_eq!(status, harel_status::HAREL_ERR_ARGUMENT, "{what}: a call with *err set must be refused");
        assert_eq!(err.slot, err.stale, "{what}: the call replaced the *err it was given");
        assert_eq!(harel_error_status(err.stale), harel_status::HAREL_ERR_ARGUMENT, "{what}: the stale error changed");
        assert_eq!(message(harel_error_message(err.stale)), state.stale_text, "{what}: the stale error changed");
        assert!(!last.is_null() && message(last).contains("*err"), "{what}: refused, but the last error is not about err");
        return true;
    }
    match status {
        harel_status::HAREL_OK | harel_status::HAREL_EMPTY => {
            assert!(last.is_null(), "{what}: harel_last_error() is not NULL after {status:?}: {}", message(last));
            assert!(err.slot.is_null(), "{what}: *err is set after {status:?}");
        }
        _ => {
            assert!(!last.is_null(), "{what}: {status:?} but harel_last_error() is NULL");
            // SAFETY: non-NULL, the library's C string.
            let m = unsafe { CStr::from_ptr(last) };
            assert!(!m.to_bytes().is_empty(), "{what}: {status:?} with an empty message");
            assert!(m.to_str().is_ok(), "{what}: the message is not UTF-8");
            if err.arg == ErrArg::Empty {
                assert!(!err.slot.is_null(), "{what}: {status:?} but *err is NULL");
                assert_eq!(harel_error_status(err.slot), status, "{what}: the error's status is not the call's");
                let own = harel_error_message(err.slot);
                assert!(!own.is_null(), "{what}: the error has no message");
                // SAFETY: both the library's C strings, alive until the next call / the free.
                assert_eq!(unsafe { CStr::from_ptr(own) }, m, "{what}: the error's message is not harel_last_error()");
                harel_error_free(err.slot);
            }
        }
    }
    false
}

/// The same for a harness-internal call, made with `err` NULL.
fn check_plain(what: &str, status: harel_status, state: &State) {
    check(what, status, CallErr::new(ErrArg::Null, state), state);
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
    /// The max_attempts set on these options (0: none), and of the handle opened with them:
    /// no lease a handle hands out has been claimed more often.
    max_attempts: [u32; 2],
    handles: [Option<*mut harel_transport>; 2],
    handle_max_attempts: [u32; 2],
    /// The last next_cursor of each listing (groups, peek, dead_letters), to pass back to it
    /// or to another listing (which must refuse it).
    cursors: [Option<CString>; 3],
    leases: [Option<*mut harel_lease>; 4],
    /// Issue 24's transactions and issue 26's watches (producers.rs), and the last of each
    /// freed, to be passed again (it must be refused).
    txs: [Option<*mut harel_tx>; 2],
    freed_tx: Option<*mut harel_tx>,
    watches: [Option<*mut harel_watch>; 2],
    freed_watch: Option<*mut harel_watch>,
    /// An error handed out by a failed call and not freed until the input ends: the `*err`
    /// of the calls made with ErrArg::Stale, and its message.
    stale: Option<*mut harel_error>,
    stale_text: String,
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

    /// The max_attempts of the handle `sel` picks (0 for NULL).
    fn max_attempts_of(&self, sel: u8) -> u32 {
        if sel % 4 == 3 || self.handles[sel as usize % 2].is_none() {
            0
        } else {
            self.handle_max_attempts[sel as usize % 2]
        }
    }

    fn clear(&mut self) {
        for l in self.leases.iter_mut() {
            if let Some(l) = l.take() {
                harel_lease_free(l);
            }
        }
        for h in self.handles.iter_mut() {
            if let Some(h) = h.take() {
                harel_transport_close(h); // void: closing cannot fail
            }
        }
        // After their transports' close, which rolled the transactions back and left the
        // watches readable: both are still freed by their own functions.
        for tx in self.txs.iter_mut() {
            harel_tx_free(tx.take().unwrap_or(ptr::null_mut()));
        }
        for w in self.watches.iter_mut() {
            harel_watch_free(w.take().unwrap_or(ptr::null_mut()));
        }
        for o in self.options.iter_mut() {
            if let Some(o) = o.take() {
                harel_options_free(o);
            }
        }
        harel_error_free(self.stale.take().unwrap_or(ptr::null_mut()));
    }
}

fn open(input: &mut Input, state: &mut State, arg: ErrArg) {
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
        let status = harel_options_set_sync_url(options as *mut _, ptr_of(&url), ptr::null_mut());
        check_plain("set_sync_url before open", status, state);
        state.sync_url[opt_sel as usize % 2] = url.is_some();
        if url.is_some() && database.as_ref().is_some_and(|d| d.to_str().is_ok() && !d.as_bytes().is_empty()) {
            database = Some(CString::new(format!("{}/replica.db", scratch().display())).unwrap());
        }
    }
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_transport = 0x1 as *mut _; // must be overwritten
    let mut err = CallErr::new(arg, state);
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    let status = harel_transport_open(ptr_of(&database), options, out_ptr, err.ptr());
    let refused = check("open", status, err, state);
    if !use_out || bad_string(&database) {
        expect_argument("open with a NULL out, or a NULL, empty or non-UTF-8 database", status);
    }
    if use_out {
        if status == harel_status::HAREL_OK {
            assert!(!out.is_null(), "open: HAREL_OK but *out is NULL");
            if let Some(old) = state.handles[slot].replace(out) {
                harel_transport_close(old);
            }
            state.handle_max_attempts[slot] = if options.is_null() { 0 } else { state.max_attempts[opt_sel as usize % 2] };
        } else {
            // refused for its *err, the call did nothing: *out NULL or as it was
            assert!(out.is_null() || (refused && out as usize == 0x1), "open: {status:?} but *out is set");
        }
    }
}

fn publish(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let group = input.optional_cstring();
    let event = input.optional_cstring();
    let priority = input.i32();
    let key = input.optional_cstring();
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_publish(t, ptr_of(&group), ptr_of(&event), priority, ptr_of(&key), err.ptr());
    check("publish", status, err, state);
    let bad_key = key.is_some() && bad_string(&key);
    if t.is_null() || bad_string(&group) || !is_utf8(&event) || bad_key || !(0..=4).contains(&priority) {
        expect_argument("publish", status);
    }
}

/// A batch of 0..5 messages, any of whose fields may be bad: the whole batch is refused then.
fn publish_many(input: &mut Input, state: &mut State, arg: ErrArg) {
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
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_publish_many(t, array, n, err.ptr());
    check("publish_many", status, err, state);
    let bad = |(g, e, p, k): &(Option<CString>, Option<CString>, i32, Option<CString>)| {
        bad_string(g) || !is_utf8(e) || (k.is_some() && bad_string(k)) || !(0..=4).contains(p)
    };
    if t.is_null() || null_array || fields.iter().any(bad) {
        expect_argument("publish_many", status);
    }
}

/// What a claim takes besides its handle: read from the input in the order claim reads it.
struct ClaimArgs {
    worker: Option<CString>,
    visibility: f64,
    min_priority: i32,
    keys: Vec<Option<CString>>,
    key_ptrs: Vec<*const c_char>,
    null_array: bool,
}

impl ClaimArgs {
    fn read(input: &mut Input) -> ClaimArgs {
        let worker = input.optional_cstring();
        let visibility = input.f64();
        let min_priority = input.i32();
        let n = match input.byte() % 8 {
            6 => 40, // past 32 keys the claim passes them as one JSON array
            7 => 0,
            k => k as usize,
        };
        let keys: Vec<Option<CString>> = (0..n).map(|_| input.optional_cstring()).collect();
        let key_ptrs = keys.iter().map(ptr_of).collect();
        let null_array = input.byte() % 16 == 0;
        ClaimArgs { worker, visibility, min_priority, keys, key_ptrs, null_array }
    }

    fn keys(&self) -> *const *const c_char {
        if self.null_array {
            ptr::null()
        } else {
            self.key_ptrs.as_ptr()
        }
    }

    /// An argument the ABI rejects.
    fn bad(&self) -> bool {
        let n = self.keys.len();
        let bad_keys = (self.null_array && n > 0) || (!self.null_array && self.keys.iter().any(bad_string));
        let reserved = self.worker.as_ref().is_some_and(|w| w.as_bytes() == b"__parked__");
        bad_string(&self.worker)
            || reserved
            || !(self.visibility.is_finite() && self.visibility > 0.0)
            || !(0..=4).contains(&self.min_priority)
            || bad_keys
    }
}

/// What a claim (or ack_and_claim) handed out through `out`: a lease checked and kept in
/// `slot` on HAREL_OK, nothing otherwise.
#[allow(clippy::too_many_arguments)]
fn take_lease(
    what: &str,
    status: harel_status,
    out: *mut harel_lease,
    refused: bool,
    c: &ClaimArgs,
    state: &mut State,
    slot: usize,
    max_attempts: u32,
) {
    if status != harel_status::HAREL_OK {
        assert!(out.is_null() || (refused && out as usize == 0x1), "{what}: {status:?} but *out is set");
        return;
    }
    assert!(!out.is_null(), "{what}: HAREL_OK but *out is NULL");
    // SAFETY: a lease from the library.
    let lease = unsafe { &*out };
    for (name, s) in [("group_id", lease.group_id), ("event", lease.event), ("worker_id", lease.worker_id)] {
        assert!(!s.is_null(), "{what}: lease.{name} is NULL");
        // SAFETY: non-NULL, the library's C string.
        assert!(unsafe { CStr::from_ptr(s) }.to_str().is_ok(), "{what}: lease.{name} is not UTF-8");
    }
    // Every string here was published through a C string, so holds no NUL: its length is
    // where its NUL is.
    for (name, s, len) in [("group_id", lease.group_id, lease.group_id_len), ("event", lease.event, lease.event_len)] {
        // SAFETY: non-NULL (checked above), NUL-terminated.
        let at = unsafe { CStr::from_ptr(s) }.to_bytes().len();
        assert_eq!(len, at, "{what}: lease.{name}'s length is not its string's");
    }
    assert!(lease.group_id_len > 0, "{what}: an empty group id");
    assert!(lease.attempts >= 1, "{what}: lease.attempts is {}, counting this claim it is at least 1", lease.attempts);
    assert!(
        max_attempts == 0 || lease.attempts <= i64::from(max_attempts),
        "{what}: a lease claimed {} times from a handle with max_attempts {max_attempts}",
        lease.attempts
    );
    assert_eq!(
        // SAFETY: checked non-NULL above.
        unsafe { CStr::from_ptr(lease.worker_id) }.to_bytes(),
        c.worker.as_ref().unwrap().as_bytes(),
        "{what}: the lease is not the claiming worker's"
    );
    if let Some(old) = state.leases[slot].replace(out) {
        harel_lease_free(old);
    }
}

fn claim(input: &mut Input, state: &mut State, arg: ErrArg) {
    let sel = input.byte();
    let (t, max_attempts) = (state.handle(sel), state.max_attempts_of(sel));
    let c = ClaimArgs::read(input);
    let slot = input.byte() as usize % 4;
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_lease = 0x1 as *mut _;
    let mut err = CallErr::new(arg, state);
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    let status = harel_transport_claim(
        t,
        ptr_of(&c.worker),
        c.visibility,
        c.min_priority,
        c.keys(),
        c.keys.len(),
        out_ptr,
        err.ptr(),
    );
    let refused = check("claim", status, err, state);
    if t.is_null() || !use_out || c.bad() {
        expect_argument("claim", status);
    }
    if use_out {
        take_lease("claim", status, out, refused, &c, state, slot, max_attempts);
    }
}

/// A lease for ack, nack, ack_and_claim or dead_letter: one the library handed out, one the
/// caller built, or NULL. A built lease's group id is bytes of any kind (NULs too), with a
/// group_id_len of all of them, 0, or fewer (chosen by the kind byte's high bits).
struct LeaseArg {
    kind: u8,
    slot: usize,
    /// the group's bytes and a NUL after them, as C code would have it (not read: the length is)
    group: Option<Vec<u8>>,
    group_len: usize,
    worker: Option<CString>,
    forged: harel_lease,
}

impl LeaseArg {
    /// Reads what finish always read, in its order: the kind byte, the slot, then the
    /// forged lease's fields.
    fn read(input: &mut Input) -> LeaseArg {
        let kind_byte = input.byte();
        let (kind, len_choice) = (kind_byte % 4, (kind_byte / 4) % 4);
        let slot = input.byte() as usize % 4;
        let seq = if input.bool() { input.u64() as i64 } else { (input.byte() % 8) as i64 };
        let group: Option<Vec<u8>> = input.optional_bytes().map(|mut g| {
            g.push(0);
            g
        });
        let worker = input.optional_cstring();
        let expiry = input.f64();
        let whole = group.as_ref().map_or(0, |g| g.len() - 1);
        let group_len = match len_choice {
            0 => 0,
            1 => (kind_byte as usize / 16) % (whole + 1),
            _ => whole,
        };
        let forged = harel_lease {
            seq,
            group_id: group.as_ref().map_or(ptr::null_mut(), |g| g.as_ptr() as *mut c_char),
            group_id_len: group_len,
            event: ptr::null_mut(),
            event_len: 0,
            worker_id: ptr_of(&worker) as *mut c_char,
            lock_expiry: expiry,
            // what else a lease holds, ack and nack never read: zeros, as a C caller's memset
            // SAFETY: a harel_lease is integers, floats and raw pointers; all zeros is valid.
            ..unsafe { std::mem::zeroed() }
        };
        LeaseArg { kind, slot, group, group_len, worker, forged }
    }

    /// The lease to pass, and whether the ABI calls it bad.
    fn get(&self, state: &State) -> (*const harel_lease, bool) {
        let group_bad =
            self.group.as_ref().is_none_or(|g| self.group_len == 0 || std::str::from_utf8(&g[..self.group_len]).is_err());
        match (self.kind, state.leases[self.slot]) {
            (0 | 1, Some(l)) => (l, false),
            (3, _) => (ptr::null(), true),
            _ => {
                let reserved = self.worker.as_ref().is_some_and(|w| w.as_bytes() == b"__parked__");
                (&self.forged, group_bad || bad_string(&self.worker) || reserved)
            }
        }
    }
}

/// ack, nack or ack_and_claim (see LeaseArg). ack_and_claim keeps the lease it hands out in
/// the slot of the one it acked.
fn finish(input: &mut Input, state: &mut State, nack: bool, and_claim: bool, arg: ErrArg) {
    let sel = input.byte();
    let (t, max_attempts) = (state.handle(sel), state.max_attempts_of(sel));
    let la = LeaseArg::read(input);
    let delay = if nack { input.f64() } else { 0.0 };
    let next = and_claim.then(|| ClaimArgs::read(input));
    let (lease, forged_bad) = la.get(state);
    let slot = la.slot;
    let mut err = CallErr::new(arg, state);
    if let Some(c) = next {
        let mut out: *mut harel_lease = 0x1 as *mut _;
        let status = harel_transport_ack_and_claim(
            t,
            lease,
            ptr_of(&c.worker),
            c.visibility,
            c.min_priority,
            c.keys(),
            c.keys.len(),
            &mut out,
            err.ptr(),
        );
        let refused = check("ack_and_claim", status, err, state);
        if t.is_null() || forged_bad || c.bad() {
            expect_argument("ack_and_claim", status);
        }
        take_lease("ack_and_claim", status, out, refused, &c, state, slot, max_attempts);
        return;
    }
    let status =
        if nack { harel_transport_nack(t, lease, delay, err.ptr()) } else { harel_transport_ack(t, lease, err.ptr()) };
    let what = if nack { "nack" } else { "ack" };
    check(what, status, err, state);
    if t.is_null() || forged_bad || (nack && !(delay.is_finite() && delay >= 0.0)) {
        expect_argument(what, status);
    }
}

fn schema(input: &mut Input, state: &State, arg: ErrArg) {
    let upgrade = input.bool();
    let prefix = input.optional_cstring();
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut c_char = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut *mut c_char } else { ptr::null_mut() };
    let mut err = CallErr::new(arg, state);
    let status = if upgrade {
        harel_schema_upgrade_sql(ptr_of(&prefix), out_ptr, err.ptr())
    } else {
        harel_schema_sql(ptr_of(&prefix), out_ptr, err.ptr())
    };
    let refused = check("schema_sql", status, err, state);
    let valid_prefix = prefix.as_ref().and_then(|p| p.to_str().ok()).is_some_and(|p| {
        let mut c = p.chars();
        matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
            && p.len() <= 30
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if !use_out || !valid_prefix {
        expect_argument("schema_sql", status);
    } else if !refused {
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
        assert!(out.is_null() || (refused && out as usize == 0x1), "schema_sql: {status:?} but *out is set");
    }
}

// ---- when a message keeps failing (issue #14): dead letters, the operator's calls, looks ----

/// A count out-parameter: NULL one time in eight, else a value the call must overwrite on
/// HAREL_OK.
const COUNT_SENTINEL: u64 = 0xdead_beef_dead_beef;

fn dead_letter(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let la = LeaseArg::read(input);
    let reason = input.optional_cstring();
    let (lease, lease_bad) = la.get(state);
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_dead_letter(t, lease, ptr_of(&reason), err.ptr());
    check("dead_letter", status, err, state);
    if t.is_null() || lease_bad || bad_string(&reason) {
        expect_argument("dead_letter", status);
    }
}

/// redrive or purge_dead: a selection of any shape, exactly one of all / group_id / seqs or
/// not; seqs small (this input's queue has small seqs) or any.
fn dead_selection(input: &mut Input, state: &mut State, arg: ErrArg, purge: bool) {
    let t = state.handle(input.byte());
    let all = input.bool();
    let group = if input.byte() % 2 == 0 { None } else { input.optional_cstring() };
    let n = input.byte() as usize % 6;
    let seqs: Vec<i64> = (0..n).map(|_| if input.bool() { input.u64() as i64 } else { (input.byte() % 16) as i64 }).collect();
    let null_array = n > 0 && input.byte() % 16 == 0;
    let use_out = input.byte() % 8 != 0;
    let mut count = COUNT_SENTINEL;
    let out = if use_out { &mut count as *mut u64 } else { ptr::null_mut() };
    let array = if null_array { ptr::null() } else { seqs.as_ptr() };
    let mut err = CallErr::new(arg, state);
    let (what, status) = if purge {
        ("purge_dead", harel_transport_purge_dead(t, all, ptr_of(&group), array, n, out, err.ptr()))
    } else {
        ("redrive", harel_transport_redrive(t, all, ptr_of(&group), array, n, out, err.ptr()))
    };
    let refused = check(what, status, err, state);
    let chosen = usize::from(all) + usize::from(group.is_some()) + usize::from(n > 0);
    if t.is_null() || chosen != 1 || null_array || (group.is_some() && bad_string(&group)) {
        expect_argument(what, status);
    }
    if status == harel_status::HAREL_OK && use_out {
        assert_ne!(count, COUNT_SENTINEL, "{what}: HAREL_OK but *out was not set");
        if n > 0 {
            assert!(count <= n as u64, "{what}: {count} dead letters of {n} seqs");
        }
    } else if refused {
        assert_eq!(count, COUNT_SENTINEL, "{what}: refused, but *out was written");
    }
}

/// purge_group, purge and release.
fn purge_or_release(input: &mut Input, state: &mut State, arg: ErrArg, which: u8) {
    let t = state.handle(input.byte());
    let group = input.optional_cstring();
    let use_out = input.byte() % 8 != 0;
    let mut count = COUNT_SENTINEL;
    let out = if use_out { &mut count as *mut u64 } else { ptr::null_mut() };
    let mut released = input.bool();
    let released_out = if use_out { &mut released as *mut bool } else { ptr::null_mut() };
    let mut err = CallErr::new(arg, state);
    let (what, status, group_taken) = match which {
        0 => ("purge_group", harel_transport_purge_group(t, ptr_of(&group), out, err.ptr()), true),
        1 => ("purge", harel_transport_purge(t, out, err.ptr()), false),
        _ => ("release", harel_transport_release(t, ptr_of(&group), released_out, err.ptr()), true),
    };
    check(what, status, err, state);
    if t.is_null() || (group_taken && bad_string(&group)) {
        expect_argument(what, status);
    }
    if status == harel_status::HAREL_OK && use_out && which != 2 {
        assert_ne!(count, COUNT_SENTINEL, "{what}: HAREL_OK but *out was not set");
    }
}

/// A listing's cursor argument: NULL, a cursor some listing handed out (this one's or
/// another's), or fuzzed text; and the kind of the one handed out (0 groups, 1 peek,
/// 2 dead_letters), whose cursors no other listing takes.
fn cursor_arg(input: &mut Input, state: &State) -> (Option<CString>, Option<usize>) {
    let sel = input.byte();
    match sel % 4 {
        0 | 1 => (None, None),
        2 => {
            let kind = (sel as usize / 4) % 3;
            match &state.cursors[kind] {
                Some(c) => (Some(c.clone()), Some(kind)),
                None => (None, None),
            }
        }
        _ => (input.optional_cstring(), None),
    }
}

/// A page's limit: an edge, a small number, or any.
fn limit_arg(input: &mut Input) -> usize {
    const LIMITS: [usize; 8] = [0, 1, 2, 3, 10, 10_000, 10_001, usize::MAX];
    let sel = input.byte();
    if sel < 224 {
        LIMITS[sel as usize % LIMITS.len()]
    } else {
        input.u64() as usize
    }
}

/// What the ABI says of a listing's arguments: true when they are bad.
fn bad_page_args(cursor: &Option<CString>, saved: Option<usize>, kind: usize, limit: usize) -> bool {
    let foreign = saved.is_some_and(|k| k != kind);
    let not_utf8 = cursor.as_ref().is_some_and(|c| c.to_str().is_err());
    !(1..=10_000).contains(&limit) || foreign || not_utf8
}

/// A string the library handed out inside a page: not NULL, UTF-8 (this fuzzer's strings
/// are C strings, so hold no NUL), NUL-terminated at `len` when a length is given.
fn page_string(what: &str, field: &str, p: *const c_char, len: Option<usize>) -> String {
    assert!(!p.is_null(), "{what}: {field} is NULL");
    // SAFETY: non-NULL, a C string the page owns.
    let s = unsafe { CStr::from_ptr(p) };
    if let Some(len) = len {
        assert_eq!(s.to_bytes().len(), len, "{what}: {field}'s length is not its string's");
    }
    s.to_str().unwrap_or_else(|_| panic!("{what}: {field} is not UTF-8")).to_owned()
}

/// A page's next_cursor: NULL, or a UTF-8 string kept for later calls.
fn keep_cursor(what: &str, next: *const c_char, kind: usize, state: &mut State) {
    if !next.is_null() {
        page_string(what, "next_cursor", next, None);
        // SAFETY: checked non-NULL.
        state.cursors[kind] = Some(unsafe { CStr::from_ptr(next) }.to_owned());
    }
}

fn out_after(what: &str, status: harel_status, out: *mut c_void) {
    if status == harel_status::HAREL_OK {
        assert!(!out.is_null(), "{what}: HAREL_OK but *out is NULL");
    } else {
        assert!(out.is_null(), "{what}: {status:?} but *out is set (*out is NULL on every error)");
    }
}

fn stats(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_stats = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    metrics(t, use_out, arg, state);
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_stats(t, out_ptr, err.ptr());
    check("stats", status, err, state);
    if t.is_null() || !use_out {
        expect_argument("stats", status);
    }
    if !use_out {
        return;
    }
    out_after("stats", status, out.cast());
    if status != harel_status::HAREL_OK {
        return;
    }
    // SAFETY: the library's stats, until freed below.
    let s = unsafe { &*out };
    assert_eq!(s.ready + s.leased + s.parked + s.delayed, s.groups, "stats: the states do not add up to the groups");
    assert!(s.messages >= s.groups, "stats: {} groups but {} messages (a group has at least one)", s.groups, s.messages);
    assert!(s.oldest_ready_age == -1.0 || s.oldest_ready_age >= 0.0, "stats: oldest_ready_age {}", s.oldest_ready_age);
    assert!(s.n_priorities <= 5, "stats: {} priority levels", s.n_priorities);
    let levels = if s.n_priorities == 0 {
        &[][..]
    } else {
        // SAFETY: n_priorities entries, per the header.
        unsafe { std::slice::from_raw_parts(s.by_priority, s.n_priorities) }
    };
    let mut groups = 0;
    for (i, p) in levels.iter().enumerate() {
        assert!((0..=4).contains(&p.priority), "stats: priority level {}", p.priority);
        assert!(i == 0 || levels[i - 1].priority < p.priority, "stats: the levels are not lowest first");
        // A level's delayed groups are in its `groups` only (harel_priority_stats has no field for them).
        assert!(p.groups > 0 && p.ready + p.leased + p.parked <= p.groups, "stats: level {} does not add up", p.priority);
        groups += p.groups;
    }
    assert_eq!(groups, s.groups, "stats: the levels do not add up to the groups");
    harel_stats_free(out);
}

/// harel_transport_metrics on the handle of stats, with its choice of out-pointer (no input
/// byte of its own, so the corpus keeps its meaning): the bounds are the header's and every
/// histogram is cumulative, within its count.
fn metrics(t: *mut harel_transport, use_out: bool, arg: ErrArg, state: &State) {
    let mut out: *mut harel_metrics = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_metrics(t, out_ptr, err.ptr());
    check("metrics", status, err, state);
    if t.is_null() || !use_out {
        expect_argument("metrics", status);
        return;
    }
    out_after("metrics", status, out.cast());
    if status != harel_status::HAREL_OK {
        return;
    }
    // SAFETY: the library's metrics, until freed below.
    let m = unsafe { &*out };
    assert_eq!(m.bounds, LATENCY_BOUNDS, "metrics: the bounds are not the header's");
    let histograms =
        [&m.publish, &m.claim, &m.claim_wait, &m.ack, &m.ack_and_claim, &m.nack, &m.extend, &m.dead_letter];
    for (i, h) in histograms.into_iter().enumerate() {
        let cumulative = h.buckets.windows(2).all(|w| w[0] <= w[1]) && h.buckets[LATENCY_BUCKETS - 1] <= h.count;
        assert!(cumulative && h.sum >= 0.0, "metrics: histogram {i}: {:?} of {}, sum {}", h.buckets, h.count, h.sum);
    }
    harel_metrics_free(out);
}

fn groups(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let filter = match input.byte() % 8 {
        0..=1 => -1,
        k @ 2..=4 => i32::from(k) - 2,
        5 => 3,
        6 => -2,
        _ => input.i32(),
    };
    let (cursor, saved) = cursor_arg(input, state);
    let limit = limit_arg(input);
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_group_page = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_groups(t, filter, ptr_of(&cursor), limit, out_ptr, err.ptr());
    check("groups", status, err, state);
    if t.is_null() || !use_out || !(-1..=3).contains(&filter) || bad_page_args(&cursor, saved, 0, limit) {
        expect_argument("groups", status);
    }
    if !use_out {
        return;
    }
    out_after("groups", status, out.cast());
    if status != harel_status::HAREL_OK {
        return;
    }
    // SAFETY: the library's page, until freed below.
    let page = unsafe { &*out };
    assert!(page.n_groups <= limit, "groups: {} groups in a page of {limit}", page.n_groups);
    let items = if page.n_groups == 0 {
        &[][..]
    } else {
        // SAFETY: n_groups entries, per the header.
        unsafe { std::slice::from_raw_parts(page.groups, page.n_groups) }
    };
    let mut last: Option<String> = None;
    for g in items {
        let id = page_string("groups", "group_id", g.group_id, Some(g.group_id_len));
        assert!(!id.is_empty(), "groups: an empty group id");
        assert!(last.as_ref().is_none_or(|l| l.as_bytes() < id.as_bytes()), "groups: not in group id order");
        let state_value = g.state as i32;
        assert!((0..=2).contains(&state_value), "groups: state {state_value}");
        assert!(filter == -1 || filter == state_value, "groups: a group of state {state_value} listed for {filter}");
        assert!(g.depth >= 1 && g.head_attempts >= 0 && (0..=4).contains(&g.priority), "groups: depth, attempts, priority");
        assert_eq!(g.holder.is_null(), g.state != harel_group_state::HAREL_GROUP_LEASED, "groups: a holder iff leased");
        if !g.holder.is_null() {
            page_string("groups", "holder", g.holder, None);
        }
        assert_eq!(g.lock_expiry == -1.0, g.state == harel_group_state::HAREL_GROUP_READY, "groups: a lock end iff not ready");
        if !g.routing_key.is_null() {
            page_string("groups", "routing_key", g.routing_key, None);
        }
        last = Some(id);
    }
    keep_cursor("groups", page.next_cursor, 0, state);
    harel_group_page_free(out);
}

fn peek(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let group = input.optional_cstring();
    let (cursor, saved) = cursor_arg(input, state);
    let limit = limit_arg(input);
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_message_page = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_peek(t, ptr_of(&group), ptr_of(&cursor), limit, out_ptr, err.ptr());
    check("peek", status, err, state);
    if t.is_null() || !use_out || bad_string(&group) || bad_page_args(&cursor, saved, 1, limit) {
        expect_argument("peek", status);
    }
    if !use_out {
        return;
    }
    out_after("peek", status, out.cast());
    if status != harel_status::HAREL_OK {
        return;
    }
    // SAFETY: the library's page, until freed below.
    let page = unsafe { &*out };
    assert!(page.n_messages <= limit, "peek: {} messages in a page of {limit}", page.n_messages);
    let items = if page.n_messages == 0 {
        &[][..]
    } else {
        // SAFETY: n_messages entries, per the header.
        unsafe { std::slice::from_raw_parts(page.messages, page.n_messages) }
    };
    for (i, m) in items.iter().enumerate() {
        assert!(i == 0 || items[i - 1].seq < m.seq, "peek: not oldest first");
        page_string("peek", "event", m.event, Some(m.event_len));
        assert!(m.attempts >= 0, "peek: attempts {}", m.attempts);
        assert_eq!(m.locked_by.is_null(), m.lock_expiry == -1.0, "peek: a lock end iff locked");
        if !m.locked_by.is_null() {
            page_string("peek", "locked_by", m.locked_by, None);
        }
    }
    keep_cursor("peek", page.next_cursor, 1, state);
    harel_message_page_free(out);
}

fn dead_letters(input: &mut Input, state: &mut State, arg: ErrArg) {
    let t = state.handle(input.byte());
    let group = if input.byte() % 2 == 0 { None } else { input.optional_cstring() };
    let (cursor, saved) = cursor_arg(input, state);
    let limit = limit_arg(input);
    let use_out = input.byte() % 16 != 0;
    let mut out: *mut harel_dead_page = 0x1 as *mut _;
    let out_ptr = if use_out { &mut out as *mut _ } else { ptr::null_mut() };
    let mut err = CallErr::new(arg, state);
    let status = harel_transport_dead_letters(t, ptr_of(&group), ptr_of(&cursor), limit, out_ptr, err.ptr());
    check("dead_letters", status, err, state);
    let bad_group = group.is_some() && bad_string(&group);
    if t.is_null() || !use_out || bad_group || bad_page_args(&cursor, saved, 2, limit) {
        expect_argument("dead_letters", status);
    }
    if !use_out {
        return;
    }
    out_after("dead_letters", status, out.cast());
    if status != harel_status::HAREL_OK {
        return;
    }
    // SAFETY: the library's page, until freed below.
    let page = unsafe { &*out };
    assert!(page.n_letters <= limit, "dead_letters: {} letters in a page of {limit}", page.n_letters);
    let items = if page.n_letters == 0 {
        &[][..]
    } else {
        // SAFETY: n_letters entries, per the header.
        unsafe { std::slice::from_raw_parts(page.letters, page.n_letters) }
    };
    let wanted = group.as_ref().map(|g| g.to_str().unwrap_or_default().to_owned());
    for (i, d) in items.iter().enumerate() {
        assert!(i == 0 || items[i - 1].seq < d.seq, "dead_letters: not in queue order");
        let id = page_string("dead_letters", "group_id", d.group_id, Some(d.group_id_len));
        assert!(wanted.as_ref().is_none_or(|w| *w == id), "dead_letters: another group's letter");
        page_string("dead_letters", "event", d.event, Some(d.event_len));
        assert!(!page_string("dead_letters", "reason", d.reason, None).is_empty(), "dead_letters: an empty reason");
        assert!(d.attempts >= 0, "dead_letters: attempts {}", d.attempts);
        if !d.last_worker.is_null() {
            page_string("dead_letters", "last_worker", d.last_worker, None);
        }
    }
    keep_cursor("dead_letters", page.next_cursor, 2, state);
    harel_dead_page_free(out);
}

/// Op 19: the calls of issue #14, and (3 in 16) the checks of the functions that cannot
/// fail with the status names, version, NULL errors and frees, and set_synchronous_full.
fn more(input: &mut Input, state: &mut State, arg: ErrArg) {
    let sel = input.byte();
    match sel % 16 {
        0..=2 => {
            let mut err = CallErr::new(arg, state);
            let name = harel_status_name(input.i32());
            assert!(!name.is_null());
            assert!(message(name).starts_with("HAREL_"));
            assert!(!harel_version().is_null());
            // the error's functions and the frees accept NULL
            assert_eq!(harel_error_status(ptr::null()), harel_status::HAREL_OK);
            assert!(harel_error_message(ptr::null()).is_null());
            harel_error_free(ptr::null_mut());
            harel_stats_free(ptr::null_mut());
            harel_metrics_free(ptr::null_mut());
            harel_group_page_free(ptr::null_mut());
            harel_message_page_free(ptr::null_mut());
            harel_dead_page_free(ptr::null_mut());
            let o = state.option_ptr(input.byte());
            let status = harel_options_set_synchronous_full(o, input.bool(), err.ptr());
            check("set_synchronous_full", status, err, state);
        }
        3 => {
            let slot = input.byte();
            let o = state.option_ptr(slot);
            let n = match input.byte() % 4 {
                0 => 0,
                1 | 2 => u32::from(input.byte() % 4) + 1,
                _ => input.u64() as u32,
            };
            let mut err = CallErr::new(arg, state);
            let status = harel_options_set_max_attempts(o, n, err.ptr());
            check("set_max_attempts", status, err, state);
            if o.is_null() {
                expect_argument("set_max_attempts", status);
            } else if status == harel_status::HAREL_OK {
                state.max_attempts[slot as usize % 2] = n;
            }
        }
        4 | 5 => dead_letter(input, state, arg),
        6 => dead_selection(input, state, arg, false),
        7 => dead_selection(input, state, arg, true),
        8 => purge_or_release(input, state, arg, 0),
        9 => purge_or_release(input, state, arg, 1),
        10 => purge_or_release(input, state, arg, 2),
        11 => stats(input, state, arg),
        12 | 13 => groups(input, state, arg),
        14 => peek(input, state, arg),
        15 if sel / 16 >= 8 => producers::producers(input, state, arg),
        _ => dead_letters(input, state, arg),
    }
}

fn step(input: &mut Input, state: &mut State) {
    let op_byte = input.byte();
    let (op, arg) = (op_byte % 20, ErrArg::of(op_byte));
    let mut err = CallErr::new(arg, state);
    match op {
        0 => {
            let slot = input.byte() as usize % 2;
            let o = harel_options_new();
            assert!(!o.is_null(), "harel_options_new returned NULL");
            if let Some(old) = state.options[slot].replace(o) {
                harel_options_free(old);
            }
            state.sync_url[slot] = false;
            state.max_attempts[slot] = 0;
        }
        1 => {
            let slot = input.byte() as usize % 2;
            harel_options_free(state.options[slot].take().unwrap_or(ptr::null_mut()));
        }
        2 => {
            let o = state.option_ptr(input.byte());
            let p = input.optional_cstring();
            let status = harel_options_set_prefix(o, ptr_of(&p), err.ptr());
            check("set_prefix", status, err, state);
            if o.is_null() || bad_string(&p) {
                expect_argument("set_prefix", status);
            }
        }
        3 => {
            let o = state.option_ptr(input.byte());
            let status = harel_options_set_create_schema(o, input.bool(), err.ptr());
            check("set_create_schema", status, err, state);
        }
        4 => {
            let sel = input.byte();
            let o = state.option_ptr(sel);
            let url = input.optional_cstring();
            let status = harel_options_set_sync_url(o, ptr_of(&url), err.ptr());
            check("set_sync_url", status, err, state);
            if status == harel_status::HAREL_OK {
                state.sync_url[sel as usize % 2] = url.is_some();
            }
        }
        5 => {
            let o = state.option_ptr(input.byte());
            let token = input.optional_cstring();
            let status = harel_options_set_auth_token(o, ptr_of(&token), err.ptr());
            check("set_auth_token", status, err, state);
        }
        6 => {
            let o = state.option_ptr(input.byte());
            let s = input.f64();
            let status = harel_options_set_sync_interval(o, s, err.ptr());
            check("set_sync_interval", status, err, state);
            if o.is_null() || !(s.is_finite() && s > 0.0) {
                expect_argument("set_sync_interval", status);
            }
        }
        7 => {
            let o = state.option_ptr(input.byte());
            let s = input.f64();
            let status = harel_options_set_busy_timeout(o, s, err.ptr());
            check("set_busy_timeout", status, err, state);
            if o.is_null() || !(s.is_finite() && s >= 0.0) {
                expect_argument("set_busy_timeout", status);
            }
        }
        8 => {
            let o = state.option_ptr(input.byte());
            let system = input.byte() % 4 == 0;
            let clock: Option<unsafe extern "C" fn(*mut c_void) -> f64> = if system { None } else { Some(fuzz_clock) };
            let ctx = &CLOCK as *const AtomicU64 as *mut c_void;
            let status = harel_options_set_clock(o, clock, ctx, err.ptr());
            check("set_clock", status, err, state);
        }
        9 => CLOCK.store(input.f64().to_bits(), Ordering::Relaxed),
        10 => open(input, state, arg),
        11 => {
            let sel = input.byte();
            let slot = sel as usize % 2;
            let t = if sel % 4 == 3 { ptr::null_mut() } else { state.handles[slot].take().unwrap_or(ptr::null_mut()) };
            harel_transport_close(t); // void: closing cannot fail, NULL included
        }
        12 => publish(input, state, arg),
        13 => publish_many(input, state, arg),
        14 | 15 => claim(input, state, arg),
        16 => {
            let sel = input.byte();
            let nack = sel % 2 == 1;
            let and_claim = !nack && (sel / 2) % 4 == 3; // one ack in four
            finish(input, state, nack, and_claim, arg)
        }
        17 => {
            let slot = input.byte() as usize % 4;
            harel_lease_free(state.leases[slot].take().unwrap_or(ptr::null_mut()));
        }
        18 => schema(input, state, arg),
        _ => more(input, state, arg),
    }
}

fuzz_target!(|data: &[u8]| {
    empty_scratch();
    CLOCK.store(1000.0f64.to_bits(), Ordering::Relaxed);
    let mut input = Input { data, pos: 0 };
    let mut state = State::default();
    // The stale error of ErrArg::Stale: an earlier call's, left unfreed until the end.
    let mut stale = ptr::null_mut();
    let status = harel_options_set_prefix(ptr::null_mut(), c"p".as_ptr(), &mut stale);
    assert_eq!(status, harel_status::HAREL_ERR_ARGUMENT, "set_prefix(NULL, ...)");
    assert!(!stale.is_null(), "set_prefix(NULL, ...) handed out no error");
    state.stale_text = message(harel_error_message(stale));
    state.stale = Some(stale);
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
