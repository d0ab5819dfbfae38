//! The Rust face of `make bench-faces` (bench/faces/run.py): the work of face.c through
//! `harel_transport::Transport`, the crate itself (no C ABI in between). Usage:
//!   bench-face <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]

use std::process::exit;
use std::time::Instant;

use harel_transport::{Message, Options, Synchronous, Transport};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench-face <path|:memory:> <claim_ack|ack_and_claim> [messages] [groups]");
        exit(2);
    }
    let (path, mode) = (args[1].as_str(), args[2].as_str());
    let fused = match mode {
        "ack_and_claim" => true,
        "claim_ack" => false,
        _ => {
            eprintln!("unknown mode {mode}");
            exit(2)
        }
    };
    let number = |i: usize, default: usize| args.get(i).map_or(default, |a| a.parse().expect("a number"));
    let (n, groups) = (number(3, 4000), number(4, 50));
    if let Err(e) = run(path, mode, fused, n, groups) {
        eprintln!("{e:?}");
        exit(1);
    }
}

fn run(path: &str, mode: &str, fused: bool, n: usize, groups: usize) -> Result<(), harel_transport::Error> {
    let mut options = Options::new();
    options.synchronous(Synchronous::Normal);
    let t = Transport::open(path, &options)?;
    let work: Vec<(String, String)> = (0..n)
        .map(|i| {
            let event = format!(
                r#"{{"id":"ev-{i}","kind":"bench","created_time":null,"received_time":null,"data":{{"n":{i}}}}}"#
            );
            (format!("g-{:03}", i % groups), event)
        })
        .collect();
    let batch: Vec<Message> =
        work.iter().map(|(g, e)| Message { group_id: g, event_json: e, priority: 0, routing_key: None, headers: None }).collect();
    t.publish_many(&batch)?;

    let mut done = 0usize;
    let start = Instant::now();
    if fused {
        let mut next = t.claim("worker", 30.0, 0, &[])?;
        while let Some(lease) = next {
            next = t.ack_and_claim(&lease, "worker", 30.0, 0, &[])?;
            done += 1;
        }
    } else {
        while let Some(lease) = t.claim("worker", 30.0, 0, &[])? {
            t.ack(&lease)?;
            done += 1;
        }
    }
    let elapsed = start.elapsed();
    if done != n {
        eprintln!("drained {done} of {n} messages");
        exit(1);
    }
    let store = if path == ":memory:" { "memory" } else { "file" };
    println!(
        r#"{{"face":"rust","mode":"{mode}","store":"{store}","messages":{done},"us_per_msg":{:.3}}}"#,
        elapsed.as_secs_f64() * 1e6 / done as f64
    );
    Ok(())
}
