#![allow(dead_code)] // each test file uses its own part of these helpers

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harel_transport::{Options, Transport};

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
