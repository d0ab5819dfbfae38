//! Waiting for work without holding anything: how long a claim waits and what ends it
//! early (wait.rs), what wakes it (wake.rs; other processes' commits to a local file:
//! wal_events.rs), and the pauses between its looks (waiter.rs).

pub mod wait;
mod waiter;
pub mod wake;
mod wal_events;

pub use self::waiter::{Readiness, Waiter};

/// How a queue's backend lets a waiting claim learn of work, besides this process's own
/// commits: a local queue's look is cheap and other processes' commits to its file are
/// heard; a server is polled, and there its claim's own request is the cheaper first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polling {
    Local,
    Server,
}
