//! Part 10 (issue #28, point 2): how close our workers come to the server's own limit. On
//! one fresh sqld on loopback (the tests' harness, tests/common/sqld.rs), for 1, 2, 4, 8
//! and 16 workers — threads of this process, each with a connection (the yardstick) or a
//! transport (ours) of its own — each figure over `SPAN`:
//!
//! - the yardstick, sqld's own rate of small write transactions with no library of ours:
//!   each worker sends Hrana pipeline requests (`POST /v3/pipeline`, HTTP/1.1 kept alive, on
//!   the stream its last answer named), each one batch of `BEGIN IMMEDIATE`; one UPDATE of
//!   the worker's own row; `COMMIT` (and `ROLLBACK` unless it committed): the shape of our
//!   requests (src/backend/server/batch.rs). A `BEGIN` answered busy is sent again at once,
//!   without a pause. Measured in two halves, before and after ours, so a drift in the
//!   shared machine's load weighs on both;
//! - ours (`Transport`, remote URL mode) over a backlog in many groups, topped up before
//!   each loop: claim + ack (two transactions a message), `ack_and_claim` (one), and
//!   `claim_many` + `ack_and_claim_many` of 10 (one per 10 messages after the first).
//!   Leases still held when the span ends are acked after it, untimed.
//!
//! - what a commit costs on this sqld, and what each page it writes adds (`commit_costs`):
//!   what bounds one worker, whose requests never wait for the lock.
//!
//! Ours against the yardstick: messages/s × transactions per message ÷ the yardstick's
//! txn/s (issue #28's target: ≥ 0.8 at every worker count). Beside each figure, to say
//! what limits each row: the busy answers (ours: `metrics().busy_retries`, the pauses
//! after one), the slowest single request (ours: call), and the machine's CPU in use with
//! this process's share of it (the clients' side).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use harel_transport::{Lease, Options, Transport, Wait};
use serde_json::{json, Value};

use harel_transport_testkit::sqld::Sqld;

use crate::backlog;
use crate::measure::round;

const WORKERS: [usize; 5] = [1, 2, 4, 8, 16];
/// How long each figure runs (the yardstick's: two halves of half of it).
const SPAN: Duration = Duration::from_secs(2);
/// The backlog each loop of ours starts from, round-robin over `GROUPS` groups: more than
/// the fastest loop takes in `SPAN`, and far more groups than 16 workers hold leases in.
const BACKLOG: usize = 12_000;
const GROUPS: usize = 3_000;
/// Messages per `publish_many` call when topping the backlog up (untimed).
const FILL_BATCH: usize = 100;
/// Leases per `claim_many` / `ack_and_claim_many` in the batch loop.
const BATCH: usize = 10;
const VISIBILITY: f64 = 30.0;
const TARGET: f64 = 0.8;
const PREFIX: &str = "limit";

#[derive(Clone, Copy, PartialEq)]
pub enum Loop {
    ClaimAck,
    AckAndClaim,
    Batch,
}

const LOOPS: [Loop; 3] = [Loop::ClaimAck, Loop::AckAndClaim, Loop::Batch];

impl Loop {
    fn id(self) -> &'static str {
        match self {
            Loop::ClaimAck => "claim_ack",
            Loop::AckAndClaim => "ack_and_claim",
            Loop::Batch => "claim_many_10",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Loop::ClaimAck => "ours, claim + ack (msg/s)",
            Loop::AckAndClaim => "ours, ack_and_claim",
            Loop::Batch => "ours, claim_many + ack_and_claim_many of 10",
        }
    }

    fn transactions_per_message(self) -> f64 {
        match self {
            Loop::ClaimAck => 2.0,
            Loop::AckAndClaim => 1.0,
            Loop::Batch => 1.0 / BATCH as f64,
        }
    }
}

/// One worker's share of a figure.
pub struct Tally {
    started: Instant,
    ended: Instant,
    /// Transactions committed (the yardstick) or messages acked (ours), within the span.
    done: u64,
    /// Busy answers: the yardstick's, or ours' pauses after one.
    busy: u64,
    /// Claims that found nothing (the backlog ran dry: the figure is not the server's).
    dry: u64,
    /// The longest one request (ours: one call) took.
    slowest: Duration,
}

/// A figure: what all workers did over the span, and what the machine did meanwhile.
pub struct Figure {
    done: u64,
    secs: f64,
    pub busy: u64,
    pub dry: u64,
    pub slowest: Duration,
    pub cpu: Cpu,
}

impl Figure {
    pub fn rate(&self) -> f64 {
        self.done as f64 / self.secs
    }

    /// Two halves as one.
    fn plus(&self, other: &Figure) -> Figure {
        let weight = |a: f64, b: f64| (a * self.secs + b * other.secs) / (self.secs + other.secs);
        Figure {
            done: self.done + other.done,
            secs: self.secs + other.secs,
            busy: self.busy + other.busy,
            dry: self.dry + other.dry,
            slowest: self.slowest.max(other.slowest),
            cpu: Cpu {
                machine: weight(self.cpu.machine, other.cpu.machine),
                bench: weight(self.cpu.bench, other.cpu.bench),
            },
        }
    }
}

/// Runs `work(worker, deadline)` on `workers` threads that start together; the work done
/// over the span from the first start to the last end.
pub fn timed(
    workers: usize,
    span: Duration,
    work: impl Fn(usize, Instant) -> Result<Tally, String> + Sync,
) -> Result<Figure, String> {
    let barrier = Barrier::new(workers);
    let cpu = CpuMark::now();
    let results: Vec<Result<Tally, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (work, barrier) = (&work, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    work(w, Instant::now() + span)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a worker panicked".into()))).collect()
    });
    let cpu = cpu.since();
    let tallies = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    let first = tallies.iter().map(|t| t.started).min().ok_or("no worker")?;
    let last = tallies.iter().map(|t| t.ended).max().ok_or("no worker")?;
    Ok(Figure {
        done: tallies.iter().map(|t| t.done).sum(),
        secs: (last - first).as_secs_f64(),
        busy: tallies.iter().map(|t| t.busy).sum(),
        dry: tallies.iter().map(|t| t.dry).sum(),
        slowest: tallies.iter().map(|t| t.slowest).max().unwrap_or_default(),
        cpu,
    })
}

/// The figures of one worker count.
struct Count {
    workers: usize,
    yardstick: Result<(Figure, [f64; 2]), String>,
    ours: Vec<Result<Figure, String>>,
}

pub fn run(binary: &Path) -> Value {
    crate::progress("server limit: a fresh sqld, the yardstick and ours at 1-16 workers");
    let server = Sqld::start(binary, false);
    let measured = measure(&server);
    let out = match &measured {
        Ok((commits, counts)) => {
            print(counts);
            print_commits(commits, counts);
            let mut out = to_json(counts);
            out["commit_ms"] = commits.as_ref().map_or_else(|e| json!({"error": e}), CommitCosts::to_json);
            out
        }
        Err(e) => {
            println!("\n10. The server's own limit: FAILED: {e}");
            json!({"error": e})
        }
    };
    drop(server);
    out
}

fn measure(server: &Sqld) -> Result<(Result<CommitCosts, String>, Vec<Count>), String> {
    let url = server.url();
    let mut options = Options::new();
    options.prefix(PREFIX).map_err(|e| format!("{e:?}"))?;
    let open = || Transport::open(&url, &options).map_err(|e| format!("open: {e:?}"));
    let filler = open()?;
    let mut published = 0;
    let mut setup = Hrana::connect(server.port())?;
    setup.setup(*WORKERS.iter().max().unwrap_or(&1))?;
    let commits = commit_costs(&mut setup);
    setup.close();
    let mut counts = Vec::new();
    for workers in WORKERS {
        crate::progress(&format!("server limit: {workers} worker(s)"));
        let before = yardstick(server.port(), workers, SPAN / 2);
        let mut ours = Vec::new();
        for l in LOOPS {
            let figure = top_up(&filler, &mut published).and_then(|()| {
                let transports = (0..workers).map(|_| open()).collect::<Result<Vec<_>, _>>()?;
                timed(workers, SPAN, |w, deadline| drain(&transports[w], w, deadline, l))
            });
            ours.push(figure);
        }
        let after = yardstick(server.port(), workers, SPAN / 2);
        let yardstick = before.and_then(|b| after.map(|a| (b.plus(&a), [b.rate(), a.rate()])));
        counts.push(Count { workers, yardstick, ours });
    }
    Ok((commits, counts))
}

/// Publishes until the queue holds `BACKLOG` messages again.
pub fn top_up(t: &Transport, published: &mut usize) -> Result<(), String> {
    let held = t.stats().map_err(|e| format!("stats: {e:?}"))?.messages as usize;
    let missing = BACKLOG.saturating_sub(held);
    *published += backlog::fill(t, *published, missing, GROUPS, FILL_BATCH, None)?;
    Ok(())
}

/// One worker of ours until `deadline`: messages acked, and the pauses after busy answers.
pub fn drain(t: &Transport, w: usize, deadline: Instant, l: Loop) -> Result<Tally, String> {
    let worker = format!("w{w}");
    let fail = |what: &str, e: harel_transport::Error| format!("{worker}: {what}: {e:?}");
    let busy = t.metrics().busy_retries;
    let started = Instant::now();
    let (mut done, mut dry, mut slowest) = (0u64, 0u64, Duration::ZERO);
    let mut held: Vec<Lease> = Vec::new();
    while Instant::now() < deadline {
        let call = Instant::now();
        match l {
            Loop::ClaimAck => {
                if let Some(lease) = held.pop() {
                    t.ack(&lease).map_err(|e| fail("ack", e))?;
                    done += 1;
                }
                held.extend(t.claim(&worker, VISIBILITY, 0, &[]).map_err(|e| fail("claim", e))?);
            }
            Loop::AckAndClaim => {
                let next = match held.pop() {
                    Some(lease) => {
                        let next = t.ack_and_claim(&lease, &worker, VISIBILITY, 0, &[]);
                        done += 1;
                        next.map_err(|e| fail("ack_and_claim", e))?
                    }
                    None => t.claim(&worker, VISIBILITY, 0, &[]).map_err(|e| fail("claim", e))?,
                };
                held.extend(next);
            }
            Loop::Batch => {
                held = if held.is_empty() {
                    t.claim_many(&worker, VISIBILITY, 0, &[], BATCH, &Wait::none())
                        .map_err(|e| fail("claim_many", e))?
                } else {
                    let (acks, next) = t
                        .ack_and_claim_many(&held, &worker, VISIBILITY, 0, &[], BATCH)
                        .map_err(|e| fail("ack_and_claim_many", e))?;
                    if let Some(Err(e)) = acks.iter().find(|a| a.is_err()) {
                        return Err(format!("{worker}: ack_and_claim_many: a lease was lost: {e:?}"));
                    }
                    done += acks.len() as u64;
                    next
                };
            }
        }
        slowest = slowest.max(call.elapsed());
        if held.is_empty() {
            dry += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let ended = Instant::now();
    let busy = t.metrics().busy_retries - busy;
    if !held.is_empty() {
        t.ack_many(&held).map_err(|e| fail("ack_many after the span", e))?;
    }
    Ok(Tally { started, ended, done, busy, dry, slowest })
}

/// The yardstick over `span`: `workers` connections, each with its own row.
fn yardstick(port: u16, workers: usize, span: Duration) -> Result<Figure, String> {
    let connections = (0..workers).map(|_| Hrana::connect(port).map(Mutex::new)).collect::<Result<Vec<_>, _>>()?;
    // A first transaction on each stream, untimed: the server opens its connection.
    for (w, c) in connections.iter().enumerate() {
        c.lock().unwrap().transaction(w)?;
    }
    let figure = timed(workers, span, |w, deadline| {
        let mut c = connections[w].lock().unwrap();
        let started = Instant::now();
        let (mut done, mut busy, mut slowest) = (0, 0, Duration::ZERO);
        while Instant::now() < deadline {
            let call = Instant::now();
            let committed = c.transaction(w)?;
            slowest = slowest.max(call.elapsed());
            if committed {
                done += 1;
            } else {
                busy += 1;
            }
        }
        Ok(Tally { started, ended: Instant::now(), done, busy, dry: 0, slowest })
    });
    for c in &connections {
        c.lock().unwrap().close();
    }
    figure
}

/// The pages a commit writes in its larger variant: one row each, of 3,000 bytes (a 4 KB page).
const PAGES: usize = 7;
/// Requests per variant in a round, and rounds (the variants take turns).
const COST_REQUESTS: usize = 100;
const COST_ROUNDS: usize = 5;

/// What a commit costs on this sqld, from one client with no other writer: the median
/// request of `BEGIN IMMEDIATE`, UPDATEs of rows on 1 or `PAGES` pages, then `COMMIT` or
/// `ROLLBACK`, in ms. The difference is the commit's own cost. An `ack_and_claim` of ours
/// writes several pages (the message and its index entry, the head it leases, two groups
/// and their turns in the index), the yardstick one.
struct CommitCosts {
    /// [committed, rolled back] for 1 page, then for `PAGES`.
    one: [f64; 2],
    many: [f64; 2],
}

impl CommitCosts {
    fn to_json(&self) -> Value {
        json!({"pages": PAGES, "one_page": [round(self.one[0], 3), round(self.one[1], 3)],
               "many_pages": [round(self.many[0], 3), round(self.many[1], 3)]})
    }
}

fn commit_costs(c: &mut Hrana) -> Result<CommitCosts, String> {
    let table = step(None, "CREATE TABLE IF NOT EXISTS pages (id INTEGER PRIMARY KEY, n INTEGER, pad BLOB)");
    let rows = step(
        Some(json!({"type": "ok", "step": 0})),
        &format!("INSERT OR IGNORE INTO pages SELECT value, 0, zeroblob(3000) FROM generate_series(1, {PAGES})"),
    );
    c.checked(json!([table, rows]))?;
    let request = |pages: usize, end: &str| {
        let mut steps = vec![step(None, "BEGIN IMMEDIATE")];
        for id in 1..=pages {
            steps.push(step(
                Some(json!({"type": "ok", "step": id - 1})),
                &format!("UPDATE pages SET n = n + 1 WHERE id = {id}"),
            ));
        }
        steps.push(step(Some(json!({"type": "ok", "step": pages})), end));
        Value::Array(steps)
    };
    let variants = [request(1, "COMMIT"), request(1, "ROLLBACK"), request(PAGES, "COMMIT"), request(PAGES, "ROLLBACK")];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..COST_ROUNDS {
        for (v, steps) in variants.iter().enumerate() {
            for _ in 0..COST_REQUESTS {
                let at = Instant::now();
                c.checked(steps.clone())?;
                times[v].push(at.elapsed());
            }
        }
    }
    let median = |t: &mut Vec<Duration>| {
        t.sort();
        t[t.len() / 2].as_secs_f64() * 1e3
    };
    let m: Vec<f64> = times.iter_mut().map(median).collect();
    Ok(CommitCosts { one: [m[0], m[1]], many: [m[2], m[3]] })
}

/// One Hrana stream on a TCP connection of its own (HTTP/1.1, kept alive): each request a
/// pipeline of one batch, on the stream the last answer named (its baton), as ours sends.
struct Hrana {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    host: String,
    baton: Option<String>,
}

impl Hrana {
    fn connect(port: u16) -> Result<Hrana, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect to sqld: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        Ok(Hrana { reader: BufReader::new(stream), writer, host: format!("127.0.0.1:{port}"), baton: None })
    }

    /// The yardstick's table, a row per worker.
    fn setup(&mut self, rows: usize) -> Result<(), String> {
        let mut steps =
            vec![step(None, "CREATE TABLE IF NOT EXISTS yardstick (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")];
        for id in 0..rows {
            steps.push(step(
                Some(json!({"type": "ok", "step": id})),
                &format!("INSERT OR IGNORE INTO yardstick VALUES ({id}, 0)"),
            ));
        }
        let result = self.batch(json!(steps))?;
        match result["step_errors"].as_array().and_then(|e| e.iter().find(|e| !e.is_null())) {
            Some(e) => Err(format!("the yardstick's table: {e}")),
            None => Ok(()),
        }
    }

    /// One write transaction, in one request: committed (true), or its BEGIN found the
    /// lock taken (false: nothing ran).
    fn transaction(&mut self, row: usize) -> Result<bool, String> {
        let steps = json!([
            step(None, "BEGIN IMMEDIATE"),
            {"condition": {"type": "ok", "step": 0},
             "stmt": {"sql": "UPDATE yardstick SET n = n + 1 WHERE id = ?", "want_rows": false,
                      "args": [{"type": "integer", "value": row.to_string()}]}},
            step(Some(json!({"type": "ok", "step": 1})), "COMMIT"),
            step(Some(json!({"type": "not", "cond": {"type": "ok", "step": 2}})), "ROLLBACK"),
        ]);
        let result = self.batch(steps)?;
        let errors = &result["step_errors"];
        if let Some(e) = errors.get(0).filter(|e| !e.is_null()) {
            let text = e.to_string();
            return if text.contains("SQLITE_BUSY")
                || text.contains("SQLITE_LOCKED")
                || text.contains("database is locked")
            {
                Ok(false)
            } else {
                Err(format!("BEGIN: {text}"))
            };
        }
        for step in [1, 2] {
            if let Some(e) = errors.get(step).filter(|e| !e.is_null()) {
                return Err(format!("the yardstick's step {step}: {e}"));
            }
        }
        if result["step_results"][1]["affected_row_count"].as_u64() != Some(1) {
            return Err(format!("the yardstick's UPDATE changed no row: {result}"));
        }
        Ok(true)
    }

    /// Runs one batch; its result. A stream the server no longer knows is replaced once.
    fn batch(&mut self, steps: Value) -> Result<Value, String> {
        let request = json!({"type": "batch", "batch": {"steps": steps}});
        let answer = match self.pipeline(&request) {
            Err(e) if self.baton.take().is_some() && e.starts_with("HTTP 400") => self.pipeline(&request)?,
            other => other?,
        };
        let result = &answer["results"][0];
        if result["type"] != "ok" {
            return Err(format!("the batch failed: {result}"));
        }
        Ok(result["response"]["result"].clone())
    }

    /// Runs one batch that must not fail in any step.
    fn checked(&mut self, steps: Value) -> Result<(), String> {
        let result = self.batch(steps)?;
        match result["step_errors"].as_array().and_then(|e| e.iter().find(|e| !e.is_null())) {
            Some(e) => Err(format!("a step failed: {e}")),
            None => Ok(()),
        }
    }

    /// Ends the stream (the server closes its connection).
    fn close(&mut self) {
        if self.baton.is_some() {
            let _ = self.pipeline(&json!({"type": "close"}));
        }
    }

    /// One `POST /v3/pipeline` of `request` on the current stream; the answer's JSON, the
    /// next baton kept.
    fn pipeline(&mut self, request: &Value) -> Result<Value, String> {
        let body = json!({"baton": self.baton, "requests": [request]}).to_string();
        let head = format!(
            "POST /v3/pipeline HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        self.writer.write_all((head + &body).as_bytes()).map_err(|e| format!("send: {e}"))?;
        let (status, answer) = self.response().map_err(|e| format!("the answer: {e}"))?;
        if status != 200 {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&answer)));
        }
        let answer: Value = serde_json::from_slice(&answer).map_err(|e| format!("the answer's JSON: {e}"))?;
        self.baton = answer["baton"].as_str().map(str::to_owned);
        Ok(answer)
    }

    /// An HTTP/1.1 response: its status and body (sized or chunked).
    fn response(&mut self) -> std::io::Result<(u16, Vec<u8>)> {
        let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(format!("status line {line:?}")))?;
        let (mut length, mut chunked) = (None, false);
        loop {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(bad("the connection closed in the head".into()));
            }
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(v) = header.strip_prefix("content-length:") {
                length = v.trim().parse().ok();
            } else if header.starts_with("transfer-encoding:") && header.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| bad(format!("chunk size {line:?}")))?;
                if size == 0 {
                    // Trailers, to the empty line.
                    loop {
                        line.clear();
                        if self.reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.reader.read_exact(&mut body[start..])?;
                line.clear();
                self.reader.read_line(&mut line)?;
            }
        } else {
            body.resize(length.ok_or_else(|| bad("no content-length".into()))?, 0);
            self.reader.read_exact(&mut body)?;
        }
        Ok((status, body))
    }
}

/// A batch step: `sql`, run if `condition` holds (None: always).
fn step(condition: Option<Value>, sql: &str) -> Value {
    let stmt = json!({"sql": sql, "want_rows": false});
    match condition {
        Some(condition) => json!({"condition": condition, "stmt": stmt}),
        None => json!({"stmt": stmt}),
    }
}

/// The share of the machine's CPU in use (all cores: 1.0 is every core busy) and this
/// process's share of the machine (the clients), over a figure.
#[derive(Clone, Copy)]
pub struct Cpu {
    pub machine: f64,
    pub bench: f64,
}

struct CpuMark {
    /// /proc/stat's first line: (busy, total) jiffies.
    stat: Option<(u64, u64)>,
    /// This process's user + system time.
    own: Duration,
    at: Instant,
}

impl CpuMark {
    fn now() -> CpuMark {
        CpuMark { stat: proc_stat(), own: own_cpu(), at: Instant::now() }
    }

    fn since(&self) -> Cpu {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let wall = self.at.elapsed().as_secs_f64();
        let machine = match (self.stat, proc_stat()) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => (b1 - b0) as f64 / (t1 - t0) as f64,
            _ => f64::NAN,
        };
        Cpu { machine, bench: (own_cpu() - self.own).as_secs_f64() / wall / cores }
    }
}

fn proc_stat() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = text.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user)
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

fn own_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Ours ÷ the yardstick, in transactions.
fn ratio(l: Loop, ours: &Figure, yardstick: &Figure) -> f64 {
    ours.rate() * l.transactions_per_message() / yardstick.rate()
}

fn print(counts: &[Count]) {
    println!();
    println!(
        "10. The server's own limit (issue #28): one fresh sqld on loopback; each worker a thread with its own \
         connection (yardstick) or transport (ours, remote URL); {} s a figure; ours over a backlog of {BACKLOG} \
         messages in {GROUPS} groups; ×: ours ÷ the yardstick in transactions (messages/s × transactions per \
         message ÷ txn/s; target >= {TARGET})",
        SPAN.as_secs_f64()
    );
    print!("{:<52}", "workers on one sqld");
    for c in counts {
        print!(" {:>14}", c.workers);
    }
    println!();
    print!("{:<52}", "sqld itself, 1 write txn per Hrana request (txn/s)");
    for c in counts {
        let cell = match &c.yardstick {
            Ok((f, _)) => format!("{:.0}", f.rate()),
            Err(_) => "failed".into(),
        };
        print!(" {cell:>14}");
    }
    println!();
    for (i, l) in LOOPS.iter().enumerate() {
        print!("{:<52}", l.label());
        for c in counts {
            let cell = match (&c.ours[i], &c.yardstick) {
                (Ok(f), Ok((y, _))) => {
                    format!("{:.0} ×{:.2}{}", f.rate(), ratio(*l, f, y), if f.dry > 0 { "*" } else { "" })
                }
                (Ok(f), Err(_)) => format!("{:.0}", f.rate()),
                (Err(_), _) => "failed".into(),
            };
            print!(" {cell:>14}");
        }
        println!();
    }
    println!("busy answers (ours: pauses after one, metrics().busy_retries), yardstick / claim+ack / ack_and_claim / batch of 10:");
    for c in counts {
        let mut cells = vec![c.yardstick.as_ref().map_or("-".into(), |(f, _)| f.busy.to_string())];
        cells.extend(c.ours.iter().map(|f| f.as_ref().map_or("-".into(), |f| f.busy.to_string())));
        println!("  {:>2} worker(s): {}", c.workers, cells.join(" / "));
    }
    println!("the slowest request (ours: call), ms, yardstick / claim+ack / ack_and_claim / batch of 10:");
    for c in counts {
        let ms = |f: &Figure| format!("{:.0}", f.slowest.as_secs_f64() * 1e3);
        let mut cells = vec![c.yardstick.as_ref().map_or("-".into(), |(f, _)| ms(f))];
        cells.extend(c.ours.iter().map(|f| f.as_ref().map_or("-".into(), ms)));
        println!("  {:>2} worker(s): {}", c.workers, cells.join(" / "));
    }
    println!("CPU in use, all cores (this process's share: the clients) during the yardstick / claim+ack / ack_and_claim / batch:");
    for c in counts {
        let mut cells = vec![c.yardstick.as_ref().map_or("-".into(), |(f, _)| cpu_cell(f.cpu))];
        cells.extend(c.ours.iter().map(|f| f.as_ref().map_or("-".into(), |f| cpu_cell(f.cpu))));
        println!("  {:>2} worker(s): {}", c.workers, cells.join(" / "));
    }
    for (i, l) in LOOPS.iter().enumerate() {
        let ratios: Vec<(usize, f64)> = counts
            .iter()
            .filter_map(|c| match (&c.ours[i], &c.yardstick) {
                (Ok(f), Ok((y, _))) => Some((c.workers, ratio(*l, f, y))),
                _ => None,
            })
            .collect();
        let complete = ratios.len() == counts.len();
        let lowest = ratios.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
        let met = complete && lowest.is_some_and(|(_, r)| r >= TARGET);
        println!(
            "  [{}] {} >= {TARGET} of the yardstick at every worker count{}",
            if met { "met   " } else { "MISSED" },
            l.label(),
            lowest.map_or(String::new(), |(w, r)| format!(" (lowest ×{r:.2}, at {w})"))
        );
    }
    for c in counts {
        if let Err(e) = &c.yardstick {
            println!("  {} worker(s), yardstick: {e}", c.workers);
        }
        for (i, f) in c.ours.iter().enumerate() {
            match f {
                Err(e) => println!("  {} worker(s), {}: {e}", c.workers, LOOPS[i].id()),
                Ok(f) if f.dry > 0 => {
                    println!("  * {} worker(s), {}: the backlog ran dry {} times", c.workers, LOOPS[i].id(), f.dry)
                }
                Ok(_) => {}
            }
        }
    }
}

/// The commit's cost beside one request of ours, to say what bounds one worker.
fn print_commits(commits: &Result<CommitCosts, String>, counts: &[Count]) {
    let c = match commits {
        Ok(c) => c,
        Err(e) => return println!("  what a commit costs: failed: {e}"),
    };
    println!(
        "one client, median request (ms): 1 page written, committed {:.3} / rolled back {:.3} (the commit {:.3}); \
         {PAGES} pages {:.3} / {:.3} (the commit {:.3}, {:+.3} a page)",
        c.one[0],
        c.one[1],
        c.one[0] - c.one[1],
        c.many[0],
        c.many[1],
        c.many[0] - c.many[1],
        ((c.many[0] - c.many[1]) - (c.one[0] - c.one[1])) / (PAGES - 1) as f64
    );
    let one = counts.iter().find(|c| c.workers == 1);
    let ours =
        one.and_then(|c| LOOPS.iter().position(|&l| l == Loop::AckAndClaim).and_then(|i| c.ours[i].as_ref().ok()));
    let yardstick = one.and_then(|c| c.yardstick.as_ref().ok());
    if let (Some(ours), Some((y, _))) = (ours, yardstick) {
        println!(
            "  1 worker, mean request (ms): the yardstick {:.3}, ours' ack_and_claim {:.3}",
            1e3 / y.rate(),
            1e3 / ours.rate()
        );
    }
}

fn cpu_cell(cpu: Cpu) -> String {
    format!("{:.0}% ({:.0}%)", cpu.machine * 100.0, cpu.bench * 100.0)
}

fn figure_json(f: &Figure, transactions_per_message: f64) -> Value {
    let transactions = f.done as f64 * transactions_per_message;
    json!({
        "done": f.done, "secs": round(f.secs, 3), "per_s": round(f.rate(), 1),
        "busy": f.busy, "busy_per_transaction": round(f.busy as f64 / transactions.max(1.0), 3),
        "dry": f.dry, "slowest_ms": round(f.slowest.as_secs_f64() * 1e3, 1), "cpu_machine": round(f.cpu.machine, 3), "cpu_bench": round(f.cpu.bench, 3),
    })
}

fn to_json(counts: &[Count]) -> Value {
    let rows: Vec<Value> = counts
        .iter()
        .map(|c| {
            let yardstick = match &c.yardstick {
                Ok((f, halves)) => {
                    let mut v = figure_json(f, 1.0);
                    v["halves_per_s"] = json!([round(halves[0], 1), round(halves[1], 1)]);
                    v
                }
                Err(e) => json!({"error": e}),
            };
            let mut ours = serde_json::Map::new();
            for (i, l) in LOOPS.iter().enumerate() {
                let v = match (&c.ours[i], &c.yardstick) {
                    (Ok(f), y) => {
                        let mut v = figure_json(f, l.transactions_per_message());
                        v["transactions_per_message"] = json!(l.transactions_per_message());
                        if let Ok((y, _)) = y {
                            v["ratio"] = json!(round(ratio(*l, f, y), 3));
                        }
                        v
                    }
                    (Err(e), _) => json!({"error": e}),
                };
                ours.insert(l.id().into(), v);
            }
            json!({"workers": c.workers, "yardstick_txn": yardstick, "ours_messages": ours})
        })
        .collect();
    json!({
        "span_s": SPAN.as_secs_f64(), "backlog": BACKLOG, "groups": GROUPS, "batch": BATCH,
        "target_ratio": TARGET, "by_workers": rows,
    })
}
