//! The cross-language demo (`make demo`): a C producer fills one local queue file, then a
//! C, a Go, a Node and a Rust worker drain it at once. Each worker logs the interval it
//! held each lease; this program prints per-worker counts and checks, from the logs, that
//! every message was processed exactly once, that no group ever had two messages in
//! flight, and that each group's messages were processed in publish (seq) order.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const DIR: &str = "build/demo";
const GROUPS: usize = 120;
const PER_GROUP: usize = 5;

struct Held {
    from_ns: u128,
    to_ns: u128,
    seq: i64,
    worker: String,
}

fn command(parts: &[&str]) -> Command {
    let mut c = Command::new(parts[0]);
    c.args(&parts[1..]);
    c
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    fs::create_dir_all(DIR)?;
    let db = format!("{DIR}/queue.db");
    for suffix in ["", "-wal", "-shm", "-harel"] {
        let _ = fs::remove_file(format!("{db}{suffix}"));
    }
    let started = Instant::now();
    let (groups, per_group) = (GROUPS.to_string(), PER_GROUP.to_string());
    let produced = command(&["build/examples/c/producer", &db, &groups, &per_group]).output()?;
    let last_line = |out: &[u8]| String::from_utf8_lossy(out).lines().last().unwrap_or("").to_owned();
    println!("{}", last_line(&produced.stdout));
    if !produced.status.success() {
        return Err(format!("producer failed: {}", String::from_utf8_lossy(&produced.stderr)).into());
    }

    // (worker id, program, flags after DATABASE WORKER_ID)
    let workers: [(&str, &[&str], &[&str]); 4] = [
        ("c-1", &["build/examples/c/worker"], &["--until-empty"]),
        ("go-1", &["build/examples/go/worker"], &[]),
        ("node-1", &["node", "examples/node/worker.js"], &[]),
        ("rust-1", &["target/release/examples/worker"], &[]),
    ];
    let running = workers
        .iter()
        .map(|(id, program, flags)| {
            let log = format!("{DIR}/{id}.log");
            let mut argv = program.to_vec();
            argv.extend([db.as_str(), id]);
            argv.extend(*flags);
            argv.extend(["--log", log.as_str()]);
            command(&argv).stdout(Stdio::piped()).spawn().map(|child| (*id, log, child))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut held: BTreeMap<String, Vec<Held>> = BTreeMap::new();
    println!("\n{:<8} {:>9}  its own report", "worker", "processed");
    for (id, log, child) in running {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            return Err(format!("worker {id} failed ({})", out.status).into());
        }
        let lines = fs::read_to_string(Path::new(&log))?;
        let mut count = 0;
        for line in lines.lines() {
            let f: Vec<&str> = line.splitn(4, ' ').collect();
            let [from_ns, to_ns, seq, group] = f[..] else { return Err(format!("{log}: bad line {line:?}").into()) };
            held.entry(group.to_owned()).or_default().push(Held {
                from_ns: from_ns.parse()?,
                to_ns: to_ns.parse()?,
                seq: seq.parse()?,
                worker: id.to_owned(),
            });
            count += 1;
        }
        println!("{id:<8} {count:>9}  {}", last_line(&out.stdout));
    }

    let (mut total, mut seen, mut violations) = (0, HashSet::new(), Vec::new());
    for (group, leases) in held.iter_mut() {
        leases.sort_by_key(|h| h.from_ns);
        for pair in leases.windows(2) {
            if pair[1].seq <= pair[0].seq {
                violations.push(format!("group {group}: seq {} after {}", pair[1].seq, pair[0].seq));
            }
            if pair[1].from_ns < pair[0].to_ns {
                violations.push(format!(
                    "group {group}: {} held seq {} while {} held seq {}",
                    pair[1].worker, pair[1].seq, pair[0].worker, pair[0].seq
                ));
            }
        }
        for h in leases.iter() {
            total += 1;
            if !seen.insert(h.seq) {
                violations.push(format!("seq {} processed twice", h.seq));
            }
        }
    }
    let expected = GROUPS * PER_GROUP;
    if total != expected {
        violations.push(format!("{total} messages processed, {expected} published"));
    }
    println!(
        "\n{total} of {expected} messages in {} groups, {:.1} s: {}",
        held.len(),
        started.elapsed().as_secs_f64(),
        if violations.is_empty() { "each exactly once, per-group order held, no group in flight twice" } else { "VIOLATIONS" }
    );
    for v in &violations {
        println!("  {v}");
    }
    if violations.is_empty() { Ok(()) } else { Err("the demo found violations".into()) }
}
