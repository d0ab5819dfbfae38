//! A backlog of GROUPS × PER_GROUP numbered messages, and a ledger that checks, as
//! workers drain it, that no group is claimed while it is in flight and every group comes
//! out in order. Shared by tests/concurrency.rs (local) and tests/server.rs (sqld). Also
//! a one-worker drain that returns what came out.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use harel_transport::{Lease, Transport};

pub const GROUPS: usize = 40;
pub const PER_GROUP: usize = 25;
pub const TOTAL: usize = GROUPS * PER_GROUP;

pub fn group(g: usize) -> String {
    format!("g{g:02}")
}

pub fn message(g: usize, i: usize) -> String {
    format!(r#"{{"kind":"tick","id":"{g}-{i}","data":{{"g":{g},"i":{i}}}}}"#)
}

/// (g, i) of a `message(g, i)`, checked against the group it came from.
pub fn parse_message(group_id: &str, event: &str) -> (usize, usize) {
    let v: serde_json::Value = serde_json::from_str(event).unwrap();
    assert_eq!(v["id"], format!("{}-{}", v["data"]["g"], v["data"]["i"]));
    let (g, i) = (v["data"]["g"].as_u64().unwrap() as usize, v["data"]["i"].as_u64().unwrap() as usize);
    assert_eq!(group_id, group(g), "the event is its group's");
    (g, i)
}

/// Claims and acks until nothing is deliverable: (group, event) in delivery order.
pub fn claim_and_ack_all(t: &Transport) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Some(lease) = t.claim("w", 30.0, 0, &[]).expect("claim") {
        t.ack(&lease).expect("ack");
        out.push((lease.group_id, lease.event));
    }
    out
}

/// Publishes `message(g, i)` round by round, so every group's messages are spread out.
pub fn fill(t: &Transport, groups: usize, per_group: usize) -> Duration {
    let started = Instant::now();
    for i in 0..per_group {
        for g in 0..groups {
            t.publish(&group(g), &message(g, i), 0, None).expect("publish");
        }
    }
    started.elapsed()
}

#[derive(Default)]
struct GroupState {
    in_flight: Option<i64>,
    next: usize,
    last_seq: i64,
}

/// What the workers saw, checked as they go: a claim of a group already in flight, or a
/// message out of its group's order, fails the test. A worker marks a message in flight
/// after its claim returns and clears it before acking, inside the real lease, so a
/// clash seen here is a clash in the queue.
#[derive(Default)]
pub struct GroupLedger {
    groups: Mutex<HashMap<String, GroupState>>,
    by_worker: Mutex<BTreeMap<String, usize>>,
}

impl GroupLedger {
    pub fn claimed(&self, lease: &Lease) {
        let (_, i) = parse_message(&lease.group_id, &lease.event);
        let mut groups = self.groups.lock().unwrap();
        let state = groups.entry(lease.group_id.clone()).or_default();
        assert_eq!(
            state.in_flight, None,
            "{}: seq {} claimed while seq {:?} is in flight",
            lease.group_id, lease.seq, state.in_flight
        );
        assert_eq!(i, state.next, "group {} out of order", lease.group_id);
        assert!(lease.seq > state.last_seq, "seqs rise within a group");
        state.in_flight = Some(lease.seq);
        state.last_seq = lease.seq;
    }

    pub fn acking(&self, lease: &Lease) {
        let mut groups = self.groups.lock().unwrap();
        let state = groups.get_mut(&lease.group_id).unwrap();
        assert_eq!(state.in_flight, Some(lease.seq));
        state.in_flight = None;
        state.next += 1;
        *self.by_worker.lock().unwrap().entry(lease.worker_id.clone()).or_default() += 1;
    }

    /// Every message of every group, in order, and nothing left in flight.
    pub fn assert_complete(&self) {
        let groups = self.groups.lock().unwrap();
        assert_eq!(groups.len(), GROUPS);
        assert!(
            groups.values().all(|s| s.next == PER_GROUP && s.in_flight.is_none()),
            "every message of every group, in order"
        );
    }

    /// Messages acked per worker.
    pub fn by_worker(&self) -> BTreeMap<String, usize> {
        self.by_worker.lock().unwrap().clone()
    }
}
