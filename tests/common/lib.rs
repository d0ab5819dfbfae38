//! What the integration tests share (tests/*.rs take it as `use harel_transport_testkit
//! as common;`): a hand-moved clock, temp files, a raw libsql view of a file, running this
//! test binary again as a child process; and, by module, the contract checks, the drain
//! ledger, hostile strings, the reliability tests' process helpers, a real sqld server
//! and a request-counting proxy in front of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harel_transport::{Options, Transport};

pub mod contract;
mod contract_archive;
mod contract_expiry;
mod contract_limits;
mod contract_retry;
mod contract_pause;
mod contract_rules;
pub mod drain;
pub mod hostile;
pub mod http_proxy;
pub mod poll;
pub mod procs;
pub mod sqld;

/// A clock the test moves by hand: epoch seconds stored as f64 bits.
#[derive(Clone)]
pub struct TestClock(Arc<AtomicU64>);

impl TestClock {
    pub fn at(t: f64) -> TestClock {
        TestClock(Arc::new(AtomicU64::new(t.to_bits())))
    }
    pub fn now(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
    pub fn advance(&self, seconds: f64) {
        self.0.store((self.now() + seconds).to_bits(), Ordering::SeqCst);
    }
    pub fn options(&self) -> Options {
        let mut o = Options::new();
        let c = self.clone();
        o.clock(move || c.now());
        o
    }
}

pub fn memory(clock: &TestClock) -> Transport {
    Transport::open(":memory:", &clock.options()).expect("open :memory:")
}

pub fn event(n: usize) -> String {
    format!(r#"{{"kind":"tick","id":"e{n}","data":{{"n":{n}}}}}"#)
}

pub fn temp_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("queue.db").to_str().expect("utf-8 path").to_owned();
    (dir, path)
}

/// A transport on a local file, with the test's clock.
pub fn file(path: &str, clock: &TestClock) -> Transport {
    Transport::open(path, &clock.options()).expect("open a local file")
}

/// The schema harel 0.9's Python transports create (docs/queue.md, before `routing_key`):
/// the two tables and harel's two indexes, under `prefix`.
pub fn harel_09_schema(prefix: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {p}_transport_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, \
           group_id TEXT NOT NULL, event TEXT NOT NULL, locked_by TEXT, lock_expiry REAL);\n\
         CREATE TABLE IF NOT EXISTS {p}_transport_groups (group_id TEXT PRIMARY KEY, \
           last_claimed_at REAL NOT NULL DEFAULT 0.0, priority INT NOT NULL DEFAULT 0);\n\
         CREATE INDEX IF NOT EXISTS {p}_transport_groups_by_last_claimed ON {p}_transport_groups (last_claimed_at);\n\
         CREATE INDEX IF NOT EXISTS {p}_transport_messages_by_group ON {p}_transport_messages (group_id, seq);\n",
        p = prefix
    )
}

/// A database file seen through a libsql connection of its own, not the transport's:
/// raw SQL to shape a file before a transport opens it, and to look at what it holds.
pub struct Raw {
    conn: libsql::Connection,
    _db: libsql::Database,
    rt: tokio::runtime::Runtime,
}

impl Raw {
    pub fn open(path: &str) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let db = rt.block_on(libsql::Builder::new_local(path).build()).expect("raw open");
        let conn = db.connect().expect("raw connect");
        conn.busy_timeout(std::time::Duration::from_secs(30)).expect("busy_timeout");
        Raw { conn, _db: db, rt }
    }

    pub fn try_batch(&self, sql: &str) -> libsql::Result<()> {
        self.rt.block_on(self.conn.execute_batch(sql)).map(drop)
    }

    pub fn batch(&self, sql: &str) {
        self.try_batch(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Every row of `sql`, each value as text (NULL as "NULL").
    pub fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        self.rt.block_on(async {
            let mut rows = self.conn.query(sql, ()).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            let mut out = Vec::new();
            while let Some(row) = rows.next().await.expect("next row") {
                let values = (0..row.column_count())
                    .map(|i| match row.get_value(i).expect("value") {
                        libsql::Value::Null => "NULL".to_owned(),
                        libsql::Value::Integer(n) => n.to_string(),
                        libsql::Value::Real(r) => r.to_string(),
                        libsql::Value::Text(s) => s,
                        libsql::Value::Blob(b) => format!("{b:?}"),
                    })
                    .collect();
                out.push(values);
            }
            out
        })
    }

    /// The first column of the first row of `sql`, as a number.
    pub fn count(&self, sql: &str) -> i64 {
        self.rows(sql)[0][0].parse().unwrap_or_else(|e| panic!("{sql}: not a number: {e}"))
    }

    /// Everything the queue holds under `prefix`: every message and group row, in order.
    pub fn snapshot(&self, prefix: &str) -> Vec<Vec<String>> {
        let mut all = self.rows(&format!(
            "SELECT 'message', seq, group_id, event, locked_by, lock_expiry FROM {prefix}_transport_messages ORDER BY seq"
        ));
        all.extend(self.rows(&format!(
            "SELECT 'group', rowid, group_id, last_claimed_at, priority, routing_key FROM {prefix}_transport_groups ORDER BY rowid"
        )));
        all
    }

    /// The names of the columns of `table`.
    pub fn columns(&self, table: &str) -> Vec<String> {
        self.rows(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid"))
            .into_iter()
            .map(|r| r[0].clone())
            .collect()
    }

    /// `(type, name)` of every table and index in the file, sorted.
    pub fn objects(&self) -> Vec<(String, String)> {
        self.rows("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect()
    }
}

/// Runs one test function of this same test binary in a new process: how a test gets
/// several OS processes on one file. The function is an `#[ignore]`d test that does
/// nothing unless the environment the caller sets says what to do.
pub fn this_test_binary(test_name: &str) -> std::process::Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut command = std::process::Command::new(exe);
    command.args(["--exact", test_name, "--ignored", "--nocapture", "--test-threads=1"]);
    command
}

/// A child process that is killed if the test ends (or panics) while it still runs.
pub struct ChildGuard(pub std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// How long a test that starts processes or servers may run (the slowest file, all its tests
/// together, takes about 5 minutes on a loaded 2-core machine).
pub const TEST_LIMIT: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Holds the calling test to `TEST_LIMIT` until the guard drops: a hang then fails the
/// run within minutes, naming the test, instead of at CI's own timeout. A hung test cannot
/// be unwound from another thread and libtest would wait for it, so past the limit the
/// test binary kills its child processes (servers, other test processes) and exits.
/// The name is the test thread's: libtest names each test's thread after the test.
pub fn time_limit() -> TimeLimit {
    let name = std::thread::current().name().unwrap_or("a test").to_owned();
    let (done, ended) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(TEST_LIMIT) {
            // Written to the descriptor: eprintln! here is captured with the test's output,
            // which the exit loses.
            let limit = TEST_LIMIT.as_secs();
            let message = format!("\n{name}: still running after {limit} s: timed out (TEST_LIMIT, tests/common)\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), message.as_bytes());
            for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
                let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
                for pid in children.split_whitespace().filter_map(|pid| pid.parse().ok()) {
                    // SAFETY: a plain system call, on a child of this process.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            std::process::exit(124);
        }
    });
    TimeLimit(done)
}

/// See `time_limit`: dropping it (the test ended, or panicked) ends the watch.
pub struct TimeLimit(#[allow(dead_code)] std::sync::mpsc::Sender<()>);

/// Waits for a child and panics with its output if it failed.
pub fn expect_success(child: std::process::Child, what: &str) -> String {
    let out = child.wait_with_output().expect("wait for a child process");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
