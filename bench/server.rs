//! Part 5 (issues #8 and #16): the queue on a libSQL server. A fresh sqld on loopback for
//! each row (the tests' harness, tests/common/sqld.rs: found through `HAREL_SQLD` or `sqld` on PATH),
//! reached directly and through a loopback proxy that adds 2 ms to every round trip (a real
//! network; tests/common/http_proxy.rs), in three modes: a local file (synchronous FULL)
//! for reference, remote (a URL) and embedded replicas (a local file per worker with
//! `sync_url`, as workers on separate hosts would have). Every operation is one request on a
//! server.
//!
//! Per mode: publishes from one thread and from 8 threads sharing one transport (shared
//! commits), `publish_many` 100 per call, and claim+ack cycles (claim, then ack: two calls)
//! with 1 and with 8 workers, each worker its own transport, and with 1 worker through
//! `ack_and_claim` (one call a message), every message acked once. Each figure runs until
//! its work is done or `CAP` is over (the rate is over what was done). With 2 ms added,
//! one worker's cycle costs (its time with 2 ms added − its time without) ÷ 2 ms round trips.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use harel_transport::{Options, Transport};
use serde_json::{json, Value};

use harel_transport_testkit::http_proxy::CountingProxy;
use harel_transport_testkit::sqld::Sqld;

use crate::backlog::{self, per_s};

const MESSAGES: usize = 4_000;
const GROUPS: usize = 400;
const BATCH: usize = 100;
const THREADS: usize = 8;
/// Each figure stops after this long even if unfinished.
const CAP: Duration = Duration::from_secs(3);
const VISIBILITY: f64 = 30.0;
/// What the proxy adds to each round trip.
const ADDED: Duration = Duration::from_millis(2);

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    File,
    Remote,
    Replica,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::File => "local file (FULL)",
            Mode::Remote => "remote (URL)",
            Mode::Replica => "embedded replica",
        }
    }
}

/// Where a measurement's transports go, and how they run their operations.
struct Place<'a> {
    mode: Mode,
    url: String,
    dir: &'a Path,
    opened: AtomicUsize,
}

impl Place<'_> {
    /// A new transport on tables under `prefix`: for a replica, on a file of its own.
    fn open(&self, prefix: &str) -> Result<Transport, String> {
        let mut options = Options::new();
        options.prefix(prefix).map_err(|e| format!("{e:?}"))?;
        let n = self.opened.fetch_add(1, Ordering::SeqCst);
        let opened = match self.mode {
            Mode::File => Transport::open(&self.dir.join("server-part.db").to_string_lossy(), &options),
            Mode::Remote => Transport::open(&self.url, &options),
            Mode::Replica => {
                options.sync_url(Some(&self.url)).map_err(|e| format!("{e:?}"))?;
                Transport::open(&self.dir.join(format!("replica-{n}.db")).to_string_lossy(), &options)
            }
        };
        opened.map_err(|e| format!("open ({}): {e:?}", self.mode.name()))
    }
}

/// One row of the table: a mode, its path, its network.
struct Run {
    mode: Mode,
    added: bool,
    figures: Result<Value, String>,
}

/// Runs every mode against one fresh sqld; a table on stdout, the figures as JSON.
pub fn run(binary: &Path, work: &Path) -> Value {
    let mut runs = Vec::new();
    let mut plan = vec![(Mode::File, false)];
    for mode in [Mode::Remote, Mode::Replica] {
        for added in [false, true] {
            plan.push((mode, added));
        }
    }
    for (n, (mode, added)) in plan.into_iter().enumerate() {
        let network = if added { " (+2 ms)" } else { "" };
        crate::progress(&format!("server part: {}{network}", mode.name()));
        // A fresh server each time: a replica's open downloads the primary's whole log.
        let server = Sqld::start(binary, false);
        let slow = CountingProxy::start(server.port(), ADDED);
        let dir = work.join(format!("server-{n}"));
        let url = if added { slow.url() } else { server.url() };
        let place = Place { mode, url, dir: &dir, opened: AtomicUsize::new(0) };
        let figures = std::fs::create_dir_all(&dir).map_err(|e| e.to_string()).and_then(|()| measure(&place, n));
        let _ = std::fs::remove_dir_all(&dir);
        runs.push(Run { mode, added, figures });
    }
    print(&runs);
    Value::Array(
        runs.iter()
            .map(|r| {
                let mut v = json!({"mode": r.mode.name(), "added_ms": if r.added { 2 } else { 0 }});
                match &r.figures {
                    Ok(f) => v["figures"] = f.clone(),
                    Err(e) => v["error"] = e.clone().into(),
                }
                v
            })
            .collect(),
    )
}

fn measure(place: &Place, n: usize) -> Result<Value, String> {
    let publisher = place.open(&format!("p{n}"))?;
    let started = Instant::now();
    let mut published = 0;
    while published < MESSAGES && started.elapsed() < CAP {
        let event = format!("{{\"n\":{published}}}");
        publisher
            .publish(&format!("g{}", published % GROUPS), &event, 0, None)
            .map_err(|e| format!("publish: {e:?}"))?;
        published += 1;
    }
    let publish = per_s(published, started.elapsed());
    let shared = AtomicUsize::new(0);
    let failure = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                while shared.load(Ordering::SeqCst) < MESSAGES && started.elapsed() < CAP {
                    let i = shared.fetch_add(1, Ordering::SeqCst);
                    if let Err(e) = publisher.publish(&format!("g{}", i % GROUPS), &format!("{{\"t\":{i}}}"), 0, None) {
                        failure.lock().unwrap().get_or_insert(format!("publish from threads: {e:?}"));
                        return;
                    }
                }
            });
        }
    });
    let publish_threads = per_s(shared.load(Ordering::SeqCst).min(MESSAGES), started.elapsed());
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    publisher.purge().map_err(|e| format!("purge: {e:?}"))?;
    let started = Instant::now();
    let batched = fill(&publisher, Some(CAP))?;
    let publish_many = per_s(batched, started.elapsed());
    publisher.purge().map_err(|e| format!("purge: {e:?}"))?;
    let one = drain(place, &publisher, &format!("p{n}"), 1, false)?;
    let fused = drain(place, &publisher, &format!("p{n}"), 1, true)?;
    let eight = drain(place, &publisher, &format!("p{n}"), THREADS, false)?;
    Ok(json!({
        "publish_per_s": publish,
        "publish_8_threads_per_s": publish_threads,
        "publish_many_per_s": publish_many,
        "cycles_1_worker_per_s": one,
        "ack_and_claim_1_worker_per_s": fused,
        "cycles_8_workers_per_s": eight,
        "messages": MESSAGES, "groups": GROUPS, "batch": BATCH, "cap_s": CAP.as_secs_f64(),
    }))
}

/// Publishes the backlog (`MESSAGES` over `GROUPS`, `BATCH` per call) through
/// `publish_many` (until `cap`, if given); how many went in.
fn fill(t: &Transport, cap: Option<Duration>) -> Result<usize, String> {
    backlog::fill(t, 0, MESSAGES, GROUPS, BATCH, cap)
}

/// Claim+ack cycles a second: `workers` threads, each its own transport, on a full
/// backlog, until it is drained or `CAP` is over; `fused`: `ack_and_claim`. What is left
/// is purged after.
fn drain(place: &Place, filler: &Transport, prefix: &str, workers: usize, fused: bool) -> Result<f64, String> {
    fill(filler, None)?;
    let transports = (0..workers).map(|_| place.open(prefix)).collect::<Result<Vec<_>, _>>()?;
    let acked = AtomicUsize::new(0);
    let failure = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|s| {
        for (w, t) in transports.iter().enumerate() {
            let (acked, failure) = (&acked, &failure);
            s.spawn(move || {
                let worker = format!("w{w}");
                let mut held = None;
                while acked.load(Ordering::SeqCst) < MESSAGES && started.elapsed() < CAP {
                    // (whether a message was acked, the next lease)
                    let step = match held.take() {
                        Some(lease) if fused => t.ack_and_claim(&lease, &worker, VISIBILITY, 0, &[]).map(|l| (true, l)),
                        Some(lease) => {
                            t.ack(&lease).and_then(|()| t.claim(&worker, VISIBILITY, 0, &[])).map(|l| (true, l))
                        }
                        None => t.claim(&worker, VISIBILITY, 0, &[]).map(|l| (false, l)),
                    };
                    match step {
                        Ok((one_more, next)) => {
                            acked.fetch_add(usize::from(one_more), Ordering::SeqCst);
                            if next.is_none() {
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            held = next;
                        }
                        Err(e) => {
                            failure.lock().unwrap().get_or_insert(format!("{worker}: {e:?}"));
                            return;
                        }
                    }
                }
            });
        }
    });
    let took = started.elapsed();
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    filler.purge().map_err(|e| format!("purge: {e:?}"))?;
    Ok(per_s(acked.into_inner(), took))
}

fn print(runs: &[Run]) {
    let figure = |r: &Run, key: &str| r.figures.as_ref().ok().and_then(|v| v[key].as_f64());
    let find = |mode: Mode, added: bool| runs.iter().find(|r| r.mode == mode && r.added == added);
    const KEYS: [(&str, &str); 6] = [
        ("publish_per_s", "publish/s"),
        ("publish_8_threads_per_s", "publish/s 8 thr"),
        ("publish_many_per_s", "publish_many msg/s"),
        ("cycles_1_worker_per_s", "cycles/s 1 wkr"),
        ("cycles_8_workers_per_s", "cycles/s 8 wkr"),
        ("ack_and_claim_1_worker_per_s", "a&c cycles/s 1 wkr"),
    ];
    println!();
    println!(
        "On a libSQL server (sqld on loopback; +2 ms: through a proxy adding 2 ms per round trip): \
         publishes from 1 thread and from {THREADS} sharing one transport, publish_many ({BATCH} per call), \
         claim+ack cycles with 1 and {THREADS} workers (each its own transport) and ack_and_claim with 1, \
         each over {MESSAGES} messages in {GROUPS} groups or {} s.",
        CAP.as_secs()
    );
    print!("{:<34}", "mode");
    for (_, title) in KEYS {
        print!(" {title:>20}");
    }
    println!();
    for r in runs {
        print!("{:<34}", format!("{}{}", r.mode.name(), if r.added { ", +2 ms" } else { "" }));
        for (key, _) in KEYS {
            let cell = match figure(r, key) {
                Some(v) => format!("{v:.0}"),
                None => "failed".to_owned(),
            };
            print!(" {cell:>20}");
        }
        println!();
        if let Err(e) = &r.figures {
            println!("  {e}");
        }
    }
    // What 2 ms more per round trip costs one worker's cycle, in round trips.
    for mode in [Mode::Remote, Mode::Replica] {
        let (Some(near), Some(far)) = (find(mode, false), find(mode, true)) else {
            continue;
        };
        let trips = |key: &str| match (figure(near, key), figure(far, key)) {
            (Some(a), Some(b)) => format!("{:.2}", (1.0 / b - 1.0 / a) / ADDED.as_secs_f64()),
            _ => "failed".to_owned(),
        };
        println!(
            "{}: round trips per cycle, claim+ack {}, ack_and_claim {}",
            mode.name(),
            trips("cycles_1_worker_per_s"),
            trips("ack_and_claim_1_worker_per_s")
        );
    }
}
