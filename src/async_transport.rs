//! The async face: every call's arguments checked once, as the operation's request
//! (request.rs), timed and counted (metrics.rs), and handed to the router (shards/router.rs),
//! which sends it to the queue's one database or, sharded, to the shards it concerns.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::metrics::{Meters, Metrics, Operation};
use crate::mode::Mode;
use crate::options::Options;
use crate::queue::database::Queue;
use crate::request::{
    Bury, Claim, DeadSelection, Deliver, Extend, Filter, Finish, FinishMany, Group, Limited, Listing, Nack, Paused,
    Publish,
};
use crate::shards::{self, Router, Watch};
use crate::telemetry::{Outcome, Telemetry};
use crate::headers::Headers;
use crate::types::{
    Archived, DeadLetter, DeadLetters, Delivery, GroupInfo, GroupState, Lease, Limit, LimitInfo, Message, MessageInfo, Page, Pause,
    PauseTarget, Published, Stats,
};
use crate::waiting::wait::Wait;

pub struct AsyncTransport {
    router: Router,
    max_attempts: u32,
    /// The options' retry policy as its claims bind it (sql/retry.rs).
    retry: Option<String>,
    meters: Arc<Meters>,
    /// What the shards lack of the schema, each named with its shard when there are several.
    absent: Vec<String>,
    /// Spans around publishes and leases, when the options gave a tracer.
    pub(crate) telemetry: Telemetry,
}

impl AsyncTransport {
    /// Opens the queue at `database`: a file path, `":memory:"`, a `libsql://` or
    /// `http(s)://` URL (remote), or a path with `Options::sync_url` (embedded replica).
    /// A database that is one shard of a sharded queue is refused: open its whole list.
    pub async fn open(database: &str, options: &Options) -> Result<AsyncTransport> {
        Self::open_shards(&[database], options).await
    }

    /// Opens one queue sharded over `databases` (files, server URLs, or paths of embedded
    /// replicas with `Options::sync_urls` naming each one's primary; the same options
    /// otherwise), in their shard order: each group
    /// lives on the shard `shard_of` names. The first open of a list of empty databases
    /// makes it a set, recorded in each; later opens must give the same list in the same
    /// order, or are refused with `Error::Argument` saying which database does not match.
    /// A list of one is a queue of one database, as `open` opens.
    pub async fn open_shards(databases: &[&str], options: &Options) -> Result<AsyncTransport> {
        Self::open_each(databases, &Self::options_of_each(databases, options)?).await
    }

    /// The options each of `databases` opens with, once the list itself is checked: of
    /// 1..=`MAX_SHARDS` databases, none empty or repeated, and `options` fit for it.
    pub(crate) fn options_of_each(databases: &[&str], options: &Options) -> Result<Vec<Options>> {
        shards::options_of_each(databases, options)
    }

    /// `open_shards` of a checked list, each database with its options (`options_of_each`).
    pub(crate) async fn open_each(databases: &[&str], each: &[Options]) -> Result<AsyncTransport> {
        let meters = Arc::new(Meters::default());
        let router = shards::open_each(databases, each, &meters).await?;
        let absent = match router.queues() {
            [one] => one.absent().to_vec(),
            several => (several.iter().enumerate())
                .flat_map(|(i, q)| q.absent().iter().map(move |a| format!("{a} (shard {i})")))
                .collect(),
        };
        let telemetry = Telemetry::of(each[0].tracing.as_ref(), &each[0].prefix);
        let (max_attempts, retry) = (each[0].max_attempts, each[0].retry.as_ref().map(crate::sql::stored_retry));
        Ok(AsyncTransport { router, max_attempts, retry, meters, absent, telemetry })
    }

    /// A claim checked, under this transport's rules: `max_attempts` and the retry policy.
    fn claim_request<'a>(
        &'a self,
        worker_id: &'a str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &'a [&'a str],
    ) -> Result<Claim<'a>> {
        let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?;
        Ok(claim.with_retry(self.retry.as_deref()))
    }

    /// Runs `call`, the operation `name` on a checked request: timed as `operation` (if
    /// any) whatever its outcome, a lost lease counted, and an error naming `name`.
    async fn call<T>(&self, operation: Option<Operation>, name: &str, call: impl Future<Output = Result<T>>) -> Result<T> {
        let started = Instant::now();
        let outcome = call.await;
        if let Some(operation) = operation {
            self.meters.observe(operation, started.elapsed());
        }
        if let Err(Error::LeaseLost(_)) = &outcome {
            self.meters.lost_leases.add(1);
        }
        outcome.map_err(|e| e.during(name))
    }

    /// How many databases the queue is sharded over (1: not sharded).
    pub fn shard_count(&self) -> usize {
        self.router.queues().len()
    }

    /// The shard that holds `group_id` (`shards::shard_of`).
    pub fn shard_of(&self, group_id: &str) -> usize {
        self.router.shard_of(group_id)
    }

    /// The one database of a queue that is not sharded: what an application's transaction
    /// runs on (a transaction is one database's).
    pub(crate) fn single(&self) -> Result<&Queue> {
        self.router.single()
    }

    /// What this transport counted since it was opened (every shard's calls): messages
    /// published, claimed, acked, nacked and dead-lettered, lost leases, busy retries, and
    /// each operation's latency (see `Metrics`). Read without a lock.
    pub fn metrics(&self) -> Metrics {
        self.meters.snapshot()
    }

    /// What the queue lacks of this library's schema, each as "the table T" or "the column
    /// T.C" (with " (shard i)" when sharded): empty unless opened with
    /// `Options::schema_as_is` a file that lacks them (a harel 0.9 file). The looks read
    /// around them; every write is refused.
    pub fn absent(&self) -> &[String] {
        &self.absent
    }

    /// Where the queue lives (its first shard, when sharded).
    pub fn mode(&self) -> Mode {
        self.router.queues()[0].mode()
    }

    // ---- publish

    /// Appends `event_json` to `group_id`'s FIFO. The first publish into a group fixes its
    /// `priority` (0..4) and `routing_key`. One transaction: the message and its group, or neither.
    pub async fn publish(
        &self,
        group_id: &str,
        event_json: &str,
        priority: i32,
        routing_key: Option<&str>,
    ) -> Result<()> {
        let request = Publish::one(Message { group_id, event_json, priority, routing_key, headers: None })?;
        self.appended(&request, "publish").await
    }

    /// Appends `messages` in order (within a group, FIFO order is the batch's order), each
    /// as `publish` would. Every message is checked before anything is written; an
    /// `Error::Argument` names the bad one by index (`messages[3].event_json ...`). An empty
    /// batch does nothing. On one database, one transaction: all of them or none. Sharded,
    /// one transaction per shard, in shard order: each shard's part all or none, and an
    /// error names the shards whose parts were stored before it (publish with keys,
    /// `publish_many_with`, to retry the whole batch safely).
    pub async fn publish_many(&self, messages: &[Message<'_>]) -> Result<()> {
        let request = Publish::many(messages)?;
        self.appended(&request, "publish_many").await
    }

    /// The write of a publish (`name`), in a span when traced.
    async fn appended(&self, request: &Publish<'_, '_>, name: &str) -> Result<()> {
        let Some((span, headers)) = self.telemetry.publishing(request.messages()) else {
            return self.call(Some(Operation::Publish), name, self.router.append(request)).await;
        };
        let traced = with_headers(request.messages(), &headers);
        let appended = self.call(Some(Operation::Publish), name, self.router.append(&Publish::checked(&traced))).await;
        self.telemetry.published(Some(span), &appended, &[]);
        appended
    }

    /// The write of `publish_many`, and of the blocking face's group commits.
    pub(crate) async fn append(&self, request: &Publish<'_, '_>) -> Result<()> {
        let started = Instant::now();
        let appended = self.router.append(request).await;
        self.meters.observe(Operation::Publish, started.elapsed());
        appended
    }

    /// `publish` with delivery options (`Delivery`): an idempotency key, a delay or a due
    /// instant. With a key seen within the retention nothing is stored and the first
    /// message's seq comes back as a duplicate; the key and the message are committed
    /// together. A delayed message keeps its place in its group's FIFO: the messages after
    /// it wait behind it (docs/queue.md, "Delayed delivery"). A key is remembered on its
    /// message's shard.
    pub async fn publish_with(&self, message: Message<'_>, delivery: Delivery<'_>) -> Result<Published> {
        let request = Deliver::one(message, delivery).map_err(|e| e.during("publish"))?;
        let published = self.delivered(&request, "publish").await?;
        published.into_iter().next().ok_or_else(|| Error::Database("publish: nothing came back".into()))
    }

    /// `publish_many` with delivery options per message: each message stored or found a
    /// duplicate, or none of them (sharded: per shard, as `publish_many`). A key seen
    /// earlier in the batch makes the later message a duplicate of the earlier one. What
    /// became of each, in order.
    pub async fn publish_many_with(&self, items: &[(Message<'_>, Delivery<'_>)]) -> Result<Vec<Published>> {
        let request = Deliver::many(items).map_err(|e| e.during("publish_many"))?;
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.delivered(&request, "publish_many").await
    }

    /// The write of a publish with delivery options (`name`), in a span when traced.
    async fn delivered(&self, request: &Deliver<'_, '_>, name: &str) -> Result<Vec<Published>> {
        // Off, nothing is copied: no messages, no span.
        let messages: Vec<Message<'_>> = match self.telemetry.on() {
            true => request.items().iter().map(|(m, _)| *m).collect(),
            false => Vec::new(),
        };
        let Some((span, headers)) = self.telemetry.publishing(&messages) else {
            return self.call(Some(Operation::Publish), name, self.router.deliver(request)).await;
        };
        let items = with_headers(&messages, &headers).into_iter().zip(request.items()).map(|(m, (_, d))| (m, *d));
        let traced = Deliver::traced(request, items.collect());
        let published = self.call(Some(Operation::Publish), name, self.router.deliver(&traced)).await;
        let seqs: Vec<i64> = published.iter().flatten().map(|p| p.seq).collect();
        self.telemetry.published(Some(span), &published, &seqs);
        published
    }

    // ---- claim

    /// Leases the head of the group that has waited longest among those with nothing in
    /// flight, priority >= `min_priority` and (when any are given) one of `routing_keys`,
    /// to `worker_id` for `visibility` seconds. `None` when nothing is deliverable.
    /// Sharded, each claim starts at the next shard in turn and goes on to the others
    /// until one has something.
    pub async fn claim(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        self.claim_wait(worker_id, visibility, min_priority, routing_keys, &Wait::none()).await
    }

    /// `claim`, waiting up to `wait`'s timeout for something deliverable: it returns as
    /// soon as a lease is had, `None` once the timeout passed, `Error::Interrupted` when
    /// `wait`'s cancel fires or `interrupt` is called meanwhile. While it waits it holds no
    /// lock and lets other calls on this transport run. It wakes at once on a commit by any
    /// transport of this process on this queue; on a local file within a few ms of another
    /// process's commit (Linux: the WAL's writes are watched; elsewhere it polls every
    /// 50 ms); at the end of a lease or park; on a server it polls, from 20 ms up to 1 s.
    /// Sharded, it waits on every shard at once. Dropping the future ends the wait; on a
    /// server, dropped during the claim's own round trips, a lease may be left to lapse.
    pub async fn claim_wait(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        wait: &Wait,
    ) -> Result<Option<Lease>> {
        let request = self.claim_request(worker_id, visibility, min_priority, routing_keys)?;
        Ok(self.claimed(&request, wait, "claim").await?.into_iter().next())
    }

    /// Up to `max` (1..=MAX_CLAIM) leases, as `claim` would hand them out one after
    /// another — each the head of a different group, in serving order — in one
    /// transaction; waits as `claim_wait` does while there is none. Empty when nothing
    /// came within the wait. Sharded, a batch is filled from the shards in turn, one
    /// transaction on each that gives some.
    pub async fn claim_many(
        &self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
        max: usize,
        wait: &Wait,
    ) -> Result<Vec<Lease>> {
        let request = self.claim_request(worker_id, visibility, min_priority, routing_keys)?.up_to(max)?;
        self.claimed(&request, wait, "claim_many").await
    }

    /// A claim that cannot wait is timed as `Operation::Claim`, one that may as
    /// `Operation::ClaimWait`: its waiting is not the database's latency.
    async fn claimed(&self, request: &Claim<'_>, wait: &Wait, name: &str) -> Result<Vec<Lease>> {
        let operation = match wait.timeout.is_zero() && wait.cancel.is_none() {
            true => Operation::Claim,
            false => Operation::ClaimWait,
        };
        let leases = self.call(Some(operation), name, self.router.claim(request, wait)).await?;
        self.telemetry.leased(&leases, request.visibility);
        Ok(leases)
    }

    /// Acks `lease` and claims the next message for `worker_id`, in one transaction: a
    /// worker's loop with one commit per message instead of two. If the ack fails
    /// (`Error::LeaseLost`, ...) nothing is claimed. Arguments as for `ack` and `claim`.
    /// Sharded, the claim is on the lease's shard in the same transaction, and on the other
    /// shards in turn when that one has nothing; one call in 8 acks alone and claims from
    /// the next shard in turn, so a worker kept busy by one shard still serves the others.
    /// Once the ack is committed, a claim on the other shards that fails is not the call's
    /// error: it returns no lease.
    pub async fn ack_and_claim(
        &self,
        lease: &Lease,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>> {
        let finish = Finish::new(lease)?;
        let claim = self.claim_request(worker_id, visibility, min_priority, routing_keys)?;
        let fused = self.router.ack_and_claim(finish, &claim);
        let next = self.call(Some(Operation::AckAndClaim), "ack_and_claim", fused).await;
        self.telemetry.finished(lease, Outcome::Acked, &next.as_ref().map(drop).map_err(Error::clone));
        let next = next?;
        self.telemetry.leased(next.as_slice(), visibility);
        Ok(next)
    }

    /// `ack_many`, then `claim_many` without waiting, in one transaction: a batch worker's
    /// loop with one commit per batch. A lost lease is reported in its outcome and does not
    /// stop the claim. Sharded, the acks and the claim share the transaction of the first
    /// lease's shard; the other shards' leases are acked as `ack_many` does, and the batch
    /// is filled from the other shards when that one has too little.
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
        let claim = self.claim_request(worker_id, visibility, min_priority, routing_keys)?.up_to(max)?;
        let fused = self.router.ack_and_claim_many(&finish, &claim);
        let (acked, next) = self.call(Some(Operation::AckAndClaim), "ack_and_claim_many", fused).await?;
        for (lease, outcome) in leases.iter().zip(&acked) {
            self.telemetry.finished(lease, Outcome::Acked, &outcome.as_ref().map(drop).map_err(Error::clone));
        }
        self.telemetry.leased(&next, visibility);
        Ok((acked, next))
    }

    /// Ends every wait of a claim on this transport that is in progress (they return
    /// `Error::Interrupted`); later claims wait as usual.
    pub fn interrupt(&self) {
        self.router.interrupt();
    }

    // ---- finish

    /// Deletes the leased message (and its group when it was the last). `Error::LeaseLost`
    /// if it is gone or leased to another worker; then nothing changes.
    pub async fn ack(&self, lease: &Lease) -> Result<()> {
        let finish = Finish::new(lease)?;
        let acked = self.call(Some(Operation::Ack), "ack", self.router.ack(finish)).await;
        self.telemetry.finished(lease, Outcome::Acked, &acked);
        acked
    }

    /// Acks every lease in one transaction (one commit), in order, with an outcome per
    /// lease: `Err(Error::LeaseLost)` for one that was lost (nothing of it changed) while
    /// the others are acked. An error of the whole call (`Busy`, ...) acks none. Each lease
    /// is checked as for `ack` first; an argument error names it ("leases[2].worker_id ...").
    /// Sharded, one transaction per shard: an error of a shard's transaction is the outcome
    /// of each of its leases, and the other shards' leases are acked.
    pub async fn ack_many(&self, leases: &[Lease]) -> Result<Vec<Result<()>>> {
        let finish = FinishMany::new(leases)?;
        let acked = self.call(Some(Operation::Ack), "ack_many", self.router.ack_many(&finish)).await?;
        for (lease, outcome) in leases.iter().zip(&acked) {
            self.telemetry.finished(lease, Outcome::Acked, &outcome.as_ref().map(drop).map_err(Error::clone));
        }
        Ok(acked)
    }

    /// The lease now runs to now + `visibility` seconds (> 0), and `lease.lock_expiry`
    /// says so. `Error::LeaseLost` as for `ack` (then the lease is unchanged): acked, nacked,
    /// or lapsed and claimed by another worker; a lease that lapsed and that no one
    /// claimed since is still this worker's and is extended.
    pub async fn extend(&self, lease: &mut Lease, visibility: f64) -> Result<()> {
        let request = Extend::new(lease, visibility)?;
        let extended = self.call(Some(Operation::Extend), "extend", self.router.extend(&request)).await;
        if let Ok(lock_expiry) = extended {
            lease.lock_expiry = lock_expiry;
        }
        let extended = extended.map(drop);
        self.telemetry.finished(lease, Outcome::Extended, &extended);
        extended
    }

    /// Gives the message back: claimable at once with `delay` 0, parked (its group
    /// blocked) for `delay` seconds otherwise. Same `Error::LeaseLost` rule as `ack`.
    pub async fn nack(&self, lease: &Lease, delay: f64) -> Result<()> {
        let request = Nack::new(lease, delay)?;
        let nacked = self.call(Some(Operation::Nack), "nack", self.router.nack(&request)).await;
        self.telemetry.finished(lease, Outcome::Nacked(delay), &nacked);
        nacked
    }

    /// Moves the leased message to the dead-letter table with `reason` (a worker that
    /// knows the message will never succeed); its group goes on with the next message.
    /// `Error::LeaseLost` as for `ack`.
    pub async fn dead_letter(&self, lease: &Lease, reason: &str) -> Result<()> {
        let request = Bury::new(lease, reason)?;
        let buried = self.call(Some(Operation::DeadLetter), "dead_letter", self.router.dead_letter(&request)).await;
        self.telemetry.finished(lease, Outcome::Dead(reason), &buried);
        buried
    }

    // ---- looks

    /// Exact counts of the queue now, read without the write lock (see `Stats`); sharded,
    /// every shard's added up (`shard_stats` has each).
    pub async fn stats(&self) -> Result<Stats> {
        self.call(None, "stats", self.router.stats()).await
    }

    /// A page of groups in group id order (only those in `state`, if given), from `cursor`
    /// (None: the first page; else the `next` of the page before), at most `limit`
    /// (1..=MAX_PAGE). Read without the write lock. Sharded, each group says its shard; a
    /// group found on two shards (see docs/queue.md, misplaced groups) is listed on each.
    pub async fn groups(
        &self,
        state: Option<GroupState>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<GroupInfo>> {
        let listing = Listing::new(cursor, limit)?;
        self.call(None, "groups", self.router.groups(state, &listing)).await
    }

    /// A page of a group's messages, oldest first, without claiming them (sharded: on the
    /// group's shard).
    pub async fn peek(&self, group_id: &str, cursor: Option<&str>, limit: usize) -> Result<Page<MessageInfo>> {
        let group = Group::new(group_id)?;
        let listing = Listing::new(cursor, limit)?;
        self.call(None, "peek", self.router.peek(group, &listing)).await
    }

    /// A page of dead letters in the order they had in the queue (one group's, if given).
    /// Sharded, shard after shard, each saying its shard; one group's from its shard.
    pub async fn dead_letters(
        &self,
        group_id: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<DeadLetter>> {
        let group = group_id.map(Group::new).transpose()?;
        let listing = Listing::new(cursor, limit)?;
        self.call(None, "dead_letters", self.router.dead_letters(group, &listing)).await
    }

    /// A page of archived messages in seq order (one group's, if given: its history in
    /// order), while the archive keeps them (`Options::archive`). Sharded, shard after
    /// shard, each saying its shard; one group's from its shard.
    pub async fn archive(&self, group_id: Option<&str>, cursor: Option<&str>, limit: usize) -> Result<Page<Archived>> {
        let group = group_id.map(Group::new).transpose()?;
        let listing = Listing::new(cursor, limit)?;
        self.call(None, "archive", self.router.archive(group, &listing)).await
    }

    // ---- admin

    /// Moves dead letters back into their groups as their newest messages (after what
    /// the groups hold now), in the order they had, claimed 0 times; the number moved.
    /// Sharded, on every shard (by seq: a seq names one shard's letter, see `redrive_on`).
    pub async fn redrive(&self, which: DeadLetters<'_>) -> Result<u64> {
        let selection = DeadSelection::new(which)?;
        self.call(None, "redrive", self.router.redrive(&selection)).await
    }

    /// Deletes dead letters; the number deleted. Sharded as `redrive`.
    pub async fn purge_dead(&self, which: DeadLetters<'_>) -> Result<u64> {
        let selection = DeadSelection::new(which)?;
        self.call(None, "purge_dead", self.router.purge_dead(&selection)).await
    }

    /// Deletes a group's messages (a lease on one of them is lost); the number deleted.
    /// Sharded, on every shard that has the group.
    pub async fn purge_group(&self, group_id: &str) -> Result<u64> {
        let group = Group::new(group_id)?;
        self.call(None, "purge_group", self.router.purge_group(group)).await
    }

    /// Deletes every message and group (dead letters stay); the number of messages.
    pub async fn purge(&self) -> Result<u64> {
        self.call(None, "purge", self.router.purge()).await
    }

    /// Ends the lease or park on a group's head now (a stuck group is served again at
    /// once; the holder's ack then finds its lease lost); false when nothing was held.
    /// Sharded, on its shard (a misplaced group's hold is moved by `shards rehome`, not released).
    pub async fn release(&self, group_id: &str) -> Result<bool> {
        let group = Group::new(group_id)?;
        self.call(None, "release", self.router.release(group)).await
    }

    /// Pauses a group, a routing key or the whole queue (docs/queue.md, "Pause and
    /// resume"): stored in the database, so every process sees it until it is resumed. A
    /// paused group keeps its messages in order and no claim takes them (harel 0.9's
    /// neither); a lease in hand finishes; publishes go on. True when the pause is new.
    /// Sharded, on every shard.
    pub async fn pause(&self, target: PauseTarget<'_>) -> Result<bool> {
        let Paused(target) = Paused::new(target)?;
        self.call(None, "pause", self.router.pause(&target)).await
    }

    /// Ends a pause: the groups it named that no other pause names are served again, each
    /// from its head. True when `target` was paused (false: nothing changed).
    pub async fn resume(&self, target: PauseTarget<'_>) -> Result<bool> {
        let Paused(target) = Paused::new(target)?;
        self.call(None, "resume", self.router.resume(&target)).await
    }

    /// The pauses in force, the queue's first, then by kind and name.
    pub async fn pauses(&self) -> Result<Vec<Pause>> {
        self.call(None, "pauses", self.router.pauses()).await
    }

    /// Limits the groups of `routing_key` (docs/queue.md, "Limits"): at most
    /// `limit.concurrency` of their messages leased at once, leases taken at most at
    /// `limit.rate`, for every worker of every process; replaces the key's limits (one not
    /// given is off). A claim passes over a group whose key has no room and holds it until
    /// the key has room. Sharded: each shard holds the limit for its own groups.
    pub async fn set_limit(&self, routing_key: &str, limit: Limit) -> Result<()> {
        let limited = Limited::new(routing_key, limit)?;
        self.call(None, "set_limit", self.router.set_limit(&limited)).await
    }

    /// Removes `routing_key`'s limits; its held groups are served again at once.
    /// `Error::Argument` when it has none.
    pub async fn remove_limit(&self, routing_key: &str) -> Result<()> {
        crate::validate::non_empty("routing_key", routing_key)?;
        if self.call(None, "remove_limit", self.router.remove_limit(routing_key)).await? {
            return Ok(());
        }
        Err(Error::Argument(format!("routing key {routing_key:?} has no limit to remove")))
    }

    /// The limits in force by routing key, with their use now (sharded: summed over the shards).
    pub async fn limits(&self) -> Result<Vec<LimitInfo>> {
        self.call(None, "limits", self.router.limits()).await
    }

    // ---- shards

    /// Each shard's counts, in shard order.
    pub async fn shard_stats(&self) -> Result<Vec<Stats>> {
        self.router.shard_stats().await
    }

    /// `redrive` on one shard: how a sharded queue's dead letters are named by seq.
    pub async fn redrive_on(&self, shard: usize, which: DeadLetters<'_>) -> Result<u64> {
        let queue = self.router.shard(shard)?;
        let selection = DeadSelection::new(which)?;
        self.call(None, "redrive", queue.redrive(&selection)).await
    }

    /// `purge_dead` on one shard.
    pub async fn purge_dead_on(&self, shard: usize, which: DeadLetters<'_>) -> Result<u64> {
        let queue = self.router.shard(shard)?;
        let selection = DeadSelection::new(which)?;
        self.call(None, "purge_dead", queue.purge_dead(&selection)).await
    }

    // ---- watch

    /// A watch for event loops: a descriptor (`AsRawFd`) that becomes readable when a claim
    /// with this filter may find work, polled instead of waiting in a claim (see `Watch`
    /// and docs/abi.md, "Watching for work"). It starts readable; `rearm` says whether to
    /// claim. Closing or dropping this transport leaves it readable for good. Sharded, it
    /// is readable when a shard may have work.
    pub fn watch(&self, min_priority: i32, routing_keys: &[&str]) -> Result<Watch> {
        Filter::new(min_priority, routing_keys).and_then(|filter| self.router.watch(&filter)).map_err(|e| e.during("watch"))
    }

    /// Clears `watch`'s descriptor and looks without the write lock: true when a claim with
    /// its filter would find work now (the descriptor stays readable: claim until nothing
    /// comes, then poll again); false when none would, the descriptor then clear and armed
    /// to become readable when that may change. `Error::Argument` for a watch of another
    /// transport. After an error the descriptor becomes readable again within a second.
    /// Sharded, only the shards whose own watch is readable are looked at.
    pub async fn rearm(&self, watch: &Watch) -> Result<bool> {
        self.call(None, "rearm", self.router.rearm(watch)).await
    }

    // ---- open

    /// Closes the connections; it cannot fail. Dropping the transport does the same.
    pub async fn close(self) {
        for queue in self.router.into_queues() {
            queue.close().await;
        }
    }
}

/// `messages`, each with its headers from `headers` (a traced publish's).
pub(crate) fn with_headers<'a>(messages: &[Message<'a>], headers: &'a [Headers]) -> Vec<Message<'a>> {
    messages.iter().zip(headers).map(|(m, h)| Message { headers: Some(h), ..*m }).collect()
}
