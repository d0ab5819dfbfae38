//! The kernel's objects a watch is made of (watch.rs): an eventfd (its bell), an inotify
//! descriptor (the WAL's notices), a timerfd and the epoll set holding them. Linux only;
//! elsewhere each is refused, and so is a watch.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

pub use imp::{epoll_of, eventfd, inotify_on, set_timer, timerfd};

/// Reads a non-blocking descriptor until it has nothing more; whether it had anything.
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

/// Whether a descriptor is readable now (poll, no wait).
pub fn is_readable(fd: BorrowedFd<'_>) -> bool {
    let mut one = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one live pollfd, no wait.
    unsafe { libc::poll(&mut one, 1, 0) > 0 }
}

/// Adds 1 to an eventfd's counter. It cannot block (non-blocking) and fails only once the
/// counter nears 2^64, when it is readable anyway.
pub fn add_one(fd: BorrowedFd<'_>) {
    let one = 1u64;
    // SAFETY: writing 8 bytes from a live u64.
    unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::time::Duration;

    fn owned(fd: i32) -> io::Result<OwnedFd> {
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just made, ours alone.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    pub fn eventfd() -> io::Result<OwnedFd> {
        // SAFETY: plain system call.
        owned(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })
    }

    /// An inotify descriptor watching `path` for writes.
    pub fn inotify_on(path: &Path) -> io::Result<OwnedFd> {
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
        // SAFETY: plain system calls; a valid descriptor and C string.
        let fd = owned(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })?;
        if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), libc::IN_MODIFY) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(fd)
    }

    pub fn timerfd() -> io::Result<OwnedFd> {
        // SAFETY: plain system call.
        owned(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })
    }

    /// Arms `timer` to fire once after `after` (None: disarms it).
    pub fn set_timer(timer: BorrowedFd<'_>, after: Option<Duration>) {
        // A zero it_value disarms a timerfd: the soonest is 1 ns.
        let value =
            after.map(|d| d.max(Duration::from_nanos(1))).map_or(libc::timespec { tv_sec: 0, tv_nsec: 0 }, |d| {
                libc::timespec {
                    tv_sec: d.as_secs().min(i64::MAX as u64 / 2) as libc::time_t,
                    tv_nsec: d.subsec_nanos() as libc::c_long,
                }
            });
        let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
        // SAFETY: a timerfd and a live itimerspec; it cannot fail with these arguments.
        unsafe { libc::timerfd_settime(timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    }

    /// An epoll set, level-triggered, readable while any of `members` is.
    pub fn epoll_of(members: &[BorrowedFd<'_>]) -> io::Result<OwnedFd> {
        // SAFETY: plain system calls on live descriptors; each event is read during its call.
        let epoll = owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        for fd in members {
            let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd.as_raw_fd() as u64 };
            if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut event) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(epoll)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::path::Path;
    use std::time::Duration;

    fn refused() -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, "watches need Linux (epoll, eventfd, timerfd, inotify)")
    }

    pub fn eventfd() -> io::Result<OwnedFd> {
        Err(refused())
    }

    pub fn inotify_on(_path: &Path) -> io::Result<OwnedFd> {
        Err(refused())
    }

    pub fn timerfd() -> io::Result<OwnedFd> {
        Err(refused())
    }

    pub fn set_timer(_timer: BorrowedFd<'_>, _after: Option<Duration>) {}

    pub fn epoll_of(_members: &[BorrowedFd<'_>]) -> io::Result<OwnedFd> {
        Err(refused())
    }
}
