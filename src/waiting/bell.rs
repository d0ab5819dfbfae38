//! A watch's bell (watch.rs): an eventfd that this process's commits ring (wake.rs) and
//! that the watch's transport rings for good when it closes. Ringing a bell already rung
//! costs one atomic swap, so a burst of commits writes the descriptor once.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Bell {
    fd: OwnedFd,
    rung: AtomicBool,
    /// Its transport is closed: the bell stays rung.
    closed: AtomicBool,
}

impl Bell {
    pub fn new() -> io::Result<Bell> {
        // SAFETY: plain system call.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor, ours alone.
        Ok(Bell {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            rung: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        })
    }

    pub fn ring(&self) {
        if !self.rung.swap(true, Ordering::SeqCst) {
            self.write();
        }
    }

    /// Rings for good: `clear` no longer silences it.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.rung.store(true, Ordering::SeqCst);
        self.write();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Silences the bell (unless closed). A ring that comes while it clears is kept: the
    /// descriptor is written again, so it is never left unreadable with a ring pending.
    pub fn clear(&self) {
        if self.is_closed() {
            return;
        }
        self.rung.store(false, Ordering::SeqCst);
        drain(self.fd.as_fd());
        if self.rung.load(Ordering::SeqCst) {
            self.write();
        }
    }

    fn write(&self) {
        let one = 1u64;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd. It cannot block
        // (non-blocking) and fails only once the counter nears 2^64, still readable.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

impl AsFd for Bell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Reads a non-blocking eventfd, timerfd or inotify descriptor until it has nothing more;
/// whether it had anything.
pub fn drain(fd: BorrowedFd<'_>) -> bool {
    #[repr(C, align(8))]
    struct Buffer([u8; 4096]);
    let mut buffer = Buffer([0; 4096]);
    let mut had = false;
    loop {
        // SAFETY: reading into our own buffer of that size.
        let n = unsafe { libc::read(fd.as_raw_fd(), buffer.0.as_mut_ptr().cast(), buffer.0.len()) };
        if n > 0 {
            had = true;
            continue;
        }
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return had;
    }
}
