//! A queue over one database: the queue's operations as `async fn` on it. Each method takes
//! the checked request the face built (request.rs), runs the operation (work.rs, looks.rs,
//! admin.rs) on the backend chosen at open (backend/), wakes this process's waiting claims
//! after a commit that can make a message deliverable, and counts what it did (metrics.rs).
//! Calls on one value run one at a time (one connection, and claims serialize on the
//! database's write lock anyway). A sharded queue is several of these behind the router
//! (shards/router.rs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard, OwnedMutexGuard};

use crate::backend::{Backend, Opened};
use crate::chain::Claimed;
use crate::error::{Error, Result};
use crate::metrics::Meters;
use crate::mode::Mode;
use crate::options::{Clock, Options};
use crate::queue::{admin, looks, schema, work};
use crate::request::{
    Bury, Claim, DeadSelection, Deliver, Extend, Filter, Finish, FinishMany, Group, Limited, Nack, PageRequest,
    Publish,
};
use crate::sql::Statements;
use crate::types::{
    Archived, DeadLetter, GroupInfo, GroupState, Lease, LimitInfo, MessageInfo, Page, Pause, PauseTarget, Published,
    Stats,
};
use crate::validate;
use crate::waiting::wait::{Interrupts, Wait};
use crate::waiting::wake::Signal;
use crate::waiting::{Polling, Waiter, Watch};

pub(crate) struct Queue {
    /// Where the queue lives, one call (or one application transaction) at a time.
    backend: Arc<Mutex<Backend>>,
    /// An application's transaction holds the backend (transaction/).
    in_transaction: Arc<AtomicBool>,
    busy_timeout: Duration,
    sql: Statements,
    clock: Clock,
    mode: Mode,
    key_retention: f64,
    /// How long an acked message is archived; None: it is not.
    archive: Option<f64>,
    /// What wakes this queue's waiting claims in this process (shared with its other transports).
    wake: Arc<Signal>,
    polling: Polling,
    interrupts: Interrupts,
    /// What the queue lacks of ours, opened as it is (`Options::schema_as_is`); empty otherwise.
    absent: Vec<String>,
    meters: Arc<Meters>,
    /// Tells a watch's owner from another transport.
    id: u64,
    watches: Watches,
}

/// The bells of a transport's watches, rung for good when it closes or is dropped.
#[derive(Default)]
struct Watches(std::sync::Mutex<Vec<Weak<crate::waiting::Bell>>>);

impl Drop for Watches {
    fn drop(&mut self) {
        let bells = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        bells.iter().filter_map(Weak::upgrade).for_each(|bell| bell.close());
    }
}

impl Queue {
    /// Opens the queue at `database`: a file path, `":memory:"`, a `libsql://` or
    /// `http(s)://` URL (remote), or a path with `Options::sync_url` (embedded replica).
    /// Counts into `meters`, which a sharded queue's databases share.
    pub async fn open(database: &str, options: &Options, meters: Arc<Meters>) -> Result<Queue> {
        validate::non_empty("database", database)?;
        let Opened { mut backend, mode, wake, polling } =
            Backend::open(database, options, Arc::clone(&meters.busy_retries)).await?;
        let mut sql = Statements::new(&options.prefix);
        let absent = if options.schema_as_is {
            schema::as_is(&mut backend, &mut sql).await
        } else {
            let archive = options.archive.is_some();
            schema::prepare(&mut backend, &mut sql, options.create_schema, archive).await.map(|()| Vec::new())
        }
        .map_err(|e| e.during("open"))?;
        let (clock, interrupts) = (options.clock.clone(), Interrupts::default());
        let key_retention = options.key_retention;
        Ok(Queue {
            backend: Arc::new(Mutex::new(backend)),
            in_transaction: Arc::default(),
            busy_timeout: options.busy_timeout,
            sql,
            clock,
            mode,
            key_retention,
            archive: options.archive,
            wake,
            polling,
            interrupts,
            absent,
            meters,
            id: {
                static NEXT: AtomicU64 = AtomicU64::new(1);
                NEXT.fetch_add(1, Ordering::Relaxed)
            },
            watches: Watches::default(),
        })
    }

    /// The leases of a committed claim, counted with the heads it buried and the groups it held.
    fn counted(&self, claimed: Claimed) -> Vec<Lease> {
        self.meters.claimed.add(claimed.leases.len() as u64);
        self.meters.dead_lettered_by_claim.add(claimed.buried);
        self.meters.limit_holds.add(claimed.held);
        claimed.leases
    }

    /// Lost leases among `outcomes` counted, and the acks that were not.
    fn count_acks(&self, outcomes: &[Result<()>]) {
        let lost = outcomes.iter().filter(|o| o.is_err()).count() as u64;
        self.meters.acked.add(outcomes.len() as u64 - lost);
        self.meters.lost_leases.add(lost);
    }

    /// What the queue lacks of this library's schema, each as "the table T" or "the column
    /// T.C": empty unless opened with `Options::schema_as_is` a file that lacks them (a
    /// harel 0.9 file). The looks read around them; every write is refused.
    pub fn absent(&self) -> &[String] {
        &self.absent
    }

    /// The backend, for an operation that writes: refused while the queue lacks part of the
    /// schema, since every write of ours may touch it (a claim counts `attempts`, a publish
    /// stamps `enqueued_at`) and opened as it is, nothing may upgrade it.
    pub(crate) async fn writer(&self) -> Result<MutexGuard<'_, Backend>> {
        self.writable()?;
        self.connection().await
    }

    /// The backend, for one call. While an application's transaction holds it
    /// (transaction/), waited for only up to the busy timeout: a call made on the transport
    /// from inside that transaction would otherwise wait for ever.
    pub(crate) async fn connection(&self) -> Result<MutexGuard<'_, Backend>> {
        if let Ok(backend) = self.backend.try_lock() {
            return Ok(backend);
        }
        if !self.in_transaction.load(Ordering::Acquire) {
            return Ok(self.backend.lock().await);
        }
        tokio::time::timeout(self.busy_timeout, self.backend.lock()).await.map_err(|_| self.held_by_transaction())
    }

    /// The backend for an application's transaction, from its first read to its end; the
    /// flag that says so, cleared when the hold ends.
    pub(crate) async fn hold_for_transaction(&self) -> Result<(OwnedMutexGuard<Backend>, Arc<AtomicBool>)> {
        let backend = match Arc::clone(&self.backend).try_lock_owned() {
            Ok(backend) => backend,
            Err(_) if !self.in_transaction.load(Ordering::Acquire) => Arc::clone(&self.backend).lock_owned().await,
            Err(_) => tokio::time::timeout(self.busy_timeout, Arc::clone(&self.backend).lock_owned())
                .await
                .map_err(|_| self.held_by_transaction())?,
        };
        self.in_transaction.store(true, Ordering::Release);
        Ok((backend, Arc::clone(&self.in_transaction)))
    }

    fn held_by_transaction(&self) -> Error {
        Error::Busy(format!(
            "a transaction of this transport held its connection for longer than the busy timeout ({} s): a \
             transport runs one transaction at a time and its other calls wait for it, so inside a \
             transaction publish with the transaction's own publish, and do not begin another on the same \
             transport (transactions do not nest)",
            self.busy_timeout.as_secs_f64()
        ))
    }

    pub(crate) fn sql(&self) -> &Statements {
        &self.sql
    }

    pub(crate) fn key_retention(&self) -> f64 {
        self.key_retention
    }

    /// Counts what a commit stored, and wakes this process's waiting claims for it.
    pub(crate) fn committed(&self, published: &[Published]) {
        let stored = published.iter().filter(|p| !p.duplicate).count() as u64;
        self.meters.published.add(stored);
        if stored > 0 {
            self.wake.notify();
        }
    }

    pub(crate) fn writable(&self) -> Result<()> {
        if !self.absent.is_empty() {
            return Err(Error::Database(format!(
                "refused: this queue lacks {} (a harel 0.9 file, opened as it is): it can be looked at, \
                 not changed, since this library's writes need them. Open it once with create_schema on \
                 (any worker or producer of this library does; harel's transports keep working on it), or \
                 run the statements of harel_schema_upgrade_sql",
                self.absent.join(", ")
            )));
        }
        Ok(())
    }

    /// Where the queue lives: a local file, memory, a server, or a replica of one.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    // ---- publish

    /// Appends checked messages (`publish`, `publish_many`, the blocking face's group
    /// commits), in one transaction.
    pub async fn append(&self, request: &Publish<'_, '_>) -> Result<()> {
        let mut backend = self.writer().await?;
        work::publish(&mut backend, &self.sql, request, &|| self.now()).await?;
        drop(backend);
        self.meters.published.add(request.messages().len() as u64);
        self.wake.notify();
        Ok(())
    }

    /// Appends checked messages with their delivery options, in one transaction: what
    /// became of each, in order.
    pub async fn deliver(&self, request: &Deliver<'_, '_>) -> Result<Vec<Published>> {
        if request.items().is_empty() {
            return Ok(Vec::new());
        }
        let mut backend = self.writer().await?;
        let published =
            work::publish_with(&mut backend, &self.sql, request, self.key_retention, &|| self.now()).await?;
        drop(backend);
        self.committed(&published);
        Ok(published)
    }

    // ---- claim

    /// Up to `request.max` leases, waiting up to `wait` while there is none (see
    /// `AsyncTransport::claim_wait`).
    pub async fn claim(&self, request: &Claim<'_>, wait: &Wait) -> Result<Vec<Lease>> {
        self.writable()?;
        if wait.timeout.is_zero() && wait.cancel.is_none() {
            let mut backend = self.connection().await?;
            let claimed = work::claim(&mut backend, &self.sql, request, &|| self.now()).await?;
            return Ok(self.counted(claimed));
        }
        self.claim_until(request, wait).await
    }

    /// Looks (without the write lock) and claims once a look finds a deliverable head; while
    /// nothing came and the wait lasts, pauses between looks (waiting/waiter.rs).
    async fn claim_until(&self, request: &Claim<'_>, wait: &Wait) -> Result<Vec<Lease>> {
        let mut waiter = Waiter::new(wait, &self.interrupts, &self.wake, self.polling)?;
        let filter = (request.min_priority, request.routing_keys);
        // Locally the first step is a look, so a claim that may wait never waits for the write
        // lock on an empty queue; on a server the claim's own request is the cheaper first step.
        let mut looked = self.polling == Polling::Local;
        loop {
            let woken = self.wake.armed();
            let mut backend = self.connection().await?;
            let now = self.now()?;
            let mut readiness = match looked {
                true => Some(looks::readiness(&mut backend, &self.sql, filter, now, false).await?),
                false => None,
            };
            if readiness.as_ref().is_none_or(|r| r.deliverable) {
                let claimed = work::claim(&mut backend, &self.sql, request, &|| self.now()).await?;
                let leases = self.counted(claimed);
                if !leases.is_empty() || waiter.is_over() {
                    return Ok(leases);
                }
                readiness = Some(looks::readiness(&mut backend, &self.sql, filter, now, false).await?);
            }
            drop(backend);
            let readiness = readiness.expect("a look or a claim came first");
            if !waiter.pause(woken, &readiness, now).await? {
                return Ok(Vec::new());
            }
            looked = true;
        }
    }

    /// Looks (without the write lock) until a claim with `request`'s filter may find work
    /// here, true, or `wait` is over, false: how a sharded queue's claim waits on all its
    /// databases at once before it claims on the one that has work.
    pub(crate) async fn until_ready(&self, request: &Claim<'_>, wait: &Wait) -> Result<bool> {
        let mut waiter = Waiter::new(wait, &self.interrupts, &self.wake, self.polling)?;
        loop {
            let woken = self.wake.armed();
            let now = self.now()?;
            let filter = (request.min_priority, request.routing_keys);
            let readiness = looks::readiness(&mut *self.connection().await?, &self.sql, filter, now, false).await?;
            if readiness.deliverable {
                return Ok(true);
            }
            if !waiter.pause(woken, &readiness, now).await? {
                return Ok(false);
            }
        }
    }

    /// Acks and claims the next message, in one transaction; nothing is claimed when the
    /// ack fails.
    pub async fn ack_and_claim(&self, finish: Finish<'_>, claim: &Claim<'_>) -> Result<Option<Lease>> {
        let mut backend = self.writer().await?;
        let claimed =
            work::ack_and_claim(&mut backend, &self.sql, (finish, self.archive), claim, &|| self.now()).await?;
        drop(backend);
        self.meters.acked.add(1);
        self.wake.notify();
        Ok(self.counted(claimed).into_iter().next())
    }

    /// Acks the leases and claims up to `claim.max`, in one transaction: an outcome per
    /// lease, and the leases claimed.
    pub async fn ack_and_claim_many(
        &self,
        finish: &FinishMany<'_>,
        claim: &Claim<'_>,
    ) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
        let mut backend = self.writer().await?;
        let (outcomes, claimed) =
            work::ack_and_claim_many(&mut backend, &self.sql, (finish, self.archive), claim, &|| self.now()).await?;
        drop(backend);
        self.count_acks(&outcomes);
        self.wake.notify();
        Ok((outcomes, self.counted(claimed)))
    }

    /// Takes a head this database's claim leased, of a group whose hash names another
    /// shard, out of service (docs/queue.md, "Sharded queues"): its lease becomes a hold by
    /// `MISPLACED` that does not end, so no worker here serves the group while its own shard
    /// may, until `harel-transport shards rehome` moves it there.
    pub(crate) async fn set_aside(&self, lease: &Lease) -> Result<()> {
        let request = Finish::new(lease)?;
        let mut backend = self.writer().await?;
        work::set_aside(&mut backend, &self.sql, request).await
    }

    /// Ends every wait of a claim on this queue that is in progress (they return
    /// `Error::Interrupted`); later claims wait as usual.
    pub fn interrupt(&self) {
        self.interrupts.interrupt();
    }

    // ---- finish

    /// Deletes the leased message (and its group when it was the last). `Error::LeaseLost`
    /// if it is gone or leased to another worker; then nothing changes.
    pub async fn ack(&self, finish: Finish<'_>) -> Result<()> {
        let mut backend = self.writer().await?;
        work::ack(&mut backend, &self.sql, finish, self.archive, &|| self.now()).await?;
        drop(backend);
        self.meters.acked.add(1);
        self.wake.notify();
        Ok(())
    }

    /// Acks every lease in one transaction, with an outcome per lease.
    pub async fn ack_many(&self, finish: &FinishMany<'_>) -> Result<Vec<Result<()>>> {
        let mut backend = self.writer().await?;
        let outcomes = work::ack_many(&mut backend, &self.sql, finish, self.archive, &|| self.now()).await?;
        drop(backend);
        self.count_acks(&outcomes);
        self.wake.notify();
        Ok(outcomes)
    }

    /// The lease's new end, now + the request's visibility.
    pub async fn extend(&self, request: &Extend<'_>) -> Result<f64> {
        let mut backend = self.writer().await?;
        work::extend(&mut backend, &self.sql, request, &|| self.now()).await
    }

    /// Frees the message now, or parks it (and its group) for the request's delay.
    pub async fn nack(&self, request: &Nack<'_>) -> Result<()> {
        let mut backend = self.writer().await?;
        work::nack(&mut backend, &self.sql, request, &|| self.now()).await?;
        drop(backend);
        match request.delay > 0.0 {
            true => self.meters.parked.add(1),
            false => self.meters.nacked.add(1),
        }
        self.wake.notify();
        Ok(())
    }

    /// Moves the leased message to the dead-letter table with the request's reason.
    pub async fn dead_letter(&self, request: &Bury<'_>) -> Result<()> {
        let mut backend = self.writer().await?;
        work::dead_letter(&mut backend, &self.sql, request.finish, request.reason, &|| self.now()).await?;
        drop(backend);
        self.meters.dead_lettered.add(1);
        self.wake.notify();
        Ok(())
    }

    // ---- looks

    /// Exact counts of the queue now, read without the write lock (see `Stats`).
    pub async fn stats(&self) -> Result<Stats> {
        let now = self.now()?;
        let mut backend = self.connection().await?;
        looks::stats(&mut backend, &self.sql, now).await
    }

    /// A page of groups in group id order (only those in `state`, if given).
    pub async fn groups(&self, state: Option<GroupState>, page: &PageRequest) -> Result<Page<GroupInfo>> {
        let now = self.now()?;
        let mut backend = self.connection().await?;
        looks::groups(&mut backend, &self.sql, state, page, now).await
    }

    /// A page of a group's messages, oldest first, without claiming them.
    pub async fn peek(&self, group: Group<'_>, page: &PageRequest) -> Result<Page<MessageInfo>> {
        let mut backend = self.connection().await?;
        looks::peek(&mut backend, &self.sql, group.0, page).await
    }

    /// A page of dead letters in the order they had in the queue (one group's, if given).
    pub async fn dead_letters(&self, group: Option<Group<'_>>, page: &PageRequest) -> Result<Page<DeadLetter>> {
        let mut backend = self.connection().await?;
        looks::dead_letters(&mut backend, &self.sql, group.map(|g| g.0), page).await
    }

    /// A page of archived messages in seq order (one group's, if given).
    pub async fn archive(&self, group: Option<Group<'_>>, page: &PageRequest) -> Result<Page<Archived>> {
        let mut backend = self.connection().await?;
        looks::archive(&mut backend, &self.sql, group.map(|g| g.0), page).await
    }

    // ---- admin

    /// Moves dead letters back into their groups as their newest messages; the number moved.
    pub async fn redrive(&self, selection: &DeadSelection<'_>) -> Result<u64> {
        let mut backend = self.writer().await?;
        let moved = admin::redrive(&mut backend, &self.sql, selection, &|| self.now()).await?;
        drop(backend);
        self.wake.notify();
        Ok(moved)
    }

    /// Deletes dead letters; the number deleted.
    pub async fn purge_dead(&self, selection: &DeadSelection<'_>) -> Result<u64> {
        admin::purge_dead(&mut *self.writer().await?, &self.sql, selection).await
    }

    /// Deletes a group's messages; the number deleted.
    pub async fn purge_group(&self, group: Group<'_>) -> Result<u64> {
        admin::purge_group(&mut *self.writer().await?, &self.sql, group.0).await
    }

    /// Deletes every message and group (dead letters stay); the number of messages.
    pub async fn purge(&self) -> Result<u64> {
        admin::purge(&mut *self.writer().await?, &self.sql).await
    }

    /// Ends the lease or park on a group's head now; false when nothing was held.
    pub async fn release(&self, group: Group<'_>) -> Result<bool> {
        let mut backend = self.writer().await?;
        let released = admin::release(&mut backend, &self.sql, group.0, &|| self.now()).await?;
        drop(backend);
        self.wake.notify();
        Ok(released)
    }

    /// Pauses `target`; true when the pause is new.
    pub async fn pause(&self, target: &PauseTarget<'_>) -> Result<bool> {
        admin::pause(&mut *self.writer().await?, &self.sql, target, &|| self.now()).await
    }

    /// Resumes `target`; true when it was paused. Its groups are served again at once.
    pub async fn resume(&self, target: &PauseTarget<'_>) -> Result<bool> {
        let mut backend = self.writer().await?;
        let resumed = admin::resume(&mut backend, &self.sql, target, &|| self.now()).await?;
        drop(backend);
        self.wake.notify();
        Ok(resumed)
    }

    /// Sets a routing key's limits; waiting claims look again (a larger limit has room).
    pub async fn set_limit(&self, limited: &Limited<'_>) -> Result<()> {
        admin::set_limit(&mut *self.writer().await?, &self.sql, limited, &|| self.now()).await?;
        self.wake.notify();
        Ok(())
    }

    /// Removes a routing key's limits; false when it had none. Its held groups are ready.
    pub async fn remove_limit(&self, routing_key: &str) -> Result<bool> {
        let removed = admin::remove_limit(&mut *self.writer().await?, &self.sql, routing_key).await?;
        self.wake.notify();
        Ok(removed)
    }

    /// The limits in force, by routing key.
    pub async fn limits(&self) -> Result<Vec<LimitInfo>> {
        let now = self.now()?;
        looks::limits(&mut *self.connection().await?, &self.sql, now).await
    }

    /// The pauses in force.
    pub async fn pauses(&self) -> Result<Vec<Pause>> {
        looks::pauses(&mut *self.connection().await?, &self.sql).await
    }

    // ---- watch

    /// A watch for event loops on this database (see `AsyncTransport::watch`).
    pub fn watch(&self, filter: &Filter<'_>) -> Result<Watch> {
        let watch = Watch::new(self.id, &self.wake, filter.min_priority, filter.routing_keys)?;
        let mut bells = self.watches.0.lock().unwrap_or_else(|e| e.into_inner());
        bells.retain(|bell| bell.strong_count() > 0);
        bells.push(Arc::downgrade(watch.bell()));
        Ok(watch)
    }

    /// Clears `watch`'s descriptor and looks without the write lock (see
    /// `AsyncTransport::rearm`).
    pub async fn rearm(&self, watch: &Watch) -> Result<bool> {
        watch.check_owner(self.id)?;
        let heard = watch.clear(&self.wake);
        let looked = async {
            let mut backend = self.connection().await?;
            let now = self.now()?;
            let keys = watch.routing_keys();
            let seen = looks::readiness(&mut backend, &self.sql, (watch.min_priority(), &keys), now, true).await?;
            Ok::<_, Error>((seen, now))
        }
        .await;
        match looked {
            Ok((seen, now)) => Ok(watch.after_look(&seen, now, self.polling, heard)),
            Err(e) => {
                watch.after_error();
                Err(e)
            }
        }
    }

    /// Closes the connection; it cannot fail. Dropping the transport does the same.
    pub async fn close(self) {
        if let Ok(backend) = Arc::try_unwrap(self.backend) {
            backend.into_inner().close();
        }
    }

    pub(crate) fn now(&self) -> Result<f64> {
        let now = (self.clock)();
        if !now.is_finite() || now < 0.0 {
            return Err(Error::Argument(format!("the clock returned {now}; it must return finite epoch seconds")));
        }
        Ok(now)
    }
}
