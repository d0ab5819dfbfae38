//! Polling a watch's descriptor as an event loop would.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Whether `fd` is readable within `within` (0: now); how long it took when it was.
pub fn readable_within(fd: &impl AsRawFd, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut entry = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        let left = within.saturating_sub(started.elapsed());
        // SAFETY: one live pollfd.
        let n = unsafe { libc::poll(&mut entry, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if n > 0 {
            return Some(started.elapsed());
        }
        if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
}

/// Polls `fd` until it is readable and `look` (a rearm) says there is work; how long it
/// took, or None when `within` passed first.
pub fn work_within(fd: &impl AsRawFd, within: Duration, mut look: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while let Some(left) = within.checked_sub(started.elapsed()) {
        readable_within(fd, left)?;
        if look() {
            return Some(started.elapsed());
        }
    }
    None
}
