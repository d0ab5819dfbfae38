//! Part 7: `harel-transport serve` beside a fleet (issue #25). 8 worker processes drain one
//! file at FULL (part 3's workers), alone and while `serve` on the same file answers what a
//! busy operations desk asks of it: Prometheus scraping `/metrics` every second (15 times
//! its default), four consoles open (each reads the stats every 2 s, its refresh) and an
//! operator paging the groups every 2 s. Each answer is a read of the queue (stats scans
//! it), so its cost grows with how often it is asked, not with the workers. Runs alternate
//! alone / polled / polled / alone ..., so a drift of the shared machine's load weighs on
//! both; each side's cycles and seconds are summed. Target: polled ≥ 0.95 × alone.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use harel_transport::Synchronous;
use serde_json::{json, Value};

use crate::ours::Ours;
use crate::procs;
use crate::states::{fresh_copy, remove_db, State, Style, Templates};

const WORKERS: usize = 8;
const SECS: f64 = 3.0;
/// Pairs of runs (one alone, one polled each).
const PAIRS: usize = 5;
/// What is asked, and how often.
const POLLED: [(&str, Duration); 3] = [
    ("/metrics", Duration::from_secs(1)),
    ("/api/stats", Duration::from_millis(500)),
    ("/api/groups?limit=50", Duration::from_secs(2)),
];
const BACKLOG: State = State::Backlog { messages: 100_000, groups: 2_000 };
const TARGET: f64 = 0.95;

pub fn run(cli: &Path, work: &Path, templates: &mut Templates) -> Result<Value, String> {
    if !cli.exists() {
        return Err(format!("{} is not built (cargo build --release -p harel-transport-cli)", cli.display()));
    }
    let template = templates.get(Style::Ours, BACKLOG)?;
    let path = work.join("serve.db");
    let (mut alone, mut polled, mut polls) = (Vec::new(), Vec::new(), Polls::default());
    for n in 0..2 * PAIRS {
        // alone, polled, polled, alone, alone, polled
        let with_serve = (n % 4 == 1) || (n % 4 == 2);
        fresh_copy(&template, &path)?;
        Ours::open(path.to_str().unwrap_or_default(), Synchronous::Full).map(drop)?;
        let run = if with_serve {
            let serving = Serving::start(cli, &path)?;
            let poller = Poller::start(serving.address.clone());
            let r = procs::run(&path.to_string_lossy(), Synchronous::Full, WORKERS, SECS);
            polls.add(poller.stop());
            drop(serving);
            r
        } else {
            procs::run(&path.to_string_lossy(), Synchronous::Full, WORKERS, SECS)
        };
        remove_db(&path);
        let run = run?;
        if run["errors"].as_u64() != Some(0) {
            return Err(format!("a worker failed: {}", run["first_error"]));
        }
        if with_serve { &mut polled } else { &mut alone }.push(run);
    }
    let (alone, polled) = (procs::combine(WORKERS, alone.iter()), procs::combine(WORKERS, polled.iter()));
    let rate = |v: &Value| v["per_s"].as_f64().unwrap_or(0.0);
    let ratio = rate(&polled) / rate(&alone);
    println!();
    let polled_text: Vec<String> = POLLED.iter().map(|(path, every)| format!("{path} every {every:?}")).collect();
    println!(
        "7. serve beside {WORKERS} worker processes draining one file at FULL ({SECS} s runs, {PAIRS} each, \
         alternating); asked: {}",
        polled_text.join(", ")
    );
    println!("   alone    {:>8.0} cycles/s", rate(&alone));
    println!(
        "   polled   {:>8.0} cycles/s   ({} answers, {} failed, slowest {:.1} ms)",
        rate(&polled),
        polls.answers,
        polls.failed,
        polls.slowest_ms
    );
    let verdict = if ratio >= TARGET { "met" } else { "MISSED" };
    println!("   polled ÷ alone = {ratio:.3}   target >= {TARGET}: {verdict}");
    Ok(json!({
        "workers": WORKERS, "asked": polled_text,
        "alone": alone, "polled": polled, "ratio": ratio, "target": TARGET, "met": ratio >= TARGET,
        "answers": polls.answers, "failed_answers": polls.failed, "slowest_answer_ms": polls.slowest_ms,
    }))
}

/// `serve` on the file, on a free loopback port; stopped when dropped.
struct Serving {
    child: Child,
    address: String,
}

impl Serving {
    fn start(cli: &Path, path: &Path) -> Result<Serving, String> {
        let mut child = Command::new(cli)
            .args(["-d", path.to_str().unwrap_or_default(), "serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start {}: {e}", cli.display()))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line).map_err(|e| e.to_string())?;
        match line.trim().strip_prefix("listening on http://") {
            Some(address) => Ok(Serving { address: address.to_owned(), child }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("serve did not start: {line:?}"))
            }
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the poller saw.
#[derive(Default)]
struct Polls {
    answers: u64,
    failed: u64,
    slowest_ms: f64,
}

impl Polls {
    fn add(&mut self, other: Polls) {
        self.answers += other.answers;
        self.failed += other.failed;
        self.slowest_ms = self.slowest_ms.max(other.slowest_ms);
    }
}

/// A thread asking for each of POLLED at its pace until stopped.
struct Poller {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Polls>,
}

impl Poller {
    fn start(address: String) -> Poller {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut polls = Polls::default();
            let mut due = [Instant::now(); POLLED.len()];
            while !stopping.load(Ordering::Relaxed) {
                for ((path, every), due) in POLLED.iter().zip(due.iter_mut()) {
                    if Instant::now() < *due {
                        continue;
                    }
                    let started = Instant::now();
                    match get(&address, path) {
                        Ok(200) => polls.answers += 1,
                        _ => polls.failed += 1,
                    }
                    polls.slowest_ms = polls.slowest_ms.max(started.elapsed().as_secs_f64() * 1e3);
                    *due = started + *every;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            polls
        });
        Poller { stop, thread }
    }

    fn stop(self) -> Polls {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// One GET, read to the end; its status.
fn get(address: &str, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(address)?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0))
}
