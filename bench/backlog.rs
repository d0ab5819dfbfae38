//! What the server parts share (bench/server.rs, part 5; bench/server_limit.rs, part 10):
//! a backlog published through `publish_many`, and a rate rounded for the report.

use std::time::{Duration, Instant};

use harel_transport::{Message, Transport};

/// Publishes messages `first..first + count` round-robin over `groups` groups (message `i`
/// to group `g{i % groups}`), `batch` per `publish_many` call, until `cap` is over if one
/// is given; how many went in.
pub fn fill(
    t: &Transport,
    first: usize,
    count: usize,
    groups: usize,
    batch: usize,
    cap: Option<Duration>,
) -> Result<usize, String> {
    let started = Instant::now();
    let events: Vec<(String, String)> =
        (first..first + count).map(|i| (format!("g{}", i % groups), format!("{{\"n\":{i}}}"))).collect();
    let mut done = 0;
    for chunk in events.chunks(batch) {
        if cap.is_some_and(|cap| started.elapsed() >= cap) {
            break;
        }
        let messages: Vec<Message> =
            chunk.iter().map(|(g, e)| Message { group_id: g, event_json: e, priority: 0, routing_key: None, headers: None }).collect();
        t.publish_many(&messages).map_err(|e| format!("publish_many: {e:?}"))?;
        done += messages.len();
    }
    Ok(done)
}

/// `done` a second over `took`, to one decimal.
pub fn per_s(done: usize, took: Duration) -> f64 {
    (done as f64 / took.as_secs_f64() * 10.0).round() / 10.0
}
