//! One database of a queue: the queue's operations as `async fn` on it. Each method builds
//! its checked request (request.rs), runs the operation (queue/) on the backend chosen at
//! open (backend/), and wakes this process's waiting claims after a commit that can make a
//! message deliverable, and counts what it did (metrics.rs). Calls on one value run one at
//! a time (one connection, and claims serialize on the database's write lock anyway). The
//! public transports (async_transport.rs) route each call to a shard.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, MutexGuard, OwnedMutexGuard};

use crate::backend::{Backend, Opened};
use crate::chain::Claimed;
use crate::error::{Error, Result};
use crate::metrics::{Meters, Operation};
use crate::mode::Mode;
use crate::options::{Clock, Options};
use crate::queue::{admin, looks, schema, shard_set, work};
use crate::request::{Claim, DeadSelection, Deliver, Extend, Finish, FinishMany, Nack, PageRequest, Publish};
use crate::shards::SetRecord;
use crate::sql::Statements;
use crate::types::{
    DeadLetter, DeadLetters, Delivery, GroupInfo, GroupState, Lease, Message, MessageInfo, Page, Published, Stats,
};
use crate::validate;
use crate::waiting::wait::{Interrupts, Wait};
use crate::waiting::wake::Signal;
use crate::waiting::{Polling, Waiter, Watch};

pub(crate) struct Shard {
    /// Where the queue lives, one call (or one application transaction) at a time.
    backend: Arc<Mutex<Backend>>,
    /// An application's transaction holds the backend (transaction/).
    in_transaction: Arc<AtomicBool>,
    busy_timeout: Duration,
    sql: Statements,
    clock: Clock,
    mode: Mode,
    max_attempts: u32,
    key_retention: f64,
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

impl Shard {
    /// Opens the queue at `database`: a file path, `":memory:"`, a `libsql://` or
    /// `http(s)://` URL (remote), or a path with `Options::sync_url` (embedded replica).
    /// Counts into `meters`, which the queue's shards share.
    pub async fn open(database: &str, options: &Options, meters: Arc<Meters>) -> Result<Shard> {
        validate::non_empty("database", database)?;
        let Opened { mut backend, mode, wake, polling } =
            Backend::open(database, options, Arc::clone(&meters.busy_retries)).await?;
        let mut sql = Statements::new(&options.prefix);
        let absent = if options.schema_as_is {
            schema::as_is(&mut backend, &mut sql).await
        } else {
            schema::prepare(&mut backend, &mut sql, options.create_schema).await.map(|()| Vec::new())
        }
        .map_err(|e| e.during("open"))?;
        let (clock, max_attempts, interrupts) = (options.clock.clone(), options.max_attempts, Interrupts::default());
        let key_retention = options.key_retention;
        Ok(Shard {
            backend: Arc::new(Mutex::new(backend)),
            in_transaction: Arc::default(),
            busy_timeout: options.busy_timeout,
            sql,
            clock,
            mode,
            max_attempts,
            key_retention,
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

    /// Runs `call` (an operation whose arguments were checked), timing it as `operation`
    /// whatever its outcome and counting a lost lease.
    async fn timed<T>(&self, operation: Operation, call: impl Future<Output = Result<T>>) -> Result<T> {
        let started = Instant::now();
        let outcome = call.await;
        self.meters.observe(operation, started.elapsed());
        if let Err(Error::LeaseLost(_)) = &outcome {
            self.meters.lost_leases.add(1);
        }
        outcome
    }

    /// The leases of a committed claim, counted with the heads it buried.
    fn counted(&self, claimed: Claimed) -> Vec<Lease> {
        self.meters.claimed.add(claimed.leases.len() as u64);
        self.meters.dead_lettered_by_claim.add(claimed.buried);
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
    async fn writer(&self) -> Result<MutexGuard<'_, Backend>> {
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

    /// Appends `event_json` to `group_id`'s FIFO. The first publish into a group fixes its
    /// `priority` (0..4) and `routing_key`. One transaction: the message and its group, or neither.
    pub async fn publish(
        &self,
        group_id: &str,
        event_json: &str,
        priority: i32,
        routing_key: Option<&str>,
    ) -> Result<()> {
        let request = Publish::one(Message { group_id, event_json, priority, routing_key })?;
        self.append(&request).await.map_err(|e| e.during("publish"))
    }

    /// `publish` with delivery options (`Delivery`): an idempotency key, a delay or a due
    /// instant. With a key seen within the retention nothing is stored and the first
    /// message's seq comes back as a duplicate; the key and the message are committed
    /// together. A delayed message keeps its place in its group's FIFO: the messages after
    /// it wait behind it (docs/queue.md, "Delayed delivery").
    pub async fn publish_with(&self, message: Message<'_>, delivery: Delivery<'_>) -> Result<Published> {
        let request = Deliver::one(message, delivery).map_err(|e| e.during("publish"))?;
        let published = self.deliver(&request).await.map_err(|e| e.during("publish"))?;
        published.into_iter().next().ok_or_else(|| Error::Database("publish: nothing came back".into()))
    }

    /// `publish_many` with delivery options per message, in one transaction: each message
    /// stored or found a duplicate, or none of them. A key seen earlier in the batch makes
    /// the later message a duplicate of the earlier one. What became of each, in order.
    pub async fn publish_many_with(&self, items: &[(Message<'_>, Delivery<'_>)]) -> Result<Vec<Published>> {
        let request = Deliver::many(items).map_err(|e| e.during("publish_many"))?;
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.deliver(&request).await.map_err(|e| e.during("publish_many"))
    }

    async fn deliver(&self, request: &Deliver<'_, '_>) -> Result<Vec<Published>> {
        self.timed(Operation::Publish, self.deliver_now(request)).await
    }

    /// `deliver`, timed by the caller (a sharded batch is one call over several shards).
    pub(crate) async fn deliver_now(&self, request: &Deliver<'_, '_>) -> Result<Vec<Published>> {
        let mut backend = self.writer().await?;
        let published =
            work::publish_with(&mut backend, &self.sql, request, self.key_retention, &|| self.now()).await?;
        drop(backend);
        self.committed(&published);
        Ok(published)
    }

    /// The write of `publish` and `publish_many`, and of the blocking face's group commits.
    pub(crate) async fn append(&self, request: &Publish<'_, '_>) -> Result<()> {
        self.timed(Operation::Publish, self.append_now(request)).await
    }

    /// `append`, timed by the caller.
    pub(crate) async fn append_now(&self, request: &Publish<'_, '_>) -> Result<()> {
        let mut backend = self.writer().await?;
        work::publish(&mut backend, &self.sql, request, &|| self.now()).await?;
        drop(backend);
        self.meters.published.add(request.messages().len() as u64);
        self.wake.notify();
        Ok(())
    }

    /// `claim`, waiting up to `wait`'s timeout for something deliverable: it returns as
    /// soon as a lease is had, `None` once the timeout passed, `Error::Interrupted` when
    /// `wait`'s cancel fires or `interrupt` is called meanwhile. While it waits it holds no
    /// lock and lets other calls on this transport run. It wakes at once on a commit by any
    /// transport of this process on this queue; on a local file within a few ms of another
    /// process's commit (Linux: the WAL's writes are watched; elsewhere it polls every
    /// 50 ms); at the end of a lease or park; on a server it polls, from 20 ms up to 1 s.
    /// Dropping the future ends the wait; on a server, dropped during the claim's own round
    /// trips, a lease may be left to lapse.
    pub async fn claim_wait(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        wait: &Wait,
    ) -> Result<Option<Lease>> {
        let request = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?;
        let leases = self.claim_waiting(&request, wait).await.map_err(|e| e.during("claim"))?;
        Ok(leases.into_iter().next())
    }

    /// Up to `max` (1..=MAX_CLAIM) leases, as `claim` would hand them out one after
    /// another — each the head of a different group, in serving order — in one
    /// transaction; waits as `claim_wait` does while there is none. Empty when nothing
    /// came within the wait.
    pub async fn claim_many(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        max: usize,
        wait: &Wait,
    ) -> Result<Vec<Lease>> {
        let request = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?.up_to(max)?;
        self.claim_waiting(&request, wait).await.map_err(|e| e.during("claim_many"))
    }

    /// A claim that cannot wait is timed as `Operation::Claim`, one that may as
    /// `Operation::ClaimWait`: its waiting is not the database's latency.
    async fn claim_waiting(&self, request: &Claim<'_>, wait: &Wait) -> Result<Vec<Lease>> {
        if wait.timeout.is_zero() && wait.cancel.is_none() {
            return self.timed(Operation::Claim, self.claim_now(request)).await;
        }
        self.writable()?;
        self.timed(Operation::ClaimWait, self.claim_until(request, wait)).await
    }

    /// The claim `request`, without waiting; timed by the caller.
    pub(crate) async fn claim_now(&self, request: &Claim<'_>) -> Result<Vec<Lease>> {
        self.writable()?;
        let mut backend = self.connection().await?;
        let claimed = work::claim(&mut backend, &self.sql, request, &|| self.now()).await?;
        Ok(self.counted(claimed))
    }

    /// Looks (without the write lock) until a claim with `request`'s filter may find work
    /// here, true, or `wait` is over, false: how a sharded queue's claim waits on all its
    /// shards at once before it claims on the one that has work.
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

    /// Takes a head this shard's claim leased, of a group whose hash names another shard,
    /// out of service (docs/queue.md, "Sharded queues"): its lease becomes a hold by
    /// `MISPLACED` that does not end, so no worker here serves the group while its own shard
    /// may, until `harel-transport shards rehome` moves it there.
    pub(crate) async fn set_aside(&self, lease: &Lease) -> Result<()> {
        let request = Finish::new(lease)?;
        let mut backend = self.writer().await?;
        work::set_aside(&mut backend, &self.sql, request).await
    }

    /// The database's record of the shard set it belongs to, and whether it holds messages.
    pub(crate) async fn set_record(&self) -> Result<(Option<SetRecord>, bool)> {
        shard_set::read(&mut *self.connection().await?, &self.sql).await
    }

    /// Writes `record` unless the database has one; the one it has now.
    pub(crate) async fn record_set(&self, record: &SetRecord) -> Result<SetRecord> {
        shard_set::write(&mut *self.writer().await?, &self.sql, record).await
    }

    /// Looks (without the write lock) and claims once a look finds a deliverable head; while
    /// nothing came and the wait lasts, pauses between looks (waiting/waiter.rs).
    async fn claim_until(&self, request: &Claim<'_>, wait: &Wait) -> Result<Vec<Lease>> {
        let mut waiter = Waiter::new(wait, &self.interrupts, &self.wake, self.polling)?;
        // Locally the first step is a look, so a claim that may wait never waits for the write
        // lock on an empty queue; on a server the claim's own request is the cheaper first step.
        let mut looked = self.polling == Polling::Local;
        loop {
            let woken = self.wake.armed();
            let mut backend = self.connection().await?;
            let now = self.now()?;
            let mut readiness = match looked {
                true => Some(
                    looks::readiness(&mut backend, &self.sql, (request.min_priority, request.routing_keys), now, false)
                        .await?,
                ),
                false => None,
            };
            if readiness.as_ref().is_none_or(|r| r.deliverable) {
                let leases = self.counted(work::claim(&mut backend, &self.sql, request, &|| self.now()).await?);
                if !leases.is_empty() || waiter.is_over() {
                    return Ok(leases);
                }
                readiness = Some(
                    looks::readiness(&mut backend, &self.sql, (request.min_priority, request.routing_keys), now, false)
                        .await?,
                );
            }
            drop(backend);
            let readiness = readiness.expect("a look or a claim came first");
            if !waiter.pause(woken, &readiness, now).await? {
                return Ok(Vec::new());
            }
            looked = true;
        }
    }

    /// A watch for event loops: a descriptor (`AsRawFd`) that becomes readable when a claim
    /// with this filter may find work, polled instead of waiting in a claim (see `Watch`
    /// and docs/abi.md, "Watching for work"). It starts readable; `rearm` says whether to
    /// claim. Closing or dropping this transport leaves it readable for good.
    pub fn watch(&self, min_priority: i32, routing_keys: &[&str]) -> Result<Watch> {
        let watch = (|| {
            validate::priority("min_priority", min_priority)?;
            validate::routing_keys(routing_keys)?;
            Watch::new(self.id, &self.wake, min_priority, routing_keys)
        })()
        .map_err(|e| e.during("watch"))?;
        let mut bells = self.watches.0.lock().unwrap_or_else(|e| e.into_inner());
        bells.retain(|bell| bell.strong_count() > 0);
        bells.push(Arc::downgrade(watch.bell()));
        Ok(watch)
    }

    /// Clears `watch`'s descriptor and looks without the write lock: true when a claim with
    /// its filter would find work now (the descriptor stays readable: claim until nothing
    /// comes, then poll again); false when none would, the descriptor then clear and armed
    /// to become readable when that may change. `Error::Argument` for a watch of another
    /// transport. After an error the descriptor becomes readable again within a second.
    pub async fn rearm(&self, watch: &Watch) -> Result<bool> {
        watch.check_owner(self.id).map_err(|e| e.during("rearm"))?;
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
                Err(e.during("rearm"))
            }
        }
    }

    /// Ends every wait of a claim on this transport that is in progress (they return
    /// `Error::Interrupted`); later claims wait as usual.
    pub fn interrupt(&self) {
        self.interrupts.interrupt();
    }

    /// Deletes the leased message (and its group when it was the last). `Error::LeaseLost`
    /// if it is gone or leased to another worker; then nothing changes.
    pub async fn ack(&self, lease: &Lease) -> Result<()> {
        let request = Finish::new(lease)?;
        self.timed(Operation::Ack, async {
            let mut backend = self.writer().await?;
            work::ack(&mut backend, &self.sql, request, &|| self.now()).await
        })
        .await
        .map_err(|e| e.during("ack"))?;
        self.meters.acked.add(1);
        self.wake.notify();
        Ok(())
    }

    /// Acks every lease in one transaction (one commit), in order, with an outcome per
    /// lease: `Err(Error::LeaseLost)` for one that was lost (nothing of it changed) while
    /// the others are acked. An error of the whole call (`Busy`, ...) acks none. Each lease
    /// is checked as for `ack` first; an argument error names it ("leases[2].worker_id ...").
    pub async fn ack_many(&self, leases: &[Lease]) -> Result<Vec<Result<()>>> {
        let request = FinishMany::new(leases)?;
        self.timed(Operation::Ack, self.ack_many_now(&request)).await.map_err(|e| e.during("ack_many"))
    }

    /// `ack_many`, timed by the caller.
    pub(crate) async fn ack_many_now(&self, request: &FinishMany<'_>) -> Result<Vec<Result<()>>> {
        let mut backend = self.writer().await?;
        let outcomes = work::ack_many(&mut backend, &self.sql, request, &|| self.now()).await?;
        drop(backend);
        self.count_acks(&outcomes);
        self.wake.notify();
        Ok(outcomes)
    }

    /// `ack_many`, then `claim_many` without waiting, in one transaction: a batch worker's
    /// loop with one commit per batch. A lost lease is reported in its outcome and does not
    /// stop the claim.
    pub async fn ack_and_claim_many(
        &self,
        leases: &[Lease],
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        max: usize,
    ) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
        let finish = FinishMany::new(leases)?;
        let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?.up_to(max)?;
        let (outcomes, claimed) = self
            .timed(Operation::AckAndClaim, async {
                let mut backend = self.writer().await?;
                work::ack_and_claim_many(&mut backend, &self.sql, &finish, &claim, &|| self.now()).await
            })
            .await
            .map_err(|e| e.during("ack_and_claim_many"))?;
        self.count_acks(&outcomes);
        self.wake.notify();
        Ok((outcomes, self.counted(claimed)))
    }

    /// The lease now runs to now + `visibility` seconds (> 0), and `lease.lock_expiry`
    /// says so. `Error::LeaseLost` as for `ack` (then the lease is unchanged): acked, nacked,
    /// or lapsed and claimed by another worker; a lease that lapsed and that no one
    /// claimed since is still this worker's and is extended.
    pub async fn extend(&self, lease: &mut Lease, visibility: f64) -> Result<()> {
        let request = Extend::new(lease, visibility)?;
        let lock_expiry = self
            .timed(Operation::Extend, async {
                let mut backend = self.writer().await?;
                work::extend(&mut backend, &self.sql, &request, &|| self.now()).await
            })
            .await
            .map_err(|e| e.during("extend"))?;
        lease.lock_expiry = lock_expiry;
        Ok(())
    }

    /// Acks `lease` and claims the next message for `worker_id`, in one transaction: a
    /// worker's loop with one commit per message instead of two. If the ack fails
    /// (`Error::LeaseLost`, ...) nothing is claimed. Arguments as for `ack` and `claim`.
    pub async fn ack_and_claim(
        &self,
        lease: &Lease,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        let finish = Finish::new(lease)?;
        let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?;
        let claimed = self
            .timed(Operation::AckAndClaim, async {
                let mut backend = self.writer().await?;
                work::ack_and_claim(&mut backend, &self.sql, finish, &claim, &|| self.now()).await
            })
            .await
            .map_err(|e| e.during("ack_and_claim"))?;
        self.meters.acked.add(1);
        self.wake.notify();
        Ok(self.counted(claimed).into_iter().next())
    }

    /// Gives the message back: claimable at once with `delay` 0, parked (its group
    /// blocked) for `delay` seconds otherwise. Same `Error::LeaseLost` rule as `ack`.
    pub async fn nack(&self, lease: &Lease, delay: f64) -> Result<()> {
        let request = Nack::new(lease, delay)?;
        self.timed(Operation::Nack, async {
            let mut backend = self.writer().await?;
            work::nack(&mut backend, &self.sql, &request, &|| self.now()).await
        })
        .await
        .map_err(|e| e.during("nack"))?;
        match request.delay > 0.0 {
            true => self.meters.parked.add(1),
            false => self.meters.nacked.add(1),
        }
        self.wake.notify();
        Ok(())
    }

    /// Moves the leased message to the dead-letter table with `reason` (a worker that
    /// knows the message will never succeed); its group goes on with the next message.
    /// `Error::LeaseLost` as for `ack`.
    pub async fn dead_letter(&self, lease: &Lease, reason: &str) -> Result<()> {
        let finish = Finish::new(lease)?;
        validate::non_empty("reason", reason)?;
        self.timed(Operation::DeadLetter, async {
            let mut backend = self.writer().await?;
            work::dead_letter(&mut backend, &self.sql, finish, reason, &|| self.now()).await
        })
        .await
        .map_err(|e| e.during("dead_letter"))?;
        self.meters.dead_lettered.add(1);
        self.wake.notify();
        Ok(())
    }

    /// Exact counts of the queue now, read without the write lock (see `Stats`).
    pub async fn stats(&self) -> Result<Stats> {
        let now = self.now()?;
        let mut backend = self.connection().await?;
        looks::stats(&mut backend, &self.sql, now).await.map_err(|e| e.during("stats"))
    }

    /// A page of groups in group id order (only those in `state`, if given), from `cursor`
    /// (None: the first page; else the `next` of the page before), at most `limit`
    /// (1..=MAX_PAGE). Read without the write lock.
    pub async fn groups(
        &self,
        state: Option<GroupState>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<GroupInfo>> {
        let page = PageRequest::new('g', cursor, limit)?;
        let now = self.now()?;
        let mut backend = self.connection().await?;
        looks::groups(&mut backend, &self.sql, state, &page, now).await.map_err(|e| e.during("groups"))
    }

    /// A page of a group's messages, oldest first, without claiming them.
    pub async fn peek(&self, group_id: &str, cursor: Option<&str>, limit: usize) -> Result<Page<MessageInfo>> {
        validate::non_empty("group_id", group_id)?;
        let page = PageRequest::new('m', cursor, limit)?;
        let mut backend = self.connection().await?;
        looks::peek(&mut backend, &self.sql, group_id, &page).await.map_err(|e| e.during("peek"))
    }

    /// A page of dead letters in the order they had in the queue (one group's, if given).
    pub async fn dead_letters(
        &self,
        group_id: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<DeadLetter>> {
        if let Some(group_id) = group_id {
            validate::non_empty("group_id", group_id)?;
        }
        let page = PageRequest::new('d', cursor, limit)?;
        let mut backend = self.connection().await?;
        looks::dead_letters(&mut backend, &self.sql, group_id, &page).await.map_err(|e| e.during("dead_letters"))
    }

    /// Moves dead letters back into their groups as their newest messages (after what
    /// the groups hold now), in the order they had, claimed 0 times; the number moved.
    pub async fn redrive(&self, which: DeadLetters<'_>) -> Result<u64> {
        let selection = DeadSelection::new(which)?;
        let mut backend = self.writer().await.map_err(|e| e.during("redrive"))?;
        let moved = admin::redrive(&mut backend, &self.sql, &selection, &|| self.now())
            .await
            .map_err(|e| e.during("redrive"))?;
        self.wake.notify();
        Ok(moved)
    }

    /// Deletes dead letters; the number deleted.
    pub async fn purge_dead(&self, which: DeadLetters<'_>) -> Result<u64> {
        let selection = DeadSelection::new(which)?;
        let mut backend = self.writer().await.map_err(|e| e.during("purge_dead"))?;
        admin::purge_dead(&mut backend, &self.sql, &selection).await.map_err(|e| e.during("purge_dead"))
    }

    /// Deletes a group's messages (a lease on one of them is lost); the number deleted.
    pub async fn purge_group(&self, group_id: &str) -> Result<u64> {
        validate::non_empty("group_id", group_id)?;
        let mut backend = self.writer().await.map_err(|e| e.during("purge_group"))?;
        admin::purge_group(&mut backend, &self.sql, group_id).await.map_err(|e| e.during("purge_group"))
    }

    /// Deletes every message and group (dead letters stay); the number of messages.
    pub async fn purge(&self) -> Result<u64> {
        let mut backend = self.writer().await.map_err(|e| e.during("purge"))?;
        admin::purge(&mut backend, &self.sql).await.map_err(|e| e.during("purge"))
    }

    /// Ends the lease or park on a group's head now (a stuck group is served again at
    /// once; the holder's ack then finds its lease lost); false when nothing was held.
    pub async fn release(&self, group_id: &str) -> Result<bool> {
        validate::non_empty("group_id", group_id)?;
        let mut backend = self.writer().await.map_err(|e| e.during("release"))?;
        let released =
            admin::release(&mut backend, &self.sql, group_id, &|| self.now()).await.map_err(|e| e.during("release"))?;
        self.wake.notify();
        Ok(released)
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
