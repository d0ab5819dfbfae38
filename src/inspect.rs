//! What a look inside the queue returns: counts (`Stats`), pages of groups, of a group's
//! messages and of dead letters, each with a cursor for the next page. Read in one read
//! statement or transaction, without the write lock, so they never hold up a claim.

use libsql::Value;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::request::PageRequest;
use crate::sql::Statements;
use crate::validate::PARKED;

/// Exact counts at one instant (`now`, the transport's clock).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// When the counts were taken, epoch seconds.
    pub now: f64,
    pub messages: u64,
    pub groups: u64,
    /// Groups whose head can be claimed now.
    pub ready: u64,
    /// Groups whose head is leased to a worker.
    pub leased: u64,
    /// Groups whose head is parked by a nack with a delay.
    pub parked: u64,
    /// Messages in the dead-letter table.
    pub dead: u64,
    /// Seconds since the oldest message of a ready group was published; None when no group
    /// is ready, or that message was published by a writer that does not stamp the time
    /// (harel's Python transports).
    pub oldest_ready_age: Option<f64>,
    /// The soonest end of a lease or a park, epoch seconds; None when nothing is in flight.
    pub next_release_at: Option<f64>,
    /// The group counts per priority level, for every level that has groups, lowest first.
    pub by_priority: Vec<PriorityStats>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityStats {
    pub priority: i32,
    pub groups: u64,
    pub ready: u64,
    pub leased: u64,
    pub parked: u64,
}

/// Where a group stands, from its head (oldest message): only a head is ever leased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    Ready,
    Leased,
    Parked,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Ready => "ready",
            GroupState::Leased => "leased",
            GroupState::Parked => "parked",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupInfo {
    pub group_id: String,
    pub state: GroupState,
    /// How many messages the group holds.
    pub depth: u64,
    pub head_seq: i64,
    /// Seconds since the head was published (None: its writer does not stamp the time).
    pub head_age: Option<f64>,
    /// The worker holding the head's lease (None when ready or parked).
    pub holder: Option<String>,
    /// When the lease or park ends (None when ready).
    pub lock_expiry: Option<f64>,
    pub priority: i32,
    pub routing_key: Option<String>,
    /// How many times the head has been claimed.
    pub head_attempts: i64,
}

/// One message of a group, as `peek` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageInfo {
    pub seq: i64,
    pub event: String,
    pub attempts: i64,
    /// The worker holding it, or "__parked__"; None when free.
    pub locked_by: Option<String>,
    pub lock_expiry: Option<f64>,
    /// When it was published (None: its writer does not stamp the time).
    pub published_at: Option<f64>,
}

/// A message moved out of its group because it kept failing.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// Its seq in the queue before it died.
    pub seq: i64,
    pub group_id: String,
    pub event: String,
    /// How many times it had been claimed.
    pub attempts: i64,
    /// The worker whose lease it was under when it moved (a worker's dead_letter, or a
    /// lease that lapsed); None when it was free or parked then (a nack clears the holder).
    pub last_worker: Option<String>,
    pub reason: String,
    /// When it was moved, epoch seconds.
    pub dead_at: f64,
}

/// One page of a listing, and the cursor of the next one (None: this was the last).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// Which dead letters a redrive or purge takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetters<'a> {
    All,
    Group(&'a str),
    Seqs(&'a [i64]),
}

/// The largest page a listing hands out.
pub const MAX_PAGE: usize = 10_000;

/// A cursor: where a listing goes on, as text the caller hands back unchanged. Kinds:
/// "g" (groups, after a group id), "m" (a group's messages, after a seq), "d" (dead
/// letters, after a seq).
pub(crate) fn cursor(kind: char, after: &[u8]) -> String {
    let hex: String = after.iter().map(|b| format!("{b:02x}")).collect();
    format!("{kind}1.{hex}")
}

/// What a cursor of `kind` says, or an argument error for text this library did not make.
pub(crate) fn parse_cursor(kind: char, text: &str) -> Result<Vec<u8>> {
    let bad = || {
        Error::Argument(format!(
            "cursor {text:?} is not a cursor of this listing: pass back the `next` of the previous page unchanged"
        ))
    };
    let hex = text.strip_prefix(kind).and_then(|rest| rest.strip_prefix("1.")).ok_or_else(bad)?;
    if hex.len() % 2 != 0 {
        return Err(bad());
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2).ok_or_else(bad)?, 16).map_err(|_| bad())).collect()
}

/// A text column read as bytes (the statements CAST it: libsql would cut it at a NUL).
/// Text another program stored that is not UTF-8 is shown with U+FFFD in its place: a look
/// never fails on it.
fn text(bytes: Vec<u8>) -> libsql::Result<String> {
    Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The page of `rows` (one more than the page if another follows) and the next cursor,
/// made from the last item's key.
fn page<T>(mut rows: Vec<T>, limit: usize, kind: char, key: impl Fn(&T) -> Vec<u8>) -> Page<T> {
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        cursor(kind, &key(rows.last().expect("limit is at least 1")))
    });
    Page { items: rows, next }
}

fn after_seq(page: &PageRequest) -> Result<i64> {
    match &page.after {
        None => Ok(0),
        Some(bytes) => <[u8; 8]>::try_from(bytes.as_slice())
            .map(i64::from_be_bytes)
            .map_err(|_| Error::Argument("cursor is not a cursor of this listing".into())),
    }
}

fn page_limit(page: &PageRequest) -> i64 {
    i64::try_from(page.limit).unwrap_or(i64::MAX)
}

pub(crate) async fn stats(db: &mut Db, sql: &Statements, now: f64) -> Result<Stats> {
    db.catch_up().await?;
    let rows = db
        .query_all(&sql.stats(), [now], |row| {
            Ok((
                row.get::<Option<i64>>(0)?,
                count(row.get::<i64>(1)?),
                count(row.get::<i64>(2)?),
                row.get::<Option<i64>>(3)?.map_or(0, count),
                row.get::<Option<f64>>(4)?,
                row.get::<Option<f64>>(5)?,
            ))
        })
        .await?;
    let (totals, levels) = rows.split_first().ok_or_else(|| Error::Database("stats: no totals row".into()))?;
    let &(_, messages, dead, _, next_release_at, oldest_enqueued_at) = totals;
    let mut by_priority: Vec<PriorityStats> = levels
        .iter()
        .map(|&(priority, groups, leased, parked, _, _)| PriorityStats {
            priority: priority.and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
            groups,
            ready: groups.saturating_sub(leased + parked),
            leased,
            parked,
        })
        .collect();
    by_priority.sort_by_key(|p| p.priority);
    let sum = |f: fn(&PriorityStats) -> u64| by_priority.iter().map(f).sum::<u64>();
    let ready = sum(|p| p.ready);
    Ok(Stats {
        now,
        messages,
        groups: sum(|p| p.groups),
        ready,
        leased: sum(|p| p.leased),
        parked: sum(|p| p.parked),
        dead,
        oldest_ready_age: oldest_enqueued_at.filter(|_| ready > 0).map(|at| (now - at).max(0.0)),
        next_release_at,
        by_priority,
    })
}

fn state_of(locked_by: Option<&str>, lock_expiry: Option<f64>, now: f64) -> GroupState {
    match (locked_by, lock_expiry) {
        (Some(holder), Some(until)) if until >= now => {
            if holder == PARKED {
                GroupState::Parked
            } else {
                GroupState::Leased
            }
        }
        _ => GroupState::Ready,
    }
}

pub(crate) async fn groups(
    db: &mut Db,
    sql: &Statements,
    state: Option<GroupState>,
    page_request: &PageRequest,
    now: f64,
) -> Result<Page<GroupInfo>> {
    db.catch_up().await?;
    let after = page_request.after.clone();
    let statement = sql.groups_page(state, after.is_some());
    let mut params: Vec<Value> = vec![after.map_or(Value::Null, Value::Blob), page_limit(page_request).into()];
    if state.is_some() {
        params.push(now.into());
    }
    let rows = db
        .query_all(&statement, params, |row| {
            let locked_by = row.get::<Option<String>>(4)?;
            let lock_expiry = row.get::<Option<f64>>(5)?;
            let state = state_of(locked_by.as_deref(), lock_expiry, now);
            let stored = row.get::<Vec<u8>>(0)?;
            let info = GroupInfo {
                group_id: text(stored.clone())?,
                state,
                depth: count(row.get::<i64>(8)?),
                head_seq: row.get::<i64>(3)?,
                head_age: row.get::<Option<f64>>(7)?.map(|at| (now - at).max(0.0)),
                holder: locked_by.filter(|_| state == GroupState::Leased),
                lock_expiry: lock_expiry.filter(|_| state != GroupState::Ready),
                priority: row.get::<i32>(1)?,
                routing_key: row.get::<Option<String>>(2)?,
                head_attempts: row.get::<i64>(6)?,
            };
            Ok((info, stored))
        })
        .await?;
    // The cursor holds the stored bytes, not the text shown (which may carry U+FFFD).
    let Page { items, next } = page(rows, page_request.limit, 'g', |(_, stored)| stored.clone());
    Ok(Page { items: items.into_iter().map(|(info, _)| info).collect(), next })
}

pub(crate) async fn peek(
    db: &mut Db,
    sql: &Statements,
    group_id: &str,
    page_request: &PageRequest,
) -> Result<Page<MessageInfo>> {
    db.catch_up().await?;
    let params: Vec<Value> = vec![after_seq(page_request)?.into(), page_limit(page_request).into(), group_id.into()];
    let rows = db
        .query_all(&sql.messages_page(), params, |row| {
            Ok(MessageInfo {
                seq: row.get::<i64>(0)?,
                event: text(row.get::<Vec<u8>>(1)?)?,
                attempts: row.get::<i64>(2)?,
                locked_by: row.get::<Option<String>>(3)?,
                lock_expiry: row.get::<Option<f64>>(4)?,
                published_at: row.get::<Option<f64>>(5)?,
            })
        })
        .await?;
    Ok(page(rows, page_request.limit, 'm', |m| m.seq.to_be_bytes().to_vec()))
}

pub(crate) async fn dead_letters(
    db: &mut Db,
    sql: &Statements,
    group_id: Option<&str>,
    page_request: &PageRequest,
) -> Result<Page<DeadLetter>> {
    db.catch_up().await?;
    let mut params: Vec<Value> = vec![after_seq(page_request)?.into(), page_limit(page_request).into()];
    params.extend(group_id.map(Value::from));
    let rows = db
        .query_all(&sql.dead_page(group_id.is_some()), params, |row| {
            Ok(DeadLetter {
                seq: row.get::<i64>(0)?,
                group_id: text(row.get::<Vec<u8>>(1)?)?,
                event: text(row.get::<Vec<u8>>(2)?)?,
                attempts: row.get::<i64>(3)?,
                last_worker: row.get::<Option<String>>(4)?,
                reason: row.get::<String>(5)?,
                dead_at: row.get::<f64>(6)?,
            })
        })
        .await?;
    Ok(page(rows, page_request.limit, 'd', |d| d.seq.to_be_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_text_is_refused() {
        for after in [&b""[..], b"g", b"a\0b", "é".as_bytes()] {
            assert_eq!(parse_cursor('g', &cursor('g', after)).unwrap(), after);
        }
        for bad in ["", "g", "g1", "g1.x", "g1.abc", "m1.00", "g2.00", "zz"] {
            assert!(matches!(parse_cursor('g', bad), Err(Error::Argument(_))), "{bad:?}");
        }
    }
}
