//! A Rust worker, one of the demo's four, in the batch loop: a claim of up to 10 messages
//! that waits for work (up to a second: then the queue has stayed empty and the worker
//! stops), then per batch one transaction that acks it and claims the next. With
//! `--log FILE` it appends one line per message it finished — `claimed_ns acking_ns seq
//! group_id`, stamped after the claim returned and before the ack was sent, so they lie
//! inside the lease — which the demo uses to prove per-group order.
//!
//!     cargo run --release --example worker -- queue.db rust-1 [--log rust-1.log]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harel_transport::{Options, Transport, Wait};

const IDLE_LIMIT: Duration = Duration::from_secs(1);
const BATCH: usize = 10;
const VISIBILITY: f64 = 30.0;

fn unix_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(database), Some(worker_id)) = (args.first(), args.get(1)) else {
        return Err("usage: worker DATABASE WORKER_ID [--log FILE]".into());
    };
    let mut log = match args.iter().position(|a| a == "--log") {
        Some(i) => Some(BufWriter::new(File::create(args.get(i + 1).ok_or("--log needs a file")?)?)),
        None => None,
    };
    let transport = Transport::open(database, &Options::new())?;
    let mut processed = 0usize;
    let mut batch = transport.claim_many(worker_id, VISIBILITY, 0, &[], BATCH, &Wait::up_to(IDLE_LIMIT))?;
    while !batch.is_empty() {
        for lease in &batch {
            let claimed = unix_ns();
            serde_json::from_str::<serde_json::Value>(&lease.event)?; // "handle" the event
            if let Some(log) = log.as_mut() {
                writeln!(log, "{claimed} {} {} {}", unix_ns(), lease.seq, lease.group_id)?;
            }
        }
        let (acked, next) = transport.ack_and_claim_many(&batch, worker_id, VISIBILITY, 0, &[], BATCH)?;
        // A lost lease (it lapsed and another worker has the message) is that worker's now.
        processed += acked.iter().filter(|a| a.is_ok()).count();
        batch = match next.is_empty() {
            true => transport.claim_many(worker_id, VISIBILITY, 0, &[], BATCH, &Wait::up_to(IDLE_LIMIT))?,
            false => next,
        };
    }
    if let Some(mut log) = log {
        log.flush()?;
    }
    println!("rust {worker_id}: processed {processed}");
    transport.close();
    Ok(())
}
