//! Helpers for the reliability tests (issue #7): child processes that are watched line by
//! line and killed with SIGKILL, a deterministic pseudo-random source for kill timings,
//! the file's integrity check, and finding harel's Python.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::Raw;

/// Nanoseconds since the epoch: one clock for every process on the machine.
pub fn nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

/// xorshift64*: kill timings and workloads that differ by iteration but repeat run to run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// 0..n
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A child process whose stdout is read line by line on a thread of its own, so a test can
/// wait for a line with a timeout and still have every line the child wrote when it is
/// killed. Killed (SIGKILL) when dropped while still running.
pub struct Watched {
    child: Child,
    rx: Receiver<String>,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<String>>,
    what: String,
}

impl Watched {
    pub fn spawn(mut command: Command, what: &str) -> Watched {
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                kept.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut text);
            text
        });
        Watched { child, rx, lines, reader: Some(reader), stderr: Some(stderr), what: what.to_owned() }
    }

    /// Waits for a line that starts with `prefix`; panics (with the child's stderr) if the
    /// child ends first or `timeout` passes.
    pub fn wait_for(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{}: no {prefix:?} line within {timeout:?}", self.what)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let (status, err) = self.finish();
                    panic!("{} ended ({status}) before a {prefix:?} line:\n{err}", self.what)
                }
            }
        }
    }

    /// SIGKILL, then every line the child wrote.
    pub fn kill(mut self) -> Vec<String> {
        let _ = self.child.kill(); // SIGKILL on Unix
        self.finish();
        self.lines.lock().unwrap().clone()
    }

    /// Waits for the child to end on its own; panics with its output if it failed.
    pub fn expect_success(mut self) -> Vec<String> {
        let (status, err) = self.finish();
        let lines = self.lines.lock().unwrap().clone();
        assert!(
            status.success(),
            "{} failed ({status}):\n--- stdout\n{}\n--- stderr\n{err}",
            self.what,
            lines.join("\n")
        );
        lines
    }

    fn finish(&mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().expect("wait for a child");
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let err = self.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
        (status, err)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Lines the child wrote as `TAG value`, the values parsed.
pub fn tagged<T: std::str::FromStr>(lines: &[String], tag: &str) -> Vec<T> {
    let prefix = format!("{tag} ");
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{tag} {v:?} does not parse")))
        .collect()
}

/// A worker's line on stdout: flushed at once (Rust's stdout is line-buffered), so a
/// SIGKILL right after it returns cannot lose it.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// `PRAGMA integrity_check` through a libsql connection of its own: "ok" or the problems.
pub fn integrity(path: &str) -> String {
    let raw = Raw::open(path);
    raw.rows("PRAGMA integrity_check").into_iter().map(|r| r.join(" ")).collect::<Vec<_>>().join("; ")
}

pub fn assert_integrity(path: &str, when: &str) {
    assert_eq!(integrity(path), "ok", "{when}: the file is not intact");
}

/// The Python to run harel with, or None (after saying why) when the test should skip: as
/// tests/interop.rs, HAREL_PYTHON (`make test-rust` sets it), required when CI is set.
pub fn harel_python(test: &str) -> Option<String> {
    match std::env::var("HAREL_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => panic!(
            "HAREL_PYTHON is not set, and CI is: {test} must run harel's Python workers. \
             `make test-rust` builds .venv (harel 0.9.0, libsql) and sets HAREL_PYTHON=.venv/bin/python"
        ),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "{test}: the Python part skipped: HAREL_PYTHON is not set (`make venv`, then HAREL_PYTHON=.venv/bin/python)"
            );
            None
        }
    }
}
