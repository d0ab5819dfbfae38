//! A Rust worker, one of the demo's four: claims, handles, acks until the queue stays
//! empty for a second. With `--log FILE` it appends one line per message it finished —
//! `claimed_ns acking_ns seq group_id`, stamped after the claim returned and before the
//! ack was sent, so they lie inside the lease — which the demo uses to prove per-group order.
//!
//!     cargo run --release --example worker -- queue.db rust-1 [--log rust-1.log]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use harel_transport::{Options, Transport};

const IDLE_LIMIT: Duration = Duration::from_secs(1);

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
    let (mut processed, mut idle_since) = (0usize, Instant::now());
    while idle_since.elapsed() < IDLE_LIMIT {
        let Some(lease) = transport.claim(worker_id, 30.0, 0, &[])? else {
            sleep(Duration::from_millis(5));
            continue;
        };
        let claimed = unix_ns();
        serde_json::from_str::<serde_json::Value>(&lease.event)?; // "handle" the event
        let acking = unix_ns();
        transport.ack(&lease)?;
        if let Some(log) = log.as_mut() {
            writeln!(log, "{claimed} {acking} {} {}", lease.seq, lease.group_id)?;
        }
        processed += 1;
        idle_since = Instant::now();
    }
    if let Some(mut log) = log {
        log.flush()?;
    }
    println!("rust {worker_id}: processed {processed}");
    transport.close();
    Ok(())
}
