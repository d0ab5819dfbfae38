//! The router: where each call of a queue goes (docs/queue.md, "Sharded queues"). Over one
//! database every call is that queue's own (queue/database.rs), unchanged. Over several, a
//! group's publish, ack, nack, extend, dead letter, peek and release go to the shard
//! `shard_of` names; a claim to the shards in turn, a head of a group that belongs
//! elsewhere set aside; a waiting claim to every shard's look at once, then a pass; a look
//! or a change of the whole queue to every shard, their answers merged (merge.rs). Every
//! request arrives checked by the face (async_transport.rs) and is passed on as it is.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use super::merge::{merge_groups, shard_page, sum_stats, ShardAfterShard, ShardedCursor};
use super::{shard_of, Watch};
use crate::error::{Error, Result};
use crate::queue::database::Queue;
use crate::request::{
    Bury, Claim, DeadSelection, Deliver, Extend, Filter, Finish, FinishMany, Group, Limited, Listing, Nack,
    PageRequest, Publish,
};
use crate::types::{
    Archived, DeadLetter, DeadLetters, GroupInfo, GroupState, Lease, LimitInfo, MessageInfo, Page, Pause, PauseKind,
    PauseTarget, Published, Stats,
};
use crate::waiting::wait::Wait;

/// A worker's `ack_and_claim` claims on its lease's shard, in the same transaction, this
/// many times in a row at most: then once from the next shard in turn, so that a worker
/// kept busy by one shard still serves the others.
const STAY: usize = 8;

/// How soon a waiting claim tries a shard again that could not be reached.
const UNREACHABLE_RETRY: Duration = Duration::from_secs(1);

pub(crate) struct Router {
    queues: Vec<Queue>,
    /// The shard the next claim looks at first: claims serve the shards in turn, from a
    /// shard of the transport's own, so that a fleet's workers start spread over them.
    turn: AtomicUsize,
    /// `ack_and_claim` calls: every `STAY`-th one claims from the next shard in turn
    /// instead of the lease's (see `leaves_home`).
    fused: AtomicUsize,
}

impl Router {
    /// Over `queues`, one per shard in shard order (one: not sharded).
    pub fn new(queues: Vec<Queue>) -> Router {
        let start = std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), queues.len());
        Router { queues, turn: AtomicUsize::new(start as usize), fused: AtomicUsize::new(0) }
    }

    pub fn queues(&self) -> &[Queue] {
        &self.queues
    }

    pub fn into_queues(self) -> Vec<Queue> {
        self.queues
    }

    pub fn shard_of(&self, group_id: &str) -> usize {
        shard_of(group_id, self.queues.len())
    }

    fn home(&self, group_id: &str) -> &Queue {
        &self.queues[self.shard_of(group_id)]
    }

    /// The one database of a queue that is not sharded: what an application's transaction
    /// runs on (a transaction is one database's).
    pub fn single(&self) -> Result<&Queue> {
        match self.queues.as_slice() {
            [one] => Ok(one),
            _ => Err(Error::Argument(format!(
                "a transaction runs on one database, and this queue is sharded over {}: publish inside an \
                 application's transaction on a queue of one database",
                self.queues.len()
            ))),
        }
    }

    /// Shard `shard`'s queue, or an error naming the shards there are.
    pub fn shard(&self, shard: usize) -> Result<&Queue> {
        self.queues.get(shard).ok_or_else(|| {
            let n = self.queues.len();
            Error::Argument(format!("shard is {shard}; this queue has {n} (0..{n})"))
        })
    }

    // ---- publish

    /// One database: one transaction. Several: one per shard, in shard order, each part all
    /// or none; an error names the shards whose parts were stored before it.
    pub async fn append(&self, request: &Publish<'_, '_>) -> Result<()> {
        if let [one] = self.queues.as_slice() {
            return one.append(request).await;
        }
        let parts = self.split(request.messages(), |m| m.group_id);
        let written = self
            .each_part(&parts, |queue, part| async move {
                let part: Vec<_> = part.iter().map(|&(_, m)| *m).collect();
                queue.append(&Publish::checked(&part)).await
            })
            .await;
        written.map(drop)
    }

    /// As `append`, with delivery options; what became of each message, in order.
    pub async fn deliver(&self, request: &Deliver<'_, '_>) -> Result<Vec<Published>> {
        if let [one] = self.queues.as_slice() {
            return one.deliver(request).await;
        }
        let items = request.items();
        let parts = self.split(items, |(m, _)| m.group_id);
        let done = self
            .each_part(&parts, |queue, part| async move {
                let part: Vec<_> = part.iter().map(|&(_, item)| *item).collect();
                queue.deliver(&Deliver::checked_batch(part)).await
            })
            .await?;
        Ok(in_order(items.len(), &parts, done))
    }

    /// `items` by shard, each with its index in `items`.
    fn split<'i, T>(&self, items: &'i [T], group: impl Fn(&T) -> &str) -> Vec<Vec<(usize, &'i T)>> {
        let mut parts: Vec<Vec<(usize, &T)>> = (0..self.queues.len()).map(|_| Vec::new()).collect();
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
        write: impl Fn(&'p Queue, &'p [(usize, &'p T)]) -> F,
    ) -> Result<Vec<(usize, R)>> {
        let mut done: Vec<(usize, R)> = Vec::new();
        for (i, part) in parts.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            match write(&self.queues[i], part).await {
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

    // ---- claim

    /// Up to `request.max` leases, waiting up to `wait` while there is none. Sharded: a
    /// pass over the shards, then, while the wait lasts and nothing came, a wait on all of
    /// them until one may have work, and another pass.
    pub async fn claim(&self, request: &Claim<'_>, wait: &Wait) -> Result<Vec<Lease>> {
        if let [one] = self.queues.as_slice() {
            return one.claim(request, wait).await;
        }
        if wait.timeout.is_zero() && wait.cancel.is_none() {
            return self.claim_pass(request, &[]).await;
        }
        let started = Instant::now();
        loop {
            match self.claim_pass(request, &[]).await {
                Ok(leases) if !leases.is_empty() => return Ok(leases),
                Ok(_) | Err(Error::Connect(_)) => {}
                Err(e) => return Err(e),
            }
            let left = Wait { timeout: wait.timeout.saturating_sub(started.elapsed()), cancel: wait.cancel.clone() };
            let waits = self.queues.iter().map(|queue| {
                Box::pin(async {
                    match queue.until_ready(request, &left).await {
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

    /// One look at each shard, from the next in turn, until `request.max` leases are had;
    /// `skip`: shards not to claim on. A head of a group whose hash names another shard is
    /// set aside on the shard that had it (see `Queue::set_aside`), and that shard is asked again.
    async fn claim_pass(&self, request: &Claim<'_>, skip: &[usize]) -> Result<Vec<Lease>> {
        let n = self.queues.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % n;
        let (mut leases, mut unreachable) = (Vec::new(), None);
        for i in (start..start + n).map(|i| i % n).filter(|i| !skip.contains(i)) {
            // A shard is asked again only after it set a head aside: it may have more.
            loop {
                let want = Claim { max: request.max - leases.len(), ..*request };
                let claimed = match self.queues[i].claim(&want, &Wait::none()).await {
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
                        self.queues[i].set_aside(&lease).await?;
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

    /// The ack and a claim in one transaction. Sharded, the claim is on the lease's shard,
    /// and on the other shards in turn when that one has nothing; one call in `STAY` acks
    /// alone and claims from the next shard in turn. Once the ack is committed, a claim on
    /// the other shards that fails is not the call's error: it returns no lease.
    pub async fn ack_and_claim(&self, finish: Finish<'_>, claim: &Claim<'_>) -> Result<Option<Lease>> {
        let home = self.shard_of(&finish.lease.group_id);
        if let [one] = self.queues.as_slice() {
            return one.ack_and_claim(finish, claim).await;
        }
        if self.leaves_home() {
            self.queues[home].ack(finish).await?;
            return Ok(self.claim_after_ack(claim, &[]).await.into_iter().next());
        }
        if let Some(next) = self.queues[home].ack_and_claim(finish, claim).await? {
            if self.shard_of(&next.group_id) == home {
                return Ok(Some(next));
            }
            // The ack is committed: a set-aside that fails leaves that lease to lapse.
            if self.queues[home].set_aside(&next).await.is_err() {
                return Ok(None);
            }
        }
        Ok(self.claim_after_ack(claim, &[]).await.into_iter().next())
    }

    /// The acks and a claim of up to `claim.max`. Sharded, the acks and the claim share the
    /// transaction of the first lease's shard; the other shards' leases are acked as
    /// `ack_many` does (an error of a shard's transaction is each of its leases' outcome),
    /// and the batch is filled from the other shards when that one has too little.
    pub async fn ack_and_claim_many(
        &self,
        finish: &FinishMany<'_>,
        claim: &Claim<'_>,
    ) -> Result<(Vec<Result<()>>, Vec<Lease>)> {
        if let [one] = self.queues.as_slice() {
            return one.ack_and_claim_many(finish, claim).await;
        }
        let leases = finish.leases;
        let Some(first_lease) = leases.first() else {
            return Ok((Vec::new(), self.claim_pass(claim, &[]).await?));
        };
        if self.leaves_home() {
            let outcomes = self.ack_by_shard(leases, None).await;
            return Ok((outcomes, self.claim_after_ack(claim, &[]).await));
        }
        let home = self.shard_of(&first_lease.group_id);
        let mut outcomes = self.ack_by_shard(leases, Some(home)).await;
        let at_home: Vec<usize> = (0..leases.len()).filter(|&i| self.shard_of(&leases[i].group_id) == home).collect();
        let mine: Vec<Lease> = at_home.iter().map(|&i| leases[i].clone()).collect();
        let mut claimed = match self.queues[home].ack_and_claim_many(&FinishMany::checked(&mine), claim).await {
            Ok((done, claimed)) => {
                at_home.iter().zip(done).for_each(|(&i, o)| outcomes[i] = o);
                let (kept, misplaced): (Vec<Lease>, Vec<Lease>) =
                    claimed.into_iter().partition(|l| self.shard_of(&l.group_id) == home);
                // The acks are committed: a set-aside that fails leaves that lease to lapse.
                for lease in &misplaced {
                    let _ = self.queues[home].set_aside(lease).await;
                }
                kept
            }
            Err(e) => {
                at_home.iter().for_each(|&i| outcomes[i] = Err(e.clone()));
                Vec::new()
            }
        };
        if claimed.len() < claim.max {
            let more = Claim { max: claim.max - claimed.len(), ..*claim };
            claimed.extend(self.claim_after_ack(&more, &[home]).await);
        }
        Ok((outcomes, claimed))
    }

    /// Whether this `ack_and_claim` is the one in `STAY` that claims from the next shard in
    /// turn rather than in the lease's shard's transaction.
    fn leaves_home(&self) -> bool {
        self.fused.fetch_add(1, Ordering::Relaxed) % STAY == STAY - 1
    }

    pub fn interrupt(&self) {
        self.queues.iter().for_each(Queue::interrupt);
    }

    // ---- finish

    pub async fn ack(&self, finish: Finish<'_>) -> Result<()> {
        self.home(&finish.lease.group_id).ack(finish).await
    }

    /// Sharded, one transaction per shard: an error of a shard's transaction is the outcome
    /// of each of its leases, and the other shards' leases are acked.
    pub async fn ack_many(&self, finish: &FinishMany<'_>) -> Result<Vec<Result<()>>> {
        if let [one] = self.queues.as_slice() {
            return one.ack_many(finish).await;
        }
        Ok(self.ack_by_shard(finish.leases, None).await)
    }

    /// Each shard's leases acked in one transaction (but `skip`'s), the outcomes in order.
    async fn ack_by_shard(&self, leases: &[Lease], skip: Option<usize>) -> Vec<Result<()>> {
        let parts = self.split(leases, |l| l.group_id.as_str());
        let mut outcomes: Vec<Option<Result<()>>> = (0..leases.len()).map(|_| None).collect();
        for (i, part) in parts.iter().enumerate().filter(|(i, p)| !p.is_empty() && Some(*i) != skip) {
            let mine: Vec<Lease> = part.iter().map(|&(_, l)| l.clone()).collect();
            match self.queues[i].ack_many(&FinishMany::checked(&mine)).await {
                Ok(done) => part.iter().zip(done).for_each(|(&(at, _), o)| outcomes[at] = Some(o)),
                Err(e) => part.iter().for_each(|&(at, _)| outcomes[at] = Some(Err(e.clone()))),
            }
        }
        outcomes.into_iter().map(|o| o.unwrap_or(Ok(()))).collect()
    }

    pub async fn extend(&self, request: &Extend<'_>) -> Result<f64> {
        self.home(&request.finish.lease.group_id).extend(request).await
    }

    pub async fn nack(&self, request: &Nack<'_>) -> Result<()> {
        self.home(&request.finish.lease.group_id).nack(request).await
    }

    pub async fn dead_letter(&self, request: &Bury<'_>) -> Result<()> {
        self.home(&request.finish.lease.group_id).dead_letter(request).await
    }

    // ---- looks

    /// Sharded, every shard's counts added up.
    pub async fn stats(&self) -> Result<Stats> {
        if let [one] = self.queues.as_slice() {
            return one.stats().await;
        }
        Ok(sum_stats(self.shard_stats().await?))
    }

    /// Each shard's counts, in shard order.
    pub async fn shard_stats(&self) -> Result<Vec<Stats>> {
        let mut all = Vec::with_capacity(self.queues.len());
        for (i, queue) in self.queues.iter().enumerate() {
            all.push(queue.stats().await.map_err(|e| self.on_shard(i, e))?);
        }
        Ok(all)
    }

    /// Sharded, each group says its shard; a group found on two shards is listed on each.
    pub async fn groups(&self, state: Option<GroupState>, listing: &Listing<'_>) -> Result<Page<GroupInfo>> {
        let page = PageRequest::of('g', listing)?;
        if let [one] = self.queues.as_slice() {
            return one.groups(state, &page).await;
        }
        let mut pages = Vec::with_capacity(self.queues.len());
        for (i, queue) in self.queues.iter().enumerate() {
            let found = queue.groups(state, &page).await.map_err(|e| self.on_shard(i, e))?;
            let items = found.items.into_iter().map(|g| GroupInfo { shard: i, ..g }).collect();
            pages.push(Page { items, next: found.next });
        }
        Ok(merge_groups(pages, listing.limit))
    }

    pub async fn peek(&self, group: Group<'_>, listing: &Listing<'_>) -> Result<Page<MessageInfo>> {
        let page = PageRequest::of('m', listing)?;
        self.home(group.0).peek(group, &page).await
    }

    /// Sharded, shard after shard, each letter saying its shard; one group's from its shard.
    pub async fn dead_letters(&self, group: Option<Group<'_>>, listing: &Listing<'_>) -> Result<Page<DeadLetter>> {
        self.shard_after_shard(group, listing).await
    }

    /// As `dead_letters`.
    pub async fn archive(&self, group: Option<Group<'_>>, listing: &Listing<'_>) -> Result<Page<Archived>> {
        self.shard_after_shard(group, listing).await
    }

    /// A listing read shard after shard (merge.rs); one group's from its shard.
    async fn shard_after_shard<T: ShardAfterShard>(
        &self,
        group: Option<Group<'_>>,
        listing: &Listing<'_>,
    ) -> Result<Page<T>> {
        if self.queues.len() == 1 || group.is_some() {
            let at = group.map_or(0, |g| self.shard_of(g.0));
            let page = T::look(&self.queues[at], group, &PageRequest::of(T::KIND, listing)?).await?;
            return Ok(Page { items: page.items.into_iter().map(|item| item.on_shard(at)).collect(), ..page });
        }
        let mut at = ShardedCursor::parse::<T>(listing.cursor)?;
        let mut items = Vec::new();
        loop {
            let Some(queue) = self.queues.get(at.shard) else {
                return Err(Error::Argument("the cursor names a shard this queue has not".into()));
            };
            let rest = Listing { cursor: at.inner.as_deref(), limit: listing.limit - items.len() };
            let page = T::look(queue, None, &PageRequest::of(T::KIND, &rest)?).await?;
            let page = shard_page(at.shard, self.queues.len(), page);
            items.extend(page.items);
            match page.next {
                Some(next) if items.len() < listing.limit => at = ShardedCursor::parse::<T>(Some(&next))?,
                next => return Ok(Page { items, next }),
            }
        }
    }

    // ---- admin

    /// Sharded, on every shard (dead letters named by seq are refused: a seq names one
    /// shard's letter, see `on`).
    pub async fn redrive(&self, selection: &DeadSelection<'_>) -> Result<u64> {
        self.no_sharded_seqs(selection, "redrive")?;
        let mut moved = 0;
        for (i, queue) in self.queues.iter().enumerate() {
            moved += queue.redrive(selection).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(moved)
    }

    pub async fn purge_dead(&self, selection: &DeadSelection<'_>) -> Result<u64> {
        self.no_sharded_seqs(selection, "purge_dead")?;
        let mut purged = 0;
        for (i, queue) in self.queues.iter().enumerate() {
            purged += queue.purge_dead(selection).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(purged)
    }

    /// Sharded, on every shard that has the group.
    pub async fn purge_group(&self, group: Group<'_>) -> Result<u64> {
        let mut purged = 0;
        for (i, queue) in self.queues.iter().enumerate() {
            purged += queue.purge_group(group).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(purged)
    }

    pub async fn purge(&self) -> Result<u64> {
        let mut purged = 0;
        for (i, queue) in self.queues.iter().enumerate() {
            purged += queue.purge().await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(purged)
    }

    /// On the group's shard (a misplaced group's hold is moved by `shards rehome`, not released).
    pub async fn release(&self, group: Group<'_>) -> Result<bool> {
        self.home(group.0).release(group).await
    }

    /// On every shard: a group's pause too, since a misplaced group may be on another shard
    /// than its own, and a pause of a group with no messages yet names where it will be.
    /// True when some shard had not the pause.
    pub async fn pause(&self, target: &PauseTarget<'_>) -> Result<bool> {
        let mut new = false;
        for (i, queue) in self.queues.iter().enumerate() {
            new |= queue.pause(target).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(new)
    }

    /// On every shard, as `pause`; true when some shard had the pause.
    pub async fn resume(&self, target: &PauseTarget<'_>) -> Result<bool> {
        let mut had = false;
        for (i, queue) in self.queues.iter().enumerate() {
            had |= queue.resume(target).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(had)
    }

    /// Every shard's pauses, each once (with its earliest time): a pause that failed on a
    /// shard part way is listed from the shards that have it.
    /// On every shard: each shard holds the limit for its own groups (docs/queue.md,
    /// "Limits": a claim is one shard's transaction).
    pub async fn set_limit(&self, limited: &Limited<'_>) -> Result<()> {
        for (i, queue) in self.queues.iter().enumerate() {
            queue.set_limit(limited).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(())
    }

    /// On every shard; false when no shard had a limit on the key.
    pub async fn remove_limit(&self, routing_key: &str) -> Result<bool> {
        let mut had = false;
        for (i, queue) in self.queues.iter().enumerate() {
            had |= queue.remove_limit(routing_key).await.map_err(|e| self.on_shard(i, e))?;
        }
        Ok(had)
    }

    /// Each key once, its use summed over the shards.
    pub async fn limits(&self) -> Result<Vec<LimitInfo>> {
        let mut all: Vec<LimitInfo> = Vec::new();
        for (i, queue) in self.queues.iter().enumerate() {
            for limit in queue.limits().await.map_err(|e| self.on_shard(i, e))? {
                match all.iter_mut().find(|l| l.routing_key == limit.routing_key) {
                    Some(kept) => {
                        kept.in_use += limit.in_use;
                        kept.held += limit.held;
                        kept.tokens = kept.tokens.zip(limit.tokens).map(|(a, b)| a + b);
                    }
                    None => all.push(limit),
                }
            }
        }
        all.sort_by(|a, b| a.routing_key.cmp(&b.routing_key));
        Ok(all)
    }

    pub async fn pauses(&self) -> Result<Vec<Pause>> {
        let mut all: Vec<Pause> = Vec::new();
        for (i, queue) in self.queues.iter().enumerate() {
            for pause in queue.pauses().await.map_err(|e| self.on_shard(i, e))? {
                match all.iter_mut().find(|p| p.kind == pause.kind && p.name == pause.name) {
                    Some(kept) => kept.paused_at = kept.paused_at.min(pause.paused_at),
                    None => all.push(pause),
                }
            }
        }
        all.sort_by_key(|p| (p.kind != PauseKind::Queue, p.kind.name(), p.name.clone()));
        Ok(all)
    }

    /// Dead letters named by seq on a sharded queue are one shard's: refused here.
    fn no_sharded_seqs(&self, selection: &DeadSelection<'_>, operation: &str) -> Result<()> {
        match (&selection.which, self.queues.len()) {
            (DeadLetters::Seqs(_), n) if n > 1 => Err(Error::Argument(format!(
                "a seq names a dead letter of one shard, and this queue has {n}: name the shard the listing \
                 showed ({operation}_on in Rust, --shard in the CLI), or take the group's letters"
            ))),
            _ => Ok(()),
        }
    }

    // ---- watch

    /// Sharded, readable when a shard may have work.
    pub fn watch(&self, filter: &Filter<'_>) -> Result<Watch> {
        let parts = self.queues.iter().map(|q| q.watch(filter)).collect::<Result<Vec<_>>>()?;
        Watch::of(parts)
    }

    /// Sharded, only the shards whose own watch is readable are looked at.
    pub async fn rearm(&self, watch: &Watch) -> Result<bool> {
        let (mut work, mut failed) = (false, None);
        for (queue, (part, readable)) in self.queues.iter().zip(watch.parts()) {
            if readable {
                match queue.rearm(part).await {
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

    /// An error of shard `i`'s, saying so when there are several.
    fn on_shard(&self, i: usize, e: Error) -> Error {
        match self.queues.len() {
            1 => e,
            _ => e.during(&format!("shard {i}")),
        }
    }
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
