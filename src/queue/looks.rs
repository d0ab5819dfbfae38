//! Looks inside the queue: counts (`Stats`), pages of groups, of a group's messages and of
//! dead letters, each with a cursor for the next page, and what a waiting claim reads
//! (`Readiness`). Each is read without the write lock (sql/inspect.rs: one SELECT each, one
//! snapshot), so it never holds up a claim; on an embedded replica the backend syncs first.

use libsql::Value;

use crate::backend::Backend;
use crate::chain::Row;
use crate::cursor::cursor;
use crate::error::{Error, Result};
use crate::request::PageRequest;
use crate::sql::Statements;
use crate::headers::Headers;
use crate::types::{
    Archived, DeadLetter, GroupInfo, GroupState, Limit, LimitInfo, MessageInfo, Page, Pause, PauseKind, PriorityStats,
    Rate, Stats,
};
use crate::validate::{DELAYED, PARKED};
use crate::waiting::Readiness;

/// Whether a claim with this filter would find a head now, and when a group is next
/// released; with `undated`, also whether some turn has come that the claim would not
/// take (a watch's timer needs it; a waiting claim looks each second anyway).
pub async fn readiness(
    backend: &mut Backend,
    sql: &Statements,
    (min_priority, routing_keys): (i32, &[&str]),
    now: f64,
    undated: bool,
) -> Result<Readiness> {
    // The version first: a commit that becomes visible after it is seen either by the look
    // (deliverable) or, unseen, leaves the version as it was, so the waiter keeps settling
    // instead of sleeping through it.
    let data_version = backend.data_version().await?;
    let (claim, params) = sql.claim(now, min_priority, routing_keys, 1);
    let (look, next) = ((claim.as_ref(), params), sql.next_ready_at(now));
    // A held group whose key has room again is deliverable: the claim gives it back first.
    let given_back = sql.limit.give_back_due(now);
    let (found, next, given_back, undated_turns) = if undated {
        let all = backend.read(&[look, next, given_back, sql.undated_turns(now)]).await?;
        let [found, next, given_back, turns] = reads::<4>(all)?;
        (found, next, given_back, int(turns.first().and_then(|row| row.first())).is_some_and(|n| n != 0))
    } else {
        let [found, next, given_back] = reads::<3>(backend.read(&[look, next, given_back]).await?)?;
        (found, next, given_back, false)
    };
    let next_ready_at = next.first().and_then(|row| real(row.first()));
    let deliverable = !found.is_empty() || !given_back.is_empty();
    Ok(Readiness { deliverable, next_ready_at, data_version, undated_turns })
}

pub async fn stats(backend: &mut Backend, sql: &Statements, now: f64) -> Result<Stats> {
    let [rows] = reads::<1>(backend.read(&[sql.stats(now)]).await?)?;
    let (totals, levels) = rows.split_first().ok_or_else(|| Error::Database("stats: no totals row".into()))?;
    let (messages, dead, next_due_at) = (count(totals.get(1)), count(totals.get(2)), real(totals.get(3)));
    let (next_release_at, oldest_enqueued_at, oldest_seq, overdue_since) =
        (real(totals.get(4)), real(totals.get(5)), int(totals.get(6)), real(totals.get(7)));
    let expired = count(totals.get(8));
    let mut by_priority: Vec<PriorityStats> = levels
        .iter()
        .map(|row| {
            let (groups, leased, parked, delayed, paused) =
                (count(row.get(1)), count(row.get(2)), count(row.get(3)), count(row.get(4)), count(row.get(5)));
            let (held, retrying) = (count(row.get(6)), count(row.get(7)));
            PriorityStats {
                priority: int(row.get(0)).and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
                groups,
                ready: groups.saturating_sub(leased + parked + delayed + paused + held + retrying),
                leased,
                parked,
                delayed,
                paused,
                held,
                retrying,
            }
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
        delayed: sum(|p| p.delayed),
        paused: sum(|p| p.paused),
        held: sum(|p| p.held),
        retrying: sum(|p| p.retrying),
        next_due_at,
        dead,
        expired,
        oldest_ready_age: oldest_enqueued_at.filter(|_| ready > 0).map(|at| (now - at).max(0.0)),
        oldest_ready_seq: oldest_seq.filter(|_| ready > 0),
        next_release_at,
        oldest_overdue_lease: overdue_since.map(|at| (now - at).max(0.0)),
        by_priority,
    })
}

fn state_of(locked_by: Option<&str>, lock_expiry: Option<f64>, now: f64) -> GroupState {
    match (locked_by, lock_expiry) {
        (Some(holder), Some(until)) if until >= now => {
            if holder == PARKED {
                GroupState::Parked
            } else if holder == DELAYED {
                GroupState::Delayed
            } else {
                GroupState::Leased
            }
        }
        _ => GroupState::Ready,
    }
}

pub async fn groups(
    backend: &mut Backend,
    sql: &Statements,
    state: Option<GroupState>,
    page_request: &PageRequest,
    now: f64,
) -> Result<Page<GroupInfo>> {
    let look = sql.groups_page(state, page_request.after.as_deref(), page_limit(page_request), now);
    let [rows] = reads::<1>(backend.read(&[look]).await?)?;
    let rows = rows.iter().map(|row| {
        let locked_by = text(row.get(4));
        let lock_expiry = real(row.get(5));
        // A paused group's head may still be leased (the lease finishes): its holder shows.
        let head = state_of(locked_by.as_deref(), lock_expiry, now);
        let paused = int(row.get(9)).is_some_and(|p| p != 0);
        let turn = match text(row.get(10)).as_deref() {
            Some("held") => Some(GroupState::Held),
            Some("retrying") => Some(GroupState::Retrying),
            _ => None,
        };
        let stored = bytes(row.get(0));
        let info = GroupInfo {
            group_id: lossy(stored.clone()),
            state: if paused { GroupState::Paused } else { turn.unwrap_or(head) },
            depth: count(row.get(8)),
            head_seq: int(row.get(3)).unwrap_or(0),
            head_age: real(row.get(7)).map(|at| (now - at).max(0.0)),
            holder: locked_by.filter(|_| head == GroupState::Leased),
            lock_expiry: lock_expiry.filter(|_| head != GroupState::Ready),
            priority: int(row.get(1)).and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
            routing_key: text(row.get(2)),
            head_attempts: int(row.get(6)).unwrap_or(0),
            shard: 0,
        };
        (info, stored)
    });
    // The cursor holds the stored bytes, not the text shown (which may carry U+FFFD).
    let Page { items, next } = page(rows.collect(), page_request.limit, 'g', |(_, stored)| stored.clone());
    Ok(Page { items: items.into_iter().map(|(info, _)| info).collect(), next })
}

pub async fn peek(
    backend: &mut Backend,
    sql: &Statements,
    group_id: &str,
    page_request: &PageRequest,
) -> Result<Page<MessageInfo>> {
    let look = sql.messages_page(group_id, after_seq(page_request)?, page_limit(page_request));
    let [rows] = reads::<1>(backend.read(&[look]).await?)?;
    let messages = rows.iter().map(|row| MessageInfo {
        seq: int(row.first()).unwrap_or(0),
        event: lossy(bytes(row.get(1))),
        attempts: int(row.get(2)).unwrap_or(0),
        locked_by: text(row.get(3)),
        lock_expiry: real(row.get(4)),
        published_at: real(row.get(5)),
        headers: headers(row.get(6)),
        retry_delay: real(row.get(7)),
    });
    Ok(page(messages.collect(), page_request.limit, 'm', |m| m.seq.to_be_bytes().to_vec()))
}

pub async fn dead_letters(
    backend: &mut Backend,
    sql: &Statements,
    group_id: Option<&str>,
    page_request: &PageRequest,
) -> Result<Page<DeadLetter>> {
    if sql.lacks().dead {
        // A queue opened as it is without the table (`Transport::absent` says so) has none.
        return Ok(Page { items: Vec::new(), next: None });
    }
    let look = sql.dead_page(group_id, after_seq(page_request)?, page_limit(page_request));
    let [rows] = reads::<1>(backend.read(&[look]).await?)?;
    let letters = rows.iter().map(|row| DeadLetter {
        seq: int(row.first()).unwrap_or(0),
        group_id: lossy(bytes(row.get(1))),
        event: lossy(bytes(row.get(2))),
        attempts: int(row.get(3)).unwrap_or(0),
        last_worker: text(row.get(4)),
        reason: text(row.get(5)).unwrap_or_default(),
        dead_at: real(row.get(6)).unwrap_or(0.0),
        shard: 0,
        headers: headers(row.get(7)),
    });
    Ok(page(letters.collect(), page_request.limit, 'd', |d| d.seq.to_be_bytes().to_vec()))
}

pub async fn archive(
    backend: &mut Backend,
    sql: &Statements,
    group_id: Option<&str>,
    page_request: &PageRequest,
) -> Result<Page<Archived>> {
    if sql.lacks().archive {
        // A file made before the archive, opened without creating it, has archived nothing.
        return Ok(Page { items: Vec::new(), next: None });
    }
    let look = sql.archive.page(group_id, after_seq(page_request)?, page_limit(page_request));
    let [rows] = reads::<1>(backend.read(&[look]).await?)?;
    let archived = rows.iter().map(|row| Archived {
        seq: int(row.first()).unwrap_or(0),
        group_id: lossy(bytes(row.get(1))),
        event: lossy(bytes(row.get(2))),
        headers: headers(row.get(3)),
        attempts: int(row.get(4)).unwrap_or(0),
        worker_id: text(row.get(5)).unwrap_or_default(),
        published_at: real(row.get(6)),
        claimed_at: real(row.get(7)),
        acked_at: real(row.get(8)).unwrap_or(0.0),
        shard: 0,
    });
    Ok(page(archived.collect(), page_request.limit, 'a', |a| a.seq.to_be_bytes().to_vec()))
}

/// A look shows headers another program stored unreadably as none (a claim buries their
/// message, naming them).
fn headers(value: Option<&Value>) -> Headers {
    value.and_then(|v| Headers::from_column(v).ok()).unwrap_or_default()
}

/// The rows of `N` reads.
fn reads<const N: usize>(all: Vec<Vec<Row>>) -> Result<[Vec<Row>; N]> {
    let got = all.len();
    all.try_into().map_err(|_| Error::Database(format!("{N} reads came back as {got}")))
}

/// The limits in force by routing key, with their use now.
pub async fn limits(backend: &mut Backend, sql: &Statements, now: f64) -> Result<Vec<LimitInfo>> {
    if sql.lacks().limits {
        return Ok(Vec::new());
    }
    let [rows] = reads::<1>(backend.read(&[sql.limit.list(now)]).await?)?;
    let limits = rows.iter().map(|row| {
        let rate = match (real(row.get(2)), real(row.get(3))) {
            (Some(per_second), Some(burst)) => Some(Rate { per_second, burst }),
            _ => None,
        };
        let concurrency = int(row.get(1)).and_then(|n| u32::try_from(n).ok());
        LimitInfo {
            routing_key: lossy(bytes(row.first())),
            limit: Limit { concurrency, rate },
            in_use: int(row.get(4)).map_or(0, |n| n.max(0) as u64),
            tokens: real(row.get(5)),
            held: int(row.get(6)).map_or(0, |n| n.max(0) as u64),
        }
    });
    Ok(limits.collect())
}

/// The pauses in force, the queue's first; none where the table is missing.
pub async fn pauses(backend: &mut Backend, sql: &Statements) -> Result<Vec<Pause>> {
    if sql.lacks().pauses {
        return Ok(Vec::new());
    }
    let [rows] = reads::<1>(backend.read(&[sql.pause.list()]).await?)?;
    rows.iter()
        .map(|row| {
            let kind = text(row.first()).and_then(|k| PauseKind::from_name(&k));
            let kind = kind.ok_or_else(|| Error::Database(format!("{}: a row of unknown kind", sql.pauses_table)))?;
            Ok(Pause { kind, name: lossy(bytes(row.get(1))), paused_at: real(row.get(2)).unwrap_or(0.0) })
        })
        .collect()
}

fn int(value: Option<&Value>) -> Option<i64> {
    match value {
        Some(Value::Integer(n)) => Some(*n),
        Some(Value::Real(x)) => Some(*x as i64),
        _ => None,
    }
}

/// Times are REAL, but another writer (or a server's JSON) may hand back an integer.
fn real(value: Option<&Value>) -> Option<f64> {
    match value {
        Some(Value::Real(x)) => Some(*x),
        Some(Value::Integer(n)) => Some(*n as f64),
        _ => None,
    }
}

fn count(value: Option<&Value>) -> u64 {
    int(value).and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

fn text(value: Option<&Value>) -> Option<String> {
    match value {
        Some(Value::Text(s)) => Some(s.clone()),
        Some(Value::Blob(b)) => Some(lossy(b.clone())),
        _ => None,
    }
}

/// A text column the statements CAST to BLOB (libsql would cut TEXT at a NUL).
fn bytes(value: Option<&Value>) -> Vec<u8> {
    match value {
        Some(Value::Blob(b)) => b.clone(),
        Some(Value::Text(s)) => s.clone().into_bytes(),
        _ => Vec::new(),
    }
}

/// Text another program stored that is not UTF-8 is shown with U+FFFD in its place: a look
/// never fails on it.
fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
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
