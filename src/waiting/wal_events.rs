//! Another process's commit to a local file, heard without touching the database: every
//! commit writes its frames to the WAL, and inotify reports the write. One inotify
//! descriptor and one thread per process (started by the first watch), reading events and
//! notifying the signal of the watched WAL. The event comes with the write, before the
//! commit is visible (SQLite syncs, then publishes the new frames in the -shm): the waiter
//! looks again briefly until `PRAGMA data_version` shows the change (see waiter.rs).
//! Elsewhere than Linux nothing is heard, and waiting claims poll.

use std::path::Path;
use std::sync::Weak;

use tokio::sync::Notify;

/// Starts watching `wal` for writes, notifying `signal` (the waiting claims of its queue); the watch's id, or None when the
/// system refuses (no inotify, its limit reached, no WAL file).
pub fn watch(wal: &Path, signal: Weak<Notify>) -> Option<i32> {
    imp::watch(wal, signal)
}

pub fn unwatch(id: i32) {
    imp::unwatch(id)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::sync::{Mutex, OnceLock, Weak};

    use tokio::sync::Notify;

    struct Events {
        fd: i32,
        signals: Mutex<HashMap<i32, Weak<Notify>>>,
    }

    fn events() -> Option<&'static Events> {
        static EVENTS: OnceLock<Option<Events>> = OnceLock::new();
        EVENTS.get_or_init(start).as_ref()
    }

    fn start() -> Option<Events> {
        // SAFETY: plain system call.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let spawned = std::thread::Builder::new().name("harel-wal-events".into()).spawn(move || read_events(fd));
        if spawned.is_err() {
            // SAFETY: our descriptor, used by nothing else.
            unsafe { libc::close(fd) };
            return None;
        }
        Some(Events { fd, signals: Mutex::new(HashMap::new()) })
    }

    /// The thread: lives as long as the process, blocked in `read` while nothing is written.
    fn read_events(fd: i32) {
        #[repr(C, align(8))]
        struct Buffer([u8; 4096]);
        let mut buffer = Buffer([0; 4096]);
        let header = std::mem::size_of::<libc::inotify_event>();
        loop {
            // SAFETY: reading into our own buffer of that size.
            let n = unsafe { libc::read(fd, buffer.0.as_mut_ptr().cast(), buffer.0.len()) };
            if n <= 0 {
                if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            let Some(events) = events() else { return };
            let mut at = 0;
            while at + header <= n as usize {
                // SAFETY: the kernel wrote whole events; read_unaligned needs no alignment.
                let event: libc::inotify_event = unsafe { std::ptr::read_unaligned(buffer.0.as_ptr().add(at).cast()) };
                at += header + event.len as usize;
                let signal = events.signals.lock().unwrap_or_else(|e| e.into_inner()).get(&event.wd).cloned();
                if let Some(signal) = signal.and_then(|s| s.upgrade()) {
                    signal.notify_waiters();
                }
            }
        }
    }

    pub fn watch(wal: &Path, signal: Weak<Notify>) -> Option<i32> {
        let events = events()?;
        let path = CString::new(wal.as_os_str().as_bytes()).ok()?;
        // SAFETY: a valid descriptor and C string.
        let id = unsafe { libc::inotify_add_watch(events.fd, path.as_ptr(), libc::IN_MODIFY) };
        if id < 0 {
            return None;
        }
        events.signals.lock().unwrap_or_else(|e| e.into_inner()).insert(id, signal);
        Some(id)
    }

    pub fn unwatch(id: i32) {
        let Some(events) = events() else { return };
        events.signals.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        // SAFETY: a watch of our descriptor; a watch already gone (its file deleted) fails harmlessly.
        unsafe { libc::inotify_rm_watch(events.fd, id) };
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;
    use std::sync::Weak;

    use tokio::sync::Notify;

    pub fn watch(_wal: &Path, _signal: Weak<Notify>) -> Option<i32> {
        None
    }

    pub fn unwatch(_id: i32) {}
}
