//! Another copy of SQLite in this process on the same queue file: the one hazard a caller
//! can create without noticing (docs/queue.md, "The one hazard").
//!
//! SQLite locks files with POSIX advisory locks, which belong to the process: two copies of
//! SQLite in one process (ours and Python's `sqlite3`, the `libsql` package, go-sqlite3, a
//! program's own) never see each other's locks. When the other copy closes the file it
//! takes its exclusive lock as if it were the last user, checkpoints, and deletes the WAL
//! our connection still writes to: commits are lost without an error. What is caught:
//!
//! - at open through the C ABI (whose SQLite no other code in the process can use), the
//!   other copy already has the file open: it holds a POSIX lock on the file
//!   or its `-shm` (a WAL reader keeps both). An open-file-description lock query
//!   (`F_OFD_GETLK`) sees POSIX locks of this process too, where a POSIX query does not;
//!   when no connection of ours has the file open or is opening it, a lock owned by this
//!   process is the other copy's. While one of ours has it open, the two cannot be told
//!   apart, and the check is skipped.
//! - later, the WAL was deleted or replaced under our connection: before each write
//!   transaction and after each commit, the WAL our connection writes to must still have a
//!   name (its link count, asked of a descriptor kept open on it: no path lookup, two cheap
//!   system calls per transaction). A write into a deleted WAL is refused, and a commit
//!   that went into one is reported, instead of returning OK for data that is gone.
//!
//! What cannot be caught: the other copy opening the file while one of ours has it open,
//! and a commit of ours between the other copy's delete and our next check (each later
//! call fails).
//!
//! The check itself must not break anybody's locks: closing any descriptor of a file drops
//! every POSIX lock this process holds on it, ours and the other copy's. So the
//! descriptors it opens stay open while any connection of ours has the file open, and close
//! with the last (when no lock of ours is left to drop).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::sync::{Mutex, PoisonError};

use super::file_identity::{self, Identity};
use crate::error::{Error, Result};

/// Per file: how many connections of ours have it open or are opening it, and the
/// descriptors the check keeps open (see above); gone with the last connection.
static OURS: Mutex<BTreeMap<Identity, Watched>> = Mutex::new(BTreeMap::new());

#[derive(Default)]
struct Watched {
    connections: usize,
    file: Option<File>,
    /// The `-shm` as it was when last checked, with its identity: SQLite deletes and makes
    /// it anew when the last connection of all processes closes.
    shm: Option<(Identity, File)>,
}

/// One connection's claim on a local queue file, from before it opens the file until it
/// is closed.
pub struct FileWatch {
    file: Option<Identity>,
    wal_path: String,
    /// The WAL our connection writes to, once it exists. SQLite takes no lock on the WAL
    /// itself, so this descriptor drops none when it closes.
    wal: Option<File>,
}

impl FileWatch {
    /// Before our connection opens `path`: counts ours in, and with `refuse`, refuses a file
    /// another SQLite library of this process has open. (Only the C ABI refuses: a Rust
    /// program's `libsql` crate is this library's own SQLite, and its locks are no hazard.)
    pub fn open(path: &str, refuse: bool) -> Result<FileWatch> {
        let wal_path = format!("{path}-wal");
        let mut ours = OURS.lock().unwrap_or_else(PoisonError::into_inner);
        // Its identity from its path, without a descriptor; one that does not exist yet is
        // made now (SQLite would make it anyway), and its descriptor kept. If neither
        // works, SQLite's open reports why.
        let (identity, made) = match file_identity::at(path) {
            Ok(identity) => (identity, None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let Ok(file) = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path) else {
                    return Ok(FileWatch { file: None, wal_path, wal: None });
                };
                (identity_of(&file)?, Some(file))
            }
            Err(_) => return Ok(FileWatch { file: None, wal_path, wal: None }),
        };
        let watched = ours.entry(identity).or_default();
        if refuse && watched.file.is_none() {
            watched.file = made.or_else(|| File::open(path).ok());
        }
        if refuse && watched.connections == 0 {
            if let Some(which) = watched.locked_by_this_process(path) {
                return Err(Error::Database(format!(
                    "open {path:?}: another SQLite library in this process has this file open (this \
                     process holds a lock on {which}, and no connection of harel-transport does): two \
                     copies of SQLite in one process do not see each other's locks, and when the other \
                     closes the file it deletes the WAL this one writes to, losing commits \
                     (sqlite.org/howtocorrupt.html, section 2.2.1). Open the file through one library \
                     only; inspect it from another process"
                )));
            }
        }
        watched.connections += 1;
        Ok(FileWatch { file: Some(identity), wal_path, wal: None })
    }

    /// Before a write transaction and after its commit: the WAL must be the one our
    /// connection opened. `committed`: the check follows a commit.
    pub fn check_wal(&mut self, committed: bool) -> Result<()> {
        match &self.wal {
            None => self.wal = File::open(&self.wal_path).ok(),
            // Deleted, or replaced (deleted, and another made under its name): no link left.
            Some(wal) if file_identity::linked(wal) => {}
            Some(_) => {
                let outcome = if committed {
                    "this commit went into the deleted file and is lost, as may be earlier ones"
                } else {
                    "nothing was written"
                };
                return Err(Error::Database(format!(
                    "{} was deleted or replaced while this connection was writing to it: another \
                     SQLite library in this process (Python's sqlite3, the libsql package, \
                     go-sqlite3, ...) opened and closed the queue file; {outcome}. Close this \
                     transport; open the file through one library only, and inspect it from \
                     another process",
                    self.wal_path
                )));
            }
        }
        Ok(())
    }
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        let Some(identity) = self.file else { return };
        let mut ours = OURS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watched) = ours.get_mut(&identity) {
            watched.connections -= 1;
            if watched.connections == 0 {
                // Our connections have gone (a Db drops its connection first): closing the
                // descriptors drops no lock of ours.
                ours.remove(&identity);
            }
        }
    }
}

fn identity_of(file: &File) -> Result<Identity> {
    file_identity::of(file).map_err(|e| Error::Database(format!("could not stat the queue file: {e}")))
}

impl Watched {
    /// Which of the file and its `-shm` carries a POSIX lock of this process, if any.
    fn locked_by_this_process(&mut self, path: &str) -> Option<String> {
        if self.file.as_ref().is_some_and(has_own_posix_lock) {
            return Some(path.to_owned());
        }
        let shm_path = format!("{path}-shm");
        let now = file_identity::at(&shm_path).ok()?;
        if self.shm.as_ref().is_none_or(|(identity, _)| *identity != now) {
            // An older -shm's descriptor may go: that file is gone, and no lock lives on it.
            self.shm = Some((now, File::open(&shm_path).ok()?));
        }
        let (_, shm) = self.shm.as_ref()?;
        has_own_posix_lock(shm).then_some(shm_path)
    }
}

#[cfg(target_os = "linux")]
fn has_own_posix_lock(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed flock is a valid value; fcntl only reads and writes it.
    let mut query: libc::flock = unsafe { std::mem::zeroed() };
    query.l_type = libc::F_WRLCK as libc::c_short;
    query.l_whence = libc::SEEK_SET as libc::c_short;
    // l_start 0, l_len 0: the whole file. l_pid must be 0 for an OFD query.
    // SAFETY: a valid descriptor and a pointer to a flock, as F_OFD_GETLK wants.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut query) };
    // A conflicting POSIX lock reports its owner's pid; an OFD lock reports -1.
    asked == 0 && query.l_type != libc::F_UNLCK as libc::c_short && query.l_pid == std::process::id() as libc::pid_t
}

#[cfg(not(target_os = "linux"))]
fn has_own_posix_lock(_file: &File) -> bool {
    false
}
