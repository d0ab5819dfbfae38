//! A watch: a descriptor an event loop polls to learn that a claim may find work, so that
//! nothing waits in a thread (docs/abi.md, "Watching for work"). It is an epoll set of
//! three descriptors, each readable on one kind of news:
//!
//! - its bell (bell.rs): a commit in this process on the queue (the queue's signal rings
//!   it, wake.rs), or its transport closing (rung for good);
//! - the queue's WAL notices (wal_notices.rs): another process's commit to a local file;
//! - its timer (a timerfd): a lease's or park's end, a last look, a server's poll.
//!
//! The poller calls `rearm` (async_transport.rs), which clears all three and looks: if a
//! claim would find work it rings the bell again (the descriptor stays readable until a
//! look finds nothing, so a burst of claims is followed by a look that arms the timer for
//! the leases it took); else it arms the timer as a waiting claim schedules its pauses
//! (waiter.rs). A new watch starts rung. Idle, with nothing leased or parked, nothing fires.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::bell::Bell;
use super::descriptors::{drain, epoll_of, set_timer, timerfd};
use super::waiter::{Readiness, HEARD_POLL, SERVER_FIRST_POLL, SETTLE_LOOKS, SETTLE_STEP_MAX, UNHEARD_POLL};
use super::wake::Signal;
use super::wal_notices::WalNotices;
use super::Polling;
use crate::error::{Error, Result};

pub struct Watch {
    /// The transport that made it: the only one that may rearm it.
    owner: u64,
    min_priority: i32,
    routing_keys: Vec<String>,
    epoll: OwnedFd,
    bell: Arc<Bell>,
    timer: OwnedFd,
    /// A local file's, when the system grants an inotify watch.
    notices: Option<Arc<WalNotices>>,
    /// Whether other processes' commits reach this watch only by polling.
    unheard: bool,
    schedule: Mutex<Schedule>,
}

struct Schedule {
    server_poll: Duration,
    /// `data_version` at the last look that was not settling, and how many settling looks
    /// followed: a WAL write is heard before its commit is visible (see waiter.rs).
    data_version: Option<i64>,
    settling: u32,
    /// The settling looks follow a write heard while this process committed too.
    settling_own: bool,
    /// The signal's count of this process's commits at the last clear.
    commits: u64,
}

/// What a watch heard of the WAL since its last clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    Nothing,
    /// Written, and this process committed nothing meanwhile: another process's commit.
    Others,
    /// Written while this process committed too: its own writes, most likely.
    Mixed,
}

/// Settling looks after a write heard while this process committed: 4 of them, 8, 32,
/// 128 and 512 ms after (one commit of another process hidden among its own is still seen
/// within about 0.7 s, a poll's cost).
const SETTLE_LOOKS_OWN: u32 = 4;
const SETTLE_STEP_OWN: Duration = Duration::from_millis(8);

impl Watch {
    /// A watch for transport `owner` on the queue of `signal`, for a claim with this filter
    /// (checked by the caller).
    pub fn new(owner: u64, signal: &Signal, min_priority: i32, routing_keys: &[&str]) -> Result<Watch> {
        let failed = |what: &str, e: io::Error| Error::Database(format!("{what} failed: {e}"));
        let bell = Arc::new(Bell::new().map_err(|e| failed("eventfd", e))?);
        let timer = timerfd().map_err(|e| failed("timerfd_create", e))?;
        let notices = signal.wal_notices();
        let unheard = signal.watches_a_file() && notices.is_none();
        let mut members = vec![bell.as_fd(), timer.as_fd()];
        members.extend(notices.as_ref().map(|n| n.as_fd()));
        let epoll = epoll_of(&members).map_err(|e| failed("epoll", e))?;
        bell.ring();
        signal.add_bell(&bell);
        Ok(Watch {
            owner,
            min_priority,
            routing_keys: routing_keys.iter().map(|&k| k.to_owned()).collect(),
            epoll,
            bell,
            timer,
            notices,
            unheard,
            schedule: Mutex::new(Schedule {
                server_poll: SERVER_FIRST_POLL,
                data_version: None,
                settling: 0,
                settling_own: false,
                commits: signal.commits(),
            }),
        })
    }

    pub fn min_priority(&self) -> i32 {
        self.min_priority
    }

    pub fn routing_keys(&self) -> Vec<&str> {
        self.routing_keys.iter().map(String::as_str).collect()
    }

    /// For its transport to ring for good when it closes.
    pub(crate) fn bell(&self) -> &Arc<Bell> {
        &self.bell
    }

    /// `Error::Argument` unless transport `id` made it.
    pub(crate) fn check_owner(&self, id: u64) -> Result<()> {
        if self.owner != id {
            return Err(Error::Argument("the watch was made by another transport; rearm it with that one".into()));
        }
        Ok(())
    }

    /// Before a look: clears the descriptor. News from the WAL goes to the whole queue
    /// (`signal`), since the watches share its notices and this one drains them. What was
    /// heard of the WAL since the last clear.
    pub(crate) fn clear(&self, signal: &Signal) -> Heard {
        let written = self.notices.as_ref().is_some_and(|n| n.drain());
        if written {
            signal.relay();
        }
        self.bell.clear();
        drain(self.timer.as_fd());
        let commits = signal.commits();
        let ours = std::mem::replace(&mut self.schedule.lock().unwrap_or_else(|e| e.into_inner()).commits, commits);
        match (written, ours != commits) {
            (false, _) => Heard::Nothing,
            (true, false) => Heard::Others,
            (true, true) => Heard::Mixed,
        }
    }

    /// After a look that saw `seen` at clock time `now`: true, with the bell rung, when a
    /// claim would find work; else false, with the timer armed for the next reason to look.
    pub(crate) fn after_look(&self, seen: &Readiness, now: f64, polling: Polling, heard: Heard) -> bool {
        let mut schedule = self.schedule.lock().unwrap_or_else(|e| e.into_inner());
        if seen.deliverable {
            schedule.server_poll = SERVER_FIRST_POLL;
            schedule.settling = 0;
            schedule.data_version = seen.data_version;
            self.bell.ring();
            return true;
        }
        let mut next = match polling {
            Polling::Server => {
                let poll = schedule.server_poll;
                schedule.server_poll = (poll * 2).min(HEARD_POLL);
                Some(poll)
            }
            Polling::Local if self.unheard => Some(UNHEARD_POLL),
            // What nothing announces (the end of a lease that harel's transports took) is
            // looked for once a second, while such turns exist.
            Polling::Local => seen.undated_turns.then_some(HEARD_POLL),
        };
        if let Some(at) = seen.next_ready_at {
            let until = Duration::try_from_secs_f64((at - now).max(0.0)).unwrap_or(Duration::MAX);
            next = Some(next.map_or(until, |d| d.min(until)));
        }
        if heard != Heard::Nothing {
            // Each write heard starts its own settling looks, soon after it: many and close
            // for another process's commit, a few far apart when this process committed
            // too (the write was most likely its own, visible already).
            schedule.settling = 0;
            schedule.settling_own = heard == Heard::Mixed;
        }
        let looks = if schedule.settling_own { SETTLE_LOOKS_OWN } else { SETTLE_LOOKS };
        let settle = (heard != Heard::Nothing || schedule.settling > 0)
            && schedule.data_version == seen.data_version
            && schedule.settling < looks;
        if settle {
            let step = match schedule.settling_own {
                true => SETTLE_STEP_OWN * 4u32.pow(schedule.settling),
                false => Duration::from_millis(1 << schedule.settling.min(16)).min(SETTLE_STEP_MAX),
            };
            next = Some(next.map_or(step, |d| d.min(step)));
            schedule.settling += 1;
        } else {
            schedule.settling = 0;
            schedule.data_version = seen.data_version;
        }
        self.arm(next);
        false
    }

    /// After a look that failed: the descriptor becomes readable again in a second, so a
    /// caller that polls on retries.
    pub(crate) fn after_error(&self) {
        self.arm(Some(HEARD_POLL));
    }

    fn arm(&self, after: Option<Duration>) {
        set_timer(self.timer.as_fd(), after);
    }
}

impl AsFd for Watch {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

impl AsRawFd for Watch {
    /// The descriptor to poll for readability (the epoll set); it lives as long as the watch.
    fn as_raw_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("fd", &self.as_raw_fd())
            .field("min_priority", &self.min_priority)
            .field("routing_keys", &self.routing_keys)
            .finish_non_exhaustive()
    }
}
