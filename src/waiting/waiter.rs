//! The pauses of a waiting claim, between its looks at the queue. A look that finds
//! nothing says when the queue next releases a group (a lease's or park's end); the pause
//! lasts until then, or until the queue's signal wakes it (a commit in this process, or
//! another process's commit to a local file: wake.rs), or until a poll interval, the
//! deadline, a cancel or an interrupt. No lock of the database is held meanwhile.

use std::future::pending;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::futures::Notified;

use super::wait::{self, Cancel, Interrupts, Wait};
use super::wake::{Signal, Watching};
use super::Polling;
use crate::error::Result;

/// What a waiting claim reads, without the write lock, to know whether to claim or how
/// long to sleep (queue/looks.rs).
pub struct Readiness {
    /// A head the claim would take (or bury) now.
    pub deliverable: bool,
    /// The earliest time after now that a group is next ready: a lease's or park's end.
    pub next_ready_at: Option<f64>,
    /// `PRAGMA data_version` on a local database: changes once another connection's commit is visible.
    pub data_version: Option<i64>,
    /// Some group's turn has come without its head being deliverable to this claim: one
    /// leased by a writer that does not stamp the lease's end on the group (harel's Python
    /// transports), or one that the claim's filter passes over. Looked up for watches only.
    pub undated_turns: bool,
}

/// Where commits of other processes are heard, a last look this often catches what
/// nothing announces (a lease taken by harel's Python transports, whose end the queue
/// does not record).
pub(super) const HEARD_POLL: Duration = Duration::from_secs(1);
/// A local file whose WAL cannot be watched: other processes' commits are found by polling.
pub(super) const UNHEARD_POLL: Duration = Duration::from_millis(50);
/// A server: polls from this interval, doubling up to `HEARD_POLL`, back to this after a wake.
pub(super) const SERVER_FIRST_POLL: Duration = Duration::from_millis(20);
/// After a WAL write whose commit is not visible yet (data_version unchanged: the writer is
/// still syncing, which under load can take long), looks again after 1, 2, 4, ... ms, at
/// most `SETTLE_STEP_MAX` apart, this many times (about a second in all, as `HEARD_POLL`).
pub(super) const SETTLE_LOOKS: u32 = 20;
pub(super) const SETTLE_STEP_MAX: Duration = Duration::from_millis(64);

pub struct Waiter<'a> {
    deadline: Instant,
    cancel: Option<&'a Cancel>,
    interrupts: &'a Interrupts,
    seen: u64,
    signal: &'a Arc<Signal>,
    polling: Polling,
    watching: Option<Watching>,
    server_poll: Duration,
    /// The data_version before the last wake by the signal, while the change it announced
    /// may not be visible yet, and how many settling looks are done.
    settling: Option<(Option<i64>, u32)>,
}

impl<'a> Waiter<'a> {
    /// `Error::Interrupted` if `wait`'s cancel has fired already.
    pub fn new(
        wait: &'a Wait,
        interrupts: &'a Interrupts,
        signal: &'a Arc<Signal>,
        polling: Polling,
    ) -> Result<Waiter<'a>> {
        if wait.cancel.as_ref().is_some_and(Cancel::is_fired) {
            return Err(wait::cancelled());
        }
        Ok(Waiter {
            deadline: Instant::now() + wait.timeout,
            cancel: wait.cancel.as_ref(),
            interrupts,
            seen: interrupts.seen(),
            signal,
            polling,
            watching: None,
            server_poll: SERVER_FIRST_POLL,
            settling: None,
        })
    }

    pub fn is_over(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Sleeps after a look that found nothing (`seen`, at clock time `now`); `woken` was
    /// armed before that look. True: look again; false: the deadline has passed.
    pub async fn pause(&mut self, woken: Pin<Box<Notified<'_>>>, seen: &Readiness, now: f64) -> Result<bool> {
        self.not_ended()?;
        if self.signal.watches_a_file() && self.watching.is_none() {
            // From now on other processes' commits are heard; one more look covers those
            // that came before.
            self.watching = Some(self.signal.watching());
            return Ok(!self.is_over());
        }
        let mut sleep = self.poll();
        if let Some(next) = seen.next_ready_at {
            sleep = sleep.min(Duration::from_secs_f64((next - now).max(0.0)));
        }
        match &mut self.settling {
            Some((before, looks)) if *before == seen.data_version && *looks < SETTLE_LOOKS => {
                sleep = sleep.min(Duration::from_millis(1 << (*looks).min(16)).min(SETTLE_STEP_MAX));
                *looks += 1;
            }
            _ => self.settling = None,
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let cancel = async {
            match self.cancel {
                Some(cancel) => cancel.fired().await,
                None => pending().await,
            }
        };
        // biased: a cancel or an interrupt that came with a wake wins, and no look follows it.
        tokio::select! {
            biased;
            _ = cancel => return Err(wait::cancelled()),
            _ = self.interrupts.after(self.seen) => return Err(wait::interrupted()),
            _ = woken => {
                if self.settling.is_none() {
                    self.settling = Some((seen.data_version, 0));
                }
                self.server_poll = SERVER_FIRST_POLL;
            }
            _ = tokio::time::sleep(sleep.min(left)) => {
                self.server_poll = (self.server_poll * 2).min(HEARD_POLL);
            }
        }
        self.not_ended()?;
        Ok(!self.is_over())
    }

    /// `Error::Interrupted` once the cancel fired or the transport was interrupted: no look
    /// (and no claim) follows either.
    fn not_ended(&self) -> Result<()> {
        if self.cancel.is_some_and(Cancel::is_fired) {
            return Err(wait::cancelled());
        }
        if self.interrupts.seen() != self.seen {
            return Err(wait::interrupted());
        }
        Ok(())
    }

    fn poll(&self) -> Duration {
        match self.polling {
            Polling::Server => self.server_poll,
            Polling::Local
                if self.signal.watches_a_file()
                    && !self.watching.as_ref().is_some_and(Watching::hears_other_processes) =>
            {
                UNHEARD_POLL
            }
            Polling::Local => HEARD_POLL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waiting::wake;

    /// A wake and a cancel both pending when the waiter next runs: the cancel wins (a
    /// `select!` left to choose would look, and claim, half the time).
    #[test]
    fn a_cancel_that_came_with_a_wake_ends_the_wait() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let signal = wake::own();
        let interrupts = Interrupts::default();
        let nothing = Readiness { deliverable: false, next_ready_at: None, data_version: None, undated_turns: false };
        for _ in 0..32 {
            let cancel = Cancel::new();
            let wait = Wait::up_to(Duration::from_secs(10)).or_until(&cancel);
            let mut waiter = Waiter::new(&wait, &interrupts, &signal, Polling::Local).unwrap();
            let woken = signal.armed();
            signal.notify();
            cancel.fire();
            let paused = runtime.block_on(waiter.pause(woken, &nothing, 0.0));
            assert!(matches!(paused, Err(crate::Error::Interrupted(_))), "{paused:?}");
        }
        let wait = Wait::up_to(Duration::from_secs(10));
        let mut waiter = Waiter::new(&wait, &interrupts, &signal, Polling::Local).unwrap();
        let woken = signal.armed();
        signal.notify();
        interrupts.interrupt();
        let paused = runtime.block_on(waiter.pause(woken, &nothing, 0.0));
        assert!(matches!(paused, Err(crate::Error::Interrupted(_))), "an interrupt too: {paused:?}");
    }
}
