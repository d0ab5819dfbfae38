//! `/metrics`: the queue's stats in Prometheus' text format (version 0.0.4), read once per
//! scrape. Every series is a gauge (each is a count or an age now, not a running total) and
//! carries the label `queue`, the tables' prefix; group counts carry `priority` and `state`
//! (a paused group is counted as `paused` only, whatever its head; a group a limit holds as
//! `held`, one whose lapsed lease waits its retry backoff as `retrying`, neither as `ready`:
//! a level's states add up to its groups). The expired dead letters are a gauge of their
//! own, within the dead letters' count. Each limited routing key has
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
    Reply::new(200, CONTENT_TYPE, render(queue, read, has_dead))
}

/// The exposition's text.
fn render(queue: &str, read: Option<(&Stats, &[LimitInfo])>, has_dead: bool) -> String {
    let mut text = Text { out: String::new(), queue: label_value(queue), name: "" };
    text.gauge("harel_transport_up", "1 if the queue was read, 0 if the read failed (its error is on stderr).");
    let Some((s, limits)) = read else {
        text.sample("", 0.0);
        return text.out;
    };
    text.sample("", 1.0);
    text.gauge("harel_transport_messages", "Messages in the queue's groups (dead letters are counted apart).");
    text.sample("", s.messages as f64);
    text.gauge(
        "harel_transport_groups",
        "Groups, by priority and by their head's state (ready, leased, parked, delayed), or paused, or held by a \
         routing key's limit (held), or waiting a lapsed lease's retry backoff (retrying).",
    );
    for level in &s.by_priority {
        for (state, n) in [
            ("ready", level.ready),
            ("leased", level.leased),
            ("parked", level.parked),
            ("delayed", level.delayed),
            ("paused", level.paused),
            ("held", level.held),
            ("retrying", level.retrying),
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
    text.out
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

#[cfg(test)]
mod tests {
    use harel_transport::{LimitInfo, PriorityStats, Stats};

    use super::render;

    /// A level's counts: priority, then ready, leased, parked, delayed, paused, held, retrying.
    fn level(priority: i32, counts: [u64; 7]) -> PriorityStats {
        let [ready, leased, parked, delayed, paused, held, retrying] = counts;
        let groups = counts.iter().sum();
        PriorityStats { priority, groups, ready, leased, parked, delayed, paused, held, retrying }
    }

    /// Stats of `levels`, their sums at the top.
    fn stats(levels: Vec<PriorityStats>) -> Stats {
        let sum = |f: fn(&PriorityStats) -> u64| levels.iter().map(f).sum();
        Stats {
            now: 1000.0,
            messages: 20,
            groups: sum(|l| l.groups),
            ready: sum(|l| l.ready),
            leased: sum(|l| l.leased),
            parked: sum(|l| l.parked),
            delayed: sum(|l| l.delayed),
            next_due_at: None,
            dead: 0,
            expired: 0,
            oldest_ready_age: Some(1.5),
            oldest_ready_seq: Some(1),
            next_release_at: None,
            oldest_overdue_lease: None,
            paused: sum(|l| l.paused),
            held: sum(|l| l.held),
            retrying: sum(|l| l.retrying),
            by_priority: levels,
        }
    }

    /// The samples of `name`, each line after the name (its labels and value), in order.
    fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines().filter_map(|l| l.strip_prefix(name).filter(|rest| rest.starts_with('{'))).collect()
    }

    /// Held and retrying groups are states of harel_transport_groups as paused is: one series
    /// each per level, after paused, 0 where there are none; a level's states add up to its
    /// groups (held and retrying are not in ready).
    #[test]
    fn held_and_retrying_are_states_of_the_groups_gauge() {
        let s = stats(vec![level(0, [1, 2, 0, 0, 1, 3, 0]), level(2, [0, 0, 1, 1, 0, 0, 2])]);
        let no_limits: &[LimitInfo] = &[];
        let text = render("harel", Some((&s, no_limits)), true);
        let states = ["ready", "leased", "parked", "delayed", "paused", "held", "retrying"];
        let want: Vec<String> = [(0, [1, 2, 0, 0, 1, 3, 0]), (2, [0, 0, 1, 1, 0, 0, 2])]
            .iter()
            .flat_map(|(priority, counts)| {
                states
                    .iter()
                    .zip(counts)
                    .map(move |(state, n)| format!("{{queue=\"harel\",priority=\"{priority}\",state=\"{state}\"}} {n}"))
            })
            .collect();
        assert_eq!(samples(&text, "harel_transport_groups"), want, "{text}");
        let help = text.lines().find(|l| l.starts_with("# HELP harel_transport_groups ")).expect("its HELP");
        assert!(help.contains("(held)") && help.contains("(retrying)"), "{help}");
        assert!(text.contains("# TYPE harel_transport_groups gauge\n"), "{text}");
        for level in &s.by_priority {
            let total: f64 = samples(&text, "harel_transport_groups")
                .iter()
                .filter(|l| l.contains(&format!("priority=\"{}\"", level.priority)))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
                .sum();
            assert_eq!(total, level.groups as f64, "level {}: its states add up to its groups", level.priority);
        }
    }

    /// A level without held or retrying groups still has their series, at 0 (as paused).
    #[test]
    fn no_held_or_retrying_groups_are_series_at_0() {
        let s = stats(vec![level(1, [4, 0, 0, 0, 0, 0, 0])]);
        let text = render("q\"x", Some((&s, &[])), false);
        let groups = samples(&text, "harel_transport_groups");
        assert_eq!(groups.len(), 7, "{text}");
        assert_eq!(groups[5], r#"{queue="q\"x",priority="1",state="held"} 0"#);
        assert_eq!(groups[6], r#"{queue="q\"x",priority="1",state="retrying"} 0"#);
        assert!(!text.contains("harel_transport_dead_letters"), "no dead-letter table: no series");
    }

    /// A failed read: harel_transport_up 0 and nothing else.
    #[test]
    fn a_failed_read_has_no_group_series() {
        let text = render("harel", None, true);
        assert_eq!(samples(&text, "harel_transport_up"), [r#"{queue="harel"} 0"#]);
        assert!(!text.contains("harel_transport_groups"), "{text}");
    }
}
