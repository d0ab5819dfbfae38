//! What wakes a waiting claim or a watch: one `Signal` per queue in this process, shared
//! by every transport on it. A transport notifies it after each commit that can make a
//! message deliverable (publish, ack, nack, release, redrive); it wakes the waiting claims
//! and rings the watches' bells (bell.rs). For a local file, while claims wait, the
//! commits of other processes notify it too (wal_events.rs: each commit writes to the
//! WAL); watches hear them through the queue's `WalNotices`. Nothing here takes a lock of
//! the database.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use super::bell::Bell;
use super::wal_events;
use super::wal_notices::WalNotices;

pub struct Signal {
    /// Shared with the WAL's watch (wal_events.rs), which notifies it from its thread.
    notify: Arc<Notify>,
    /// A local file's WAL, watched while claims wait.
    wal: Option<PathBuf>,
    watch: Mutex<Watch>,
    /// The bells of this queue's watches in this process.
    bells: Mutex<Vec<Weak<Bell>>>,
    /// Commits of this process notified: a watch that hears the WAL written tells its own
    /// process's writes (visible at once) from another's (visible after its sync).
    commits: AtomicU64,
    /// A local file's WAL notices, made by its first watch and kept while the signal lives:
    /// closing an inotify descriptor waits for the kernel (3-16 ms measured), which a
    /// program freeing its last watch should not pay.
    notices: Mutex<Option<Arc<WalNotices>>>,
}

#[derive(Default)]
struct Watch {
    waiting: usize,
    /// The WAL's watch, while `waiting` > 0; None if it could not be had.
    id: Option<i32>,
}

/// A queue no other transport can reach (a memory database): a signal of its own.
pub fn own() -> Arc<Signal> {
    Arc::new(Signal::new(None))
}

/// The signal of the queue known by `key` in this process (a local file by its device and
/// inode, whatever the path to it; a server by its URL, a replica by its primary's), made
/// by the first transport on it; `wal`, a local file's WAL, is watched while claims wait.
pub fn shared(key: String, wal: Option<PathBuf>) -> Arc<Signal> {
    static SIGNALS: Mutex<Option<HashMap<String, Weak<Signal>>>> = Mutex::new(None);
    let mut signals = SIGNALS.lock().unwrap_or_else(|e| e.into_inner());
    let signals = signals.get_or_insert_with(HashMap::new);
    signals.retain(|_, s| s.strong_count() > 0);
    if let Some(signal) = signals.get(&key).and_then(Weak::upgrade) {
        return signal;
    }
    let signal = Arc::new(Signal::new(wal));
    signals.insert(key, Arc::downgrade(&signal));
    signal
}

impl Signal {
    fn new(wal: Option<PathBuf>) -> Signal {
        Signal {
            notify: Arc::new(Notify::new()),
            wal,
            watch: Mutex::new(Watch::default()),
            bells: Mutex::new(Vec::new()),
            notices: Mutex::new(None),
            commits: AtomicU64::new(0),
        }
    }

    /// Whether other processes' commits can be heard at all: the queue is a local file.
    pub fn watches_a_file(&self) -> bool {
        self.wal.is_some()
    }

    /// After a commit of this process: wakes every claim waiting on this queue in this
    /// process and rings its watches.
    pub fn notify(&self) {
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.relay();
    }

    /// How many commits of this process were notified so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Passes on what one watch heard of another process's commit: wakes and rings as
    /// `notify` does, without counting a commit of this process.
    pub fn relay(&self) {
        self.notify.notify_waiters();
        let mut bells = self.bells.lock().unwrap_or_else(|e| e.into_inner());
        bells.retain(|bell| match bell.upgrade() {
            Some(bell) => {
                bell.ring();
                true
            }
            None => false,
        });
    }

    /// `bell` rings at each `notify` while it lives.
    pub fn add_bell(&self, bell: &Arc<Bell>) {
        self.bells.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::downgrade(bell));
    }

    /// For a watch of a local file: the queue's WAL notices (made by the first watch);
    /// None when the queue is no local file or the system refuses a watch.
    pub fn wal_notices(&self) -> Option<Arc<WalNotices>> {
        let wal = self.wal.as_ref()?;
        let mut notices = self.notices.lock().unwrap_or_else(|e| e.into_inner());
        if notices.is_none() {
            *notices = Some(Arc::new(WalNotices::open(wal).ok()?));
        }
        notices.clone()
    }

    /// A wake to wait for, armed at once: a notification after this call is not missed,
    /// even if it comes before the future is awaited.
    pub fn armed(&self) -> std::pin::Pin<Box<Notified<'_>>> {
        let mut notified = Box::pin(self.notify.notified());
        notified.as_mut().enable();
        notified
    }

    /// While the guard lives, other processes' commits to a local file wake this signal.
    /// Whether they do is `Watching::hears_other_processes` (no: not a local file, or the
    /// system refused a watch).
    pub fn watching(self: &Arc<Signal>) -> Watching {
        let Some(wal) = &self.wal else { return Watching { signal: None, heard: false } };
        let mut watch = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        if watch.waiting == 0 {
            watch.id = wal_events::watch(wal, Arc::downgrade(&self.notify));
        }
        watch.waiting += 1;
        let heard = watch.id.is_some();
        drop(watch);
        Watching { signal: Some(self.clone()), heard }
    }
}

pub struct Watching {
    /// A local file's signal: the guard ends its share of the watch on drop.
    signal: Option<Arc<Signal>>,
    heard: bool,
}

impl Watching {
    pub fn hears_other_processes(&self) -> bool {
        self.heard
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let Some(signal) = &self.signal else { return };
        let mut watch = signal.watch.lock().unwrap_or_else(|e| e.into_inner());
        watch.waiting -= 1;
        if watch.waiting == 0 {
            if let Some(id) = watch.id.take() {
                wal_events::unwatch(id);
            }
        }
    }
}
