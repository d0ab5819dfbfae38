//! The async face: a queue over one database, or sharded over several (docs/queue.md,
//! "Sharded queues"). Each call goes to the shard that holds what it names (shards/shard.rs
//! runs it there): a publish, an ack or a nack to its group's shard; a claim to the shards
//! in turn; a look or a change of the whole queue to every shard, their answers merged
//! (shards/merge.rs). Over one database every call is the shard's own, unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::backend::{Backend, FileAt};
use crate::error::{Error, Result};
use crate::metrics::{Meters, Metrics, Operation};
use crate::mode::Mode;
use crate::options::Options;
use crate::request::{Claim, Deliver, FinishMany, Publish};
use crate::shards::shard::Shard;
use crate::shards::{self, Plan, SetRecord, ShardedCursor, Watch, MAX_SHARDS};
use crate::types::{
    DeadLetter, DeadLetters, Delivery, GroupInfo, GroupState, Lease, Message, MessageInfo, Page, Published, Stats,
};
use crate::validate;
use crate::waiting::wait::Wait;

/// A worker's `ack_and_claim` claims on its lease's shard, in the same transaction, this
/// many times in a row at most: then once from the next shard in turn, so that a worker
/// kept busy by one shard still serves the others.
const STAY: usize = 8;

/// How soon a waiting claim tries a shard again that could not be reached.
const UNREACHABLE_RETRY: Duration = Duration::from_secs(1);

pub struct AsyncTransport {
    shards: Vec<Shard>,
    /// The shard the next claim looks at first: claims serve the shards in turn, from a
    /// shard of the transport's own, so that a fleet's workers start spread over them.
    turn: AtomicUsize,
    /// `ack_and_claim` calls: every `STAY`-th one claims from the next shard in turn
    /// instead of the lease's (see `leaves_home`).
    fused: AtomicUsize,
    max_attempts: u32,
    meters: Arc<Meters>,
    /// What the shards lack of the schema, each named with its shard when there are several.
    absent: Vec<String>,
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
        let n = databases.len();
        if !(1..=MAX_SHARDS).contains(&n) {
            return Err(Error::Argument(format!("databases has {n} entries; it must have 1..{MAX_SHARDS}")));
        }
        for (i, database) in databases.iter().enumerate() {
            validate::non_empty(&if n == 1 { "database".to_owned() } else { format!("databases[{i}]") }, database)?;
            if let Some(j) = databases[..i].iter().position(|d| d == database) {
                return Err(Error::Argument(format!("databases[{i}] repeats databases[{j}] ({database})")));
            }
        }
        shards::options_of_each(databases, options)
    }

    /// `open_shards` of a checked list, each database with its options (`options_of_each`).
    pub(crate) async fn open_each(databases: &[&str], each: &[Options]) -> Result<AsyncTransport> {
        let n = databases.len();
        let meters = Arc::new(Meters::default());
        one_file_each(databases, each)?;
        // A file not made yet is made once the list is known to fit the set: a refused open
        // creates nothing. (Alone, a database has no set to fit.)
        let not_made = |i: usize| n > 1 && matches!(Backend::file_at(databases[i], &each[i]), Some(FileAt::New { .. }));
        let mut opened: Vec<Option<Shard>> = (0..n).map(|_| None).collect();
        let plan = loop {
            for (i, shard) in opened.iter_mut().enumerate().filter(|(i, s)| s.is_none() && !not_made(*i)) {
                *shard = Some(open_shard(databases, each, i, &meters).await?);
            }
            let found = set_records(&opened).await.map_err(|e| e.during("open"))?;
            // A file made meanwhile is another open making this set (it makes every file
            // before it records any): read it too.
            if (0..n).all(|i| opened[i].is_some() || not_made(i)) {
                let new: Vec<bool> = opened.iter().map(Option::is_none).collect();
                break shards::check_set(&found, &new, databases).map_err(|e| e.during("open"))?;
            }
        };
        for (i, shard) in opened.iter_mut().enumerate().filter(|(_, s)| s.is_none()) {
            *shard = Some(open_shard(databases, each, i, &meters).await?);
        }
        let opened: Vec<Shard> = opened.into_iter().flatten().collect();
        let absent = match n {
            1 => opened[0].absent().to_vec(),
            _ => (opened.iter().enumerate())
                .flat_map(|(i, s)| s.absent().iter().map(move |a| format!("{a} (shard {i})")))
                .collect(),
        };
        let transport = AsyncTransport {
            shards: opened,
            turn: AtomicUsize::new(
                std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), n) as usize,
            ),
            fused: AtomicUsize::new(0),
            max_attempts: each[0].max_attempts,
            meters,
            absent,
        };
        transport.join_set(plan, databases).await.map_err(|e| e.during("open"))?;
        Ok(transport)
    }

    /// Writes the records `plan` says a new set (or one whose making was cut short) lacks:
    /// shard 0's first, so that of two openers making a set at once, both take the queue id
    /// that shard 0 kept.
    async fn join_set(&self, plan: Plan, databases: &[&str]) -> Result<()> {
        let n = self.shards.len();
        let (queue_id, missing) = match plan {
            Plan::Alone => return Ok(()),
            Plan::New => (shards::new_queue_id()?, (0..n).collect()),
            Plan::Complete { queue_id, missing } => (queue_id, missing),
        };
        let mut queue_id = queue_id;
        for i in missing {
            let wanted = SetRecord { queue_id: queue_id.clone(), shard: i, shards: n };
            let kept = self.shards[i].record_set(&wanted).await?;
            if i == 0 {
                queue_id = kept.queue_id.clone();
            } else if kept != (SetRecord { queue_id: queue_id.clone(), ..wanted }) {
                return Err(Error::Argument(format!(
                    "databases[{i}] ({}) was made shard {} of {} of queue {} by another open meanwhile",
                    databases[i], kept.shard, kept.shards, kept.queue_id
                )));
            }
        }
        Ok(())
    }

    /// How many databases the queue is sharded over (1: not sharded).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The shard that holds `group_id` (`shards::shard_of`).
    pub fn shard_of(&self, group_id: &str) -> usize {
        shards::shard_of(group_id, self.shards.len())
    }

    fn shard(&self, group_id: &str) -> &Shard {
        &self.shards[self.shard_of(group_id)]
    }

    /// The one database of a queue that is not sharded: what an application's transaction
    /// runs on (a transaction is one database's).
    pub(crate) fn single(&self) -> Result<&Shard> {
        match self.shards.as_slice() {
            [one] => Ok(one),
            _ => Err(Error::Argument(format!(
                "a transaction runs on one database, and this queue is sharded over {}: publish inside an \
                 application's transaction on a queue of one database",
                self.shards.len()
            ))),
        }
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
        self.shards[0].mode()
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
        self.shard(group_id).publish(group_id, event_json, priority, routing_key).await
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
        self.append(&request).await.map_err(|e| e.during("publish_many"))
    }

    /// The write of `publish_many`, and of the blocking face's group commits.
    pub(crate) async fn append(&self, request: &Publish<'_, '_>) -> Result<()> {
        if let [one] = self.shards.as_slice() {
            return one.append(request).await;
        }
        let started = Instant::now();
        let parts = self.split(request.messages(), |m| m.group_id);
        let written = self
            .each_part(&parts, |shard, part| async move {
                let part: Vec<Message<'_>> = part.iter().map(|&(_, m)| *m).collect();
                shard.append_now(&Publish::checked(&part)).await
            })
            .await;
        self.meters.observe(Operation::Publish, started.elapsed());
        written.map(drop)
    }

    /// `publish` with delivery options (`Delivery`): an idempotency key, a delay or a due
    /// instant. With a key seen within the retention nothing is stored and the first
    /// message's seq comes back as a duplicate; the key and the message are committed
    /// together. A delayed message keeps its place in its group's FIFO: the messages after
    /// it wait behind it (docs/queue.md, "Delayed delivery"). A key is remembered on its
    /// message's shard.
    pub async fn publish_with(&self, message: Message<'_>, delivery: Delivery<'_>) -> Result<Published> {
        self.shard(message.group_id).publish_with(message, delivery).await
    }

    /// `publish_many` with delivery options per message: each message stored or found a
    /// duplicate, or none of them (sharded: per shard, as `publish_many`). A key seen
    /// earlier in the batch makes the later message a duplicate of the earlier one. What
    /// became of each, in order.
    pub async fn publish_many_with(&self, items: &[(Message<'_>, Delivery<'_>)]) -> Result<Vec<Published>> {
        if let [one] = self.shards.as_slice() {
            return one.publish_many_with(items).await;
        }
        Deliver::many(items).map_err(|e| e.during("publish_many"))?;
        let started = Instant::now();
        let parts = self.split(items, |(m, _)| m.group_id);
        let done = self
            .each_part(&parts, |shard, part| async move {
                let part: Vec<(Message<'_>, Delivery<'_>)> = part.iter().map(|&(_, item)| *item).collect();
                shard.deliver_now(&Deliver::many(&part)?).await
            })
            .await;
        self.meters.observe(Operation::Publish, started.elapsed());
        Ok(in_order(items.len(), &parts, done.map_err(|e| e.during("publish_many"))?))
    }

    /// `items` by shard, each with its index in `items`.
    fn split<'i, T>(&self, items: &'i [T], group: impl Fn(&T) -> &str) -> Vec<Vec<(usize, &'i T)>> {
        let mut parts: Vec<Vec<(usize, &T)>> = (0..self.shards.len()).map(|_| Vec::new()).collect();
        for (i, item) in items.iter().enumerate() {
            parts[self.shard_of(group(item))].push((i, item));
        }
        parts
    }

    /// Runs `write` on each shard's non-empty part, in shard order, stopping at the first
    /// error, which then names the shards whose parts were written.
    async fn each_part<'p, T: 'p, R, F: Future<Output = Result<R>>>(
        &'p self,
        parts: &'p [Vec<(usize, &'p T)>],
        write: impl Fn(&'p Shard, &'p [(usize, &'p T)]) -> F,
    ) -> Result<Vec<(usize, R)>> {
        let mut done: Vec<(usize, R)> = Vec::new();
        for (i, part) in parts.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            match write(&self.shards[i], part).await {
                Ok(outcome) => done.push((i, outcome)),
                Err(e) => {
                    let stored: Vec<String> = done.iter().map(|(s, _)| s.to_string()).collect();
                    let said = match stored.as_slice() {
                        // This shard's own part is as its error says (a lost answer: it may be stored).
                        [] => "no other shard's part was stored".to_owned(),
                        _ => format!("the parts for shards {} were stored, later shards' not", stored.join(", ")),
                    };
                    return Err(e.during(&format!("shard {i} ({said})")));
                }
            }
        }
        Ok(done)
    }

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
        if let [one] = self.shards.as_slice() {
            return one.claim_wait(worker_id, visibility, min_priority, routing_keys, wait).await;
        }
        let request = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?;
        let leases = self.claim_sharded(&request, wait).await.map_err(|e| e.during("claim"))?;
        Ok(leases.into_iter().next())
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
        if let [one] = self.shards.as_slice() {
            return one.claim_many(worker_id, visibility, min_priority, routing_keys, max, wait).await;
        }
        let request = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?.up_to(max)?;
        self.claim_sharded(&request, wait).await.map_err(|e| e.during("claim_many"))
    }

    /// A claim on a sharded queue: a pass over the shards, then, while the wait lasts and
    /// nothing came, a wait on all of them until one may have work, and another pass.
    async fn claim_sharded(&self, request: &Claim<'_>, wait: &Wait) -> Result<Vec<Lease>> {
        let started = Instant::now();
        if wait.timeout.is_zero() && wait.cancel.is_none() {
            let outcome = self.claim_pass(request, &[]).await;
            self.meters.observe(Operation::Claim, started.elapsed());
            return outcome;
        }
        let outcome = async {
            loop {
                match self.claim_pass(request, &[]).await {
                    Ok(leases) if !leases.is_empty() => return Ok(leases),
                    Ok(_) | Err(Error::Connect(_)) => {}
                    Err(e) => return Err(e),
                }
                let left =
                    Wait { timeout: wait.timeout.saturating_sub(started.elapsed()), cancel: wait.cancel.clone() };
                let waits = self.shards.iter().map(|shard| {
                    Box::pin(async {
                        match shard.until_ready(request, &left).await {
                            // An unreachable shard is tried again by the next pass, in a second.
                            Err(Error::Connect(_)) => {
                                tokio::time::sleep(UNREACHABLE_RETRY.min(left.timeout)).await;
                                Ok(!left.timeout.is_zero())
                            }
                            outcome => outcome,
                        }
                    }) as Pin<Box<dyn Future<Output = Result<bool>> + Send + '_>>
                });
                if !first(waits.collect()).await? || started.elapsed() >= wait.timeout {
                    return Ok(Vec::new());
                }
            }
        }
        .await;
        self.meters.observe(Operation::ClaimWait, started.elapsed());
        outcome
    }

    /// One look at each shard, from the next in turn, until `request.max` leases are had;
    /// `skip`: shards not to claim on. A head of a group whose hash names another shard is
    /// set aside on the shard that had it (see `Shard::set_aside`), and that shard is asked again.
    async fn claim_pass(&self, request: &Claim<'_>, skip: &[usize]) -> Result<Vec<Lease>> {
        let n = self.shards.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % n;
        let (mut leases, mut unreachable) = (Vec::new(), None);
        for i in (start..start + n).map(|i| i % n).filter(|i| !skip.contains(i)) {
            // A shard is asked again only after it set a head aside: it may have more.
            loop {
                let want = Claim { max: request.max - leases.len(), ..*request };
                let claimed = match self.shards[i].claim_now(&want).await {
                    Ok(claimed) => claimed,
                    // The others are served meanwhile; the error is the pass's if they have nothing.
                    Err(e @ Error::Connect(_)) => {
                        unreachable = unreachable.or(Some(e.during(&format!("shard {i}"))));
                        break;
                    }
                    Err(e) => return Err(e),
                };
                let mut set_aside = false;
                for lease in claimed {
                    if self.shard_of(&lease.group_id) == i {
                        leases.push(lease);
                    } else {
                        self.shards[i].set_aside(&lease).await?;
                        set_aside = true;
                    }
                }
                if !set_aside || leases.len() == request.max {
                    break;
                }
            }
            if leases.len() == request.max {
                break;
            }
        }
        match unreachable {
            Some(e) if leases.is_empty() => Err(e),
            _ => Ok(leases),
        }
    }

    /// The claim of a sharded `ack_and_claim` that follows its committed acks: a failure is
    /// not the call's, whose outcome is the acks' (an error would say nothing was acked).
    /// Nothing is claimed then (a claim whose answer was lost leaves a lease that lapses),
    /// and the next claim meets the shard's error itself.
    async fn claim_after_ack(&self, request: &Claim<'_>, skip: &[usize]) -> Vec<Lease> {
        self.claim_pass(request, skip).await.unwrap_or_default()
    }

    /// A watch for event loops: a descriptor (`AsRawFd`) that becomes readable when a claim
    /// with this filter may find work, polled instead of waiting in a claim (see `Watch`
    /// and docs/abi.md, "Watching for work"). It starts readable; `rearm` says whether to
    /// claim. Closing or dropping this transport leaves it readable for good. Sharded, it
    /// is readable when a shard may have work.
    pub fn watch(&self, min_priority: i32, routing_keys: &[&str]) -> Result<Watch> {
        let parts = self.shards.iter().map(|s| s.watch(min_priority, routing_keys)).collect::<Result<Vec<_>>>()?;
        Watch::of(parts).map_err(|e| e.during("watch"))
    }

    /// Clears `watch`'s descriptor and looks without the write lock: true when a claim with
    /// its filter would find work now (the descriptor stays readable: claim until nothing
    /// comes, then poll again); false when none would, the descriptor then clear and armed
    /// to become readable when that may change. `Error::Argument` for a watch of another
    /// transport. After an error the descriptor becomes readable again within a second.
    /// Sharded, only the shards whose own watch is readable are looked at.
    pub async fn rearm(&self, watch: &Watch) -> Result<bool> {
        let (mut work, mut failed) = (false, None);
        for (shard, (part, readable)) in self.shards.iter().zip(watch.parts()) {
            if readable {
                match shard.rearm(part).await {
                    Ok(found) => work |= found,
                    Err(e) => failed = failed.or(Some(e)),
                }
            }
        }
        match failed {
            Some(e) if !work => Err(e),
            _ => Ok(work),
        }
    }

    /// Ends every wait of a claim on this transport that is in progress (they return
    /// `Error::Interrupted`); later claims wait as usual.
    pub fn interrupt(&self) {
        self.shards.iter().for_each(Shard::interrupt);
    }

    /// Deletes the leased message (and its group when it was the last). `Error::LeaseLost`
    /// if it is gone or leased to another worker; then nothing changes.
    pub async fn ack(&self, lease: &Lease) -> Result<()> {
        self.shard(&lease.group_id).ack(lease).await
    }

    /// Acks every lease in one transaction (one commit), in order, with an outcome per
    /// lease: `Err(Error::LeaseLost)` for one that was lost (nothing of it changed) while
    /// the others are acked. An error of the whole call (`Busy`, ...) acks none. Each lease
    /// is checked as for `ack` first; an argument error names it ("leases[2].worker_id ...").
    /// Sharded, one transaction per shard: an error of a shard's transaction is the outcome
    /// of each of its leases, and the other shards' leases are acked.
    pub async fn ack_many(&self, leases: &[Lease]) -> Result<Vec<Result<()>>> {
        if let [one] = self.shards.as_slice() {
            return one.ack_many(leases).await;
        }
        FinishMany::new(leases).map_err(|e| e.during("ack_many"))?;
        let started = Instant::now();
        let outcomes = self.ack_by_shard(leases, None).await;
        self.meters.observe(Operation::Ack, started.elapsed());
        Ok(outcomes)
    }

    /// Each shard's leases acked in one transaction (but `skip`'s), the outcomes in order.
    async fn ack_by_shard(&self, leases: &[Lease], skip: Option<usize>) -> Vec<Result<()>> {
        let parts = self.split(leases, |l| l.group_id.as_str());
        let mut outcomes: Vec<Option<Result<()>>> = (0..leases.len()).map(|_| None).collect();
        for (i, part) in parts.iter().enumerate().filter(|(i, p)| !p.is_empty() && Some(*i) != skip) {
            let mine: Vec<Lease> = part.iter().map(|&(_, l)| l.clone()).collect();
            let acked = async { self.shards[i].ack_many_now(&FinishMany::new(&mine)?).await };
            match acked.await {
                Ok(done) => part.iter().zip(done).for_each(|(&(at, _), o)| outcomes[at] = Some(o)),
                Err(e) => part.iter().for_each(|&(at, _)| outcomes[at] = Some(Err(e.clone()))),
            }
        }
        outcomes.into_iter().map(|o| o.unwrap_or(Ok(()))).collect()
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
        if let [one] = self.shards.as_slice() {
            return one.ack_and_claim_many(leases, worker_id, visibility, min_priority, routing_keys, max).await;
        }
        let Some(first_lease) = leases.first() else {
            let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?.up_to(max)?;
            let claimed = self.claim_pass(&claim, &[]).await.map_err(|e| e.during("ack_and_claim_many"))?;
            return Ok((Vec::new(), claimed));
        };
        FinishMany::new(leases).map_err(|e| e.during("ack_and_claim_many"))?;
        let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?.up_to(max)?;
        if self.leaves_home() {
            let outcomes = self.ack_by_shard(leases, None).await;
            return Ok((outcomes, self.claim_after_ack(&claim, &[]).await));
        }
        let home = self.shard_of(&first_lease.group_id);
        let mut outcomes = self.ack_by_shard(leases, Some(home)).await;
        let at_home: Vec<usize> = (0..leases.len()).filter(|&i| self.shard_of(&leases[i].group_id) == home).collect();
        let mine: Vec<Lease> = at_home.iter().map(|&i| leases[i].clone()).collect();
        let fused = self.shards[home].ack_and_claim_many(&mine, worker_id, visibility, min_priority, routing_keys, max);
        let mut claimed = match fused.await {
            Ok((done, claimed)) => {
                at_home.iter().zip(done).for_each(|(&i, o)| outcomes[i] = o);
                let (kept, misplaced): (Vec<Lease>, Vec<Lease>) =
                    claimed.into_iter().partition(|l| self.shard_of(&l.group_id) == home);
                // The acks are committed: a set-aside that fails leaves that lease to lapse.
                for lease in &misplaced {
                    let _ = self.shards[home].set_aside(lease).await;
                }
                kept
            }
            Err(e) => {
                at_home.iter().for_each(|&i| outcomes[i] = Err(e.clone()));
                Vec::new()
            }
        };
        if claimed.len() < max {
            let more = Claim { max: max - claimed.len(), ..claim };
            claimed.extend(self.claim_after_ack(&more, &[home]).await);
        }
        Ok((outcomes, claimed))
    }

    /// The lease now runs to now + `visibility` seconds (> 0), and `lease.lock_expiry`
    /// says so. `Error::LeaseLost` as for `ack` (then the lease is unchanged): acked, nacked,
    /// or lapsed and claimed by another worker; a lease that lapsed and that no one
    /// claimed since is still this worker's and is extended.
    pub async fn extend(&self, lease: &mut Lease, visibility: f64) -> Result<()> {
        let shard = self.shard_of(&lease.group_id);
        self.shards[shard].extend(lease, visibility).await
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
        let home = self.shard_of(&lease.group_id);
        if self.shards.len() > 1 && self.leaves_home() {
            let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?;
            self.shards[home].ack(lease).await.map_err(|e| e.during("ack_and_claim"))?;
            return Ok(self.claim_after_ack(&claim, &[]).await.into_iter().next());
        }
        let next = self.shards[home].ack_and_claim(lease, worker_id, visibility, min_priority, routing_keys).await?;
        if self.shards.len() == 1 {
            return Ok(next);
        }
        if let Some(next) = next {
            if self.shard_of(&next.group_id) == home {
                return Ok(Some(next));
            }
            // The ack is committed: a set-aside that fails leaves that lease to lapse.
            if self.shards[home].set_aside(&next).await.is_err() {
                return Ok(None);
            }
        }
        let claim = Claim::new(worker_id, visibility, min_priority, routing_keys, self.max_attempts)?;
        Ok(self.claim_after_ack(&claim, &[]).await.into_iter().next())
    }

    /// Gives the message back: claimable at once with `delay` 0, parked (its group
    /// blocked) for `delay` seconds otherwise. Same `Error::LeaseLost` rule as `ack`.
    pub async fn nack(&self, lease: &Lease, delay: f64) -> Result<()> {
        self.shard(&lease.group_id).nack(lease, delay).await
    }

    /// Moves the leased message to the dead-letter table with `reason` (a worker that
    /// knows the message will never succeed); its group goes on with the next message.
    /// `Error::LeaseLost` as for `ack`.
    pub async fn dead_letter(&self, lease: &Lease, reason: &str) -> Result<()> {
        self.shard(&lease.group_id).dead_letter(lease, reason).await
    }

    /// Exact counts of the queue now, read without the write lock (see `Stats`); sharded,
    /// every shard's added up (`shard_stats` has each).
    pub async fn stats(&self) -> Result<Stats> {
        if let [one] = self.shards.as_slice() {
            return one.stats().await;
        }
        Ok(shards::sum_stats(self.shard_stats().await?))
    }

    /// Each shard's counts, in shard order.
    pub async fn shard_stats(&self) -> Result<Vec<Stats>> {
        let mut all = Vec::with_capacity(self.shards.len());
        for (i, shard) in self.shards.iter().enumerate() {
            all.push(shard.stats().await.map_err(|e| self.on_shard(i, e))?);
        }
        Ok(all)
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
        if let [one] = self.shards.as_slice() {
            return one.groups(state, cursor, limit).await;
        }
        let mut pages = Vec::with_capacity(self.shards.len());
        for (i, shard) in self.shards.iter().enumerate() {
            let page = shard.groups(state, cursor, limit).await.map_err(|e| self.on_shard(i, e))?;
            let items = page.items.into_iter().map(|g| GroupInfo { shard: i, ..g }).collect();
            pages.push(Page { items, next: page.next });
        }
        Ok(shards::merge_groups(pages, limit))
    }

    /// A page of a group's messages, oldest first, without claiming them (sharded: on the
    /// group's shard).
    pub async fn peek(&self, group_id: &str, cursor: Option<&str>, limit: usize) -> Result<Page<MessageInfo>> {
        self.shard(group_id).peek(group_id, cursor, limit).await
    }

    /// A page of dead letters in the order they had in the queue (one group's, if given).
    /// Sharded, shard after shard, each saying its shard; one group's from its shard.
    pub async fn dead_letters(
        &self,
        group_id: Option<&str>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<DeadLetter>> {
        if self.shards.len() == 1 || group_id.is_some() {
            let at = group_id.map_or(0, |g| self.shard_of(g));
            let page = self.shards[at].dead_letters(group_id, cursor, limit).await?;
            return Ok(Page { items: page.items.into_iter().map(|d| DeadLetter { shard: at, ..d }).collect(), ..page });
        }
        let mut at = ShardedCursor::parse(cursor).map_err(|e| e.during("dead_letters"))?;
        let mut items = Vec::new();
        loop {
            let Some(shard) = self.shards.get(at.shard) else {
                return Err(Error::Argument("dead_letters: the cursor names a shard this queue has not".into()));
            };
            let page = shard.dead_letters(None, at.inner.as_deref(), limit - items.len()).await?;
            let page = shards::dead_page(at.shard, self.shards.len(), page);
            items.extend(page.items);
            match page.next {
                Some(next) if items.len() < limit => at = ShardedCursor::parse(Some(&next))?,
                next => return Ok(Page { items, next }),
            }
        }
    }

    /// Moves dead letters back into their groups as their newest messages (after what
    /// the groups hold now), in the order they had, claimed 0 times; the number moved.
    /// Sharded, on every shard (by seq: a seq names one shard's letter, see `redrive_on`).
    pub async fn redrive(&self, which: DeadLetters<'_>) -> Result<u64> {
        self.sharded_seqs(&which, "redrive")?;
        let mut moved = 0;
        for (i, shard) in self.shards.iter().enumerate() {
            moved += shard.redrive(which).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(moved)
    }

    /// `redrive` on one shard: how a sharded queue's dead letters are named by seq.
    pub async fn redrive_on(&self, shard: usize, which: DeadLetters<'_>) -> Result<u64> {
        self.shard_at(shard)?.redrive(which).await
    }

    /// Deletes dead letters; the number deleted. Sharded as `redrive`.
    pub async fn purge_dead(&self, which: DeadLetters<'_>) -> Result<u64> {
        self.sharded_seqs(&which, "purge_dead")?;
        let mut purged = 0;
        for (i, shard) in self.shards.iter().enumerate() {
            purged += shard.purge_dead(which).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(purged)
    }

    /// `purge_dead` on one shard.
    pub async fn purge_dead_on(&self, shard: usize, which: DeadLetters<'_>) -> Result<u64> {
        self.shard_at(shard)?.purge_dead(which).await
    }

    /// Deletes a group's messages (a lease on one of them is lost); the number deleted.
    /// Sharded, on every shard that has the group.
    pub async fn purge_group(&self, group_id: &str) -> Result<u64> {
        let mut purged = 0;
        for (i, shard) in self.shards.iter().enumerate() {
            purged += shard.purge_group(group_id).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(purged)
    }

    /// Deletes every message and group (dead letters stay); the number of messages.
    pub async fn purge(&self) -> Result<u64> {
        let mut purged = 0;
        for (i, shard) in self.shards.iter().enumerate() {
            purged += shard.purge().await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(purged)
    }

    /// Ends the lease or park on a group's head now (a stuck group is served again at
    /// once; the holder's ack then finds its lease lost); false when nothing was held.
    /// Sharded, on its shard (a misplaced group's hold is moved by `shards rehome`, not released).
    pub async fn release(&self, group_id: &str) -> Result<bool> {
        self.shard(group_id).release(group_id).await
    }

    /// Closes the connections; it cannot fail. Dropping the transport does the same.
    pub async fn close(self) {
        for shard in self.shards {
            shard.close().await;
        }
    }

    /// Whether this `ack_and_claim` is the one in `STAY` that claims from the next shard in
    /// turn rather than in the lease's shard's transaction.
    fn leaves_home(&self) -> bool {
        self.fused.fetch_add(1, Ordering::Relaxed) % STAY == STAY - 1
    }

    fn shard_at(&self, shard: usize) -> Result<&Shard> {
        self.shards.get(shard).ok_or_else(|| {
            Error::Argument(format!(
                "shard is {shard}; this queue has {} (0..{})",
                self.shards.len(),
                self.shards.len()
            ))
        })
    }

    /// Dead letters named by seq on a sharded queue are one shard's: refused here.
    fn sharded_seqs(&self, which: &DeadLetters<'_>, operation: &str) -> Result<()> {
        match (which, self.shards.len()) {
            (DeadLetters::Seqs(_), n) if n > 1 => Err(Error::Argument(format!(
                "{operation}: a seq names a dead letter of one shard, and this queue has {n}: name the shard the \
                 listing showed ({operation}_on in Rust, --shard in the CLI), or take the group's letters"
            ))),
            _ => Ok(()),
        }
    }

    /// An error of shard `i`'s, saying so when there are several.
    fn on_shard(&self, i: usize, e: Error) -> Error {
        match self.shards.len() {
            1 => e,
            _ => e.during(&format!("shard {i}")),
        }
    }
}

/// Two spellings of one file are one database: refused before anything is opened or made.
fn one_file_each(databases: &[&str], each: &[Options]) -> Result<()> {
    let files: Vec<_> = databases.iter().zip(each).map(|(d, o)| Backend::file_at(d, o)).collect();
    for (i, file) in files.iter().enumerate().filter(|(_, f)| f.is_some()) {
        if let Some(j) = files[..i].iter().position(|f| f == file) {
            return Err(Error::Argument(format!(
                "databases[{i}] ({}) is the file databases[{j}] ({}) is",
                databases[i], databases[j]
            )));
        }
    }
    Ok(())
}

/// Opens `databases[i]` with its options; an error names it when there are several.
async fn open_shard(databases: &[&str], each: &[Options], i: usize, meters: &Arc<Meters>) -> Result<Shard> {
    let shard = Shard::open(databases[i], &each[i], Arc::clone(meters)).await;
    shard.map_err(|e| match databases.len() {
        1 => e,
        _ => e.during(&format!("databases[{i}] ({})", databases[i])),
    })
}

/// Each database's record of its set and whether it holds messages; a database not opened
/// (a file not made yet) has neither.
async fn set_records(opened: &[Option<Shard>]) -> Result<Vec<(Option<SetRecord>, bool)>> {
    let mut found = Vec::with_capacity(opened.len());
    for shard in opened {
        found.push(match shard {
            Some(shard) => shard.set_record().await?,
            None => (None, false),
        });
    }
    Ok(found)
}

/// The outcomes of `parts` (each with its items' indexes) put back in the items' order.
fn in_order<T, R>(n: usize, parts: &[Vec<(usize, &T)>], done: Vec<(usize, Vec<R>)>) -> Vec<R> {
    let mut slots: Vec<Option<R>> = (0..n).map(|_| None).collect();
    for (shard, outcomes) in done {
        for (&(at, _), outcome) in parts[shard].iter().zip(outcomes) {
            slots[at] = Some(outcome);
        }
    }
    slots.into_iter().map(|s| s.expect("every part was written")).collect()
}

/// The first of `waits` to finish (each shard's wait for work).
async fn first<T>(mut waits: Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>) -> T {
    std::future::poll_fn(|cx| {
        for wait in waits.iter_mut() {
            if let Poll::Ready(outcome) = wait.as_mut().poll(cx) {
                return Poll::Ready(outcome);
            }
        }
        Poll::Pending
    })
    .await
}
