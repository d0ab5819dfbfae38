//! Another process's commit to a local file, for watches (watch.rs): one non-blocking
//! inotify descriptor per queue in this process, on its WAL, sitting in every watch's
//! epoll set. No thread reads it: the rearm that finds it readable drains it and rings
//! the queue's signal, so every watch of the queue hears what one of them drained.
//! (Waiting claims hear the same through wal_events.rs, whose thread blocks on its read.)

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use super::descriptors::{drain, inotify_on};

pub struct WalNotices {
    fd: OwnedFd,
}

impl WalNotices {
    /// Watches `wal` for writes; an error when the system refuses (no inotify, its limit
    /// reached, no WAL file).
    pub fn open(wal: &Path) -> io::Result<WalNotices> {
        Ok(WalNotices { fd: inotify_on(wal)? })
    }

    /// Reads what was noticed; whether anything was.
    pub fn drain(&self) -> bool {
        drain(self.fd.as_fd())
    }
}

impl AsFd for WalNotices {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
