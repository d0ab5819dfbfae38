//! The measurements, written once over a `Queue` so our transport and the raw SPEC loop
//! are timed by the same code (bench/peers.py mirrors it for harel's Python transports).

use std::time::{Duration, Instant};

use harel_transport::Lease;
use serde_json::{json, Value};

use crate::states::{event_json, group_id, Expect};

pub trait Queue {
    fn publish(&mut self, group_id: &str, event_json: &str) -> Result<(), String>;
    /// Publishes `messages` (group, event) in order. By default one `publish` each (the
    /// raw SPEC loop has no batch); ours overrides it with `Transport::publish_many` (one
    /// transaction).
    fn publish_many(&mut self, messages: &[(String, String)]) -> Result<(), String> {
        messages.iter().try_for_each(|(g, e)| self.publish(g, e))
    }
    /// Publishes from `threads` threads at once, each taking the next message of `work`
    /// in turn, until `slice` is over or all are taken; how many it published. Ours shares
    /// one `Transport` between the threads. By default `None`: the raw loop has one
    /// connection, which threads sharing it could only use one publish at a time, so the
    /// job publishes one at a time on the calling thread instead.
    fn publish_from_threads(
        &mut self,
        _work: &[(String, String)],
        _threads: usize,
        _slice: Duration,
    ) -> Result<Option<usize>, String> {
        Ok(None)
    }
    fn claim(
        &mut self,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>, String>;
    fn ack(&mut self, lease: &Lease) -> Result<(), String>;
    /// Acks `lease`, then claims the next message. By default the two calls one after the
    /// other (two transactions: what the raw SPEC loop and harel's Python transports can
    /// do); ours overrides it with `Transport::ack_and_claim` (one transaction).
    fn ack_and_claim(
        &mut self,
        lease: &Lease,
        worker_id: &str,
        visibility: f64,
        min_priority: i32,
        routing_keys: &[&str],
    ) -> Result<Option<Lease>, String> {
        self.ack(lease)?;
        self.claim(worker_id, visibility, min_priority, routing_keys)
    }
    /// `nack(lease, 0)`: free the message at once.
    fn nack_now(&mut self, lease: &Lease) -> Result<(), String>;
}

/// One figure of the table.
#[derive(Clone, Debug)]
pub enum Figure {
    /// Operations per second over `ops` operations in `secs`; `complete` if it did all it
    /// was asked (all N published, the queue drained) before its time cap.
    Rate {
        per_s: f64,
        ops: u64,
        secs: f64,
        complete: bool,
    },
    /// Claim latency, median (and 90th percentile) over `iters` claims, microseconds.
    Latency {
        median_us: f64,
        p90_us: f64,
        iters: usize,
    },
    Failed(String),
    NotApplicable(String),
}

impl Figure {
    /// How many times better ours is than `peer`: rates ours / peer, latencies peer / ours.
    pub fn advantage(ours: &Figure, peer: &Figure) -> Option<f64> {
        match (ours, peer) {
            (Figure::Rate { per_s: a, .. }, Figure::Rate { per_s: b, .. }) if *b > 0.0 => Some(a / b),
            (Figure::Latency { median_us: a, .. }, Figure::Latency { median_us: b, .. }) if *a > 0.0 => Some(b / a),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Figure::Rate { per_s, ops, secs, complete } => {
                json!({"per_s": round(*per_s, 1), "ops": ops, "secs": round(*secs, 3), "complete": complete})
            }
            Figure::Latency { median_us, p90_us, iters } => {
                json!({"median_us": round(*median_us, 1), "p90_us": round(*p90_us, 1), "iters": iters})
            }
            Figure::Failed(e) => json!({"error": e}),
            Figure::NotApplicable(why) => json!({"n/a": why}),
        }
    }

    /// What bench/peers.py prints for one case.
    pub fn from_json(v: &Value) -> Figure {
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            Figure::Failed(e.to_owned())
        } else if let Some(why) = v.get("n/a").and_then(Value::as_str) {
            Figure::NotApplicable(why.to_owned())
        } else if let Some(per_s) = f("per_s") {
            Figure::Rate {
                per_s,
                ops: f("ops").unwrap_or(0.0) as u64,
                secs: f("secs").unwrap_or(0.0),
                complete: v.get("complete").and_then(Value::as_bool).unwrap_or(false),
            }
        } else if let Some(median_us) = f("median_us") {
            Figure::Latency { median_us, p90_us: f("p90_us").unwrap_or(0.0), iters: f("iters").unwrap_or(0.0) as usize }
        } else {
            Figure::Failed(format!("unreadable peer result {v}"))
        }
    }
}

pub fn round(x: f64, digits: i32) -> f64 {
    let k = 10f64.powi(digits);
    (x * k).round() / k
}

/// A measurement done in short turns, so that the queues measured in one case take
/// turns every few milliseconds: a passing slowdown of the shared machine (another job's
/// disk writes, say) then lands on all of them alike rather than on whichever ran then.
pub trait Job {
    /// Works for about `slice` (at least one operation).
    fn round(&mut self, slice: Duration) -> Result<(), String>;
    /// Whether it should get another turn, given the time it may spend in all.
    fn wants_more(&self, budget: Duration) -> bool;
    fn figure(&self) -> Figure;
}

/// Turns of this length.
pub const SLICE: Duration = Duration::from_millis(25);

/// Gives the jobs turns of `SLICE` until none wants more (each spends about `budget`); a
/// job that failed to start or fails keeps its error as its figure.
pub fn interleave(mut jobs: Vec<Result<Box<dyn Job>, String>>, budget: Duration) -> Vec<Figure> {
    loop {
        let mut any = false;
        for job in jobs.iter_mut() {
            let Ok(j) = job else { continue };
            if !j.wants_more(budget) {
                continue;
            }
            any = true;
            if let Err(e) = j.round(SLICE) {
                *job = Err(e);
            }
        }
        if !any {
            break;
        }
    }
    jobs.iter().map(|j| j.as_ref().map_or_else(|e| Figure::Failed(e.clone()), |j| j.figure())).collect()
}

/// Publishes `n` messages round-robin over `groups` groups (as many as the time allows),
/// `batch` at a time: one `publish` each when `batch` is 1, `publish_many` otherwise. One
/// op is one message.
pub struct PublishJob {
    q: Box<dyn Queue>,
    work: Vec<(String, String)>,
    batch: usize,
    threads: usize,
    next: usize,
    secs: f64,
}

impl PublishJob {
    /// `n` messages over `groups`, `batch` per call, from `threads` threads.
    pub fn new(q: Box<dyn Queue>, n: usize, groups: usize, batch: usize, threads: usize) -> Self {
        let work = (0..n).map(|i| (group_id(i % groups), event_json(i))).collect();
        PublishJob { q, work, batch, threads, next: 0, secs: 0.0 }
    }

    /// From the calling thread, `batch` messages per call, until `slice` is over.
    fn publish_in_turn(&mut self, started: Instant, slice: Duration) -> Result<(), String> {
        while self.next < self.work.len() {
            let end = (self.next + self.batch).min(self.work.len());
            match &self.work[self.next..end] {
                [(g, e)] => self.q.publish(g, e)?,
                chunk => self.q.publish_many(chunk)?,
            }
            self.next = end;
            if started.elapsed() > slice {
                break;
            }
        }
        Ok(())
    }
}

impl Job for PublishJob {
    fn round(&mut self, slice: Duration) -> Result<(), String> {
        let started = Instant::now();
        let threaded = match self.threads {
            1 => None,
            threads => self.q.publish_from_threads(&self.work[self.next..], threads, slice)?,
        };
        match threaded {
            Some(done) => self.next += done,
            None => self.publish_in_turn(started, slice)?,
        }
        self.secs += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn wants_more(&self, budget: Duration) -> bool {
        self.next < self.work.len() && self.secs < budget.as_secs_f64()
    }

    fn figure(&self) -> Figure {
        let ops = self.next as u64;
        Figure::Rate { per_s: ops as f64 / self.secs, ops, secs: self.secs, complete: self.next == self.work.len() }
    }
}

/// One worker draining the queue until it is empty (as far as the time allows). Separate:
/// claim, ack, claim, ack ... Fused: claim once, then `lease = ack_and_claim(lease)` until
/// nothing is left. Either way one op is one message acked.
pub struct DrainJob {
    q: Box<dyn Queue>,
    fused: bool,
    /// Fused: the lease the next `ack_and_claim` acks (kept across turns).
    held: Option<Lease>,
    ops: u64,
    secs: f64,
    complete: bool,
}

impl DrainJob {
    pub fn new(q: Box<dyn Queue>, fused: bool) -> Self {
        DrainJob { q, fused, held: None, ops: 0, secs: 0.0, complete: false }
    }
}

impl Job for DrainJob {
    fn round(&mut self, slice: Duration) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if self.fused {
                let next = match self.held.take() {
                    None => self.q.claim("drainer", 30.0, 0, &[])?,
                    Some(lease) => {
                        let next = self.q.ack_and_claim(&lease, "drainer", 30.0, 0, &[])?;
                        self.ops += 1;
                        next
                    }
                };
                if next.is_none() {
                    self.complete = true;
                    break;
                }
                self.held = next;
            } else {
                match self.q.claim("drainer", 30.0, 0, &[])? {
                    Some(lease) => self.q.ack(&lease)?,
                    None => {
                        self.complete = true;
                        break;
                    }
                }
                self.ops += 1;
            }
            if started.elapsed() > slice {
                break;
            }
        }
        self.secs += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn wants_more(&self, budget: Duration) -> bool {
        !self.complete && self.secs < budget.as_secs_f64()
    }

    fn figure(&self) -> Figure {
        Figure::Rate { per_s: self.ops as f64 / self.secs, ops: self.ops, secs: self.secs, complete: self.complete }
    }
}

/// Warm-up claims before timing (the first compiles statements and reads cold pages).
const WARMUP: usize = 2;
/// Timed claims at least, however slow.
const MIN_CLAIMS: usize = 3;

/// Claim latency in a state: claim (timed) then `nack(0)` (untimed; it restores the
/// state), repeated; the median over every round's claims.
pub struct ClaimJob {
    q: Box<dyn Queue>,
    min_priority: i32,
    routing_keys: &'static [&'static str],
    expect: Expect,
    max_claims: usize,
    warm: bool,
    times: Vec<f64>,
    /// Time spent in its turns (claims and nacks).
    secs: f64,
}

impl ClaimJob {
    pub fn new(
        q: Box<dyn Queue>,
        min_priority: i32,
        routing_keys: &'static [&'static str],
        expect: Expect,
        max_claims: usize,
    ) -> Self {
        ClaimJob { q, min_priority, routing_keys, expect, max_claims, warm: false, times: Vec::new(), secs: 0.0 }
    }

    fn once(&mut self) -> Result<f64, String> {
        let t0 = Instant::now();
        let got = self.q.claim("bench-worker", 30.0, self.min_priority, self.routing_keys)?;
        let took = t0.elapsed().as_secs_f64() * 1e6;
        match (&self.expect, &got) {
            (Expect::Nothing, None) | (Expect::Any, Some(_)) => {}
            (Expect::Group(g), Some(l)) if l.group_id == *g => {}
            _ => {
                return Err(format!(
                    "the state is not what was meant: expected {:?}, claim returned {:?}",
                    self.expect,
                    got.map(|l| l.group_id)
                ))
            }
        }
        if let Some(lease) = got {
            self.q.nack_now(&lease)?;
        }
        Ok(took)
    }
}

impl Job for ClaimJob {
    fn round(&mut self, slice: Duration) -> Result<(), String> {
        if !self.warm {
            for _ in 0..WARMUP {
                self.once()?;
            }
            self.warm = true;
        }
        let started = Instant::now();
        while self.times.len() < self.max_claims {
            let t = self.once()?;
            self.times.push(t);
            if started.elapsed() > slice {
                break;
            }
        }
        self.secs += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn wants_more(&self, budget: Duration) -> bool {
        self.times.len() < self.max_claims && (self.secs < budget.as_secs_f64() || self.times.len() < MIN_CLAIMS)
    }

    fn figure(&self) -> Figure {
        let mut times = self.times.clone();
        if times.is_empty() {
            return Figure::Failed("no claim was timed".into());
        }
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        Figure::Latency { median_us: at(0.5), p90_us: at(0.9), iters: times.len() }
    }
}
