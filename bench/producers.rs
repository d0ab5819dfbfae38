//! Part 9: what producers' options cost (issue #24), on local files at FULL, ours only:
//!
//! - a publish with an idempotency key (each new) against one without, one message per
//!   call, in alternating rounds on fresh files: the keyed publish writes its key's row and
//!   index entry in the same commit (target: ≤ 1.3× the plain publish's time);
//! - a claim (then an untimed nack(0) that restores the state) among 100 ready groups, with
//!   and without 10,000 delayed messages waiting in groups of their own: a delayed head's
//!   group is stamped with its due time, so the claim's index range never reaches it
//!   (target: within 1.2×);
//! - an application's INSERT and a publish in one transaction (`Transport::transaction`)
//!   against the two done separately (the INSERT in a transaction of its own, then the
//!   publish), in alternating rounds on fresh files: one commit, one fsync, where the
//!   separate pair pays two (target: ≥ 1.8× faster).

use std::path::Path;
use std::time::{Duration, Instant};

use harel_transport::{Delivery, Message, Options, Synchronous, Transport};
use serde_json::{json, Value};

use crate::measure::round;
use crate::states::remove_db;

const PUBLISHES: usize = 1000;
const ROUNDS: usize = 4;
const READY: usize = 100;
const DELAYED: usize = 10_000;
const CLAIMS: usize = 1000;

fn open(path: &Path) -> Result<Transport, String> {
    let path = path.to_str().ok_or("a temporary path that is not UTF-8")?;
    Transport::open(path, Options::new().synchronous(Synchronous::Full)).map_err(|e| e.to_string())
}

pub fn run(work: &Path) -> Result<Value, String> {
    let event = r#"{"kind":"tick","id":"e","data":{"n":1}}"#;
    let (mut plain, mut keyed) = (Duration::ZERO, Duration::ZERO);
    for round in 0..2 * ROUNDS {
        // plain, keyed, keyed, plain, ...
        let with_key = matches!(round % 4, 1 | 2);
        let path = work.join("producers.db");
        let t = open(&path)?;
        let started = Instant::now();
        for i in 0..PUBLISHES {
            let (group, key) = (format!("g{}", i % 100), format!("key-{round}-{i}"));
            let m = Message { group_id: &group, event_json: event, priority: 0, routing_key: None, headers: None };
            if with_key {
                t.publish_with(m, Delivery { key: Some(&key), ..Delivery::default() }).map_err(|e| e.to_string())?;
            } else {
                t.publish(&group, event, 0, None).map_err(|e| e.to_string())?;
            }
        }
        *(if with_key { &mut keyed } else { &mut plain }) += started.elapsed();
        drop(t);
        remove_db(&path);
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (ROUNDS * PUBLISHES) as f64;
    let (plain_us, keyed_us) = (per(plain), per(keyed));

    let mut claim_us = Vec::new();
    for delayed in [0, DELAYED] {
        let path = work.join("delayed.db");
        let t = open(&path)?;
        let batch: Vec<String> = (0..READY).map(|g| format!("ready-{g}")).collect();
        let messages: Vec<Message<'_>> =
            batch.iter().map(|g| Message { group_id: g, event_json: event, priority: 0, routing_key: None, headers: None }).collect();
        t.publish_many(&messages).map_err(|e| e.to_string())?;
        let later: Vec<String> = (0..delayed).map(|g| format!("later-{g}")).collect();
        let wait = Delivery { delay: 3600.0, ..Delivery::default() };
        for chunk in later.chunks(500) {
            let items: Vec<_> = chunk
                .iter()
                .map(|g| (Message { group_id: g, event_json: event, priority: 0, routing_key: None, headers: None }, wait))
                .collect();
            t.publish_many_with(&items).map_err(|e| e.to_string())?;
        }
        let mut times = Vec::with_capacity(CLAIMS);
        for _ in 0..CLAIMS {
            let started = Instant::now();
            let lease = t.claim("w", 30.0, 0, &[]).map_err(|e| e.to_string())?.ok_or("no ready group")?;
            times.push(started.elapsed());
            t.nack(&lease, 0.0).map_err(|e| e.to_string())?;
        }
        times.sort();
        claim_us.push(times[times.len() / 2].as_secs_f64() * 1e6);
        drop(t);
        remove_db(&path);
    }
    let (separate_us, together_us) = transactions(work, event)?;
    let (key_ratio, delayed_ratio) = (keyed_us / plain_us, claim_us[1] / claim_us[0]);
    let together_ratio = separate_us / together_us;
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!();
    println!("9. Producers' options (local file, FULL)");
    println!(
        "   publish, one per call: plain {plain_us:.1} µs, with a new key {keyed_us:.1} µs: ×{key_ratio:.2} (target <= 1.3: {})",
        verdict(key_ratio <= 1.3)
    );
    println!(
        "   claim among {READY} ready groups (median): alone {:.1} µs, beside {DELAYED} delayed {:.1} µs: ×{delayed_ratio:.2} (target <= 1.2: {})",
        claim_us[0],
        claim_us[1],
        verdict(delayed_ratio <= 1.2)
    );
    println!(
        "   an order's INSERT and its publish: separately {separate_us:.1} µs, in one transaction {together_us:.1} µs: ×{together_ratio:.2} faster (target >= 1.8: {})",
        verdict(together_ratio >= 1.8)
    );
    Ok(json!({
        "publish_us": {"plain": round(plain_us, 2), "keyed": round(keyed_us, 2), "ratio": round(key_ratio, 3)},
        "claim_us": {"alone": round(claim_us[0], 2), "beside_delayed": round(claim_us[1], 2), "ratio": round(delayed_ratio, 3)},
        "insert_and_publish_us": {"separate": round(separate_us, 2), "transaction": round(together_us, 2), "speedup": round(together_ratio, 3)},
    }))
}

/// Microseconds per order (an INSERT of the application's and a publish): done separately,
/// and in one transaction.
fn transactions(work: &Path, event: &str) -> Result<(f64, f64), String> {
    const ORDERS: usize = 500;
    let (mut separate, mut together) = (Duration::ZERO, Duration::ZERO);
    for round in 0..2 * ROUNDS {
        // separate, together, together, separate, ...
        let in_one = matches!(round % 4, 1 | 2);
        let path = work.join("transactions.db");
        let t = open(&path)?;
        t.transaction(|tx| tx.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)", []))
            .map_err(|e| e.to_string())?;
        let insert = "INSERT INTO orders (id, total) VALUES (?1, ?2)";
        let started = Instant::now();
        for i in 0..ORDERS {
            let group = format!("order-{i}");
            let params = [harel_transport::Value::Integer(i as i64), harel_transport::Value::Real(9.5)];
            let m = Message { group_id: &group, event_json: event, priority: 0, routing_key: None, headers: None };
            let done = if in_one {
                t.transaction(|tx| {
                    tx.execute(insert, params)?;
                    tx.publish(m)
                })
                .map(drop)
            } else {
                t.transaction(|tx| tx.execute(insert, params)).and_then(|_| t.publish(&group, event, 0, None))
            };
            done.map_err(|e| e.to_string())?;
        }
        *(if in_one { &mut together } else { &mut separate }) += started.elapsed();
        drop(t);
        remove_db(&path);
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / (ROUNDS * ORDERS) as f64;
    Ok((per(separate), per(together)))
}
