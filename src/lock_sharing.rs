//! Sharing a local file's write lock with processes that wait for it in SQLite's own busy
//! handler (harel's Python transports, the sqlite3 shell, any other SQLite program).
//!
//! Ours retry `BEGIN IMMEDIATE` every 20 µs..1 ms (see `db::LockWait`); such a process
//! tries once after each of its sleeps, which grow to 100 ms, so while ours keep the lock
//! busy it finds the lock taken at nearly every try and fails with "database is locked"
//! once its busy timeout is over. To give it its turns:
//!
//! - every transaction of ours holds an exclusive `flock` on a file beside the database
//!   (`<database>-harel`) from `BEGIN` to its end, so a waiter of ours that is told "busy"
//!   can see whether the holder is one of ours (the flock is taken) or not (it is free);
//! - a waiter that sees another program hold the lock writes the time into that file;
//! - for [`MEMORY`] after that, no process of ours begins a transaction during the first
//!   [`QUIET`] of every [`PERIOD`] of the wall clock, which all processes on the machine
//!   share: the other program then finds the lock free at about a fifth of its tries.
//!
//! Without other programs this costs two `flock` calls per transaction, and nothing else.
//! When the file cannot be opened (a read-only directory), there is no sharing.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The wall-clock period whose first `QUIET` ours leave to other programs. Not a divisor
/// of SQLite's 100 ms and 50 ms sleeps, so a waiter's tries fall on every phase.
const PERIOD: Duration = Duration::from_millis(37);
const QUIET: Duration = Duration::from_millis(8);
/// How long ours keep the quiet parts after another program was last seen holding the lock.
const MEMORY: Duration = Duration::from_secs(3);

pub struct LockSharing {
    /// None: no sharing (not a local file, or the file could not be opened).
    file: Option<File>,
    /// Until when this process keeps the quiet parts (what it last learned).
    quiet_until: Option<Instant>,
    /// Busy answers in a row, during one wait, with nobody of ours holding the lock.
    unmarked: u32,
}

impl LockSharing {
    /// The sharing file of the database at `path`.
    pub fn open(path: &str) -> LockSharing {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(format!("{path}-harel"));
        LockSharing { file: file.ok(), quiet_until: None, unmarked: 0 }
    }

    /// For databases no other program can reach (in memory) or that ours reach through a
    /// server.
    pub fn off() -> LockSharing {
        LockSharing { file: None, quiet_until: None, unmarked: 0 }
    }

    /// Before `BEGIN IMMEDIATE`: waits out the quiet part of the period while another
    /// program has lately been seen holding the lock.
    pub fn wait_for_turn(&mut self) {
        if self.quiet_until.is_none_or(|until| Instant::now() >= until) {
            self.quiet_until = None;
            return;
        }
        let phase = Duration::from_nanos((wall_clock_nanos() % PERIOD.as_nanos()) as u64);
        if phase < QUIET {
            std::thread::sleep(QUIET - phase);
        }
    }

    /// After `BEGIN IMMEDIATE` succeeded: marks the lock as held by one of ours. A waiter
    /// of ours may hold the flock shared for a moment (see `busy`): then this waits for it.
    pub fn hold(&mut self) {
        self.unmarked = 0;
        if let Some(file) = &self.file {
            if file.try_lock().is_err() {
                let _ = file.lock();
            }
        }
    }

    /// At the end of the transaction, committed or rolled back.
    pub fn release(&self) {
        if let Some(file) = &self.file {
            let _ = file.unlock();
        }
    }

    /// After a busy answer: notes another program holding the lock for all processes of
    /// ours, or learns whether one of ours has lately seen one.
    pub fn busy(&mut self) {
        let Some(file) = &self.file else { return };
        let unmarked = file.try_lock_shared().is_ok();
        if unmarked {
            let _ = file.unlock();
        }
        self.unmarked = if unmarked { self.unmarked + 1 } else { 0 };
        // One of ours that has just begun and not yet marked the lock looks the same for a
        // few µs; another program holds it for a whole transaction, over two tries of ours.
        let seen_at = if self.unmarked >= 2 {
            let now = wall_clock_nanos() as u64;
            let _ = file.write_at(&now.to_le_bytes(), 0);
            now
        } else {
            let mut stamp = [0u8; 8];
            match file.read_at(&mut stamp, 0) {
                Ok(8) => u64::from_le_bytes(stamp),
                _ => return,
            }
        };
        let age = Duration::from_nanos((wall_clock_nanos() as u64).saturating_sub(seen_at));
        if let Some(left) = MEMORY.checked_sub(age) {
            self.quiet_until = Some(Instant::now() + left);
        }
    }
}

fn wall_clock_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}
