//! A sharded queue's looks: the shards' stats summed, their pages of groups merged in
//! group id order, their dead letters and archives listed shard after shard.

use crate::cursor::{cursor, parse_cursor};
use crate::error::{Error, Result};
use crate::queue::database::Queue;
use crate::request::{Group, PageRequest};
use crate::types::{Archived, DeadLetter, GroupInfo, Page, PriorityStats, Stats};

/// The queue's counts: each shard's added up. The oldest ready message is the one of the
/// shard whose oldest is oldest (by age, where its writer stamped one); the soonest times
/// are the soonest of any shard.
pub fn sum_stats(shards: Vec<Stats>) -> Stats {
    let soonest = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut sum = Stats {
        now: shards.iter().map(|s| s.now).fold(0.0, f64::max),
        messages: 0,
        groups: 0,
        ready: 0,
        leased: 0,
        parked: 0,
        delayed: 0,
        paused: 0,
        held: 0,
        retrying: 0,
        next_due_at: None,
        dead: 0,
        expired: 0,
        oldest_ready_age: None,
        oldest_ready_seq: None,
        next_release_at: None,
        oldest_overdue_lease: None,
        by_priority: Vec::new(),
    };
    for s in shards {
        sum.messages += s.messages;
        sum.groups += s.groups;
        sum.ready += s.ready;
        sum.leased += s.leased;
        sum.parked += s.parked;
        sum.delayed += s.delayed;
        sum.paused += s.paused;
        sum.held += s.held;
        sum.retrying += s.retrying;
        sum.dead += s.dead;
        sum.expired += s.expired;
        sum.next_due_at = soonest(sum.next_due_at, s.next_due_at);
        sum.next_release_at = soonest(sum.next_release_at, s.next_release_at);
        sum.oldest_overdue_lease = match (sum.oldest_overdue_lease, s.oldest_overdue_lease) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let older = match (s.oldest_ready_age, sum.oldest_ready_age) {
            _ if sum.oldest_ready_seq.is_none() => true,
            (Some(age), Some(kept)) => age > kept,
            (age, _) => age.is_some(),
        };
        if older && s.oldest_ready_seq.is_some() {
            (sum.oldest_ready_age, sum.oldest_ready_seq) = (s.oldest_ready_age, s.oldest_ready_seq);
        }
        for level in s.by_priority {
            match sum.by_priority.iter_mut().find(|p| p.priority == level.priority) {
                Some(p) => add_level(p, &level),
                None => sum.by_priority.push(level),
            }
        }
    }
    sum.by_priority.sort_by_key(|p| p.priority);
    sum
}

fn add_level(sum: &mut PriorityStats, level: &PriorityStats) {
    sum.groups += level.groups;
    sum.ready += level.ready;
    sum.leased += level.leased;
    sum.parked += level.parked;
    sum.delayed += level.delayed;
    sum.paused += level.paused;
    sum.held += level.held;
    sum.retrying += level.retrying;
}

/// One page of groups from every shard's page (each from the same cursor, each marked with
/// its shard): the first `limit` in group id order, and the cursor after the last of them.
pub fn merge_groups(pages: Vec<Page<GroupInfo>>, limit: usize) -> Page<GroupInfo> {
    let more = pages.iter().any(|p| p.next.is_some());
    let mut items: Vec<GroupInfo> = pages.into_iter().flat_map(|p| p.items).collect();
    items.sort_by(|a, b| a.group_id.cmp(&b.group_id).then(a.shard.cmp(&b.shard)));
    let cut = items.len() > limit;
    items.truncate(limit);
    let next = match (more || cut, items.last()) {
        (true, Some(last)) => Some(cursor('g', last.group_id.as_bytes())),
        _ => None,
    };
    Page { items, next }
}

/// A listing a sharded queue reads shard after shard, each item saying its shard: the
/// dead letters and the archive, in seq order within a shard.
pub trait ShardAfterShard: Sized {
    /// The cursor kind of one database's listing; the sharded one's is its capital.
    const KIND: char;

    /// The item as found on `shard`.
    fn on_shard(self, shard: usize) -> Self;

    /// One database's page (one group's, if given).
    async fn look(queue: &Queue, group: Option<Group<'_>>, page: &PageRequest) -> Result<Page<Self>>;
}

impl ShardAfterShard for DeadLetter {
    const KIND: char = 'd';

    fn on_shard(self, shard: usize) -> Self {
        DeadLetter { shard, ..self }
    }

    async fn look(queue: &Queue, group: Option<Group<'_>>, page: &PageRequest) -> Result<Page<Self>> {
        queue.dead_letters(group, page).await
    }
}

impl ShardAfterShard for Archived {
    const KIND: char = 'a';

    fn on_shard(self, shard: usize) -> Self {
        Archived { shard, ..self }
    }

    async fn look(queue: &Queue, group: Option<Group<'_>>, page: &PageRequest) -> Result<Page<Self>> {
        queue.archive(group, page).await
    }
}

/// The cursor of a listing read shard after shard: the shard it is on, and that shard's
/// own cursor (none: from its first page).
pub struct ShardedCursor {
    pub shard: usize,
    pub inner: Option<String>,
}

impl ShardedCursor {
    pub fn parse<T: ShardAfterShard>(text: Option<&str>) -> Result<ShardedCursor> {
        let Some(text) = text else { return Ok(ShardedCursor { shard: 0, inner: None }) };
        let bytes = parse_cursor(T::KIND.to_ascii_uppercase(), text)?;
        let bad = || Error::Argument(format!("cursor {text:?} is not a cursor of this listing"));
        let (shard, inner) = bytes.split_first_chunk::<4>().ok_or_else(bad)?;
        let inner = String::from_utf8(inner.to_vec()).map_err(|_| bad())?;
        Ok(ShardedCursor { shard: u32::from_be_bytes(*shard) as usize, inner: (!inner.is_empty()).then_some(inner) })
    }

    pub fn text<T: ShardAfterShard>(&self) -> String {
        let mut bytes = (self.shard as u32).to_be_bytes().to_vec();
        bytes.extend(self.inner.as_deref().unwrap_or("").bytes());
        cursor(T::KIND.to_ascii_uppercase(), &bytes)
    }
}

/// The items of `shard`'s page, marked, with the cursor that goes on after them: in the
/// same shard while it has more, else at the next shard's first page.
pub fn shard_page<T: ShardAfterShard>(shard: usize, shards: usize, page: Page<T>) -> Page<T> {
    let items = page.items.into_iter().map(|item| item.on_shard(shard)).collect();
    let next = match page.next {
        Some(inner) => Some(ShardedCursor { shard, inner: Some(inner) }.text::<T>()),
        None if shard + 1 < shards => Some(ShardedCursor { shard: shard + 1, inner: None }.text::<T>()),
        None => None,
    };
    Page { items, next }
}
