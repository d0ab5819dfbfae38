//! Part 6: a look inside the queue (issues #14, #25). On 100,000 groups holding 1,000,000
//! messages (1,000 groups leased and 500 parked by this library, 10,000 more leased as
//! harel's Python transports leave them: the claim instant as the group's stamp): `stats`,
//! a page of 100 groups (any, ready, leased), a page of a group's messages and of dead
//! letters, each the median of several runs, all taken while another connection holds the
//! write lock (so each provably takes none and never holds up a worker: the look's
//! transport has a busy timeout of 0). `stats` and the leased listing scan the messages
//! (every head in flight counts, whoever holds it): their target is 250 ms. And the claim with max_attempts on
//! (set too high to ever trigger: the check's own cost) beside the claim without it, on
//! 100 ready groups at NORMAL: the part 2 yardstick.

use std::path::Path;
use std::time::{Duration, Instant};

use harel_transport::{GroupState, Options, Synchronous, Transport};
use serde_json::{json, Value};

use crate::states::{fresh_copy, remove_db, State, Style, Templates};

const STATE: State = State::Backlog { messages: 1_000_000, groups: 100_000 };
const LEASED: usize = 1_000;
const PARKED: usize = 500;
/// Heads leased harel-style (groups 50,000 to 59,999: none of ours claimed them).
const HAREL_LEASED: usize = 10_000;
const RUNS: usize = 15;
/// "Within a few tens of ms on this machine".
const TARGET_MS: f64 = 50.0;
/// The looks that scan the messages for heads in flight (issue #25).
const SCAN_TARGET_MS: f64 = 250.0;
const CLAIMS: usize = 2_000;

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn timed(what: &str, mut look: impl FnMut() -> Result<(), harel_transport::Error>) -> Result<f64, String> {
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        look().map_err(|e| format!("{what}: {e}"))?;
        samples.push(started.elapsed());
    }
    Ok(median_ms(samples))
}

fn open(path: &Path, options: &Options) -> Result<Transport, String> {
    Transport::open(path.to_str().unwrap_or_default(), options).map_err(|e| e.to_string())
}

pub fn run(work: &Path, templates: &mut Templates) -> Result<Value, String> {
    let path = work.join("looks.db");
    fresh_copy(&templates.get(Style::Ours, STATE)?, &path)?;
    let worker = open(&path, &Options::new())?;
    let mut holder = None;
    for n in 0..LEASED + PARKED {
        let lease = worker.claim("w", 3600.0, 0, &[]).map_err(|e| e.to_string())?.ok_or("a backlog message")?;
        if n >= LEASED {
            worker.nack(&lease, 3600.0).map_err(|e| e.to_string())?;
        } else if holder.is_none() {
            holder = Some(lease);
        }
    }
    let held = holder.ok_or("a leased group")?;
    let dead = worker.claim("w", 3600.0, 0, &[]).map_err(|e| e.to_string())?.ok_or("a backlog message")?;
    worker.dead_letter(&dead, "bench").map_err(|e| e.to_string())?;
    harel_leases(&path)?;

    // The write lock, held by another connection for the whole measurement.
    let locker = libsql_locker(&path)?;
    let mut o = Options::new();
    o.busy_timeout(0.0).map_err(|e| e.to_string())?.create_schema(false);
    let looker = open(&path, &o)?;
    if looker.publish("x", "{}", 0, None).is_ok() {
        return Err("the write lock should be held".into());
    }
    let stats = looker.stats().map_err(|e| e.to_string())?;
    if (stats.groups, stats.leased, stats.parked) != (100_000, (LEASED + HAREL_LEASED) as u64, PARKED as u64) {
        return Err(format!("unexpected state: {stats:?}"));
    }
    let figures = [
        ("stats", timed("stats", || looker.stats().map(drop))?),
        ("groups", timed("groups", || looker.groups(None, None, 100).map(drop))?),
        ("groups_ready", timed("groups ready", || looker.groups(Some(GroupState::Ready), None, 100).map(drop))?),
        ("groups_leased", timed("groups leased", || looker.groups(Some(GroupState::Leased), None, 100).map(drop))?),
        ("peek", timed("peek", || looker.peek(&held.group_id, None, 100).map(drop))?),
        ("dead_letters", timed("dead letters", || looker.dead_letters(None, None, 100).map(drop))?),
    ];
    drop(locker);
    drop((looker, worker));
    remove_db(&path);

    let (without, with) = (claim_us(work, templates, 0)?, claim_us(work, templates, u32::MAX)?);
    println!();
    println!("6. a look inside: 100,000 groups, 1,000,000 messages ({LEASED} leased, {PARKED} parked; {HAREL_LEASED} leased harel-style), the write lock held by another connection (median of {RUNS})");
    for (id, ms) in &figures {
        let target = if matches!(*id, "stats" | "groups_leased") { SCAN_TARGET_MS } else { TARGET_MS };
        let verdict = if *ms <= target { "met" } else { "MISSED" };
        println!("   {id:<14} {ms:>8.2} ms   target <= {target} ms: {verdict}");
    }
    let ratio = with / without;
    println!(
        "   claim at 100 ready groups, NORMAL: {without:.1} µs; with max_attempts on {with:.1} µs = x{ratio:.2}   target <= x2: {}",
        if ratio <= 2.0 { "met" } else { "MISSED" }
    );
    let mut looks: serde_json::Map<String, Value> =
        figures.iter().map(|(id, ms)| (format!("{id}_ms"), json!(crate::measure::round(*ms, 3)))).collect();
    looks.insert("claim_us".into(), json!(crate::measure::round(without, 2)));
    looks.insert("claim_max_attempts_us".into(), json!(crate::measure::round(with, 2)));
    Ok(Value::Object(looks))
}

/// Leases HAREL_LEASED heads as harel 0.9's SqliteTransport does: the head locked for an
/// hour, its group stamped with the claim instant (now), which ours never writes.
fn harel_leases(path: &Path) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let p = path.to_str().unwrap_or_default().to_owned();
    let now = harel_transport::system_clock();
    let (first, last) = (50_000, 50_000 + HAREL_LEASED - 1);
    rt.block_on(async {
        let db = libsql::Builder::new_local(&p).build().await?;
        let conn = db.connect()?;
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             UPDATE harel_transport_messages SET locked_by = 'py-' || (seq % 4), lock_expiry = {expiry}
               WHERE seq BETWEEN {first} + 1 AND {last} + 1;
             UPDATE harel_transport_groups SET last_claimed_at = {now}
               WHERE group_id BETWEEN printf('g-%07d', {first}) AND printf('g-%07d', {last});
             COMMIT;",
            expiry = now + 3600.0
        ))
        .await?;
        Ok::<_, libsql::Error>(())
    })
    .map_err(|e| format!("leasing heads harel-style: {e}"))
}

/// Another connection, holding the write lock (BEGIN IMMEDIATE) until dropped.
struct Locker {
    _conn: libsql::Connection,
    _db: libsql::Database,
    _rt: tokio::runtime::Runtime,
}

fn libsql_locker(path: &Path) -> Result<Locker, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let p = path.to_str().unwrap_or_default().to_owned();
    let (db, conn) = rt
        .block_on(async {
            let db = libsql::Builder::new_local(&p).build().await?;
            let conn = db.connect()?;
            conn.execute("BEGIN IMMEDIATE", ()).await?;
            Ok::<_, libsql::Error>((db, conn))
        })
        .map_err(|e| format!("holding the write lock: {e}"))?;
    Ok(Locker { _conn: conn, _db: db, _rt: rt })
}

/// The median claim (each followed by an untimed nack(0)) on 100 ready groups at NORMAL.
fn claim_us(work: &Path, templates: &mut Templates, max_attempts: u32) -> Result<f64, String> {
    let path = work.join("looks-claim.db");
    fresh_copy(&templates.get(Style::Ours, State::Ready { groups: 100 })?, &path)?;
    let mut o = Options::new();
    o.synchronous(Synchronous::Normal).max_attempts(max_attempts);
    let t = open(&path, &o)?;
    let mut samples = Vec::with_capacity(CLAIMS);
    for _ in 0..CLAIMS {
        let started = Instant::now();
        let lease = t.claim("w", 30.0, 0, &[]).map_err(|e| e.to_string())?.ok_or("a ready group")?;
        samples.push(started.elapsed());
        t.nack(&lease, 0.0).map_err(|e| e.to_string())?;
    }
    drop(t);
    remove_db(&path);
    Ok(median_ms(samples) * 1e3)
}
