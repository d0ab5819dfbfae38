//! `/metrics`: the queue's stats in Prometheus' text format (version 0.0.4), read once per
//! scrape. Every series is a gauge (each is a count or an age now, not a running total) and
//! carries the label `queue`, the tables' prefix; group counts carry `priority` and `state`
//! (a paused group is counted as `paused` only, whatever its head). The expired dead letters
//! are a gauge of their own, within the dead letters' count. Each limited routing key has
//! gauges carrying `routing_key` too: its concurrency limit and the leases counted against it
//! (a key with one), its bucket's tokens (a key with a rate limit), its held groups.
//! A read that fails gives `harel_transport_up 0` and no other series, so a scrape still
//! answers while the queue (a server) is away and shows no stale counts.

use std::fmt::Write;

use harel_transport::{LimitInfo, Stats};

use super::http::Reply;

const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition of one read: the stats and the limits as read (None: a read failed),
/// `has_dead` whether the queue has a dead-letter table (a harel 0.9 file has none: no series
/// rather than a false 0).
pub fn exposition(queue: &str, read: Option<(&Stats, &[LimitInfo])>, has_dead: bool) -> Reply {
    let mut text = Text { out: String::new(), queue: label_value(queue), name: "" };
    text.gauge("harel_transport_up", "1 if the queue was read, 0 if the read failed (its error is on stderr).");
    let Some((s, limits)) = read else {
        text.sample("", 0.0);
        return Reply::new(200, CONTENT_TYPE, text.out);
    };
    text.sample("", 1.0);
    text.gauge("harel_transport_messages", "Messages in the queue's groups (dead letters are counted apart).");
    text.sample("", s.messages as f64);
    text.gauge(
        "harel_transport_groups",
        "Groups, by priority and by their head's state (ready, leased, parked, delayed), or paused.",
    );
    for level in &s.by_priority {
        for (state, n) in [
            ("ready", level.ready),
            ("leased", level.leased),
            ("parked", level.parked),
            ("delayed", level.delayed),
            ("paused", level.paused),
        ] {
            text.sample(&format!(",priority=\"{}\",state=\"{state}\"", level.priority), n as f64);
        }
    }
    if has_dead {
        text.gauge("harel_transport_dead_letters", "Messages in the dead-letter table.");
        text.sample("", s.dead as f64);
        text.gauge(
            "harel_transport_expired_dead_letters",
            "Of the dead letters, the messages that expired undelivered: their ttl or expires_at passed while no \
             worker held them (reason expired).",
        );
        text.sample("", s.expired as f64);
    }
    // Unknown when the oldest ready message's writer stamped no publish time (harel 0.9).
    if s.oldest_ready_age.is_some() || s.oldest_ready_seq.is_none() {
        text.gauge(
            "harel_transport_oldest_ready_age_seconds",
            "Seconds since the oldest message of a ready group was published; 0 when no group is ready.",
        );
        text.sample("", s.oldest_ready_age.unwrap_or(0.0));
    }
    text.gauge(
        "harel_transport_oldest_overdue_lease_seconds",
        "Seconds since the oldest lease that lapsed with its worker still holding it ended; 0 when none has.",
    );
    text.sample("", s.oldest_overdue_lease.unwrap_or(0.0));
    limit_gauges(&mut text, limits);
    Reply::new(200, CONTENT_TYPE, text.out)
}

/// The limits' gauges, one series per limited routing key that has what the gauge counts; a
/// gauge with no series is left out. Sharded, each shard holds the limit (the capacity) for
/// its own groups, and the uses are summed over the shards.
fn limit_gauges(text: &mut Text, limits: &[LimitInfo]) {
    type Value = fn(&LimitInfo) -> Option<f64>;
    let gauges: [(&'static str, &str, Value); 4] = [
        (
            "harel_transport_limit_capacity",
            "A routing key's concurrency limit: at most this many of its groups' messages leased at once \
             (a key with a concurrency limit; on a sharded queue, each shard's).",
            |l| l.limit.concurrency.map(f64::from),
        ),
        (
            "harel_transport_limit_in_use",
            "Leases of a routing key's messages running now, counted against its concurrency limit (a key with \
             one).",
            |l| l.limit.concurrency.map(|_| l.in_use as f64),
        ),
        (
            "harel_transport_limit_tokens",
            "Tokens in a routing key's rate-limit bucket now; each lease takes one (a key with a rate limit).",
            |l| l.tokens,
        ),
        (
            "harel_transport_limit_held",
            "Groups of a limited routing key that claims hold, passed over until the key has room.",
            |l| Some(l.held as f64),
        ),
    ];
    for (name, help, value) in gauges {
        let samples: Vec<(&str, f64)> =
            limits.iter().filter_map(|l| value(l).map(|v| (l.routing_key.as_str(), v))).collect();
        if samples.is_empty() {
            continue;
        }
        text.gauge(name, help);
        for (key, v) in samples {
            text.sample(&format!(",routing_key=\"{}\"", label_value(key)), v);
        }
    }
}

struct Text {
    out: String,
    /// The `queue` label's value, escaped.
    queue: String,
    name: &'static str,
}

impl Text {
    fn gauge(&mut self, name: &'static str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} gauge");
        self.name = name;
    }

    /// One sample of the current gauge; `labels` are those after `queue`, each led by a comma.
    fn sample(&mut self, labels: &str, value: f64) {
        let _ = writeln!(self.out, "{}{{queue=\"{}\"{labels}}} {value}", self.name, self.queue);
    }
}

/// A label value as the format writes it: backslash, double quote and newline escaped.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
