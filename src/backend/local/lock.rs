//! Taking a local file's write lock, shared fairly among our processes and with programs
//! that wait for it in SQLite's own busy handler (harel's Python transports, the sqlite3
//! shell, any other SQLite program). [`LocalLock::begin`] returns a guard held for the
//! transaction: dropping it, whatever ended the transaction, frees our processes' slot.
//!
//! Ours retry `BEGIN IMMEDIATE` every 20 µs..1 ms (see `lock_wait`); such a program
//! tries once after each of its sleeps, which grow to 100 ms, so while ours keep the lock
//! busy it finds the lock taken at nearly every try and fails with "database is locked"
//! once its busy timeout is over. To give it its share:
//!
//! - our processes hold the write lock one at a time through an exclusive `flock` on a
//!   file beside the database (`<database>-harel`), the *slot*, taken before `BEGIN
//!   IMMEDIATE` and freed at the transaction's end. So when the holder of the slot hears
//!   "busy", the lock is held by another program, for certain;
//! - it then writes the time into that file, and for [`MEMORY`] after that no process of
//!   ours begins a transaction during the first [`QUIET`] of every [`PERIOD`] of the wall
//!   clock, which all processes on the machine share: the other program finds the lock
//!   free at about a fifth of its tries.
//!
//! Among ours, the slot goes to whoever polls first after it was freed, so a process in a
//! tight loop tends to keep it. A process of ours that has waited [`STARVING`] says so in
//! the file and tries every [`STARVING_POLL`], and whoever takes the slot instead steps
//! back for [`GIVE_WAY`]: the longest wait stays in the tens of ms.
//!
//! Without other programs and without starving waiters this costs two system calls per
//! transaction. When the file cannot be opened or locked (a read-only directory, a
//! filesystem without flock), ours wait on SQLite's lock alone.
//!
//! The engine is synchronous on local files (every libsql call runs on the calling
//! thread) and tokio's timer counts whole milliseconds, so the pauses are thread sleeps.

use std::fs::TryLockError;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use libsql::Connection;

use super::slot_file::SlotFile;
use super::statement_cache::StatementCache;
use crate::backend::lock_wait::LockWait;
use crate::error::{Error, Result};
use crate::metrics::Counter;

/// The wall-clock period whose first `QUIET` ours leave to other programs. Not a divisor
/// of SQLite's 100 ms and 50 ms sleeps, so a waiter's tries fall on every phase.
const PERIOD: Duration = Duration::from_millis(37);
const QUIET: Duration = Duration::from_millis(8);
/// How long ours keep the quiet parts after another program was last seen holding the lock.
const MEMORY: Duration = Duration::from_secs(3);
/// A process of ours that has waited this long for the slot asks the others to step back.
const STARVING: Duration = Duration::from_millis(20);
/// A starving process tries at least this often ...
const STARVING_POLL: Duration = Duration::from_micros(50);
/// ... so one that took the slot while another starves need leave it free only this long.
const GIVE_WAY: Duration = Duration::from_micros(150);
/// A starving stamp older than this is stale (its waiter rewrites it at every try).
const STARVING_FRESH: Duration = Duration::from_millis(5);

/// The file's stamps (slot_file.rs): the last time another program was seen holding the
/// lock, and the last time one of ours was starving (0: nobody).
const SEEN_AT: usize = 0;
const STARVING_AT: usize = 1;

pub struct LocalLock {
    /// The slot's file. None: no sharing (in memory, or the file could not be opened or
    /// locked).
    slot: Option<Arc<SlotFile>>,
    busy_timeout: Duration,
    /// Until when this process keeps the quiet parts (what it last read or saw).
    quiet_until: Option<Instant>,
    /// Since when this process has been waiting for the slot.
    waiting_since: Option<Instant>,
}

/// A write transaction's hold on our processes' slot; dropping it frees the slot.
pub struct Held {
    slot: Option<Arc<SlotFile>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(file) = &self.slot {
            file.unlock();
        }
    }
}

impl LocalLock {
    /// The lock of the database file at `path`, shared through `<path>-harel`.
    pub fn file(path: &str, busy_timeout: Duration) -> LocalLock {
        let slot = SlotFile::open(&format!("{path}-harel")).map(Arc::new);
        LocalLock { slot, busy_timeout, quiet_until: None, waiting_since: None }
    }

    /// An in-memory database, which no other connection can reach.
    pub fn memory(busy_timeout: Duration) -> LocalLock {
        LocalLock { slot: None, busy_timeout, quiet_until: None, waiting_since: None }
    }

    pub fn busy_timeout(&self) -> Duration {
        self.busy_timeout
    }

    /// Takes our processes' slot, then SQLite's write lock (`BEGIN IMMEDIATE` on `conn`),
    /// retrying both within the busy timeout. The guard holds the slot until the
    /// transaction is over. Each pause is counted in `busy_retries`.
    pub async fn begin(
        &mut self,
        conn: &Connection,
        statements: &mut StatementCache,
        busy_retries: &Counter,
    ) -> Result<Held> {
        let mut waiting = LockWait::local(self.busy_timeout, busy_retries);
        let held = loop {
            if let Some(held) = self.try_take_slot() {
                break held;
            }
            match waiting.next_pause() {
                Ok(pause) => std::thread::sleep(self.pause(pause)),
                Err(e) => {
                    self.waiting_since = None;
                    return Err(e);
                }
            }
        };
        loop {
            match statements.execute(conn, "BEGIN IMMEDIATE", ()).await.map_err(Error::from) {
                Err(Error::Busy(_)) => {
                    let pause = waiting.next_pause()?;
                    self.other_program_holds_lock();
                    std::thread::sleep(pause);
                }
                other => return other.map(|_| held),
            }
        }
    }

    /// Takes our processes' slot: None while another of ours has it, or after stepping
    /// back for one of ours that starves. Once taken, keeps the quiet parts if another
    /// program was lately seen.
    fn try_take_slot(&mut self) -> Option<Held> {
        let Some(file) = self.slot.clone() else {
            return Some(Held { slot: None });
        };
        let waited = self.waiting_since.get_or_insert_with(Instant::now).elapsed();
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                if waited >= STARVING {
                    file.write(STARVING_AT, wall_clock_nanos());
                }
                return None;
            }
            Err(TryLockError::Error(_)) => {
                // A filesystem without flock: no sharing rather than no queue.
                self.slot = None;
                return Some(Held { slot: None });
            }
        }
        let starving_at = file.read(STARVING_AT);
        if waited >= STARVING {
            // Ours now: the others may stop stepping back.
            file.write(STARVING_AT, 0);
        } else if starving_at > 0 && age(starving_at) < STARVING_FRESH {
            file.unlock();
            std::thread::sleep(GIVE_WAY);
            return None;
        }
        self.remember(file.read(SEEN_AT));
        self.waiting_since = None;
        self.wait_out_quiet_part();
        Some(Held { slot: Some(file) })
    }

    /// The pause before the next try for the slot: `pause`, or shorter while starving.
    fn pause(&self, pause: Duration) -> Duration {
        match self.waiting_since {
            Some(since) if since.elapsed() >= STARVING => pause.min(STARVING_POLL),
            _ => pause,
        }
    }

    /// While this process has the slot and hears "busy": another program holds the lock.
    /// Tells every process of ours, and waits out a quiet part before the next try.
    fn other_program_holds_lock(&mut self) {
        let Some(file) = &self.slot else { return };
        let now = wall_clock_nanos();
        file.write(SEEN_AT, now);
        self.remember(now);
        self.wait_out_quiet_part();
    }

    fn remember(&mut self, seen_at: u64) {
        self.quiet_until = MEMORY.checked_sub(age(seen_at)).map(|left| Instant::now() + left);
    }

    /// While another program was lately seen: sleeps through the quiet part of the
    /// period if now falls in it.
    fn wait_out_quiet_part(&self) {
        if self.quiet_until.is_none_or(|until| Instant::now() >= until) {
            return;
        }
        let phase = Duration::from_nanos(wall_clock_nanos() % PERIOD.as_nanos() as u64);
        if phase < QUIET {
            std::thread::sleep(QUIET - phase);
        }
    }
}

/// How long ago a stamp of the file was written.
fn age(stamp: u64) -> Duration {
    Duration::from_nanos(wall_clock_nanos().saturating_sub(stamp))
}

fn wall_clock_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
