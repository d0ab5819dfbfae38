//! A watch's bell (watch.rs): an eventfd that this process's commits ring (wake.rs) and
//! that the watch's transport rings for good when it closes. Ringing a bell already rung
//! costs one atomic swap, so a burst of commits writes the descriptor once.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::descriptors::{add_one, drain, eventfd};

pub struct Bell {
    fd: OwnedFd,
    rung: AtomicBool,
    /// Its transport is closed: the bell stays rung.
    closed: AtomicBool,
}

impl Bell {
    pub fn new() -> io::Result<Bell> {
        Ok(Bell { fd: eventfd()?, rung: AtomicBool::new(false), closed: AtomicBool::new(false) })
    }

    pub fn ring(&self) {
        if !self.rung.swap(true, Ordering::SeqCst) {
            add_one(self.fd.as_fd());
        }
    }

    /// Rings for good: `clear` no longer silences it.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.rung.store(true, Ordering::SeqCst);
        add_one(self.fd.as_fd());
    }

    /// Silences the bell (unless closed). A ring that comes while it clears is kept: the
    /// descriptor is written again, so it is never left unreadable with a ring pending.
    pub fn clear(&self) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        self.rung.store(false, Ordering::SeqCst);
        drain(self.fd.as_fd());
        if self.rung.load(Ordering::SeqCst) {
            add_one(self.fd.as_fd());
        }
    }
}

impl AsFd for Bell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
