//! The console's JSON API. Looks (GET) are open: `/api/stats`, `/api/groups`, `/api/peek`,
//! `/api/dead`, `/api/archive`, `/api/pauses`, each the document `--json` prints for the
//! same command.
//! Changes (POST) need the admin token (auth.rs): `/api/dead/redrive`, `/api/dead/purge` (a
//! body of one of `{"seqs": [..]}`, `{"group": ".."}`, `{"all": true}`), `/api/release`
//! (`{"group": ".."}`), `/api/pause` and `/api/resume` (one of `{"group": ".."}`,
//! `{"routing_key": ".."}`, `{"queue": true}`); each writes one audit line on stderr,
//! refused ones too.

use std::collections::HashMap;

use harel_transport::{DeadLetters, Error, GroupState, PauseTarget, Transport, MAX_PAGE};
use serde::Deserialize;
use tiny_http::Request;

use super::http::{body, Reply};
use super::Console;
use crate::output::{
    archive_json, dead_letters_json, pauses_json, DeadPurged, PauseDone, Redriven, Released, Resumed,
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
        Some(other) => {
            Err(Reply::error(400, format!("state {other:?}: expected ready, leased, parked, delayed or paused")))
        }
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

/// A change at `path`, or None when there is none there.
pub fn change(console: &Console, request: &mut Request, path: &str) -> Option<Reply> {
    let action = match path {
        "/api/dead/redrive" => "redrive",
        "/api/dead/purge" => "purge-dead",
        "/api/release" => "release",
        "/api/pause" => "pause",
        "/api/resume" => "resume",
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
