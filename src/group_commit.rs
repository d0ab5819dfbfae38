//! Group commit for the blocking face: publishes that arrive from several threads while
//! one is committing are written together in the next transaction, so N threads pay one
//! commit (at synchronous FULL, one fsync) where they paid N, and the write lock changes
//! hands once. A publish that finds nobody committing commits alone, as before, copying
//! nothing.
//!
//! Each caller still gets its own outcome. A combined transaction that fails with an error
//! that could be one caller's doing (`Error::Database`: a message too big, a full disk) is
//! re-run once per caller, so the others' messages are not refused for it; one that fails
//! for everybody (busy, the server unreachable) fails every caller's call. Order: the
//! batches go in in the order their callers arrived, each in its own order, and a call
//! returns only once its messages are committed, so a thread's later publish always lands
//! after its earlier ones.
//!
//! Only the blocking `Transport` groups commits: its calls cannot be abandoned half-way. A
//! dropped async call could leave the callers whose messages it was committing without an
//! answer.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};
use crate::headers::Headers;
use crate::types::Message;

#[derive(Default)]
pub struct GroupCommit {
    state: Mutex<State>,
    /// Signalled when a transaction ends: its callers' outcomes are in `State::settled`, and
    /// somebody else may commit next.
    ended: Condvar,
}

#[derive(Default)]
struct State {
    /// Batches waiting for the next transaction, in arrival order.
    waiting: Vec<Waiting>,
    /// A thread is inside a transaction (its own batch, or the batches it took).
    committing: bool,
    /// Callers waiting for `ended`: without any, ending a transaction wakes nobody (no
    /// system call on the uncontended path).
    sleeping: usize,
    /// Outcomes not yet picked up, by ticket.
    settled: HashMap<u64, Result<()>>,
    next_ticket: u64,
}

struct Waiting {
    ticket: u64,
    messages: Vec<OwnedMessage>,
}

/// A waiting caller's message, copied: it is written by another thread.
struct OwnedMessage {
    group_id: String,
    event_json: String,
    priority: i32,
    routing_key: Option<String>,
    headers: Option<Headers>,
}

impl OwnedMessage {
    fn of(m: &Message<'_>) -> OwnedMessage {
        OwnedMessage {
            group_id: m.group_id.to_owned(),
            event_json: m.event_json.to_owned(),
            priority: m.priority,
            routing_key: m.routing_key.map(str::to_owned),
            headers: m.headers.cloned(),
        }
    }

    fn borrow(&self) -> Message<'_> {
        Message {
            group_id: &self.group_id,
            event_json: &self.event_json,
            priority: self.priority,
            routing_key: self.routing_key.as_deref(),
            headers: self.headers.as_ref(),
        }
    }
}

impl GroupCommit {
    /// Writes `messages` (already checked) through `commit`, which runs one transaction
    /// over the messages it is given: alone when nobody is committing, else together with
    /// whatever else is waiting once the current transaction ends.
    pub fn publish(&self, messages: &[Message<'_>], commit: &dyn Fn(&[Message<'_>]) -> Result<()>) -> Result<()> {
        let mut state = self.lock();
        if !state.committing && state.waiting.is_empty() {
            state.committing = true;
            drop(state);
            let _leading = Leading { group: self, outcomes: Vec::new() };
            return commit(messages);
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push(Waiting { ticket, messages: messages.iter().map(OwnedMessage::of).collect() });
        loop {
            if let Some(outcome) = state.settled.remove(&ticket) {
                return outcome;
            }
            if state.committing {
                state.sleeping += 1;
                state = self.ended.wait(state).unwrap_or_else(PoisonError::into_inner);
                state.sleeping -= 1;
                continue;
            }
            // Ours is still waiting: commit it, with everything that waits beside it.
            state.committing = true;
            let batches = std::mem::take(&mut state.waiting);
            drop(state);
            let mut leading =
                Leading { group: self, outcomes: batches.iter().map(|b| (b.ticket, Err(abandoned()))).collect() };
            for (slot, outcome) in leading.outcomes.iter_mut().zip(commit_together(&batches, commit)) {
                slot.1 = outcome;
            }
            drop(leading);
            state = self.lock();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One transaction for all the batches; on an error that may be one batch's doing, one
/// per batch. The outcomes in the batches' order.
fn commit_together(batches: &[Waiting], commit: &dyn Fn(&[Message<'_>]) -> Result<()>) -> Vec<Result<()>> {
    let all: Vec<Message<'_>> = batches.iter().flat_map(|b| b.messages.iter().map(OwnedMessage::borrow)).collect();
    match commit(&all) {
        Err(Error::Database(_)) if batches.len() > 1 => {
            batches.iter().map(|b| commit(&b.messages.iter().map(OwnedMessage::borrow).collect::<Vec<_>>())).collect()
        }
        outcome => vec![outcome; batches.len()],
    }
}

/// A thread's time leading a transaction, for its own batch or for the batches it took.
/// Ending it, even by a panic out of `commit`, hands over the outcomes and lets the next
/// leader in: no caller waits for ever.
struct Leading<'a> {
    group: &'a GroupCommit,
    outcomes: Vec<(u64, Result<()>)>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut state = self.group.lock();
        state.settled.extend(self.outcomes.drain(..));
        state.committing = false;
        let anyone_waits = state.sleeping > 0;
        drop(state);
        if anyone_waits {
            self.group.ended.notify_all();
        }
    }
}

/// The outcome of batches whose transaction ended in a panic: whether it committed is
/// not known.
fn abandoned() -> Error {
    Error::Database(
        "the call committing this message together with other threads' messages panicked; \
         it may or may not have been written"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    fn message(group_id: &str) -> Message<'_> {
        Message { group_id, event_json: "{}", priority: 0, routing_key: None, headers: None }
    }

    /// The group ids of each commit, in order.
    type Log = Mutex<Vec<Vec<String>>>;

    fn record(log: &Log, batch: &[Message<'_>]) {
        log.lock().unwrap().push(batch.iter().map(|m| m.group_id.to_owned()).collect());
    }

    /// Thread "first" commits alone and, inside its transaction, waits until the
    /// followers are queued, one after the other in the given order; each follower
    /// publishes one message named after it. What each follower's thread ended with.
    fn while_first_commits(
        group: &GroupCommit,
        followers: &[&str],
        commit: &(dyn Fn(&[Message<'_>]) -> Result<()> + Sync),
    ) -> Vec<std::thread::Result<Result<()>>> {
        let first_in = AtomicBool::new(false);
        std::thread::scope(|s| {
            let first = s.spawn(|| {
                group.publish(&[message("first")], &|batch| {
                    first_in.store(true, Ordering::SeqCst);
                    while group.lock().waiting.len() < followers.len() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    commit(batch)
                })
            });
            while !first_in.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let handles: Vec<_> = followers
                .iter()
                .enumerate()
                .map(|(queued, name)| {
                    let handle = s.spawn(|| group.publish(&[message(name)], commit));
                    while group.lock().waiting.len() == queued {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    handle
                })
                .collect();
            assert_eq!(first.join().unwrap(), Ok(()));
            handles.into_iter().map(|h| h.join()).collect()
        })
    }

    fn outcomes(joined: Vec<std::thread::Result<Result<()>>>) -> Vec<Result<()>> {
        joined.into_iter().map(|r| r.expect("no follower panics")).collect()
    }

    #[test]
    fn callers_that_arrive_during_a_commit_share_the_next_one_in_arrival_order() {
        let log = Log::default();
        let joined = while_first_commits(&GroupCommit::default(), &["a", "b", "c"], &|batch| {
            record(&log, batch);
            Ok(())
        });
        assert_eq!(outcomes(joined), vec![Ok(()), Ok(()), Ok(())]);
        assert_eq!(*log.lock().unwrap(), vec![vec!["first"], vec!["a", "b", "c"]]);
    }

    #[test]
    fn a_batch_that_fails_on_its_own_does_not_fail_the_batches_it_was_committed_with() {
        let log = Log::default();
        let too_big = Error::Database("string or blob too big".into());
        let joined = while_first_commits(&GroupCommit::default(), &["a", "bad", "c"], &|batch| {
            record(&log, batch);
            match batch.iter().any(|m| m.group_id == "bad") {
                true => Err(too_big.clone()),
                false => Ok(()),
            }
        });
        assert_eq!(outcomes(joined), vec![Ok(()), Err(too_big.clone()), Ok(())]);
        assert_eq!(log.lock().unwrap()[1..], [vec!["a", "bad", "c"], vec!["a"], vec!["bad"], vec!["c"]]);
    }

    #[test]
    fn an_error_that_is_nobodys_doing_fails_every_caller_without_a_second_try() {
        let log = Log::default();
        let busy = Error::Busy("the write lock was not had within the busy timeout".into());
        let joined = while_first_commits(&GroupCommit::default(), &["a", "b"], &|batch| {
            record(&log, batch);
            match batch[0].group_id {
                "first" => Ok(()),
                _ => Err(busy.clone()),
            }
        });
        assert_eq!(outcomes(joined), vec![Err(busy.clone()), Err(busy.clone())]);
        assert_eq!(log.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_panic_inside_a_shared_commit_answers_its_callers_and_frees_the_next_commit() {
        let group = GroupCommit::default();
        let joined = while_first_commits(&group, &["a", "b"], &|batch| match batch[0].group_id {
            "first" => Ok(()),
            _ => panic!("injected"),
        });
        // The follower that led the shared commit panicked; the other was told.
        let panicked = joined.iter().filter(|r| r.is_err()).count();
        let told: Vec<_> = joined.into_iter().filter_map(|r| r.ok()).collect();
        assert_eq!((panicked, told), (1, vec![Err(abandoned())]));
        assert_eq!(group.publish(&[message("later")], &|_| Ok(())), Ok(()));
    }
}
