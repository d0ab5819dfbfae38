//! Part 8: watching for work from an event loop (issue #26). On a local file at FULL:
//!
//! - the wake latency from another process's publish to the lease in hand, through a
//!   watch's descriptor (poll, rearm, a non-waiting claim) and through the blocking wait
//!   (`claim_wait`), in alternating rounds on one queue; p50 and p99 of each. The
//!   publisher (this binary again: `bench publisher`) stamps each event with the system
//!   time just before its publish; the latency is from there to the claim's return, so
//!   both include the publish's commit. Target: the descriptor no worse.
//! - 1,000 transports, each with a watch, idle on one file: the process's CPU over 10 s
//!   while an epoll loop serves all 1,000 descriptors (target < 1% of a core), and how
//!   many times any of them woke.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harel_transport::{system_clock, Options, Synchronous, Transport, Wait};
use serde_json::{json, Value};

use crate::measure::round;

const ROUNDS: usize = 6;
const PER_ROUND: usize = 50;
/// Between two publishes, plus up to as much again (so publishes fall anywhere in a look's cycle).
const GAP_MS: u64 = 20;
const IDLE_TRANSPORTS: usize = 1000;
const IDLE_SECS: u64 = 10;

/// `bench publisher <path> <n> <gap ms>`: says "ready", waits for a line, then publishes
/// `n` messages, each to a group of its own, `gap` to `2 gap` ms apart.
pub fn publisher_main(args: &[String]) -> i32 {
    let [path, n, gap] = args else {
        eprintln!("usage: bench publisher <path> <n> <gap ms>");
        return 2;
    };
    let (n, gap): (usize, u64) = (n.parse().unwrap_or(0), gap.parse().unwrap_or(GAP_MS));
    let t = match Transport::open(path, Options::new().synchronous(Synchronous::Full)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("publisher: open: {e}");
            return 1;
        }
    };
    println!("ready");
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_line(&mut String::new());
    for i in 0..n {
        std::thread::sleep(Duration::from_millis(gap + (i as u64 * 7919) % (gap + 1)));
        if let Err(e) = t.publish(&format!("g{i}"), &json!({ "sent": system_clock() }).to_string(), 0, None) {
            eprintln!("publisher: {e}");
            return 1;
        }
    }
    0
}

pub fn run(work: &Path) -> Result<Value, String> {
    let path = work.join("watch.db");
    let path = path.to_str().ok_or("a temporary path that is not UTF-8")?;
    let t = Transport::open(path, Options::new().synchronous(Synchronous::Full)).map_err(|e| e.to_string())?;
    let (mut blocking, mut watched, mut looks) = (Vec::new(), Vec::new(), 0u64);
    for round in 0..ROUNDS {
        // blocking, watched, watched, blocking, ...
        let by_watch = matches!(round % 4, 1 | 2);
        let mut publisher = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
            .args(["publisher", path, &PER_ROUND.to_string(), &GAP_MS.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn the publisher: {e}"))?;
        let mut ready = String::new();
        BufReader::new(publisher.stdout.take().ok_or("no stdout")?).read_line(&mut ready).map_err(|e| e.to_string())?;
        writeln!(publisher.stdin.take().ok_or("no stdin")?, "go").map_err(|e| e.to_string())?;
        let samples = if by_watch { &mut watched } else { &mut blocking };
        let got = if by_watch { receive_by_watch(&t, samples, &mut looks) } else { receive_blocking(&t, samples) };
        let status = publisher.wait().map_err(|e| e.to_string())?;
        got?;
        if !status.success() {
            return Err(format!("the publisher failed: {status}"));
        }
    }
    let idle = idle(work)?;
    let (b, w) = (percentiles(&mut blocking), percentiles(&mut watched));
    println!();
    println!("8. Watching for work from an event loop (local file, FULL)");
    println!("   wake latency, another process's publish to the lease in hand ({} messages each):", blocking.len());
    println!("   blocking claim_wait   p50 {:>6.2} ms   p99 {:>6.2} ms", b.0, b.1);
    println!(
        "   watch (poll, rearm)   p50 {:>6.2} ms   p99 {:>6.2} ms   watch ÷ blocking: p50 {:.2}, p99 {:.2} (target <= 1: {})",
        w.0,
        w.1,
        w.0 / b.0,
        w.1 / b.1,
        if w.0 <= b.0 * 1.05 && w.1 <= b.1 * 1.05 { "met" } else { "MISSED" }
    );
    println!("   the watch's looks (rearms) per message: {:.2}", looks as f64 / watched.len() as f64);
    println!(
        "   {} idle watched transports, {} s: {:.3}% of a core, {} wakes (target < 1%: {})",
        IDLE_TRANSPORTS,
        IDLE_SECS,
        idle.0,
        idle.1,
        if idle.0 < 1.0 { "met" } else { "MISSED" }
    );
    Ok(json!({
        "blocking_ms": {"p50": round(b.0, 3), "p99": round(b.1, 3), "n": blocking.len()},
        "watch_ms": {"p50": round(w.0, 3), "p99": round(w.1, 3), "n": watched.len()},
        "watch_looks_per_message": round(looks as f64 / watched.len() as f64, 2),
        "idle": {"transports": IDLE_TRANSPORTS, "secs": IDLE_SECS, "cpu_percent": round(idle.0, 4), "wakes": idle.1},
    }))
}

/// Latencies in ms, from an event's "sent" to now.
fn latency(event: &str) -> Result<f64, String> {
    let sent = serde_json::from_str::<Value>(event).ok().and_then(|v| v["sent"].as_f64()).ok_or("no sent stamp")?;
    Ok((system_clock() - sent) * 1e3)
}

fn receive_blocking(t: &Transport, samples: &mut Vec<f64>) -> Result<(), String> {
    for _ in 0..PER_ROUND {
        let wait = Wait::up_to(Duration::from_secs(10));
        let lease = t.claim_wait("w", 30.0, 0, &[], &wait).map_err(|e| e.to_string())?.ok_or("nothing came")?;
        samples.push(latency(&lease.event)?);
        t.ack(&lease).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Also counts the rearms (looks) it made.
fn receive_by_watch(t: &Transport, samples: &mut Vec<f64>, looks: &mut u64) -> Result<(), String> {
    let watch = t.watch(0, &[]).map_err(|e| e.to_string())?;
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while got < PER_ROUND {
        if Instant::now() > deadline {
            return Err("the watch missed messages".into());
        }
        let mut entry = libc::pollfd { fd: watch.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        if unsafe { libc::poll(&mut entry, 1, 1000) } <= 0 {
            continue;
        }
        *looks += 1;
        if !t.rearm(&watch).map_err(|e| e.to_string())? {
            continue;
        }
        while let Some(lease) = t.claim("w", 30.0, 0, &[]).map_err(|e| e.to_string())? {
            samples.push(latency(&lease.event)?);
            t.ack(&lease).map_err(|e| e.to_string())?;
            got += 1;
        }
    }
    Ok(())
}

/// (p50, p99).
fn percentiles(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples.get(((samples.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    (at(0.5), at(0.99))
}

/// The process's CPU seconds so far (user + system).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// (CPU % of one core, wakes) of IDLE_TRANSPORTS watched transports on one idle file,
/// served by one epoll loop; the first seconds (their opening, the first looks) not counted.
fn idle(work: &Path) -> Result<(f64, u64), String> {
    let path = work.join("idle.db");
    let path = path.to_str().ok_or("a temporary path that is not UTF-8")?;
    let mut watched = Vec::with_capacity(IDLE_TRANSPORTS);
    for _ in 0..IDLE_TRANSPORTS {
        let t = Transport::open(path, &Options::new()).map_err(|e| format!("open: {e}"))?;
        let w = t.watch(0, &[]).map_err(|e| e.to_string())?;
        watched.push((t, w));
    }
    // SAFETY: plain system calls on descriptors that live through the loop.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    for (i, (_, w)) in watched.iter().enumerate() {
        let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: i as u64 };
        unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, w.as_raw_fd(), &mut event) };
    }
    let serve = |for_how_long: Duration| -> Result<u64, String> {
        let (started, mut wakes) = (Instant::now(), 0u64);
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        while let Some(left) = for_how_long.checked_sub(started.elapsed()) {
            let n = unsafe { libc::epoll_wait(epoll, events.as_mut_ptr(), 64, left.as_millis().max(1) as i32) };
            for event in events.iter().take(n.max(0) as usize) {
                let (t, w) = &watched[event.u64 as usize];
                wakes += 1;
                if t.rearm(w).map_err(|e| e.to_string())? {
                    return Err("an empty queue had work".into());
                }
            }
        }
        Ok(wakes)
    };
    serve(Duration::from_secs(3))?;
    let cpu = cpu_seconds();
    let wakes = serve(Duration::from_secs(IDLE_SECS))?;
    let used = cpu_seconds() - cpu;
    unsafe { libc::close(epoll) };
    Ok((100.0 * used / IDLE_SECS as f64, wakes))
}
