//! Several worker processes draining one file, or a queue sharded over several (part 11).
//! The bench binary re-executes itself as `bench worker <path> <full|normal> <seconds>
//! <worker-id>`, `<path>` being the shards' paths one per line when sharded: the worker opens the queue
//! with our defaults (busy timeout 5 s: the library waits for the write lock itself) but
//! the given synchronous, says "ready", waits for "go" on stdin, then drains the way a
//! worker of ours would: claim once, then `ack_and_claim` (ack this message and lease the
//! next in one transaction) until the time is up or the queue is empty, acking the lease
//! it still holds at the end. It prints one JSON line: cycles (messages acked), Busy
//! errors, other errors, start and end (epoch s), the longest single call.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use harel_transport::{system_clock, Error, Lease, Options, Synchronous, Transport};
use serde_json::{json, Value};

/// How a part-3 worker drains (shown in the table).
pub const WORKER_LOOP: &str = "claim once, then ack_and_claim per message";

pub fn worker_main(args: &[String]) -> i32 {
    let [path, sync, secs, id] = args else {
        eprintln!("usage: bench worker <path> <full|normal> <seconds> <worker-id>");
        return 2;
    };
    let mut options = Options::new();
    options.synchronous(if sync == "full" { Synchronous::Full } else { Synchronous::Normal });
    let t = match Transport::open_shards(&path.lines().collect::<Vec<_>>(), &options) {
        Ok(t) => t,
        Err(e) => {
            println!("{}", json!({"error": format!("open: {e:?}")}));
            return 1;
        }
    };
    let secs: f64 = secs.parse().unwrap_or(3.0);
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    let (mut cycles, mut busy, mut errors, mut first_error) = (0u64, 0u64, 0u64, None::<String>);
    // The longest one call took: how close a worker came to the busy timeout.
    let mut max_op = 0f64;
    let start = system_clock();
    let deadline = start + secs;
    let note = |e: &Error, busy: &mut u64, errors: &mut u64, first: &mut Option<String>| {
        if matches!(e, Error::Busy(_)) {
            *busy += 1;
        } else {
            *errors += 1;
        }
        first.get_or_insert_with(|| format!("{e:?}"));
    };
    // The lease this worker holds: the next call acks it (and claims the one after).
    let mut held: Option<Lease> = None;
    while system_clock() < deadline && errors < 100 {
        let t0 = system_clock();
        let r = match &held {
            None => t.claim(id, 30.0, 0, &[]),
            Some(lease) => t.ack_and_claim(lease, id, 30.0, 0, &[]),
        };
        max_op = max_op.max(system_clock() - t0);
        match r {
            Ok(next) => {
                if held.is_some() {
                    cycles += 1;
                }
                held = next;
                if held.is_none() {
                    break; // drained
                }
            }
            // The transaction rolled back: the lease is still ours unless it was lost.
            Err(e) => {
                if matches!(e, Error::LeaseLost(_)) {
                    held = None;
                }
                note(&e, &mut busy, &mut errors, &mut first_error);
            }
        }
    }
    if let Some(lease) = held.take() {
        let t0 = system_clock();
        let r = t.ack(&lease);
        max_op = max_op.max(system_clock() - t0);
        match r {
            Ok(()) => cycles += 1,
            Err(e) => note(&e, &mut busy, &mut errors, &mut first_error),
        }
    }
    let end = system_clock();
    println!(
        "{}",
        json!({"cycles": cycles, "busy": busy, "errors": errors, "first_error": first_error,
               "start": start, "end": end, "max_op_ms": max_op * 1e3})
    );
    0
}

/// One run: `k` workers on a fresh copy; aggregate cycles/s over the span from the first
/// start to the last end.
/// `k` workers draining the queue at `path` (the shards' paths, one per line, when sharded).
pub fn run(path: &str, synchronous: Synchronous, k: usize, secs: f64) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let sync = if synchronous == Synchronous::Full { "full" } else { "normal" };
    let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = Vec::new();
    for i in 0..k {
        let mut child = Command::new(&exe)
            .args(["worker", path, sync, &secs.to_string(), &format!("w{i}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn worker: {e}"))?;
        let out = BufReader::new(child.stdout.take().expect("piped"));
        children.push((child, out));
    }
    for (_, out) in children.iter_mut() {
        let mut line = String::new();
        out.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.trim() != "ready" {
            return Err(format!("worker did not start: {line}"));
        }
    }
    for (child, _) in children.iter_mut() {
        let mut stdin = child.stdin.take().expect("piped");
        let _ = stdin.write_all(b"go\n");
    }
    let mut results = Vec::new();
    for (mut child, mut out) in children {
        let mut line = String::new();
        out.read_line(&mut line).map_err(|e| e.to_string())?;
        let _ = child.wait();
        let v: Value = serde_json::from_str(line.trim()).map_err(|e| format!("worker said {line:?}: {e}"))?;
        if let Some(e) = v.get("error") {
            return Err(format!("worker: {e}"));
        }
        results.push(v);
    }
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let cycles: f64 = results.iter().map(|v| f(v, "cycles")).sum();
    let busy: f64 = results.iter().map(|v| f(v, "busy")).sum();
    let errors: f64 = results.iter().map(|v| f(v, "errors")).sum();
    let start = results.iter().map(|v| f(v, "start")).fold(f64::INFINITY, f64::min);
    let end = results.iter().map(|v| f(v, "end")).fold(0.0, f64::max);
    let first_error = results.iter().find_map(|v| v.get("first_error").and_then(Value::as_str).map(str::to_owned));
    let max_op_ms = results.iter().map(|v| f(v, "max_op_ms")).fold(0.0, f64::max);
    Ok(json!({
        "workers": k,
        "per_s": cycles / (end - start),
        "cycles": cycles as u64,
        "secs": end - start,
        "per_worker": results.iter().map(|v| f(v, "cycles") as u64).collect::<Vec<_>>(),
        "busy": busy as u64,
        "errors": errors as u64,
        "first_error": first_error,
        "max_op_ms": max_op_ms,
    }))
}

/// Several runs of the same worker count as one figure: cycles and seconds summed,
/// errors summed, the worst wait kept, each run's per-worker cycles listed.
pub fn combine<'a>(k: usize, runs: impl Iterator<Item = &'a Value>) -> Value {
    let runs: Vec<&Value> = runs.collect();
    if let Some(bad) = runs.iter().find(|v| v.get("error").is_some()) {
        return (*bad).clone();
    }
    let sum = |key: &str| runs.iter().map(|v| v[key].as_f64().unwrap_or(0.0)).sum::<f64>();
    let cycles = sum("cycles");
    let secs = sum("secs");
    json!({
        "workers": k,
        "runs": runs.len(),
        "per_s": cycles / secs,
        "cycles": cycles as u64,
        "secs": secs,
        "per_worker": runs.iter().map(|v| v["per_worker"].clone()).collect::<Vec<_>>(),
        "busy": sum("busy") as u64,
        "errors": sum("errors") as u64,
        "first_error": runs.iter().find_map(|v| v["first_error"].as_str()),
        "max_op_ms": runs.iter().map(|v| v["max_op_ms"].as_f64().unwrap_or(0.0)).fold(0.0, f64::max),
    })
}

/// `k` workers opening one file at the same moment (they open, say "ready" or the error,
/// and stop): how many opens failed with Busy, how many otherwise.
pub fn open_race(path: &Path, synchronous: Synchronous, k: usize) -> Result<(usize, usize), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let sync = if synchronous == Synchronous::Full { "full" } else { "normal" };
    let mut children = Vec::new();
    for i in 0..k {
        let child = Command::new(&exe)
            .args(["worker", path.to_str().ok_or("path not UTF-8")?, sync, "0", &format!("w{i}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn worker: {e}"))?;
        children.push(child);
    }
    let (mut busy, mut other) = (0, 0);
    for mut child in children {
        let mut out = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        let _ = out.read_line(&mut line);
        if line.trim() != "ready" {
            if line.contains("Busy") {
                busy += 1;
            } else {
                other += 1;
            }
        }
        drop(child.stdin.take());
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
        let _ = child.wait();
    }
    Ok((busy, other))
}
