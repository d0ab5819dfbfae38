//! The statements of pausing and resuming (docs/queue.md, "Pause and resume"). A pause is
//! a row of the pauses table (a group, a routing key or the whole queue), so every process
//! sees it and it outlives restarts. What keeps a paused group out of every claim is on the
//! group's own row, where harel 0.9's claim looks too:
//!
//! - its `priority` is lowered by `OFFSET`: harel's claim takes `priority >= min_priority`
//!   (0 unless its worker asks for less), and ours filter on priority where they walk it;
//! - its turn (`last_claimed_at`) is `SET_ASIDE_UNTIL`, past any now: our claims walk
//!   turns up to now, so a paused group costs them nothing.
//!
//! Two triggers keep it so whoever writes, in harel's process too: a group made while a
//! pause names it (a publish into a paused queue, group or routing key) is paused at birth,
//! and a paused group's turn, stamped by an ack or nack of a lease that finishes while
//! paused, goes back past any now. Resume gives the priority back, and the turn from the
//! head: now, or the end of its park, delay or set-aside.

use super::Bound;
use crate::types::{PauseKind, PauseTarget};
use crate::validate::{DELAYED, MISPLACED, PARKED, SET_ASIDE_UNTIL};

/// What a pause takes off a group's priority; given back at resume.
const OFFSET: i64 = 1_000_000_000;
/// A group whose priority is at or below this is paused: halfway, so any priority a
/// writer gave (ours are 0..4, harel's Python publish takes any) stays on its side.
pub(crate) const PAUSED_AT_OR_BELOW: i64 = -OFFSET / 2;

/// Whether a group whose priority is the SQL `priority` is paused.
pub(super) fn is_paused(priority: &str) -> String {
    format!("{priority} <= {PAUSED_AT_OR_BELOW}")
}

/// A group's own priority, paused or not, from the SQL `priority` (what the looks show and
/// a dead letter keeps).
pub(super) fn own_priority(priority: &str) -> String {
    format!("CASE WHEN {} THEN {priority} + {OFFSET} ELSE {priority} END", is_paused(priority))
}

/// The pauses table: one row per pause; `name` is '' for the queue.
pub(super) fn table(p: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {p} (kind TEXT NOT NULL, name TEXT NOT NULL, paused_at REAL NOT NULL, \
         PRIMARY KEY (kind, name))"
    )
}

/// Whether a pause names the group `alias` (its row in the groups table).
fn named(p: &str, alias: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM {p} WHERE kind = 'queue' OR (kind = 'group' AND name = {alias}.group_id) \
         OR (kind = 'routing_key' AND name = {alias}.routing_key))"
    )
}

/// The names of the two triggers of the module's doc, on the groups table `g`.
fn trigger_names(g: &str) -> [String; 2] {
    [format!("{g}_paused_at_birth"), format!("{g}_paused_turn")]
}

/// The two triggers of the module's doc. SQLite runs a trigger's own UPDATE without
/// firing triggers again (recursive triggers are off), and the WHENs hold only once.
pub(super) fn triggers(g: &str, p: &str) -> Vec<String> {
    let [at_birth, turn] = trigger_names(g);
    vec![
        format!(
            "CREATE TRIGGER IF NOT EXISTS {at_birth} AFTER INSERT ON {g} \
             WHEN NEW.priority > {PAUSED_AT_OR_BELOW} AND {} \
             BEGIN UPDATE {g} SET priority = priority - {OFFSET}, last_claimed_at = {SET_ASIDE_UNTIL:.1} \
             WHERE rowid = NEW.rowid; END",
            named(p, "NEW")
        ),
        format!(
            "CREATE TRIGGER IF NOT EXISTS {turn} AFTER UPDATE OF last_claimed_at ON {g} \
             WHEN NEW.priority <= {PAUSED_AT_OR_BELOW} AND NEW.last_claimed_at <> {SET_ASIDE_UNTIL:.1} \
             BEGIN UPDATE {g} SET last_claimed_at = {SET_ASIDE_UNTIL:.1} WHERE rowid = NEW.rowid; END"
        ),
    ]
}

/// The groups a target of `kind` names, on the group `g`, its name ?`n`.
fn target_groups(kind: PauseKind, n: usize) -> String {
    match kind {
        PauseKind::Queue => "1".to_owned(),
        PauseKind::Group => format!("g.group_id = ?{n}"),
        PauseKind::RoutingKey => format!("g.routing_key = ?{n}"),
    }
}

/// The kinds in the order of their numbers (`PauseKind as usize` indexes the statements).
const KINDS: [PauseKind; 3] = [PauseKind::Queue, PauseKind::Group, PauseKind::RoutingKey];

/// Pausing and resuming, by target kind (`PauseKind as usize`), and the list of pauses.
#[derive(Debug, Clone, Default)]
pub struct PauseSql {
    /// The triggers' names, which a check at open looks for.
    pub(super) triggers: [String; 2],
    pause: [[String; 2]; 3],
    resume: [[String; 2]; 3],
    list: String,
}

impl PauseSql {
    pub(super) fn new(m: &str, g: &str, p: &str) -> PauseSql {
        let head = format!("(SELECT MIN(seq) FROM {m} WHERE group_id = g.group_id)");
        // A head held by no worker (parked, delayed, set aside) keeps its group's turn at
        // the hold's end; a worker's lease, or none, gives the turn now.
        let held_until = format!(
            "(SELECT h.lock_expiry FROM {m} h WHERE h.seq = {head} \
             AND h.locked_by IN ('{PARKED}', '{DELAYED}', '{MISPLACED}'))"
        );
        PauseSql {
            triggers: trigger_names(g),
            pause: KINDS.map(|kind| {
                [
                    // ?1 kind, ?2 name, ?3 now
                    format!("INSERT INTO {p} (kind, name, paused_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING"),
                    // ?1 name
                    format!(
                        "UPDATE {g} AS g SET priority = priority - {OFFSET}, \
                         last_claimed_at = {SET_ASIDE_UNTIL:.1} WHERE {} AND g.priority > {PAUSED_AT_OR_BELOW}",
                        target_groups(kind, 1)
                    ),
                ]
            }),
            resume: KINDS.map(|kind| {
                [
                    // ?1 kind, ?2 name
                    format!("DELETE FROM {p} WHERE kind = ?1 AND name = ?2"),
                    // ?1 now, ?2 name. A group another pause still names stays paused.
                    format!(
                        "UPDATE {g} AS g SET priority = priority + {OFFSET}, \
                         last_claimed_at = MAX(?1, COALESCE({held_until}, 0)) \
                         WHERE {} AND g.priority <= {PAUSED_AT_OR_BELOW} AND NOT {}",
                        target_groups(kind, 2),
                        named(p, "g")
                    ),
                ]
            }),
            list: format!("SELECT kind, CAST(name AS BLOB), paused_at FROM {p} ORDER BY kind <> 'queue', kind, name"),
        }
    }

    /// Pausing `target` at `now`: the pause's row (a row changed if it is new), then the
    /// groups it names set aside.
    pub fn pause(&self, target: &PauseTarget<'_>, now: f64) -> [Bound<'_>; 2] {
        let (kind, name) = (target.kind(), target.name());
        let [row, groups] = &self.pause[kind as usize];
        let named = if kind == PauseKind::Queue { vec![] } else { vec![name.into()] };
        [(row, vec![kind.name().into(), name.into(), now.into()]), (groups, named)]
    }

    /// Resuming `target` at `now`: the pause's row deleted (a row changed if there was
    /// one), then the groups no other pause names given back their priority and turn.
    pub fn resume(&self, target: &PauseTarget<'_>, now: f64) -> [Bound<'_>; 2] {
        let (kind, name) = (target.kind(), target.name());
        let [row, groups] = &self.resume[kind as usize];
        let values = if kind == PauseKind::Queue { vec![now.into()] } else { vec![now.into(), name.into()] };
        [(row, vec![kind.name().into(), name.into()]), (groups, values)]
    }

    /// Every pause: kind, name (as a BLOB), paused_at; the queue's first.
    pub fn list(&self) -> Bound<'_> {
        (&self.list, Vec::new())
    }
}
