//! Part 5 (issue #8): the queue on a libSQL server. One sqld on loopback (the tests'
//! harness, tests/common/sqld.rs: found through `HAREL_SQLD` or `sqld` on PATH), and the
//! same work in three modes: a local file (our default, synchronous FULL) for reference,
//! remote (a URL: every statement a round trip to the server) and embedded replicas (a
//! local file per worker with `sync_url`: reads local, writes and every statement inside a
//! transaction go to the primary). Per mode: one thread publishes a backlog, then 8
//! worker threads, each with its own transport (for replicas, its own file, as workers on
//! separate hosts would have), claim and ack until it is drained; every message must be
//! acked exactly once. Also the same number of messages through `publish_many`, 100 per
//! call, into tables of their own (prefix `batch`).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use harel_transport::{Message, Options, Transport};
use serde_json::{json, Value};

use harel_transport_testkit::sqld::Sqld;

const MESSAGES: usize = 1_000;
const GROUPS: usize = 200;
const BATCH: usize = 100;
const WORKERS: usize = 8;
/// A drain stops after this long even if unfinished (the rate is over what was done).
const DRAIN_CAP: Duration = Duration::from_secs(30);
const VISIBILITY: f64 = 30.0;

#[derive(Clone, Copy)]
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

struct Place<'a> {
    mode: Mode,
    url: String,
    dir: &'a Path,
    opened: AtomicUsize,
}

impl Place<'_> {
    /// A new transport: for a replica, on a file of its own.
    fn open(&self) -> Result<Transport, String> {
        self.open_with(Options::new())
    }

    fn open_with(&self, mut options: Options) -> Result<Transport, String> {
        let n = self.opened.fetch_add(1, Ordering::SeqCst);
        let file = |name: &str| self.dir.join(format!("{name}-{n}.db")).to_string_lossy().into_owned();
        let opened = match self.mode {
            Mode::File => Transport::open(&self.dir.join("server-part.db").to_string_lossy(), &options),
            Mode::Remote => Transport::open(&self.url, &options),
            Mode::Replica => {
                options.sync_url(Some(&self.url)).map_err(|e| format!("{e:?}"))?;
                Transport::open(&file("replica"), &options)
            }
        };
        opened.map_err(|e| format!("open ({}): {e:?}", self.mode.name()))
    }
}

/// Runs the three modes against one fresh sqld; a table on stdout, the figures as JSON.
pub fn run(binary: &Path, work: &Path) -> Value {
    let server = Sqld::start(binary, false);
    let mut results = Vec::new();
    for (n, mode) in [Mode::File, Mode::Remote, Mode::Replica].into_iter().enumerate() {
        crate::progress(&format!("server part: {}", mode.name()));
        let dir = work.join(format!("server-{n}"));
        let figures = std::fs::create_dir_all(&dir)
            .map_err(|e| e.to_string())
            .and_then(|()| measure(&Place { mode, url: server.url(), dir: &dir, opened: AtomicUsize::new(0) }));
        let _ = std::fs::remove_dir_all(&dir);
        results.push((mode, figures));
    }
    print(&results);
    Value::Array(
        results
            .iter()
            .map(|(mode, r)| match r {
                Ok(v) => json!({"mode": mode.name(), "figures": v}),
                Err(e) => json!({"mode": mode.name(), "error": e}),
            })
            .collect(),
    )
}

fn measure(place: &Place) -> Result<Value, String> {
    let producer = place.open()?;
    let started = Instant::now();
    for i in 0..MESSAGES {
        let event = format!("{{\"n\":{i}}}");
        producer.publish(&format!("g{}", i % GROUPS), &event, 0, None).map_err(|e| format!("publish: {e:?}"))?;
    }
    let publish_s = started.elapsed().as_secs_f64();
    let mut options = Options::new();
    options.prefix("batch").map_err(|e| format!("{e:?}"))?;
    let batcher = place.open_with(options)?;
    let events: Vec<(String, String)> =
        (0..MESSAGES).map(|i| (format!("g{}", i % GROUPS), format!("{{\"n\":{i}}}"))).collect();
    let started = Instant::now();
    for chunk in events.chunks(BATCH) {
        let batch: Vec<Message> =
            chunk.iter().map(|(g, e)| Message { group_id: g, event_json: e, priority: 0, routing_key: None }).collect();
        batcher.publish_many(&batch).map_err(|e| format!("publish_many: {e:?}"))?;
    }
    let publish_many_s = started.elapsed().as_secs_f64();
    let workers = (0..WORKERS).map(|_| place.open()).collect::<Result<Vec<_>, _>>()?;
    let acked = AtomicUsize::new(0);
    let empty = AtomicUsize::new(0);
    let failure = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|s| {
        for (w, t) in workers.iter().enumerate() {
            let (acked, empty, failure) = (&acked, &empty, &failure);
            s.spawn(move || {
                let worker = format!("w{w}");
                while acked.load(Ordering::SeqCst) < MESSAGES && started.elapsed() < DRAIN_CAP {
                    let step = t.claim(&worker, VISIBILITY, 0, &[]).and_then(|claimed| match claimed {
                        Some(lease) => t.ack(&lease).map(|()| acked.fetch_add(1, Ordering::SeqCst)).map(drop),
                        None => {
                            empty.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(1));
                            Ok(())
                        }
                    });
                    if let Err(e) = step {
                        failure.lock().unwrap().get_or_insert(format!("{worker}: {e:?}"));
                        return;
                    }
                }
            });
        }
    });
    let drain_s = started.elapsed().as_secs_f64();
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    let acked = acked.into_inner();
    // Left over: nothing when every message was acked exactly once (a double delivery
    // would have been acked twice and the count would pass MESSAGES with messages left).
    let left = (0..).map_while(|_| producer.claim("check", VISIBILITY, 0, &[]).ok().flatten()).count();
    if acked != MESSAGES || left != 0 {
        return Err(format!("{acked} acked of {MESSAGES}, {left} left in the queue"));
    }
    Ok(json!({
        "publish_per_s": (MESSAGES as f64 / publish_s).round(),
        "publish_many_per_s": (MESSAGES as f64 / publish_many_s).round(),
        "batch": BATCH,
        "drain_claims_per_s": (acked as f64 / drain_s).round(),
        "empty_claims": empty.into_inner(),
        "messages": MESSAGES, "groups": GROUPS, "workers": WORKERS,
    }))
}

fn print(results: &[(Mode, Result<Value, String>)]) {
    let rate = |r: &Result<Value, String>, key: &str| r.as_ref().ok().and_then(|v| v[key].as_f64());
    let base = results.first().map(|(_, r)| r);
    println!();
    println!(
        "On a libSQL server (sqld on loopback): {MESSAGES} messages over {GROUPS} groups published by one \
         thread, then drained by {WORKERS} workers (claim, ack), each its own transport; and {MESSAGES} \
         more through publish_many, {BATCH} per call. × = the local file's rate ÷ this one's."
    );
    println!("{:<22} {:>16} {:>22} {:>22}", "mode", "publish/s (×)", "publish_many msgs/s (×)", "drain claims/s (×)");
    for (mode, r) in results {
        let cell = |key: &str| match (rate(r, key), base.and_then(|b| rate(b, key))) {
            (Some(v), Some(b)) => format!("{v:.0} ({:.1})", b / v),
            (Some(v), None) => format!("{v:.0}"),
            _ => "failed".to_owned(),
        };
        println!(
            "{:<22} {:>16} {:>22} {:>22}",
            mode.name(),
            cell("publish_per_s"),
            cell("publish_many_per_s"),
            cell("drain_claims_per_s")
        );
        if let Err(e) = r {
            println!("  {}: {e}", mode.name());
        }
    }
}
