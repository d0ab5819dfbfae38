//! How long a claim waits for work, and the two ways to end a wait early: a `Cancel` the
//! caller fires (one call's wait: Go's context, Node's AbortSignal), and a transport's
//! `interrupt` (every wait on that transport: a C program shutting down).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::error::{Error, Result};

/// A claim's wait: return as soon as something is claimed, or with nothing once
/// `timeout` has passed (0: look once), or `Error::Interrupted` when `cancel` fires.
#[derive(Clone, Default)]
pub struct Wait {
    pub(crate) timeout: Duration,
    pub(crate) cancel: Option<Cancel>,
}

impl Wait {
    /// Look once, as `claim` does.
    pub fn none() -> Wait {
        Wait::default()
    }

    /// Wait up to `timeout` for something deliverable.
    pub fn up_to(timeout: Duration) -> Wait {
        Wait { timeout, cancel: None }
    }

    /// The same wait, ended early by `cancel`.
    pub fn or_until(mut self, cancel: &Cancel) -> Wait {
        self.cancel = Some(cancel.clone());
        self
    }
}

/// Ends the waits that hold it (clones share one state). Firing is final and may be done
/// from any thread, any number of times.
#[derive(Clone, Default)]
pub struct Cancel(Arc<CancelState>);

#[derive(Default)]
struct CancelState {
    fired: AtomicBool,
    notify: Notify,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    pub fn fire(&self) {
        self.0.fired.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    pub fn is_fired(&self) -> bool {
        self.0.fired.load(Ordering::SeqCst)
    }

    /// Resolves once fired.
    pub(crate) async fn fired(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_fired() {
                return;
            }
            notified.await;
        }
    }
}

/// A transport's interrupts: each `interrupt` ends the waits in progress, not later ones.
#[derive(Default)]
pub(crate) struct Interrupts {
    count: AtomicU64,
    notify: Notify,
}

impl Interrupts {
    pub fn interrupt(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// What a wait starting now compares against.
    pub fn seen(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Resolves once an interrupt comes after `seen`.
    pub async fn after(&self, seen: u64) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.seen() != seen {
                return;
            }
            notified.await;
        }
    }
}

pub(crate) fn cancelled() -> Error {
    Error::Interrupted("the wait was cancelled; nothing was claimed".into())
}

pub(crate) fn interrupted() -> Error {
    Error::Interrupted("the transport was interrupted while the claim waited; nothing was claimed".into())
}

/// Waits given in seconds (C, Go, Node): finite and >= 0.
pub fn seconds(seconds: f64) -> Result<Wait> {
    crate::validate::non_negative_seconds("wait", seconds)?;
    Ok(Wait::up_to(crate::validate::duration("wait", seconds)?))
}
