//! Waiting for work without holding anything: how long a claim waits and what ends it
//! early (wait.rs), what wakes it (wake.rs; other processes' commits to a local file:
//! wal_events.rs), and the pauses between its looks (waiter.rs); and, for event loops,
//! watching for work without waiting at all (watch.rs: a descriptor to poll, rung by its
//! bell.rs and by the WAL's notices, wal_notices.rs; the kernel's objects: descriptors.rs).

mod bell;
mod descriptors;
pub mod wait;
mod waiter;
pub mod wake;
mod wal_events;
mod wal_notices;
mod watch;

pub use self::bell::Bell;
pub(crate) use self::descriptors::{epoll_of, is_readable};
pub use self::waiter::{Readiness, Waiter};
pub use self::watch::Watch;

/// How a queue's backend lets a waiting claim learn of work, besides this process's own
/// commits: a local queue's look is cheap and other processes' commits to its file are
/// heard; a server is polled, and there its claim's own request is the cheaper first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polling {
    Local,
    Server,
}
