//! The pauses between tries for a lock that SQLite (or sqld) reported busy, up to the
//! busy timeout.
//!
//! SQLite's own busy handler sleeps ever longer between tries (up to 100 ms), so under
//! contention a process that once missed the lock keeps sleeping through the short gaps
//! between other processes' transactions and starves; short, jittered pauses give every
//! process its share. Each pause is counted in the transport's `busy_retries` (metrics.rs).

use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::metrics::Counter;

pub struct LockWait<'a> {
    wait: Duration,
    started: Instant,
    tries: u32,
    jitter: RandomState,
    first_pause: Duration,
    max_pause: Duration,
    retries: &'a Counter,
}

impl<'a> LockWait<'a> {
    /// A local file: 20 µs .. 1 ms between tries.
    pub fn local(wait: Duration, retries: &'a Counter) -> LockWait<'a> {
        LockWait::new(wait, Duration::from_micros(20), Duration::from_millis(1), retries)
    }

    /// A server, where each try is a round trip: 1 .. 8 ms (a busy answer is quick, and one
    /// request more costs less than a pause through the gaps between other writers).
    pub fn server(wait: Duration, retries: &'a Counter) -> LockWait<'a> {
        LockWait::new(wait, Duration::from_millis(1), Duration::from_millis(8), retries)
    }

    fn new(wait: Duration, first_pause: Duration, max_pause: Duration, retries: &'a Counter) -> LockWait<'a> {
        LockWait {
            wait,
            started: Instant::now(),
            tries: 0,
            jitter: RandomState::new(),
            first_pause,
            max_pause,
            retries,
        }
    }

    /// After a busy answer: how long to pause before the next try, or `Error::Busy` once
    /// `wait` is over.
    pub fn next_pause(&mut self) -> Result<Duration> {
        if self.started.elapsed() >= self.wait {
            return Err(Error::Busy(format!(
                "another connection held the database's lock for longer than the busy timeout ({} s)",
                self.wait.as_secs_f64()
            )));
        }
        self.tries += 1;
        self.retries.add(1);
        // Growing with the tries up to the cap, jittered between half and all of it so
        // waiters spread out.
        let cap = (self.first_pause * (1 << self.tries.min(6))).min(self.max_pause).as_micros() as u64;
        Ok(Duration::from_micros(cap / 2 + self.jitter.hash_one(self.tries) % (cap / 2 + 1)))
    }
}
