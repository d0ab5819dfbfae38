//! The issue-25 queue, made and used by harel 0.9's own SqliteTransport in child processes
//! (queue.py): 30 messages in g0..g9; g0 leased to w1, g1 to w2, g2 parked, each for 600 s.
//! Used by tests/cli.rs and tests/serve.rs.

use std::process::Command;

/// The file in its directory (removed when the directory is dropped); None when
/// HAREL_PYTHON is not set (the test then says it skipped).
pub fn make(test: &str) -> Option<(tempfile::TempDir, String)> {
    let python = harel_transport_testkit::procs::harel_python(test)?;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("harel.db").to_str().expect("utf-8 path").to_owned();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harel_queue/queue.py");
    for step in ["publish", "claim"] {
        let out = Command::new(&python).args([script, step, &path]).output().expect("run HAREL_PYTHON");
        assert!(out.status.success(), "queue.py {step}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Some((dir, path))
}
