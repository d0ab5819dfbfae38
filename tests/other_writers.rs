//! What other programs do to a queue file, from another process or from inside ours:
//! rows written by another program with NUL bytes in their group id and event are handed
//! out whole and can be acked; and another copy of SQLite in a process that has the
//! library loaded is refused at open, or caught when it deletes the WAL (other_sqlite.rs).
//! The other program is python3 with its own sqlite3 module.

use harel_transport_testkit as common;

use std::path::Path;
use std::process::Command;

use common::{temp_db, TestClock};
use harel_transport::{Error, Transport};

/// Runs python3 with `script` and `args`; its stdout.
fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3").arg("-c").arg(script).args(args).output().expect("python3 runs");
    assert!(out.status.success(), "python3 failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn nul_bytes_written_by_another_program_are_handed_out_whole_and_acked() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let t = Transport::open(&path, &clock.options()).unwrap();
    t.publish("after", "{}", 0, None).unwrap();
    // Before 0.2 the lease held "a" and "{\"k\":1}": its ack missed the row, and the
    // group stayed stuck behind a message that could never be acked.
    python(
        "import sqlite3, sys\n\
         c = sqlite3.connect(sys.argv[1])\n\
         c.execute('INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)', ('a\\0b', '{\"k\":1}\\0tail'))\n\
         c.execute('INSERT OR IGNORE INTO harel_transport_groups (group_id) VALUES (?)', ('a\\0b',))\n\
         c.commit()\n",
        &[&path],
    );
    let first = t.claim("w", 30.0, 0, &[]).unwrap().expect("the first group's message");
    let second = t.claim("w", 30.0, 0, &[]).unwrap().expect("the second group's message");
    let nul = if first.group_id == "after" { &second } else { &first };
    assert_eq!((nul.group_id.as_str(), nul.event.as_str()), ("a\0b", "{\"k\":1}\0tail"));
    t.ack(&first).unwrap();
    t.ack(&second).unwrap();
    assert!(t.claim("w", 30.0, 0, &[]).unwrap().is_none(), "both acked: the queue is empty");
    let left = python(
        "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
         print(c.execute('SELECT count(*) FROM harel_transport_messages').fetchone()[0], \
         c.execute('SELECT count(*) FROM harel_transport_groups').fetchone()[0])\n",
        &[&path],
    );
    assert_eq!(left.trim(), "0 0");
}

/// The library as a process that also loads another SQLite sees it: python3 loads the
/// shared library with ctypes and opens the file with its sqlite3 module too. Prints the
/// status and message of the call under test.
const BOTH_IN_ONE_PROCESS: &str = r#"
import ctypes, sqlite3, sys
from ctypes import byref, c_char_p, c_int, c_void_p
lib = ctypes.CDLL(sys.argv[1])
lib.harel_transport_open.argtypes = [c_char_p, c_void_p, ctypes.POINTER(c_void_p), c_void_p]
lib.harel_transport_publish.argtypes = [c_void_p, c_char_p, c_char_p, c_int, c_char_p, c_void_p]
lib.harel_last_error.restype = c_char_p
path, order = sys.argv[2], sys.argv[3]
def read_with_sqlite3():
    c = sqlite3.connect(path)
    c.execute("SELECT count(*) FROM harel_transport_messages").fetchone()
    return c
t = c_void_p()
if order == "sqlite3-first":
    other = read_with_sqlite3()
    s = lib.harel_transport_open(path.encode(), None, byref(t), None)
else:
    assert lib.harel_transport_open(path.encode(), None, byref(t), None) == 0
    assert lib.harel_transport_publish(t, b"g", b"{}", 0, None, None) == 0
    read_with_sqlite3().close()
    s = lib.harel_transport_publish(t, b"g", b"{}", 0, None, None)
print(s, (lib.harel_last_error() or b"").decode())
"#;

/// python3 running `script` (with sqlite3 and sys imported) on `path`, then holding what
/// it took for 3 s; returned once the script has run.
fn python_holding(script: &str, path: &str) -> std::process::Child {
    let program = format!("import sqlite3, sys, time\n{script}print('ready', flush=True)\ntime.sleep(3)\n");
    let mut child = Command::new("python3")
        .args(["-c", &program, path])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().expect("piped")), &mut line)
        .expect("a line from python3");
    assert_eq!(line.trim(), "ready", "python3 took its locks");
    child
}

fn library() -> String {
    let so = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libharel_transport.so");
    assert!(so.exists(), "{} is missing: `make lib` builds it (make test-rust does)", so.display());
    so.to_str().expect("utf-8 path").to_owned()
}

/// A queue file with its schema, closed again.
fn queue_file() -> (tempfile::TempDir, String) {
    let (dir, path) = temp_db();
    Transport::open(&path, &TestClock::at(1000.0).options()).unwrap().close();
    (dir, path)
}

#[test]
fn open_refuses_a_file_another_sqlite_of_this_process_has_open() {
    let _limit = common::time_limit();
    let (_dir, path) = queue_file();
    let said = python(BOTH_IN_ONE_PROCESS, &[&library(), &path, "sqlite3-first"]);
    assert!(said.starts_with("-2 "), "DATABASE expected: {said}");
    assert!(said.contains("another SQLite library in this process has this file open"), "{said}");
}

#[test]
fn a_write_after_another_sqlite_of_this_process_deleted_the_wal_fails() {
    let _limit = common::time_limit();
    let (_dir, path) = queue_file();
    let said = python(BOTH_IN_ONE_PROCESS, &[&library(), &path, "ours-first"]);
    assert!(said.starts_with("-2 "), "DATABASE expected: {said}");
    assert!(said.contains("was deleted or replaced while this connection was writing to it"), "{said}");
    assert!(said.contains("nothing was written"), "{said}");
}

#[test]
fn files_opened_by_other_processes_and_by_several_of_our_transports_are_fine() {
    let _limit = common::time_limit();
    let (_dir, path) = queue_file();
    let clock = TestClock::at(1000.0);
    // Another process holding the file open (a read transaction's locks) is no hazard.
    let mut reader = python_holding(
        "c = sqlite3.connect(sys.argv[1])\nc.execute('BEGIN')\n\
         c.execute('SELECT count(*) FROM harel_transport_messages').fetchone()\n",
        &path,
    );
    let a = Transport::open(&path, &clock.options()).unwrap();
    let b = Transport::open(&path, &clock.options()).unwrap();
    a.publish("g", "{}", 0, None).unwrap();
    let lease = b.claim("w", 30.0, 0, &[]).unwrap().expect("b sees a's message");
    b.ack(&lease).unwrap();
    drop(a);
    b.publish("g", "{}", 0, None).map_err(|e: Error| e.to_string()).expect("closing one of ours deletes no WAL");
    reader.wait().unwrap();
}

#[test]
fn opening_a_second_transport_keeps_the_first_ones_locks() {
    let _limit = common::time_limit();
    // Through the C ABI, open checks the file's locks with descriptors of its own; closing
    // one drops all of this process's POSIX locks on the file. An open whose check closed
    // one let another process's SQLite, closing, believe it was the last user and delete
    // the WAL the first transport writes to.
    use ::harel_transport::ffi::{
        harel_status, harel_transport, harel_transport_close, harel_transport_open, harel_transport_publish,
    };
    let (_dir, path) = queue_file();
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let open = || {
        let mut t: *mut harel_transport = std::ptr::null_mut();
        let status = harel_transport_open(c(&path).as_ptr(), std::ptr::null(), &mut t, std::ptr::null_mut());
        assert_eq!(status, harel_status::HAREL_OK);
        t
    };
    let publish = |t| harel_transport_publish(t, c("g").as_ptr(), c("{}").as_ptr(), 0, std::ptr::null(), std::ptr::null_mut());
    let (first, second) = (open(), open());
    assert_eq!(publish(first), harel_status::HAREL_OK);
    python(
        "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
         c.execute('INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)', ('py', '{}'))\n\
         c.execute('INSERT OR IGNORE INTO harel_transport_groups (group_id) VALUES (?)', ('py',))\n\
         c.commit()\nc.close()\n",
        &[&path],
    );
    assert_eq!(publish(first), harel_status::HAREL_OK, "the WAL is still the one the first transport writes to");
    assert_eq!(publish(second), harel_status::HAREL_OK);
    harel_transport_close(second);
    harel_transport_close(first);
    // Once ours are closed, the check's descriptors are too: nothing of ours holds the file.
    let reopened = open();
    harel_transport_close(reopened);
}

#[test]
fn a_look_inside_does_not_wait_for_the_write_lock() {
    let _limit = common::time_limit();
    let (_dir, path) = queue_file();
    let clock = TestClock::at(1000.0);
    let mut o = clock.options();
    o.busy_timeout(0.0).unwrap();
    let t = Transport::open(&path, &o).unwrap();
    t.publish("g", "{}", 0, None).unwrap();
    let mut holder = python_holding(
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\n\
         c.execute(\"INSERT INTO harel_transport_messages (group_id, event) VALUES ('x', '{}')\")\n",
        &path,
    );
    assert!(matches!(t.publish("g", "{}", 0, None), Err(Error::Busy(_))), "the write lock is held");
    let started = std::time::Instant::now();
    assert_eq!(t.stats().unwrap().messages, 1, "the committed state, at once");
    assert_eq!(t.groups(None, None, 10).unwrap().items.len(), 1);
    assert_eq!(t.peek("g", None, 10).unwrap().items.len(), 1);
    assert!(t.dead_letters(None, None, 10).unwrap().items.is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "no wait: {:?}", started.elapsed());
    holder.wait().unwrap();
}

#[test]
fn groups_page_on_past_a_group_id_that_is_not_utf8() {
    let _limit = common::time_limit();
    // Shown with U+FFFD, such an id once made a cursor of the replaced text, which sorts
    // before the stored bytes: every page after it was the same page.
    let (_dir, path) = queue_file();
    python(
        "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
         for g in (\"'a'\", \"CAST(x'ff' AS TEXT)\", \"CAST(x'fefe' AS TEXT)\"):\n\
         \x20   c.execute(f'INSERT INTO harel_transport_messages (group_id, event) VALUES ({g}, \\'{{}}\\')')\n\
         \x20   c.execute(f'INSERT INTO harel_transport_groups (group_id) VALUES ({g})')\n\
         c.commit()\n",
        &[&path],
    );
    let t = Transport::open(&path, &TestClock::at(1000.0).options()).unwrap();
    let (mut seen, mut cursor) = (Vec::new(), None::<String>);
    for _ in 0..10 {
        let page = t.groups(None, cursor.as_deref(), 1).unwrap();
        seen.extend(page.items.into_iter().map(|g| g.group_id));
        cursor = page.next;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, ["a", "\u{fffd}\u{fffd}", "\u{fffd}"], "every group once, in byte order, and an end");
}
