//! The console's JSON API. Looks (GET) are open: `/api/stats`, `/api/groups`, `/api/peek`,
//! `/api/dead`, `/api/archive`, `/api/pauses`, `/api/limits`, each the document `--json`
//! prints for the same command.
//! Changes (POST) need the admin token (auth.rs): `/api/dead/redrive`, `/api/dead/purge` (a
//! body of one of `{"seqs": [..]}`, `{"group": ".."}`, `{"all": true}`), `/api/release`
//! (`{"group": ".."}`), `/api/pause` and `/api/resume` (one of `{"group": ".."}`,
//! `{"routing_key": ".."}`, `{"queue": true}`), `/api/limits/set` (`{"routing_key": "..",
//! "concurrency": N, "rate": R, "burst": B}`, a concurrency or a rate with its burst or both)
//! and `/api/limits/remove` (`{"routing_key": ".."}`); each writes one audit line on stderr,
//! refused ones too.

use std::collections::HashMap;

use harel_transport::{DeadLetters, Error, GroupState, Limit, PauseTarget, Rate, Transport, MAX_PAGE};
use serde::Deserialize;
use tiny_http::Request;

use super::http::{body, Reply};
use super::Console;
use crate::output::{
    archive_json, dead_letters_json, limits_json, pauses_json, DeadPurged, LimitDone, LimitRemoved, PauseDone,
    Redriven, Released, Resumed,
};
use crate::time;

/// A listing's page when the request names no `limit`.
const DEFAULT_PAGE: usize = 50;

pub fn look(console: &Console, path: &str, query: &HashMap<String, String>) -> Option<Reply> {
    let (t, out) = (&console.transport, &console.out);
    let cursor = query.get("cursor").map(String::as_str).filter(|c| !c.is_empty());
    let reply = match path {
        "/api/stats" => t.stats().map(|s| Reply::json(200, &out.stats_json(&s))),
        "/api/groups" => match (state(query), limit(query)) {
            (Ok(state), Ok(limit)) => t.groups(state, cursor, limit).map(|p| Reply::json(200, &out.groups_json(&p))),
            (Err(bad), _) | (_, Err(bad)) => Ok(bad),
        },
        "/api/peek" => match (query.get("group").filter(|g| !g.is_empty()), limit(query)) {
            (None, _) => Ok(Reply::error(400, "peek needs a group (?group=...)")),
            (Some(group), Ok(limit)) => {
                t.peek(group, cursor, limit).map(|p| Reply::json(200, &out.peek_json(group, &p)))
            }
            (_, Err(bad)) => Ok(bad),
        },
        "/api/dead" => match limit(query) {
            Ok(limit) => {
                let group = query.get("group").map(String::as_str).filter(|g| !g.is_empty());
                t.dead_letters(group, cursor, limit).map(|p| Reply::json(200, &dead_letters_json(&p)))
            }
            Err(bad) => Ok(bad),
        },
        "/api/archive" => match limit(query) {
            Ok(limit) => {
                let group = query.get("group").map(String::as_str).filter(|g| !g.is_empty());
                t.archive(group, cursor, limit).map(|p| Reply::json(200, &archive_json(&p)))
            }
            Err(bad) => Ok(bad),
        },
        "/api/pauses" => t.pauses().map(|p| Reply::json(200, &pauses_json(&p))),
        "/api/limits" => t.limits().map(|l| Reply::json(200, &limits_json(&l))),
        _ => return None,
    };
    Some(reply.unwrap_or_else(|e| failed(&console.transport, &e)))
}

fn state(query: &HashMap<String, String>) -> Result<Option<GroupState>, Reply> {
    match query.get("state").map(String::as_str) {
        None | Some("") => Ok(None),
        Some("ready") => Ok(Some(GroupState::Ready)),
        Some("leased") => Ok(Some(GroupState::Leased)),
        Some("parked") => Ok(Some(GroupState::Parked)),
        Some("delayed") => Ok(Some(GroupState::Delayed)),
        Some("paused") => Ok(Some(GroupState::Paused)),
        Some("held") => Ok(Some(GroupState::Held)),
        Some("retrying") => Ok(Some(GroupState::Retrying)),
        Some(other) => Err(Reply::error(
            400,
            format!("state {other:?}: expected ready, leased, parked, delayed, paused, held or retrying"),
        )),
    }
}

fn limit(query: &HashMap<String, String>) -> Result<usize, Reply> {
    match query.get("limit") {
        None => Ok(DEFAULT_PAGE),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            _ => Err(Reply::error(400, format!("limit {text:?}: expected a page size from 1 to {MAX_PAGE}"))),
        },
    }
}

/// The library's error: the request's fault (400), a change the queue cannot take as it is
/// (409: a harel 0.9 file, served without changing its schema), the queue away or busy
/// (503), else 500.
fn failed(t: &Transport, e: &Error) -> Reply {
    let status = match e {
        Error::Argument(_) => 400,
        Error::Database(_) if !t.absent().is_empty() => 409,
        Error::Busy(_) | Error::Connect(_) => 503,
        _ => 500,
    };
    Reply::error(status, e.message())
}

/// Which dead letters: exactly one of the three, never a default, since both calls change
/// the queue.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Which {
    #[serde(default)]
    all: bool,
    group: Option<String>,
    seqs: Option<Vec<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseBody {
    group: String,
}

/// What a pause or a resume names: exactly one of the three, never a default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseBody {
    group: Option<String>,
    routing_key: Option<String>,
    #[serde(default)]
    queue: bool,
}

impl PauseBody {
    fn target(&self) -> Option<PauseTarget<'_>> {
        match (&self.group, &self.routing_key, self.queue) {
            (Some(group), None, false) => Some(PauseTarget::Group(group)),
            (None, Some(key), false) => Some(PauseTarget::RoutingKey(key)),
            (None, None, true) => Some(PauseTarget::Queue),
            _ => None,
        }
    }
}

/// A routing key's limits to set: a concurrency, a rate with its burst, or both (the library
/// refuses neither, and checks the numbers).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitBody {
    routing_key: String,
    concurrency: Option<u32>,
    rate: Option<f64>,
    burst: Option<f64>,
}

/// The routing key whose limits are removed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitKeyBody {
    routing_key: String,
}

/// A change at `path`, or None when there is none there.
pub fn change(console: &Console, request: &mut Request, path: &str) -> Option<Reply> {
    let action = match path {
        "/api/dead/redrive" => "redrive",
        "/api/dead/purge" => "purge-dead",
        "/api/release" => "release",
        "/api/pause" => "pause",
        "/api/resume" => "resume",
        "/api/limits/set" => "set-limit",
        "/api/limits/remove" => "remove-limit",
        _ => return None,
    };
    let (target, reply) = match console.admin.admit(request).and_then(|()| body(request)) {
        Err(refused) => ("-".to_owned(), refused),
        Ok(bytes) => perform(console, action, &bytes),
    };
    let remote = request.remote_addr().map_or_else(|| "-".to_owned(), |a| a.to_string());
    eprintln!(
        "{}: audit time={:?} remote={remote} action={action} target={target:?} result={:?}",
        crate::NAME,
        time::utc(harel_transport::system_clock()),
        reply.summary(),
    );
    Some(reply)
}

/// Runs an admitted change: what it was about (for the audit line), and its answer.
fn perform(console: &Console, action: &str, bytes: &[u8]) -> (String, Reply) {
    let t = &console.transport;
    if action == "release" {
        return match serde_json::from_slice::<ReleaseBody>(bytes) {
            Err(e) => ("-".to_owned(), Reply::error(400, format!("release: expected {{\"group\": \"...\"}} ({e})"))),
            Ok(ReleaseBody { group }) => {
                let reply = match t.release(&group) {
                    Ok(released) => Reply::json(200, &Released { group_id: &group, released }),
                    Err(e) => failed(t, &e),
                };
                (format!("group {group}"), reply)
            }
        };
    }
    if action == "pause" || action == "resume" {
        return pause_or_resume(t, action, bytes);
    }
    if action == "set-limit" {
        return set_limit(t, bytes);
    }
    if action == "remove-limit" {
        return remove_limit(t, bytes);
    }
    let which = match serde_json::from_slice::<Which>(bytes) {
        Ok(Which { all: true, group: None, seqs: None }) => DeadSelector::All,
        Ok(Which { all: false, group: Some(g), seqs: None }) if !g.is_empty() => DeadSelector::Group(g),
        Ok(Which { all: false, group: None, seqs: Some(s) }) if !s.is_empty() => DeadSelector::Seqs(s),
        _ => {
            let expected = "expected one of {\"seqs\": [...]}, {\"group\": \"...\"}, {\"all\": true}";
            return ("-".to_owned(), Reply::error(400, format!("{action}: {expected}")));
        }
    };
    let target = which.describe();
    let reply = if action == "redrive" {
        which.apply(|w| t.redrive(w)).map(|n| Reply::json(200, &Redriven { redriven: n }))
    } else {
        which.apply(|w| t.purge_dead(w)).map(|n| Reply::json(200, &DeadPurged { purged: n }))
    };
    (target, reply.unwrap_or_else(|e| failed(t, &e)))
}

/// `pause` or `resume` (`action`) of the target the body names.
fn pause_or_resume(t: &Transport, action: &str, bytes: &[u8]) -> (String, Reply) {
    let body = serde_json::from_slice::<PauseBody>(bytes).ok();
    let Some(target) = body.as_ref().and_then(PauseBody::target) else {
        let expected = "expected one of {\"group\": \"...\"}, {\"routing_key\": \"...\"}, {\"queue\": true}";
        return ("-".to_owned(), Reply::error(400, format!("{action}: {expected}")));
    };
    let (kind, name) = (target.kind().name(), target.name());
    let described = match target {
        PauseTarget::Queue => kind.to_owned(),
        _ => format!("{kind} {name}"),
    };
    let reply = if action == "pause" {
        t.pause(target).map(|paused| Reply::json(200, &PauseDone { kind, name, paused }))
    } else {
        t.resume(target).map(|resumed| Reply::json(200, &Resumed { kind, name, resumed }))
    };
    (described, reply.unwrap_or_else(|e| failed(t, &e)))
}

/// `set-limit`: the body's limits on its routing key, as `limit set` sets them.
fn set_limit(t: &Transport, bytes: &[u8]) -> (String, Reply) {
    let expected = "set-limit: expected {\"routing_key\": \"...\", \"concurrency\": N, \"rate\": R, \"burst\": B} \
                    (a concurrency, a rate with its burst, or both)";
    let body = match serde_json::from_slice::<LimitBody>(bytes) {
        Ok(body) => body,
        Err(e) => return ("-".to_owned(), Reply::error(400, format!("{expected} ({e})"))),
    };
    let target = format!("routing_key {}", body.routing_key);
    let rate = match (body.rate, body.burst) {
        (Some(per_second), Some(burst)) => Some(Rate { per_second, burst }),
        (None, None) => None,
        _ => return (target, Reply::error(400, "set-limit: rate and burst go together: give both, or neither")),
    };
    let limit = Limit { concurrency: body.concurrency, rate };
    let reply = match t.set_limit(&body.routing_key, limit) {
        Ok(()) => Reply::json(200, &LimitDone::new(&body.routing_key, limit)),
        Err(e) => failed(t, &e),
    };
    (target, reply)
}

/// `remove-limit`: the body's routing key's limits, as `limit remove` removes them.
fn remove_limit(t: &Transport, bytes: &[u8]) -> (String, Reply) {
    let Ok(LimitKeyBody { routing_key }) = serde_json::from_slice::<LimitKeyBody>(bytes) else {
        return ("-".to_owned(), Reply::error(400, "remove-limit: expected {\"routing_key\": \"...\"}"));
    };
    let reply = match t.remove_limit(&routing_key) {
        Ok(()) => Reply::json(200, &LimitRemoved { routing_key: &routing_key, removed: true }),
        Err(e) => failed(t, &e),
    };
    (format!("routing_key {routing_key}"), reply)
}

/// `DeadLetters`, owning what it names.
enum DeadSelector {
    All,
    Group(String),
    Seqs(Vec<i64>),
}

impl DeadSelector {
    fn apply<T>(&self, call: impl FnOnce(DeadLetters<'_>) -> T) -> T {
        match self {
            DeadSelector::All => call(DeadLetters::All),
            DeadSelector::Group(g) => call(DeadLetters::Group(g)),
            DeadSelector::Seqs(s) => call(DeadLetters::Seqs(s)),
        }
    }

    fn describe(&self) -> String {
        match self {
            DeadSelector::All => "all".to_owned(),
            DeadSelector::Group(g) => format!("group {g}"),
            DeadSelector::Seqs(s) => format!("seqs {s:?}"),
        }
    }
}
