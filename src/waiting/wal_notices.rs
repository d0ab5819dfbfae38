//! Another process's commit to a local file, for watches (watch.rs): one non-blocking
//! inotify descriptor per queue in this process, on its WAL, sitting in every watch's
//! epoll set. No thread reads it: the rearm that finds it readable drains it and rings
//! the queue's signal, so every watch of the queue hears what one of them drained.
//! (Waiting claims hear the same through wal_events.rs, whose thread blocks on its read.)

use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::bell::drain;

pub struct WalNotices {
    fd: OwnedFd,
}

impl WalNotices {
    /// Watches `wal` for writes; an error when the system refuses (no inotify, its limit
    /// reached, no WAL file).
    pub fn open(wal: &Path) -> io::Result<WalNotices> {
        let path = std::ffi::CString::new(wal.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the WAL's path"))?;
        // SAFETY: plain system call.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor, ours alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a valid descriptor and C string.
        if unsafe { libc::inotify_add_watch(std::os::fd::AsRawFd::as_raw_fd(&fd), path.as_ptr(), libc::IN_MODIFY) } < 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(WalNotices { fd })
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
