//! The CLI as an operator runs it: the built binary (a child process) against live queue
//! files that this test fills through the library: ready groups, a group whose head is
//! leased to a worker that went away (stuck), a parked group, dead letters. Each test has a
//! queue of its own. What a file holds is read only through the CLI or the library.
//!
//! The last test runs it against a sqld server with tokens (HAREL_SQLD, or sqld on PATH;
//! without one it says it skipped).

mod harel_queue;

use std::path::Path;
use std::process::Command;

use harel_transport::{Delivery, Jitter, Message, Options, Retry, Transport};
use harel_transport_testkit::sqld;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_harel-transport");
/// How long the fixture's lease and park last: the whole test.
const HELD: f64 = 600.0;

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `args`, none of the caller's HAREL_* variables, and `env`.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut command = Command::new(BIN);
    command.args(args);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("HAREL_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    let output = command.output().expect("run the harel-transport binary");
    Ran {
        code: output.status.code().expect("the CLI exits, no signal"),
        stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
    }
}

fn run(args: &[&str]) -> Ran {
    run_env(args, &[])
}

/// Exit 0 and nothing on stderr: the stdout.
fn ok(args: &[&str]) -> String {
    let ran = run(args);
    assert_eq!(ran.code, 0, "{args:?} failed:\n{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.stderr, "", "{args:?}");
    ran.stdout
}

/// Exit `code`: the stderr.
fn fails(args: &[&str], code: i32) -> String {
    let ran = run(args);
    assert_eq!(ran.code, code, "{args:?}:\nstdout: {}\nstderr: {}", ran.stdout, ran.stderr);
    ran.stderr
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let text = ok(&all);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?} --json is not one JSON document ({e}):\n{text}"))
}

/// A queue file and its path; removed at the end of the test.
struct Queue {
    _dir: tempfile::TempDir,
    path: String,
}

impl Queue {
    fn open(&self) -> Transport {
        Transport::open(&self.path, &Options::new()).expect("open the queue")
    }

    /// `-d PATH` and `args`.
    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["-d", self.path.as_str()];
        all.extend_from_slice(args);
        all
    }
}

fn event(group: &str, n: usize) -> String {
    format!(r#"{{"kind":"order","group":"{group}","n":{n}}}"#)
}

/// Five groups, eight messages, one dead letter:
/// - orders-1: 3 messages, ready; orders-2: 1 message, priority 3, routing key "eu", ready
/// - stuck: 2 messages, the head leased to "worker-stuck" for 600 s (a worker that died)
/// - parked: 1 message, nacked with a delay of 600 s
/// - poison: its head moved to the dead letters by "worker-poison" ("bad payload"); 1 left
fn live_queue() -> Queue {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("queue.db").to_str().expect("utf-8 path").to_owned();
    let queue = Queue { _dir: dir, path };
    let t = queue.open();
    for n in 0..3 {
        t.publish("orders-1", &event("orders-1", n), 0, None).unwrap();
    }
    t.publish("orders-2", &event("orders-2", 0), 3, Some("eu")).unwrap();
    for n in 0..2 {
        t.publish("stuck", &event("stuck", n), 0, Some("k-stuck")).unwrap();
        t.publish("poison", &event("poison", n), 0, Some("k-poison")).unwrap();
    }
    t.publish("parked", &event("parked", 0), 0, Some("k-park")).unwrap();

    let stuck = t.claim("worker-stuck", HELD, 0, &["k-stuck"]).unwrap().expect("the stuck group's head");
    assert_eq!(stuck.group_id, "stuck");
    let parked = t.claim("worker-p", HELD, 0, &["k-park"]).unwrap().expect("the parked group's head");
    t.nack(&parked, HELD).unwrap();
    let poison = t.claim("worker-poison", HELD, 0, &["k-poison"]).unwrap().expect("the poison group's head");
    t.dead_letter(&poison, "bad payload").unwrap();
    t.close();
    queue
}

/// The line of a table whose first cell is `first`.
fn line<'a>(table: &'a str, first: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(first))
        .unwrap_or_else(|| panic!("no line for {first:?} in:\n{table}"))
}

fn stats_of(q: &Queue) -> Value {
    json(&q.args(&["stats"]))
}

#[test]
fn stats_as_a_table_and_as_json() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let text = ok(&q.args(&["stats"]));
    assert!(line(&text, "messages").ends_with(" 8"), "{text}");
    assert!(line(&text, "groups").contains("5 (3 ready, 1 leased, 1 parked)"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("dead letters") && l.ends_with(" 1")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("oldest ready") && l.ends_with(" old")), "{text}");
    // The lease and the park end in about 600 s.
    assert!(text.lines().any(|l| l.starts_with("next release") && l.contains("in 9m")), "{text}");
    let header = line(&text, "PRIORITY");
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["PRIORITY", "GROUPS", "READY", "LEASED", "PARKED"]);
    assert_eq!(line(&text, "0").split_whitespace().collect::<Vec<_>>(), ["0", "4", "2", "1", "1"], "{text}");
    assert_eq!(line(&text, "3").split_whitespace().collect::<Vec<_>>(), ["3", "1", "1", "0", "0"], "{text}");

    let s = stats_of(&q);
    let counts = [
        ("messages", 8),
        ("groups", 5),
        ("ready", 3),
        ("leased", 1),
        ("parked", 1),
        ("paused", 0),
        ("held", 0),
        ("retrying", 0),
        ("dead", 1),
        ("expired", 0),
    ];
    for (key, want) in counts {
        assert_eq!(s[key], want, "{key} in {s}");
    }
    let now = s["now"].as_f64().unwrap();
    let next = s["next_release_at"].as_f64().unwrap();
    assert!((HELD - 60.0..=HELD).contains(&(next - now)), "{s}");
    assert!(s["oldest_ready_age"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        s["by_priority"],
        serde_json::json!([
            {"priority": 0, "groups": 4, "ready": 2, "leased": 1, "parked": 1, "delayed": 0, "paused": 0,
             "held": 0, "retrying": 0},
            {"priority": 3, "groups": 1, "ready": 1, "leased": 0, "parked": 0, "delayed": 0, "paused": 0,
             "held": 0, "retrying": 0},
        ])
    );
    // The JSON's group counts, in this order.
    let text = ok(&q.args(&["stats", "--json"]));
    let keys = ["\"ready\"", "\"leased\"", "\"parked\"", "\"delayed\"", "\"paused\"", "\"held\"", "\"retrying\""];
    let at: Vec<usize> = keys.iter().map(|k| text.find(k).expect(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
}

/// `stats` shows the groups a limit holds and those whose lapsed lease waits its retry
/// backoff when there are any (in the groups line and per level, apart from the ready), and
/// always in JSON; ready, leased, parked, held and retrying add up to the groups.
#[test]
fn stats_show_held_and_retrying_groups() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let text = ok(&q.args(&["stats"]));
    assert!(!text.contains("held") && !text.contains("retrying") && !text.contains("HELD"), "none: not shown\n{text}");

    // A concurrency limit of 1 on "k-lim" and three of its groups: one leased, two held.
    let t = q.open();
    for n in 1..=3 {
        t.publish(&format!("lim-{n}"), &event("lim", n), 0, Some("k-lim")).unwrap();
    }
    ok(&q.args(&["limit", "set", "--routing-key", "k-lim", "--concurrency", "1"]));
    let lim = t.claim("worker-lim", HELD, 0, &["k-lim"]).unwrap().expect("lim-1's head");
    assert_eq!(lim.group_id, "lim-1");
    assert!(t.claim("worker-lim", HELD, 0, &["k-lim"]).unwrap().is_none(), "k-lim has no room: held");
    t.close();
    // A retry policy of 600 s and a lease of 50 ms that lapses: retrying for 10 minutes.
    let mut options = Options::new();
    options.retry(Some(Retry { base: HELD, factor: 1.0, cap: HELD, jitter: Jitter::None })).unwrap();
    let t = Transport::open(&q.path, &options).expect("open the queue with a retry policy");
    t.publish("retry-me", &event("retry-me", 0), 3, Some("k-retry")).unwrap();
    t.claim("worker-gone", 0.05, 0, &["k-retry"]).unwrap().expect("retry-me's head");
    t.close();
    std::thread::sleep(std::time::Duration::from_millis(200));

    let text = ok(&q.args(&["stats"]));
    assert!(line(&text, "groups").contains("9 (3 ready, 2 leased, 1 parked, 2 held, 1 retrying)"), "{text}");
    let header = line(&text, "PRIORITY").split_whitespace().collect::<Vec<_>>();
    assert_eq!(header, ["PRIORITY", "GROUPS", "READY", "LEASED", "PARKED", "HELD", "RETRYING"], "{text}");
    assert_eq!(line(&text, "0").split_whitespace().collect::<Vec<_>>(), ["0", "7", "2", "2", "1", "2", "0"], "{text}");
    assert_eq!(line(&text, "3").split_whitespace().collect::<Vec<_>>(), ["3", "2", "1", "0", "0", "0", "1"], "{text}");

    let s = stats_of(&q);
    let counts = [("groups", 9), ("ready", 3), ("leased", 2), ("parked", 1), ("held", 2), ("retrying", 1)];
    for (key, want) in counts {
        assert_eq!(s[key], want, "{key} in {s}");
    }
    assert_eq!(
        s["by_priority"],
        serde_json::json!([
            {"priority": 0, "groups": 7, "ready": 2, "leased": 2, "parked": 1, "delayed": 0, "paused": 0,
             "held": 2, "retrying": 0},
            {"priority": 3, "groups": 2, "ready": 1, "leased": 0, "parked": 0, "delayed": 0, "paused": 0,
             "held": 0, "retrying": 1},
        ])
    );
    let listed = json(&q.args(&["limit", "list"]));
    assert_eq!(listed["limits"][0]["held"], s["held"], "the limit's held groups: {listed}");
    let watched = ok(&q.args(&["stats", "--watch", "0.1", "--count", "1", "--json"]));
    let doc: Value = serde_json::from_str(watched.trim()).unwrap();
    assert_eq!((doc["held"].as_u64(), doc["retrying"].as_u64()), (Some(2), Some(1)), "{doc}");
    // `groups` agrees: each filter finds them, none is listed as ready.
    assert_eq!(group_ids(&json(&q.args(&["groups", "--state", "held"]))), ["lim-2", "lim-3"]);
    assert_eq!(group_ids(&json(&q.args(&["groups", "--state", "retrying"]))), ["retry-me"]);
    assert_eq!(line(&ok(&q.args(&["groups"])), "retry-me").split_whitespace().nth(1), Some("retrying"));
    let ready = json(&q.args(&["groups", "--state", "ready"]));
    assert!(group_ids(&ready).iter().all(|g| !g.starts_with("lim-") && *g != "retry-me"), "{ready}");
    assert_eq!(group_ids(&ready).len(), 3, "as many as stats counts: {ready}");

    // Removed, the limit serves its held groups at once: ready again.
    ok(&q.args(&["limit", "remove", "--routing-key", "k-lim"]));
    let s = stats_of(&q);
    assert_eq!((s["ready"].as_u64(), s["held"].as_u64(), s["retrying"].as_u64()), (Some(5), Some(0), Some(1)), "{s}");
    assert!(!line(&ok(&q.args(&["stats"])), "groups").contains("held"));
    let help = ok(&["stats", "--help"]);
    assert!(help.contains("held: those a") && help.contains("retrying: those whose lapsed lease"), "{help}");
}

/// Two messages published with a ttl of 10 s by a clock 100 s behind (so they expired 90 s
/// ago by the system's), moved to the dead letters by a claim that takes nothing.
fn expire_two(q: &Queue) {
    let mut behind = Options::new();
    behind.clock(|| harel_transport::system_clock() - 100.0);
    let t = Transport::open(&q.path, &behind).expect("open the queue");
    for n in 0..2 {
        let event = event("expiring", n);
        let m = Message { group_id: "expiring", event_json: &event, priority: 0, routing_key: None, headers: None };
        t.publish_with(m, Delivery { ttl: Some(10.0), ..Delivery::default() }).unwrap();
    }
    t.close();
    let t = q.open();
    assert!(t.claim("w", 30.0, 0, &["no-such-key"]).unwrap().is_none(), "a claim that sweeps");
    t.close();
}

/// `stats` shows the expired among the dead letters when there are any, and always in JSON;
/// `dead list` their reason.
#[test]
fn stats_show_the_expired_dead_letters() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    assert!(!ok(&q.args(&["stats"])).contains("expired"), "none: not shown");
    expire_two(&q);
    let text = ok(&q.args(&["stats"]));
    assert!(text.lines().any(|l| l.starts_with("dead letters") && l.ends_with(" 3 (2 expired)")), "{text}");
    let s = stats_of(&q);
    let counts = (s["dead"].as_u64(), s["expired"].as_u64(), s["messages"].as_u64());
    assert_eq!(counts, (Some(3), Some(2), Some(8)), "{s}");
    let dead = json(&q.args(&["dead", "list", "--group", "expiring"]));
    let reasons: Vec<&str> =
        dead["dead_letters"].as_array().unwrap().iter().map(|d| d["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["expired", "expired"], "{dead}");
    // Redriven, they are no longer counted (nor expire again).
    ok(&q.args(&["dead", "redrive", "--group", "expiring"]));
    let s = stats_of(&q);
    let counts = (s["dead"].as_u64(), s["expired"].as_u64(), s["messages"].as_u64());
    assert_eq!(counts, (Some(1), Some(0), Some(10)), "{s}");
    assert!(!ok(&q.args(&["stats"])).contains("expired"));
}

#[test]
fn stats_watch_refreshes() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let lines = ok(&q.args(&["stats", "--watch", "0.1", "--count", "3", "--json"]));
    let docs: Vec<Value> = lines.lines().map(|l| serde_json::from_str(l).expect("one JSON document a line")).collect();
    assert_eq!(docs.len(), 3, "{lines}");
    assert!(docs.iter().all(|d| d["messages"] == 8));
    assert!(docs[0]["now"].as_f64() < docs[2]["now"].as_f64(), "each refresh is a new look");

    let text = ok(&q.args(&["stats", "--watch", "0.1", "--count", "2"]));
    assert_eq!(text.matches("(every 0.1s, Ctrl-C to stop)").count(), 2, "{text}");
    assert_eq!(text.matches("5 (3 ready, 1 leased, 1 parked)").count(), 2, "{text}");
    // --watch alone means every 2 s; --count needs --watch; 0 s is no interval.
    assert!(fails(&q.args(&["stats", "--count", "2"]), 2).contains("--watch"));
    assert!(fails(&q.args(&["stats", "--watch", "0"]), 2).contains("above 0"));
}

#[test]
fn groups_show_the_stuck_group_and_its_holder() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let leased = ok(&q.args(&["groups", "--state", "leased"]));
    let rows: Vec<&str> = leased.lines().collect();
    assert_eq!(rows.len(), 2, "a header and the stuck group:\n{leased}");
    let header: Vec<&str> = rows[0].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(
        header,
        ["GROUP", "STATE", "DEPTH", "HEAD AGE", "HOLDER", "LEASE END", "PRIORITY", "ROUTING KEY", "ATTEMPTS"]
    );
    let cells: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(cells[..3], ["stuck", "leased", "2"], "{leased}");
    assert_eq!(cells[4], "worker-stuck", "{leased}");
    assert_eq!(cells[5], "in", "{leased}");
    assert!(cells[6].starts_with("9m"), "{leased}");
    assert_eq!(cells[7..], ["0", "k-stuck", "1"], "{leased}");

    let doc = json(&q.args(&["groups", "--state", "leased"]));
    assert_eq!(doc["next"], Value::Null);
    let g = &doc["groups"][0];
    assert_eq!(doc["groups"].as_array().unwrap().len(), 1);
    assert_eq!(
        (g["group_id"].as_str(), g["state"].as_str(), g["holder"].as_str()),
        (Some("stuck"), Some("leased"), Some("worker-stuck"))
    );
    assert_eq!(
        (g["depth"].as_u64(), g["head_attempts"].as_i64(), g["routing_key"].as_str()),
        (Some(2), Some(1), Some("k-stuck"))
    );
    assert!(g["lock_expiry"].as_f64().is_some() && g["head_seq"].as_i64().is_some());

    let parked = ok(&q.args(&["groups", "--state", "parked"]));
    let cells: Vec<&str> = line(&parked, "parked").split_whitespace().collect();
    assert_eq!((cells[1], cells[4], cells[5]), ("parked", "-", "in"), "{parked}");
    let ready = json(&q.args(&["groups", "--state", "ready"]));
    let ids: Vec<&str> = ready["groups"].as_array().unwrap().iter().map(|g| g["group_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["orders-1", "orders-2", "poison"]);
    let orders2 = &ready["groups"][1];
    assert_eq!((orders2["priority"].as_i64(), orders2["routing_key"].as_str()), (Some(3), Some("eu")));
    assert_eq!(ready["groups"][0]["holder"], Value::Null);
}

#[test]
fn groups_page_by_cursor_or_all() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let first = json(&q.args(&["groups", "--limit", "2"]));
    let cursor = first["next"].as_str().expect("a next cursor after 2 of 5").to_owned();
    let mut ids: Vec<String> = Vec::new();
    let mut page = first;
    loop {
        ids.extend(page["groups"].as_array().unwrap().iter().map(|g| g["group_id"].as_str().unwrap().to_owned()));
        let Some(next) = page["next"].as_str().map(str::to_owned) else { break };
        page = json(&q.args(&["groups", "--limit", "2", "--cursor", &next]));
    }
    assert_eq!(ids, ["orders-1", "orders-2", "parked", "poison", "stuck"]);

    let text = ok(&q.args(&["groups", "--limit", "2"]));
    assert!(text.contains(&format!("--cursor {cursor} ")), "the text names the next cursor:\n{text}");
    let all = json(&q.args(&["groups", "--limit", "2", "--all"]));
    assert_eq!(all["groups"].as_array().unwrap().len(), 5);
    assert_eq!(all["next"], Value::Null);
    let rest = json(&q.args(&["groups", "--limit", "2", "--cursor", &cursor, "--all"]));
    assert_eq!(rest["groups"].as_array().unwrap().len(), 3);
    assert!(!ok(&q.args(&["groups", "--all"])).contains("--cursor"));
}

#[test]
fn peek_shows_a_groups_messages_head_first() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let text = ok(&q.args(&["peek", "stuck"]));
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(
        rows[0].split_whitespace().collect::<Vec<_>>(),
        ["SEQ", "ATTEMPTS", "LOCKED", "BY", "LEASE", "END", "PUBLISHED", "EVENT"]
    );
    assert!(
        rows[1].contains(" worker-stuck ") && rows[1].contains(" in 9m") && rows[1].contains(&event("stuck", 0)),
        "{text}"
    );
    assert!(rows[2].contains(&event("stuck", 1)) && rows[2].contains(" - "), "{text}");

    let doc = json(&q.args(&["peek", "stuck"]));
    assert_eq!(doc["group_id"], "stuck");
    let m = doc["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[0]["event"], event("stuck", 0), "the event is the exact text stored");
    assert_eq!((m[0]["locked_by"].as_str(), m[0]["attempts"].as_i64()), (Some("worker-stuck"), Some(1)));
    assert!(m[0]["seq"].as_i64() < m[1]["seq"].as_i64());
    assert_eq!((m[1]["locked_by"].clone(), m[1]["attempts"].as_i64()), (Value::Null, Some(0)));
    assert!(m[1]["published_at"].as_f64().is_some());

    assert!(line(&ok(&q.args(&["peek", "parked"])), "SEQ").starts_with("SEQ"));
    assert!(ok(&q.args(&["peek", "parked"])).contains("(parked)"));
    let page = json(&q.args(&["peek", "orders-1", "--limit", "1"]));
    let next = page["next"].as_str().expect("more after 1 of 3");
    let rest = json(&q.args(&["peek", "orders-1", "--cursor", next]));
    assert_eq!(rest["messages"].as_array().unwrap().len(), 2);
    assert_eq!(ok(&q.args(&["peek", "nobody"])), "group \"nobody\" holds no messages\n");
    assert_eq!(json(&q.args(&["peek", "nobody"]))["messages"], serde_json::json!([]));
}

/// A message's retry backoff (the one its last claim drew under a retry policy, the queue's
/// or its own): in peek's table a RETRY column ("retry in 6.0 s", only when a message of the
/// page has one; "-" for the others), in JSON `retry_delay` (null when none).
#[test]
fn peek_shows_each_messages_retry_backoff() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let mut options = Options::new();
    options.retry(Some(Retry { base: 6.0, factor: 2.0, cap: 60.0, jitter: Jitter::None })).unwrap();
    let t = Transport::open(&q.path, &options).expect("open the queue with a retry policy");
    for n in 0..2 {
        t.publish("retrying", &event("retrying", n), 0, Some("k-retry")).unwrap();
    }
    let own = Retry { base: 2.5, factor: 1.0, cap: 2.5, jitter: Jitter::None };
    let event_own = event("own", 0);
    let m = Message { group_id: "own", event_json: &event_own, priority: 0, routing_key: Some("k-own"), headers: None };
    t.publish_with(m, Delivery { retry: Some(own), ..Delivery::default() }).unwrap();
    t.claim("worker-r", HELD, 0, &["k-retry"]).unwrap().expect("retrying's head");
    let parked = t.claim("worker-o", HELD, 0, &["k-own"]).unwrap().expect("own's head");
    t.nack(&parked, 0.0).unwrap(); // parked for its own backoff, 2.5 s
    t.close();

    let text = ok(&q.args(&["peek", "retrying"]));
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(
        rows[0].split_whitespace().collect::<Vec<_>>(),
        ["SEQ", "ATTEMPTS", "LOCKED", "BY", "LEASE", "END", "PUBLISHED", "RETRY", "EVENT"]
    );
    assert!(rows[1].contains(" worker-r ") && rows[1].contains(" retry in 6.0 s "), "{text}");
    let at = rows[1].find("retry in").unwrap();
    assert_eq!(rows[2].get(at..at + 2), Some("- "), "none: a dash in the column\n{text}");
    assert!(ok(&q.args(&["peek", "own"])).lines().nth(1).unwrap().contains(" retry in 2.5 s "));
    assert!(!ok(&q.args(&["peek", "orders-1"])).contains("RETRY"), "no column when no message has a backoff");
    assert!(!ok(&q.args(&["peek", "stuck"])).contains("retry in"), "claimed without a policy: none");

    let doc = json(&q.args(&["peek", "retrying"]));
    let m = doc["messages"].as_array().unwrap();
    assert_eq!((m[0]["retry_delay"].as_f64(), m[1]["retry_delay"].clone()), (Some(6.0), Value::Null), "{doc}");
    let doc = json(&q.args(&["peek", "own"]));
    assert_eq!(doc["messages"][0]["retry_delay"].as_f64(), Some(2.5), "{doc}");
    assert_eq!(doc["messages"][0]["locked_by"], "__parked__", "{doc}");
    for group in ["orders-1", "stuck"] {
        let doc = json(&q.args(&["peek", group]));
        assert!(doc["messages"].as_array().unwrap().iter().all(|m| m["retry_delay"].is_null()), "{doc}");
    }
}

/// A message's headers: in the tables of peek and dead list, a HEADERS column (only when a
/// message of the page has some) of `name=value` pairs in order, a value quoted when it must
/// be and control characters escaped (nothing reaches the terminal raw); in JSON,
/// `"headers": [[name, value], ...]` byte for byte (`[]` for none); kept by a redrive.
#[test]
fn headers_are_shown_as_escaped_text_and_in_json() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let sent = [
        ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ("note", "two words\n\u{1b}[31mred\u{7}"),
        ("empty", ""),
        ("utf", "caf\u{e9} \u{1f600}"),
        ("traceparent", "again"),
    ];
    // Cut to 100 characters in the table, as events are.
    let shown = r#"traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 note="two words\n\u{1b}[31mred\…"#;
    let headers = harel_transport::Headers::new(&sent).unwrap();
    let t = q.open();
    let message = |event: &'static str, headers| harel_transport::Message {
        group_id: "traced",
        event_json: event,
        priority: 0,
        routing_key: Some("k-traced"),
        headers,
    };
    t.publish_many(&[message(r#"{"n":1}"#, Some(&headers)), message(r#"{"n":2}"#, None)]).unwrap();

    let text = ok(&q.args(&["peek", "traced"]));
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(
        rows[0].split_whitespace().collect::<Vec<_>>(),
        ["SEQ", "ATTEMPTS", "LOCKED", "BY", "LEASE", "END", "PUBLISHED", "HEADERS", "EVENT"]
    );
    assert!(rows[1].contains(shown) && rows[1].ends_with(r#"{"n":1}"#), "{text}");
    let first = "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let at = rows[1].find(first).unwrap();
    assert_eq!(rows[2].get(at..at + 2), Some("- "), "none: a dash in the column\n{text}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "no control character reaches the terminal");
    // The whole list, when it fits: every pair in order, quoted where it must be.
    let short = harel_transport::Headers::new(&[("a", "1"), ("e", ""), ("u", "caf\u{e9}"), ("a", "x y")]).unwrap();
    t.publish_many(&[harel_transport::Message { group_id: "short", event_json: "1", priority: 0, routing_key: None, headers: Some(&short) }])
        .unwrap();
    assert!(ok(&q.args(&["peek", "short"])).lines().nth(1).unwrap().contains(r#" a=1 e="" u=café a="x y"  1"#));
    assert!(!ok(&q.args(&["peek", "orders-1"])).contains("HEADERS"), "no column when no message has headers");

    let doc = json(&q.args(&["peek", "traced"]));
    let pairs: Vec<[&str; 2]> = sent.iter().map(|(n, v)| [*n, *v]).collect();
    assert_eq!(doc["messages"][0]["headers"], serde_json::json!(pairs), "byte for byte, in order");
    assert_eq!(doc["messages"][1]["headers"], serde_json::json!([]));
    assert_eq!(json(&q.args(&["peek", "orders-1"]))["messages"][0]["headers"], serde_json::json!([]));

    // Dead: the same column and field; a redrive keeps them.
    let lease = t.claim("worker-traced", HELD, 0, &["k-traced"]).unwrap().expect("traced's head");
    assert_eq!(lease.headers, headers);
    t.dead_letter(&lease, "traced and dead").unwrap();
    t.close();
    let text = ok(&q.args(&["dead", "list"]));
    assert!(line(&text, "SEQ").contains(" REASON  ") && line(&text, "SEQ").contains(" HEADERS "), "{text}");
    let traced = text.lines().find(|l| l.contains("traced and dead")).expect("the dead letter");
    assert!(traced.contains(&shown[..60]), "{text}");
    let poison = text.lines().find(|l| l.contains("bad payload")).expect("poison's");
    assert!(poison.contains(" - "), "{text}");
    let dead = json(&q.args(&["dead", "list", "--group", "traced"]));
    let letter = &dead["dead_letters"][0];
    assert_eq!(letter["headers"], serde_json::json!(pairs));
    assert_eq!(json(&q.args(&["dead", "list", "--group", "poison"]))["dead_letters"][0]["headers"], serde_json::json!([]));
    let seq = letter["seq"].to_string();
    ok(&q.args(&["dead", "redrive", "--seq", &seq]));
    let back = json(&q.args(&["peek", "traced"]));
    let last = back["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["event"].as_str(), &last["headers"]), (Some(r#"{"n":1}"#), &serde_json::json!(pairs)));
}

#[test]
fn dead_letters_are_listed_redriven_and_purged() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let text = ok(&q.args(&["dead", "list"]));
    let row: Vec<&str> = text.lines().nth(1).expect("one dead letter").split_whitespace().collect();
    assert_eq!(row[1..4], ["poison", "1", "worker-poison"], "{text}");
    assert!(text.contains("bad payload") && text.contains(r#"{"kind":"order","group":"poison","n":0}"#), "{text}");
    let doc = json(&q.args(&["dead", "list"]));
    let dead = &doc["dead_letters"][0];
    assert_eq!((dead["group_id"].as_str(), dead["reason"].as_str()), (Some("poison"), Some("bad payload")));
    assert_eq!((dead["last_worker"].as_str(), dead["attempts"].as_i64()), (Some("worker-poison"), Some(1)));
    assert_eq!(dead["event"], event("poison", 0));
    let seq = dead["seq"].as_i64().unwrap().to_string();
    assert_eq!(json(&q.args(&["dead", "list", "--group", "orders-1"]))["dead_letters"], serde_json::json!([]));
    assert_eq!(ok(&q.args(&["dead", "list", "--group", "orders-1"])), "no dead letters of group \"orders-1\"\n");

    // Both change the queue: one selector, exactly.
    for verb in ["redrive", "purge"] {
        assert!(fails(&q.args(&["dead", verb]), 2).contains("--all"), "dead {verb} without a selector");
        fails(&q.args(&["dead", verb, "--all", "--group", "poison"]), 2);
    }

    assert_eq!(
        ok(&q.args(&["dead", "redrive", "--seq", &seq])),
        "redrove 1 dead letter into its group (as the group's newest message)\n"
    );
    assert_eq!((stats_of(&q)["dead"].as_u64(), stats_of(&q)["messages"].as_u64()), (Some(0), Some(9)));
    let poison = json(&q.args(&["peek", "poison"]));
    let events: Vec<&str> =
        poison["messages"].as_array().unwrap().iter().map(|m| m["event"].as_str().unwrap()).collect();
    assert_eq!(events, [event("poison", 1), event("poison", 0)], "redriven as the newest");

    // Two dead letters again, through a worker and through max_attempts.
    let mut options = Options::new();
    options.max_attempts(1);
    let t = Transport::open(&q.path, &options).unwrap();
    let lease = t.claim("worker-poison", HELD, 0, &["k-poison"]).unwrap().unwrap();
    t.dead_letter(&lease, "still bad").unwrap();
    t.publish("flaky", &event("flaky", 0), 0, Some("k-flaky")).unwrap();
    let lease = t.claim("worker-f", HELD, 0, &["k-flaky"]).unwrap().unwrap();
    t.nack(&lease, 0.0).unwrap();
    assert!(t.claim("worker-f", HELD, 0, &["k-flaky"]).unwrap().is_none(), "its one attempt is spent");
    t.close();
    let dead = json(&q.args(&["dead", "list"]));
    let groups: Vec<&str> =
        dead["dead_letters"].as_array().unwrap().iter().map(|d| d["group_id"].as_str().unwrap()).collect();
    assert_eq!(groups.len(), 2, "{dead}");
    assert!(groups.contains(&"poison") && groups.contains(&"flaky"), "{dead}");

    assert_eq!(json(&q.args(&["dead", "purge", "--group", "flaky"])), serde_json::json!({"purged": 1}));
    assert_eq!(
        ok(&q.args(&["dead", "redrive", "--group", "nobody"])),
        "redrove 0 dead letters into group \"nobody\" (as its newest messages)\n"
    );
    assert_eq!(ok(&q.args(&["dead", "purge", "--all"])), "purged 1 dead letter\n");
    assert_eq!(ok(&q.args(&["dead", "list"])), "no dead letters\n");
    assert_eq!(json(&q.args(&["dead", "redrive", "--all"])), serde_json::json!({"redriven": 0}));
}

/// The items of an archive page (`archive --json`).
fn archived(page: &Value) -> &Vec<Value> {
    page["archived"].as_array().unwrap_or_else(|| panic!("no archived list in {page}"))
}

/// Fills the archive through a transport with it on: group "history"'s five messages, the
/// first (with headers) claimed by "worker-a", nacked and claimed again before its ack (2
/// attempts), the others acked by "worker-b", orders-2's head (acked by "worker-o") between
/// them. Returns the headers of history's first message.
fn fill_the_archive(q: &Queue) -> harel_transport::Headers {
    let headers = harel_transport::Headers::new(&[("traceparent", "00-ab-01"), ("note", "two words")]).unwrap();
    let mut options = Options::new();
    options.archive(3_600.0).unwrap();
    let t = Transport::open(&q.path, &options).unwrap();
    let events: Vec<String> = (0..5).map(|n| event("history", n)).collect();
    let message = |n: usize, headers| Message {
        group_id: "history",
        event_json: &events[n],
        priority: 0,
        routing_key: Some("k-history"),
        headers,
    };
    t.publish_many(&[message(0, Some(&headers)), message(1, None), message(2, None)]).unwrap();
    let lease = t.claim("worker-a", HELD, 0, &["k-history"]).unwrap().expect("history's head");
    t.nack(&lease, 0.0).unwrap();
    let lease = t.claim("worker-a", HELD, 0, &["k-history"]).unwrap().expect("history's head again");
    assert_eq!(lease.attempts, 2);
    t.ack(&lease).unwrap();
    let orders = t.claim("worker-o", HELD, 0, &["eu"]).unwrap().expect("orders-2's head (routing key eu)");
    t.ack(&orders).unwrap();
    t.publish_many(&[message(3, None), message(4, None)]).unwrap();
    for _ in 1..5 {
        let lease = t.claim("worker-b", HELD, 0, &["k-history"]).unwrap().expect("history's next");
        t.ack(&lease).unwrap();
    }
    t.close();
    headers
}

/// `archive`: the acked messages kept while the archive is on, as a table and as JSON, every
/// group's or one group's (its history, in order), page by page; nothing archived is an
/// empty listing, saying so.
#[test]
fn the_archive_lists_acked_messages_in_order_page_by_page() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    // Off by default: nothing archived yet, even after an ack.
    let empty = "no archived messages (an ack archives its message only when its transport has the archive \
                 option on)\n";
    assert_eq!(ok(&q.args(&["archive"])), empty);
    let t = q.open();
    let lease = t.claim("worker-off", HELD, 0, &["eu"]).unwrap().expect("orders-2's head (routing key eu)");
    t.ack(&lease).unwrap();
    t.close();
    assert_eq!(json(&q.args(&["archive"])), serde_json::json!({"archived": [], "next": null}));
    assert_eq!(
        ok(&q.args(&["archive", "--group", "history"])),
        "no archived messages of group \"history\" (an ack archives its message only when its transport has the \
         archive option on)\n"
    );

    let q = live_queue();
    let sent = fill_the_archive(&q);
    let started = harel_transport::system_clock();
    let all = json(&q.args(&["archive"]));
    assert_eq!(all["next"], Value::Null);
    let listed: Vec<(&str, i64)> =
        archived(&all).iter().map(|a| (a["group_id"].as_str().unwrap(), a["seq"].as_i64().unwrap())).collect();
    assert_eq!(listed.len(), 6, "{all}");
    assert!(listed.windows(2).all(|w| w[0].1 < w[1].1), "in seq order: {listed:?}");
    assert_eq!(listed.iter().filter(|(g, _)| *g == "orders-2").count(), 1, "{listed:?}");

    // One group's history, in order, every field.
    let history = json(&q.args(&["archive", "--group", "history"]));
    let items = archived(&history);
    let events: Vec<&str> = items.iter().map(|a| a["event"].as_str().unwrap()).collect();
    let sent_events: Vec<String> = (0..5).map(|n| event("history", n)).collect();
    assert_eq!(events, sent_events, "the exact text stored, in publish order");
    let first = &items[0];
    assert_eq!((first["attempts"].as_i64(), first["worker_id"].as_str()), (Some(2), Some("worker-a")), "{first}");
    let pairs: Vec<[&str; 2]> = sent.pairs().iter().map(|(n, v)| [n.as_str(), v.as_str()]).collect();
    assert_eq!(first["headers"], serde_json::json!(pairs));
    assert_eq!(first["shard"], 0);
    for a in &items[1..] {
        assert_eq!((a["attempts"].as_i64(), a["worker_id"].as_str()), (Some(1), Some("worker-b")), "{a}");
        assert_eq!(a["headers"], serde_json::json!([]));
    }
    for a in items {
        let at = |key: &str| a[key].as_f64().unwrap_or_else(|| panic!("{key} in {a}"));
        let (published, claimed, acked) = (at("published_at"), at("claimed_at"), at("acked_at"));
        assert!(published <= claimed && claimed <= acked, "{a}");
        assert!(started - 60.0 < published && acked <= started, "{a}");
    }
    // The fields, in this order.
    let text = ok(&q.args(&["archive", "--group", "history", "--limit", "1", "--json"]));
    let keys = [
        "\"seq\"",
        "\"group_id\"",
        "\"event\"",
        "\"attempts\"",
        "\"worker_id\"",
        "\"published_at\"",
        "\"claimed_at\"",
        "\"acked_at\"",
        "\"shard\"",
        "\"headers\"",
        "\"next\"",
    ];
    let at: Vec<usize> = keys.iter().map(|k| text.find(k).unwrap_or_else(|| panic!("{k} in {text}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");

    // The table: the dead letters' columns, with the worker and the three times.
    let table = ok(&q.args(&["archive", "--group", "history"]));
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 6, "a header and five messages:\n{table}");
    let header: Vec<&str> = rows[0].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(header, ["SEQ", "GROUP", "ATTEMPTS", "WORKER", "PUBLISHED", "CLAIMED", "ACKED", "HEADERS", "EVENT"]);
    let cells: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(cells[0], first["seq"].to_string(), "{table}");
    assert_eq!(cells[1..4], ["history", "2", "worker-a"], "{table}");
    assert!(rows[1].matches(" ago ").count() == 3, "published, claimed, acked: {table}");
    assert!(rows[1].contains(r#" traceparent=00-ab-01 note="two words" "#), "{table}");
    assert!(rows[1].ends_with(&event("history", 0)), "{table}");
    assert!(rows[2].contains(" worker-b ") && rows[2].ends_with(&event("history", 1)), "{table}");
    assert!(!ok(&q.args(&["archive", "--group", "orders-2"])).contains("HEADERS"), "no column without headers");

    // Page by page: the cursor, in the text and JSON; --all from the start or a cursor.
    let page = json(&q.args(&["archive", "--group", "history", "--limit", "2"]));
    let cursor = page["next"].as_str().expect("more after 2 of 5").to_owned();
    let mut seen: Vec<String> = Vec::new();
    let mut page = page;
    loop {
        seen.extend(archived(&page).iter().map(|a| a["event"].as_str().unwrap().to_owned()));
        let Some(next) = page["next"].as_str().map(str::to_owned) else { break };
        page = json(&q.args(&["archive", "--group", "history", "--limit", "2", "--cursor", &next]));
    }
    assert_eq!(seen, sent_events, "every page, in order, each once");
    let text = ok(&q.args(&["archive", "--group", "history", "--limit", "2"]));
    assert!(text.contains(&format!("--cursor {cursor} ")), "the text names the next cursor:\n{text}");
    let every = json(&q.args(&["archive", "--limit", "2", "--all"]));
    assert_eq!((archived(&every).len(), &every["next"]), (6, &Value::Null));
    let rest = json(&q.args(&["archive", "--group", "history", "--limit", "2", "--cursor", &cursor, "--all"]));
    assert_eq!(archived(&rest).len(), 3);
    assert!(!ok(&q.args(&["archive", "--limit", "2", "--all"])).contains("--cursor"));

    // A group with nothing archived.
    let none = ok(&q.args(&["archive", "--group", "orders-1"]));
    assert!(none.starts_with("no archived messages of group \"orders-1\""), "{none}");
    assert_eq!(json(&q.args(&["archive", "--group", "orders-1"])), serde_json::json!({"archived": [], "next": null}));

    // Bad input, named: a page size out of range (a usage error), a cursor not of this
    // listing, an empty group id (the library's refusals); nothing on stdout.
    for limit in ["0", "10001", "x"] {
        let err = fails(&q.args(&["archive", "--limit", limit]), 2);
        assert!(err.contains("--limit") && err.contains("10000"), "{err}");
    }
    let groups_cursor = json(&q.args(&["groups", "--limit", "1"]))["next"].as_str().unwrap().to_owned();
    for bad in ["nonsense", groups_cursor.as_str()] {
        let ran = run(&q.args(&["archive", "--cursor", bad]));
        assert_eq!((ran.code, ran.stdout.as_str()), (1, ""), "{}", ran.stderr);
        assert!(ran.stderr.starts_with("harel-transport: archive: "), "{}", ran.stderr);
        assert!(ran.stderr.contains(&format!("cursor {bad:?}")), "{}", ran.stderr);
    }
    let err = fails(&q.args(&["dead", "list", "--cursor", &cursor]), 1);
    assert!(err.contains("is not a cursor of this listing"), "an archive cursor is not a dead letters' one: {err}");
    let err = fails(&q.args(&["archive", "--group", ""]), 1);
    assert!(err.starts_with("harel-transport: archive: ") && err.contains("group_id"), "{err}");
}

#[test]
fn purge_a_group_or_everything() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    assert!(fails(&q.args(&["purge"]), 2).contains("--group"));
    fails(&q.args(&["purge", "--group", "orders-1", "--all"]), 2);

    assert_eq!(ok(&q.args(&["purge", "--group", "orders-1"])), "purged 3 messages of group \"orders-1\"\n");
    assert_eq!(ok(&q.args(&["peek", "orders-1"])), "group \"orders-1\" holds no messages\n");
    let s = stats_of(&q);
    assert_eq!((s["messages"].as_u64(), s["groups"].as_u64()), (Some(5), Some(4)));
    assert_eq!(
        json(&q.args(&["purge", "--group", "orders-1"])),
        serde_json::json!({"purged": 0, "group_id": "orders-1"})
    );

    assert_eq!(json(&q.args(&["purge", "--all"])), serde_json::json!({"purged": 5, "group_id": null}));
    let s = stats_of(&q);
    assert_eq!(
        (s["messages"].as_u64(), s["groups"].as_u64(), s["dead"].as_u64()),
        (Some(0), Some(0), Some(1)),
        "dead letters kept"
    );
    assert_eq!(ok(&q.args(&["groups"])), "no groups\n");
    assert_eq!(s["by_priority"], serde_json::json!([]));
}

#[test]
fn release_frees_a_stuck_head() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    assert_eq!(ok(&q.args(&["release", "stuck"])), "released group \"stuck\": its head can be claimed now\n");
    assert_eq!(ok(&q.args(&["groups", "--state", "leased"])), "no leased groups\n");
    let t = q.open();
    let again = t.claim("worker-new", HELD, 0, &["k-stuck"]).unwrap().expect("the released head");
    assert_eq!((again.group_id.as_str(), again.event.as_str()), ("stuck", event("stuck", 0).as_str()));
    t.close();
    let g = &json(&q.args(&["groups", "--state", "leased"]))["groups"][0];
    assert_eq!((g["holder"].as_str(), g["head_attempts"].as_i64()), (Some("worker-new"), Some(2)));

    assert_eq!(json(&q.args(&["release", "parked"])), serde_json::json!({"group_id": "parked", "released": true}));
    assert_eq!(stats_of(&q)["parked"], 0);
    assert_eq!(json(&q.args(&["release", "orders-1"])), serde_json::json!({"group_id": "orders-1", "released": false}));
    assert!(ok(&q.args(&["release", "nobody"])).contains("nothing to release"));
}

/// The cells of each line of a table, split on runs of spaces.
fn cells(table: &str) -> Vec<Vec<&str>> {
    table.lines().map(|l| l.split_whitespace().collect()).collect()
}

fn group_ids(page: &Value) -> Vec<&str> {
    page["groups"].as_array().unwrap().iter().map(|g| g["group_id"].as_str().unwrap()).collect()
}

/// pause, resume and pauses, in text and JSON: a group, a routing key, the queue; each
/// pause new or there already, each resume of a pause or of none; the paused state in
/// `groups` and its filter, `stats`' paused count (total and per level); the usage errors.
#[test]
fn pause_and_resume_a_group_a_routing_key_and_the_queue() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    assert_eq!(ok(&q.args(&["pauses"])), "no pauses\n");
    assert_eq!(json(&q.args(&["pauses"])), serde_json::json!({"pauses": []}));

    assert_eq!(
        ok(&q.args(&["pause", "--group", "orders-1"])),
        "paused group \"orders-1\": no claim takes its messages until it is resumed\n"
    );
    assert_eq!(
        json(&q.args(&["pause", "--group", "orders-1"])),
        serde_json::json!({"kind": "group", "name": "orders-1", "paused": false})
    );
    let already = ok(&q.args(&["pause", "--group", "orders-1"]));
    assert_eq!(already, "group \"orders-1\" was already paused: nothing changed\n");
    assert_eq!(
        json(&q.args(&["pause", "--routing-key", "eu"])),
        serde_json::json!({"kind": "routing_key", "name": "eu", "paused": true})
    );
    let already = ok(&q.args(&["pause", "--routing-key", "eu"]));
    assert_eq!(already, "routing key \"eu\" was already paused: nothing changed\n");

    // Paused: listed as paused only, at its own priority; counted apart from the four states.
    let paused = ok(&q.args(&["groups", "--state", "paused"]));
    let rows = cells(&paused);
    assert_eq!(rows.len(), 3, "a header and two groups:\n{paused}");
    assert_eq!((&rows[1][..3], &rows[2][..3]), (&["orders-1", "paused", "3"][..], &["orders-2", "paused", "1"][..]));
    assert_eq!(rows[2][rows[2].len() - 3..], ["3", "eu", "0"], "{paused}");
    let page = json(&q.args(&["groups", "--state", "paused"]));
    assert_eq!(group_ids(&page), ["orders-1", "orders-2"]);
    assert!(page["groups"].as_array().unwrap().iter().all(|g| g["state"] == "paused"), "{page}");
    assert_eq!(group_ids(&json(&q.args(&["groups", "--state", "ready"]))), ["poison"]);
    assert_eq!(line(&ok(&q.args(&["groups"])), "orders-2").split_whitespace().nth(1), Some("paused"));
    let text = ok(&q.args(&["stats"]));
    assert!(line(&text, "groups").contains("5 (1 ready, 1 leased, 1 parked, 2 paused)"), "{text}");
    assert_eq!(cells(line(&text, "PRIORITY"))[0], ["PRIORITY", "GROUPS", "READY", "LEASED", "PARKED", "PAUSED"]);
    assert_eq!(cells(line(&text, "0"))[0], ["0", "4", "1", "1", "1", "1"], "{text}");
    assert_eq!(cells(line(&text, "3"))[0], ["3", "1", "0", "0", "0", "1"], "{text}");
    let s = stats_of(&q);
    assert_eq!((s["paused"].as_u64(), s["ready"].as_u64()), (Some(2), Some(1)), "{s}");
    let levels: Vec<(i64, u64)> = s["by_priority"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["priority"].as_i64().unwrap(), p["paused"].as_u64().unwrap()))
        .collect();
    assert_eq!(levels, [(0, 1), (3, 1)]);

    // The queue too: every group, the stuck one's holder still shown.
    assert_eq!(ok(&q.args(&["pause", "--queue"])), "paused the queue: no claim takes a message until it is resumed\n");
    assert_eq!(
        json(&q.args(&["pause", "--queue"])),
        serde_json::json!({"kind": "queue", "name": "", "paused": false})
    );
    assert_eq!(ok(&q.args(&["pause", "--queue"])), "the queue was already paused: nothing changed\n");
    let text = ok(&q.args(&["pauses"]));
    let rows = cells(&text);
    assert_eq!(rows[0], ["KIND", "NAME", "PAUSED"], "{text}");
    let listed: Vec<(&str, &str, &str)> = rows[1..].iter().map(|r| (r[0], r[1], r[r.len() - 1])).collect();
    assert_eq!(listed, [("queue", "-", "ago"), ("group", "orders-1", "ago"), ("routing_key", "eu", "ago")], "{text}");
    let doc = json(&q.args(&["pauses"]));
    let now = harel_transport::system_clock();
    let listed: Vec<(&str, &str)> = doc["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let at = p["paused_at"].as_f64().unwrap();
            assert!((now - 60.0..=now).contains(&at), "{p}");
            (p["kind"].as_str().unwrap(), p["name"].as_str().unwrap())
        })
        .collect();
    assert_eq!(listed, [("queue", ""), ("group", "orders-1"), ("routing_key", "eu")]);
    assert_eq!(stats_of(&q)["paused"], 5);
    let stuck = &json(&q.args(&["groups", "--state", "paused"]))["groups"][4];
    assert_eq!((stuck["group_id"].as_str(), stuck["holder"].as_str()), (Some("stuck"), Some("worker-stuck")));
    let t = q.open();
    assert!(t.claim("worker-new", HELD, 0, &[]).unwrap().is_none(), "no claim takes a paused group");
    t.close();

    // Each resume ends its own pause only.
    assert_eq!(
        ok(&q.args(&["resume", "--queue"])),
        "resumed the queue: its groups are served again, except those another pause names\n"
    );
    assert_eq!(
        json(&q.args(&["resume", "--queue"])),
        serde_json::json!({"kind": "queue", "name": "", "resumed": false})
    );
    assert_eq!(
        ok(&q.args(&["resume", "--queue"])),
        "the queue: no such pause, nothing changed (`pauses` lists those in force)\n"
    );
    assert_eq!(group_ids(&json(&q.args(&["groups", "--state", "paused"]))), ["orders-1", "orders-2"]);
    assert_eq!(
        ok(&q.args(&["resume", "--group", "orders-2"])),
        "group \"orders-2\": no such pause, nothing changed (`pauses` lists those in force)\n"
    );
    assert_eq!(
        ok(&q.args(&["resume", "--group", "orders-1"])),
        "resumed group \"orders-1\": its messages are served again, unless another pause names it\n"
    );
    assert_eq!(
        json(&q.args(&["resume", "--routing-key", "eu"])),
        serde_json::json!({"kind": "routing_key", "name": "eu", "resumed": true})
    );
    assert_eq!(
        ok(&q.args(&["resume", "--routing-key", "eu"])),
        "routing key \"eu\": no such pause, nothing changed (`pauses` lists those in force)\n"
    );
    assert_eq!(ok(&q.args(&["groups", "--state", "paused"])), "no paused groups\n");
    assert_eq!(ok(&q.args(&["pauses"])), "no pauses\n");
    let text = ok(&q.args(&["stats"]));
    assert!(line(&text, "groups").contains("5 (3 ready, 1 leased, 1 parked)") && !text.contains("PAUSED"), "{text}");

    // A group with no messages yet can be paused, and is paused when it gets some.
    ok(&q.args(&["pause", "--group", "later"]));
    let t = q.open();
    t.publish("later", &event("later", 0), 0, None).unwrap();
    t.close();
    assert_eq!(group_ids(&json(&q.args(&["groups", "--state", "paused"]))), ["later"]);

    // Exactly one target; an empty one is the library's argument error.
    for verb in ["pause", "resume"] {
        let err = fails(&q.args(&[verb]), 2);
        assert!(err.contains("--group") && err.contains("--routing-key") && err.contains("--queue"), "{err}");
        let pairs: [&[&str]; 3] =
            [&["--group", "a", "--queue"], &["--group", "a", "--routing-key", "b"], &["--routing-key", "b", "--queue"]];
        for two in pairs {
            let err = fails(&q.args(&[&[verb][..], two].concat()), 2);
            assert!(err.contains("cannot be used with"), "{verb} {two:?}: {err}");
        }
        fails(&q.args(&[verb, "--group"]), 2);
        fails(&q.args(&[verb, "--queue", "extra"]), 2);
        fails(&q.args(&[verb, "orders-1"]), 2);
        assert_eq!(fails(&q.args(&[verb, "--group", ""]), 1), format!("harel-transport: {verb}: group_id is empty\n"));
        assert_eq!(
            fails(&q.args(&[verb, "--routing-key", ""]), 1),
            format!("harel-transport: {verb}: routing_key is empty\n")
        );
    }
    fails(&q.args(&["pauses", "--group", "a"]), 2);
    assert_eq!(json(&q.args(&["pauses"]))["pauses"].as_array().unwrap().len(), 1, "the refused ones changed nothing");
}

/// The limits of `limit list --json`, by routing key.
fn limits_of(q: &Queue) -> Vec<Value> {
    json(&q.args(&["limit", "list"]))["limits"].as_array().expect("a limits list").clone()
}

/// limit set, list and remove, in text and JSON, on a queue whose workers meet the limits: a
/// concurrency of 1 lets one claim through and holds the key's other groups, an ack lets the
/// next through; a rate's tokens are spent by claims; a set replaces the key's limits; a
/// remove serves the held groups; every bad input refused naming it, the limits unchanged.
#[test]
fn limit_set_list_and_remove_on_a_used_key() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    assert_eq!(ok(&q.args(&["limit", "list"])), "no limits\n");
    assert_eq!(json(&q.args(&["limit", "list"])), serde_json::json!({"limits": []}));

    assert_eq!(
        ok(&q.args(&["limit", "set", "--routing-key", "k-lim", "--concurrency", "1"])),
        "limited routing key \"k-lim\": at most 1 of its messages leased at once, no rate limit; in force at every \
         process's next claim\n"
    );
    assert_eq!(
        json(&q.args(&["limit", "set", "--routing-key", "k-rate", "--rate", "0.1", "--burst", "2"])),
        serde_json::json!({"routing_key": "k-rate", "concurrency": null, "rate": 0.1, "burst": 2.0})
    );
    let t = q.open();
    for n in 1..=3 {
        t.publish(&format!("lim-{n}"), &event("lim", n), 0, Some("k-lim")).unwrap();
        t.publish(&format!("rate-{n}"), &event("rate", n), 0, Some("k-rate")).unwrap();
    }
    // One lease of k-lim at once: the first claim takes one group, the next hold the others.
    let first = t.claim("worker-lim", HELD, 0, &["k-lim"]).unwrap().expect("one of k-lim's groups");
    assert!(t.claim("worker-lim", HELD, 0, &["k-lim"]).unwrap().is_none(), "k-lim has no room");
    // Two tokens of k-rate: two claims go through, the third finds none (one more in 10 s).
    for _ in 0..2 {
        t.claim("worker-rate", HELD, 0, &["k-rate"]).unwrap().expect("a token of k-rate");
    }
    assert!(t.claim("worker-rate", HELD, 0, &["k-rate"]).unwrap().is_none(), "k-rate has no token");

    let text = ok(&q.args(&["limit", "list"]));
    let rows = cells(&text);
    assert_eq!(rows[0], ["ROUTING", "KEY", "CONCURRENCY", "IN", "USE", "RATE", "BURST", "TOKENS", "HELD"], "{text}");
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(rows[1], ["k-lim", "1", "1", "-", "-", "-", "2"], "{text}");
    assert_eq!(rows[2][..5], ["k-rate", "-", "-", "0.1/s", "2"], "{text}");
    let tokens: f64 = rows[2][5].parse().unwrap_or_else(|_| panic!("a number of tokens: {text}"));
    assert!((0.0..1.0).contains(&tokens), "{text}");
    assert_eq!(rows[2][6], "1", "{text}");
    let listed = limits_of(&q);
    assert_eq!(
        listed[0],
        serde_json::json!({"routing_key": "k-lim", "concurrency": 1, "in_use": 1, "rate": null, "burst": null,
                           "tokens": null, "held": 2})
    );
    let rate = &listed[1];
    assert_eq!((rate["routing_key"].as_str(), rate["concurrency"].is_null()), (Some("k-rate"), true), "{rate}");
    assert_eq!((rate["rate"].as_f64(), rate["burst"].as_f64(), rate["held"].as_u64()), (Some(0.1), Some(2.0), Some(1)));
    assert!((0.0..1.0).contains(&rate["tokens"].as_f64().unwrap()), "{rate}");
    assert_eq!(rate["in_use"], 0, "no concurrency limit: no lease counted");
    // The fields, in this order.
    let text = ok(&q.args(&["limit", "list", "--json"]));
    let keys = ["routing_key", "concurrency", "in_use", "rate", "burst", "tokens", "held"];
    let at: Vec<usize> = keys.iter().map(|k| text.find(&format!("\"{k}\"")).expect(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");

    // An ack makes room: the next claim gives a held group back.
    t.ack(&first).unwrap();
    let second = t.claim("worker-lim", HELD, 0, &["k-lim"]).unwrap().expect("room again");
    assert_ne!(second.group_id, first.group_id);
    let lim = &limits_of(&q)[0];
    assert_eq!((lim["in_use"].as_u64(), lim["held"].as_u64()), (Some(1), Some(1)), "{lim}");

    // A set replaces the key's limits: a kind not given is off.
    let both = ["limit", "set", "--routing-key", "k-lim", "--concurrency", "3", "--rate", "100", "--burst", "10"];
    assert_eq!(
        ok(&q.args(&both)),
        "limited routing key \"k-lim\": at most 3 of its messages leased at once, at most 100 leases a second \
         (burst 10); in force at every process's next claim\n"
    );
    let lim = &limits_of(&q)[0];
    let got = (lim["concurrency"].as_u64(), lim["rate"].as_f64(), lim["burst"].as_f64());
    assert_eq!(got, (Some(3), Some(100.0), Some(10.0)), "{lim}");
    let lim = json(&q.args(&["limit", "set", "--routing-key", "k-lim", "--concurrency", "1"]));
    assert_eq!(lim, serde_json::json!({"routing_key": "k-lim", "concurrency": 1, "rate": null, "burst": null}));
    assert_eq!((limits_of(&q)[0]["rate"].is_null(), limits_of(&q)[0]["tokens"].is_null()), (true, true));

    // Bad input: a usage error (2) naming the option, or the library's refusal (1) naming the
    // value; nothing on stdout, the limits unchanged (but for the tokens, which refill).
    let without_tokens = |mut limits: Vec<Value>| {
        limits.iter_mut().for_each(|l| l["tokens"] = l["tokens"].is_number().into());
        limits
    };
    let before = without_tokens(limits_of(&q));
    let usage: [(&[&str], &str); 7] = [
        (&["limit", "set", "--routing-key", "k"], "--concurrency"),
        (&["limit", "set", "--concurrency", "1"], "--routing-key"),
        (&["limit", "set", "--routing-key", "k", "--rate", "1"], "--burst"),
        (&["limit", "set", "--routing-key", "k", "--burst", "1", "--concurrency", "1"], "--rate"),
        (&["limit", "set", "--routing-key", "k", "--concurrency", "x"], "--concurrency"),
        (&["limit", "set", "--routing-key", "k", "--concurrency", "-1"], "--concurrency"),
        (&["limit", "remove"], "--routing-key"),
    ];
    for (args, named) in usage {
        let err = fails(&q.args(args), 2);
        assert!(err.contains(named), "{args:?} names {named}: {err}");
    }
    fails(&q.args(&["limit"]), 2);
    fails(&q.args(&["limit", "list", "--routing-key", "k"]), 2);
    let set = |extra: &[&'static str]| -> Vec<&'static str> {
        [&["limit", "set", "--routing-key", "k"][..], extra].concat()
    };
    let refused: [(Vec<&str>, &str); 12] = [
        (set(&["--concurrency", "0"]), "limit set: concurrency is 0; it must be 1..1000000"),
        (set(&["--concurrency", "1000001"]), "limit set: concurrency is 1000001; it must be 1..1000000"),
        (set(&["--rate", "0", "--burst", "1"]), "limit set: rate is 0; it must be a finite number > 0"),
        (set(&["--rate", "-1", "--burst", "1"]), "limit set: rate is -1; it must be a finite number > 0"),
        (set(&["--rate", "NaN", "--burst", "1"]), "limit set: rate is NaN; it must be a finite number > 0"),
        (set(&["--rate", "inf", "--burst", "1"]), "limit set: rate is inf; it must be a finite number > 0"),
        (set(&["--rate", "2000000", "--burst", "1"]), "limit set: rate is 2000000; it must be a finite number > 0"),
        (set(&["--rate", "1", "--burst", "0.5"]), "limit set: burst is 0.5; it must be a finite number >= 1, at most"),
        (set(&["--rate", "1", "--burst", "NaN"]), "limit set: burst is NaN; it must be a finite number >= 1"),
        (vec!["limit", "set", "--routing-key", "", "--concurrency", "1"], "limit set: routing_key is empty"),
        (vec!["limit", "remove", "--routing-key", "nobody"], "limit remove: routing key \"nobody\" has no limit"),
        (vec!["limit", "remove", "--routing-key", ""], "limit remove: routing_key is empty"),
    ];
    for (args, says) in refused {
        let ran = run(&q.args(&args));
        assert_eq!((ran.code, ran.stdout.as_str()), (1, ""), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.starts_with(&format!("harel-transport: {says}")), "{args:?}: {}", ran.stderr);
        assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
    }
    assert_eq!(without_tokens(limits_of(&q)), before, "the refused ones changed nothing");

    // Removed: the held group is served at once.
    assert_eq!(
        ok(&q.args(&["limit", "remove", "--routing-key", "k-lim"])),
        "removed the limits of routing key \"k-lim\": its held groups are served again\n"
    );
    let third = t.claim("worker-lim", HELD, 0, &["k-lim"]).unwrap().expect("the held group, served");
    assert!(third.group_id != first.group_id && third.group_id != second.group_id);
    assert_eq!(
        json(&q.args(&["limit", "remove", "--routing-key", "k-rate"])),
        serde_json::json!({"routing_key": "k-rate", "removed": true})
    );
    t.claim("worker-rate", HELD, 0, &["k-rate"]).unwrap().expect("k-rate's held group, served");
    t.close();
    assert_eq!(ok(&q.args(&["limit", "list"])), "no limits\n");
    // A key's text is escaped in the table, as every cell.
    ok(&q.args(&["limit", "set", "--routing-key", "bad\nkey", "--concurrency", "2"]));
    assert!(ok(&q.args(&["limit", "list"])).contains("bad\\nkey "), "escaped");
    assert_eq!(limits_of(&q)[0]["routing_key"], "bad\nkey");
}

#[test]
fn every_command_has_help() {
    let _limit = harel_transport_testkit::time_limit();
    let top = ok(&["--help"]);
    for needle in [
        "stats",
        "groups",
        "peek",
        "dead",
        "purge",
        "release",
        "pause",
        "resume",
        "pauses",
        "archive",
        "limit",
        "HAREL_AUTH_TOKEN",
        "--auth-token-file",
        "--json",
        "--prefix",
        "HAREL_DATABASE",
    ] {
        assert!(top.contains(needle), "--help names {needle}:\n{top}");
    }
    let commands: &[&[&str]] = &[
        &["stats"],
        &["groups"],
        &["peek"],
        &["dead"],
        &["dead", "list"],
        &["dead", "redrive"],
        &["dead", "purge"],
        &["archive"],
        &["purge"],
        &["release"],
        &["pause"],
        &["resume"],
        &["pauses"],
        &["limit"],
        &["limit", "set"],
        &["limit", "list"],
        &["limit", "remove"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let help = ok(&args);
        let usage = format!("Usage: harel-transport {}", command.join(" "));
        assert!(help.contains(&usage), "{args:?}:\n{help}");
        assert!(help.contains("--database"), "the global options are in {args:?}:\n{help}");
        let via_help = ok(&[&["help"], *command].concat());
        assert!(via_help.contains(&usage));
    }
    assert!(ok(&["stats", "--help"]).contains("--watch"));
    assert!(ok(&["groups", "--help"]).contains("leased") && ok(&["groups", "--help"]).contains("paused"));
    for verb in ["pause", "resume"] {
        let help = ok(&[verb, "--help"]);
        assert!(help.contains("--group") && help.contains("--routing-key") && help.contains("--queue"), "{help}");
    }
    assert!(ok(&["dead", "redrive", "--help"]).contains("--seq"));
    let limit = ok(&["limit", "set", "--help"]);
    for needle in ["--routing-key", "--concurrency", "--rate", "--burst", "1000000", "replace"] {
        assert!(limit.contains(needle), "limit set --help names {needle}:\n{limit}");
    }
    for (command, needle) in [("list", "HELD"), ("remove", "--routing-key")] {
        let help = ok(&["limit", command, "--help"]);
        assert!(help.contains(needle), "limit {command} --help names {needle}:\n{help}");
    }
    let limit = ok(&["limit", "--help"]);
    for needle in ["set", "list", "remove", "concurrency", "rate", "shard"] {
        assert!(limit.contains(needle), "limit --help names {needle}:\n{limit}");
    }
    let archive = ok(&["archive", "--help"]);
    for needle in ["--group", "--limit", "--cursor", "--all", "archive option", "off by default"] {
        assert!(archive.contains(needle), "archive --help names {needle}:\n{archive}");
    }
    assert!(ok(&["--version"]).starts_with(&format!("harel-transport {}", harel_transport::VERSION)));
}

#[test]
fn errors_name_the_problem() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();

    // No queue: a usage error.
    assert!(fails(&["stats"], 2).contains("HAREL_DATABASE"));
    let ran = run_env(&["stats", "--json"], &[("HAREL_DATABASE", &q.path)]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);

    // A missing file is not created.
    let missing = at("missing.db");
    let err = fails(&["-d", &missing, "stats"], 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("harel-transport: open {missing:?}: no such file")), "{err}");
    assert!(!Path::new(&missing).exists(), "the CLI made {missing}");
    assert!(fails(&["-d", &at("no/such/dir.db"), "stats"], 1).contains("no such file"));

    // A database without the queue's tables is refused, and left without them.
    let empty = at("empty.db");
    std::fs::write(&empty, b"").unwrap();
    for command in [&["stats"][..], &["purge", "--all"], &["release", "g"], &["dead", "purge", "--all"]] {
        let err = fails(&[&["-d", empty.as_str()][..], command].concat(), 1);
        assert!(err.starts_with(&format!("harel-transport: open {empty:?}: ")), "{err}");
        assert!(err.contains("harel_transport_messages") && err.contains("--prefix"), "{err}");
    }
    let mut strict = Options::new();
    strict.create_schema(false);
    assert!(Transport::open(&empty, &strict).is_err(), "the CLI created the tables in {empty}");
    // The same with a prefix the queue does not have; a bad prefix is named.
    assert!(fails(&q.args(&["--prefix", "other", "stats"]), 1).contains("other_transport_messages"));
    assert!(fails(&q.args(&["--prefix", "bad prefix", "stats"]), 1).starts_with("harel-transport: --prefix: "));

    // Not a database at all.
    let text = at("notes.txt");
    std::fs::write(&text, "not a database, just some notes\n".repeat(200)).unwrap();
    let err = fails(&["-d", &text, "stats"], 1);
    assert!(err.starts_with(&format!("harel-transport: open {text:?}: ")), "{err}");

    // Cursors from elsewhere, and page sizes out of range.
    let err = fails(&q.args(&["groups", "--cursor", "nonsense"]), 1);
    assert!(err.starts_with("harel-transport: groups: ") && err.contains("cursor"), "{err}");
    let peek_cursor = json(&q.args(&["peek", "orders-1", "--limit", "1"]))["next"].as_str().unwrap().to_owned();
    assert!(
        fails(&q.args(&["groups", "--cursor", &peek_cursor]), 1).contains("cursor"),
        "a peek cursor is not a groups cursor"
    );
    assert!(fails(&q.args(&["dead", "list", "--cursor", "x"]), 1).contains("cursor"));
    assert!(fails(&q.args(&["groups", "--limit", "0"]), 2).contains("10000"));
    assert!(fails(&q.args(&["groups", "--limit", "10001"]), 2).contains("10000"));
    fails(&q.args(&["groups", "--state", "stuck"]), 2);
    fails(&q.args(&["peek"]), 2);
    fails(&q.args(&["dead", "redrive", "--seq", "x"]), 2);
    fails(&q.args(&["frobnicate"]), 2);
    // Nothing on stdout when a command fails.
    let ran = run(&q.args(&["groups", "--cursor", "nonsense", "--json"]));
    assert_eq!((ran.code, ran.stdout.as_str()), (1, ""));
}

#[test]
fn the_token_is_never_an_argument() {
    let _limit = harel_transport_testkit::time_limit();
    let q = live_queue();
    for flag in [&["--auth-token", "s3cret"][..], &["--auth-token=s3cret"], &["--token", "s3cret"]] {
        let args = [&["-d", "http://127.0.0.1:1"][..], flag, &["stats"]].concat();
        let err = fails(&args, 2);
        assert!(err.contains("HAREL_AUTH_TOKEN") && err.contains("--auth-token-file"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
    let after = fails(&q.args(&["stats", "--auth-token", "s3cret"]), 2);
    assert!(after.contains("HAREL_AUTH_TOKEN"), "{after}");

    // HAREL_AUTH_TOKEN is read and the server is tried: a connect error (1), not a usage error.
    let ran = run_env(&["-d", "http://127.0.0.1:1", "stats"], &[("HAREL_AUTH_TOKEN", "s3cret")]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.starts_with("harel-transport: open \"http://127.0.0.1:1\": "), "{}", ran.stderr);
    assert!(!ran.stderr.contains("s3cret"), "the token leaked: {}", ran.stderr);

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("token").to_str().unwrap().to_owned();
    let err = fails(&["-d", "http://127.0.0.1:1", "--auth-token-file", &missing, "stats"], 1);
    assert!(err.starts_with(&format!("harel-transport: --auth-token-file {missing:?}: ")), "{err}");
    std::fs::write(&missing, "\n").unwrap();
    assert!(fails(&["-d", "http://127.0.0.1:1", "--auth-token-file", &missing, "stats"], 1).contains("holds no token"));
}

/// Against a libSQL server that checks tokens: the CLI reaches it with HAREL_AUTH_TOKEN or
/// --auth-token-file (which wins), and is refused without a good one.
#[test]
fn a_server_by_url_with_a_token() {
    let _limit = harel_transport_testkit::time_limit();
    let Some(binary) = sqld::binary_or_skip("a_server_by_url_with_a_token") else { return };
    let server = sqld::Sqld::start(&binary, true);
    let url = server.url();
    let mut options = Options::new();
    options.auth_token(Some(sqld::GOOD_TOKEN));
    let t = Transport::open(&url, &options).expect("open the server's queue");
    t.publish("a", &event("a", 0), 0, None).unwrap();
    t.publish("a", &event("a", 1), 0, None).unwrap();
    t.publish("b", &event("b", 0), 3, Some("k-b")).unwrap();
    let _held = t.claim("worker-remote", HELD, 0, &["k-b"]).unwrap().expect("b's head");
    t.close();

    let ran = run_env(&["-d", &url, "stats", "--json"], &[("HAREL_AUTH_TOKEN", sqld::GOOD_TOKEN)]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let s: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!((s["messages"].as_u64(), s["ready"].as_u64(), s["leased"].as_u64()), (Some(3), Some(1), Some(1)), "{s}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{}\n", sqld::GOOD_TOKEN)).unwrap();
    let file = file.to_str().unwrap();
    let ran = run_env(
        &["-d", &url, "--auth-token-file", file, "groups", "--state", "leased"],
        &[("HAREL_AUTH_TOKEN", sqld::WRONG_TOKEN)],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(line(&ran.stdout, "b").contains("worker-remote"), "{}", ran.stdout);

    for env in [&[("HAREL_AUTH_TOKEN", sqld::WRONG_TOKEN)][..], &[]] {
        let ran = run_env(&["-d", &url, "stats"], env);
        assert_eq!(ran.code, 1, "refused: {}{}", ran.stdout, ran.stderr);
        assert!(ran.stderr.starts_with(&format!("harel-transport: open {url:?}: ")), "{}", ran.stderr);
        assert!(!ran.stderr.contains(sqld::WRONG_TOKEN));
    }
    let ran = run_env(&["-d", &url, "release", "b"], &[("HAREL_AUTH_TOKEN", sqld::GOOD_TOKEN)]);
    assert_eq!(
        (ran.code, ran.stdout.as_str()),
        (0, "released group \"b\": its head can be claimed now\n"),
        "{}",
        ran.stderr
    );
}

fn harel_queue(test: &str) -> Option<Queue> {
    let (dir, path) = harel_queue::make(test)?;
    Some(Queue { _dir: dir, path })
}

const LACKS: [&str; 19] = [
    "the column harel_transport_groups.routing_key",
    "the column harel_transport_messages.attempts",
    "the column harel_transport_messages.enqueued_at",
    "the column harel_transport_messages.headers",
    "the column harel_transport_messages.unique_key",
    "the column harel_transport_messages.expires_at",
    "the column harel_transport_messages.claimed_at",
    "the column harel_transport_messages.retry",
    "the column harel_transport_messages.retry_delay",
    "the column harel_transport_messages.limited_key",
    "the table harel_transport_dead",
    "the table harel_transport_keys",
    "the table harel_transport_pauses",
    "the table harel_transport_archive",
    "the table harel_transport_limits",
    "the trigger harel_transport_groups_paused_at_birth",
    "the trigger harel_transport_groups_paused_turn",
    "the trigger harel_transport_groups_held",
    "the trigger harel_transport_groups_held_gone",
];

/// A harel 0.9 file is read as it is: every look its columns allow, with what it lacks
/// named; every repair refused naming what it needs; the file unchanged.
#[test]
fn a_harel_09_queue_is_read_as_it_is() {
    let _limit = harel_transport_testkit::time_limit();
    let Some(q) = harel_queue("cli::a_harel_09_queue_is_read_as_it_is") else { return };
    let before = std::fs::read(&q.path).unwrap();

    let text = ok(&q.args(&["stats"]));
    assert!(line(&text, "messages").ends_with(" 30"), "{text}");
    assert!(line(&text, "groups").contains("10 (7 ready, 2 leased, 1 parked)"), "{text}");
    assert!(line(&text, "dead").contains("- (no dead-letter table)"), "{text}");
    assert!(line(&text, "oldest").contains("seq 4, age unknown") && text.contains("no enqueued_at column"), "{text}");
    assert!(line(&text, "next").contains("in 9m") || line(&text, "next").contains("in 10m"), "{text}");
    assert!(LACKS.iter().all(|part| text.contains(part)), "the parts it lacks are named:\n{text}");
    let s = stats_of(&q);
    assert_eq!((s["ready"].as_u64(), s["leased"].as_u64(), s["parked"].as_u64()), (Some(7), Some(2), Some(1)), "{s}");
    assert_eq!(
        (s["dead"].is_null(), s["oldest_ready_age"].is_null(), s["oldest_ready_seq"].as_i64()),
        (true, true, Some(4))
    );
    assert!(s["expired"].is_null(), "no dead-letter table: unknown, as dead: {s}");
    assert_eq!(s["absent"], serde_json::json!(LACKS));

    // groups, by state, agree with stats; holders as harel's workers wrote them.
    let text = ok(&q.args(&["groups"]));
    for (group, state, holder) in
        [("g0", "leased", "w1"), ("g1", "leased", "w2"), ("g2", "parked", "-"), ("g3", "ready", "-")]
    {
        let cells: Vec<&str> = line(&text, group).split_whitespace().collect();
        assert_eq!((cells[1], cells[4]), (state, holder), "{text}");
        assert_eq!(cells.last(), Some(&"-"), "no attempts column: {text}");
    }
    let listed = |state: &str| -> Vec<String> {
        let page = json(&q.args(&["groups", "--state", state]));
        page["groups"].as_array().unwrap().iter().map(|g| g["group_id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!((listed("leased"), listed("parked")), (vec!["g0".to_owned(), "g1".to_owned()], vec!["g2".to_owned()]));
    assert_eq!(listed("ready").len(), 7);
    let g0 = &json(&q.args(&["groups", "--state", "leased"]))["groups"][0];
    assert_eq!(
        (g0["holder"].as_str(), g0["head_attempts"].is_null(), g0["routing_key"].is_null()),
        (Some("w1"), true, true)
    );
    let peeked = json(&q.args(&["peek", "g3"]));
    let messages = peeked["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert!(messages[0]["event"].as_str().unwrap().contains(r#""id":"e3""#), "{peeked}");
    assert!(messages.iter().all(|m| m["attempts"].is_null() && m["published_at"].is_null()), "{peeked}");
    assert!(messages.iter().all(|m| m["headers"] == serde_json::json!([])), "no headers column: none: {peeked}");
    assert!(messages.iter().all(|m| m["retry_delay"].is_null()), "no retry_delay column: none: {peeked}");
    assert!(ok(&q.args(&["peek", "g3"])).contains("this queue lacks"));
    let dead = ok(&q.args(&["dead", "list"]));
    assert!(dead.starts_with("no dead letters: this queue has no dead-letter table"), "{dead}");
    assert_eq!(json(&q.args(&["dead", "list"]))["dead_letters"], serde_json::json!([]));
    let pauses = ok(&q.args(&["pauses"]));
    assert!(pauses.starts_with("no pauses\n") && pauses.contains("the table harel_transport_pauses"), "{pauses}");
    assert_eq!(json(&q.args(&["pauses"]))["pauses"], serde_json::json!([]));
    assert_eq!(json(&q.args(&["groups", "--state", "paused"]))["groups"], serde_json::json!([]));
    let archive = ok(&q.args(&["archive"]));
    assert!(archive.starts_with("no archived messages: this queue has no archive table\n"), "{archive}");
    assert!(archive.contains("the table harel_transport_archive"), "{archive}");
    assert_eq!(json(&q.args(&["archive", "--group", "g3"])), serde_json::json!({"archived": [], "next": null}));
    let limits = ok(&q.args(&["limit", "list"]));
    assert!(limits.starts_with("no limits\n") && limits.contains("the table harel_transport_limits"), "{limits}");
    assert_eq!(json(&q.args(&["limit", "list"])), serde_json::json!({"limits": []}));

    // Every repair says what it needs, and changes nothing.
    for (repair, named) in [
        (&["purge", "--all"][..], "purge: refused"),
        (&["purge", "--group", "g3"], "purge_group: refused"),
        (&["release", "g0"], "release: refused"),
        (&["dead", "redrive", "--all"], "redrive: refused"),
        (&["dead", "purge", "--seq", "1"], "purge_dead: refused"),
        (&["pause", "--group", "g3"], "pause: refused"),
        (&["resume", "--queue"], "resume: refused"),
        (&["limit", "set", "--routing-key", "k", "--concurrency", "1"], "set_limit: refused"),
        (&["limit", "remove", "--routing-key", "k"], "remove_limit: refused"),
    ] {
        let err = fails(&q.args(repair), 1);
        assert!(err.starts_with(&format!("harel-transport: {named}: this queue lacks")), "{repair:?}: {err}");
        assert!(LACKS.iter().all(|part| err.contains(part)) && err.contains("create_schema on"), "{repair:?}: {err}");
    }
    assert!(std::fs::read(&q.path).unwrap() == before, "the file is as harel left it");
    assert_eq!(stats_of(&q)["leased"].as_u64(), Some(2));
}

/// Once a worker of ours upgraded it, the same queue's harel leases and park still count:
/// stats and the listings read the rows, not only our stamps.
#[test]
fn harel_leases_count_on_an_upgraded_queue() {
    let _limit = harel_transport_testkit::time_limit();
    let Some(q) = harel_queue("cli::harel_leases_count_on_an_upgraded_queue") else { return };
    q.open().close();
    let text = ok(&q.args(&["stats"]));
    assert!(line(&text, "groups").contains("10 (7 ready, 2 leased, 1 parked)"), "{text}");
    assert!(line(&text, "dead").ends_with(" 0"), "{text}");
    assert!(line(&text, "oldest").contains("seq 4, age unknown: its writer stamped no publish time"), "{text}");
    assert!(!text.contains("this queue lacks"), "{text}");
    let s = stats_of(&q);
    assert_eq!(s["absent"], serde_json::json!([]));
    let leased = json(&q.args(&["groups", "--state", "leased"]));
    assert_eq!(leased["groups"].as_array().unwrap().len(), 2, "{leased}");
    assert_eq!(leased["groups"][1]["head_attempts"].as_i64(), Some(0), "harel's claims are not counted");
    // Our own release frees harel's lease; the counts follow.
    assert!(ok(&q.args(&["release", "g0"])).starts_with("released group \"g0\""));
    assert!(line(&ok(&q.args(&["stats"])), "groups").contains("10 (8 ready, 1 leased, 1 parked)"));
}

/// A queue sharded over three files: given as three -d in shard order, the looks add the
/// shards up and show each item's shard; a seq of a dead letter is redriven on its shard;
/// a list in another order is refused, naming the database.
#[test]
fn a_sharded_queue_is_given_as_its_databases_in_order() {
    let _limit = harel_transport_testkit::time_limit();
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = (0..3).map(|i| dir.path().join(format!("s{i}.db")).to_str().unwrap().to_owned()).collect();
    let list: Vec<&str> = paths.iter().map(String::as_str).collect();
    let t = Transport::open_shards(&list, &Options::new()).unwrap();
    for i in 0..9 {
        t.publish(&format!("g{i}"), &event("g", i), 0, None).unwrap();
    }
    let lease = t.claim("w", HELD, 0, &[]).unwrap().unwrap();
    t.dead_letter(&lease, "bad").unwrap();
    let dead_shard = harel_transport::shard_of(&lease.group_id, 3);
    drop(t);
    let d: Vec<&str> = list.iter().flat_map(|p| ["-d", *p]).collect();
    let with = |args: &[&'static str]| -> Vec<&str> { d.iter().copied().chain(args.iter().copied()).collect() };

    let stats = json(&with(&["stats"]));
    assert_eq!(stats["messages"], 8);
    let per_shard: Vec<u64> =
        stats["shards"].as_array().unwrap().iter().map(|s| s["messages"].as_u64().unwrap()).collect();
    assert_eq!(per_shard.iter().sum::<u64>(), 8);
    assert!(ok(&with(&["stats"])).contains("SHARD  MESSAGES"));
    let groups = json(&with(&["groups", "--all"]));
    for g in groups["groups"].as_array().unwrap() {
        let id = g["group_id"].as_str().unwrap();
        assert_eq!(g["shard"].as_u64().unwrap() as usize, harel_transport::shard_of(id, 3), "{g}");
    }
    let dead = json(&with(&["dead", "list"]));
    let letter = &dead["dead_letters"][0];
    assert_eq!(letter["shard"].as_u64().unwrap() as usize, dead_shard);
    let seq: &'static str = letter["seq"].to_string().leak();
    // The tables: a dead letter's shard in its own column; a group's messages (one shard) without one.
    let table = ok(&with(&["dead", "list"]));
    let cells: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!((&cells[0][..3], cells[1][0], cells[1][1]), (&["SHARD", "SEQ", "GROUP"][..], &*dead_shard.to_string(), seq), "{table}");
    let alive: &'static str = (0..9).map(|i| format!("g{i}")).find(|g| *g != lease.group_id).unwrap().leak();
    let peeked = ok(&with(&["peek", alive]));
    assert!(peeked.starts_with("SEQ  ATTEMPTS") && peeked.lines().nth(1).unwrap().ends_with(&event("g", alive[1..].parse().unwrap())), "{peeked}");
    let refused = fails(&with(&["dead", "redrive", "--seq", seq]), 1);
    assert!(refused.contains("a seq names a dead letter of one shard"), "{refused}");
    let shard: &'static str = dead_shard.to_string().leak();
    ok(&with(&["dead", "redrive", "--seq", seq, "--shard", shard]));
    assert_eq!(json(&with(&["stats"]))["messages"], 9);
    // A pause acts on every shard; the list merges them.
    assert_eq!(json(&with(&["pause", "--queue"]))["paused"], true);
    assert_eq!(json(&with(&["pauses"]))["pauses"].as_array().unwrap().len(), 1);
    let stats = json(&with(&["stats"]));
    assert_eq!((stats["paused"].as_u64(), stats["groups"].as_u64()), (Some(9), Some(9)), "{stats}");
    assert!(stats["shards"].as_array().unwrap().iter().all(|s| s["paused"] == s["groups"]), "{stats}");
    assert!(line(&ok(&with(&["stats"])), "SHARD").contains(" PAUSED  DEAD"));
    assert_eq!(json(&with(&["resume", "--queue"]))["resumed"], true);
    assert_eq!(json(&with(&["stats"]))["paused"], 0);
    // A limit is set on every shard (each holds it for its own groups); listed once, its
    // use summed; removed from every shard.
    let set = json(&with(&["limit", "set", "--routing-key", "k", "--concurrency", "1"]));
    assert_eq!(set, serde_json::json!({"routing_key": "k", "concurrency": 1, "rate": null, "burst": null}));
    let t = Transport::open_shards(&list, &Options::new()).unwrap();
    for i in 0..6 {
        t.publish(&format!("k{i}"), &event("k", i), 0, Some("k")).unwrap();
    }
    let mut leased = 0;
    while let Some(lease) = t.claim("w-k", HELD, 0, &["k"]).unwrap() {
        assert!(lease.group_id.starts_with('k'), "{}", lease.group_id);
        leased += 1;
    }
    drop(t);
    let listed = json(&with(&["limit", "list"]));
    let k = &listed["limits"][0];
    assert_eq!((listed["limits"].as_array().unwrap().len(), k["concurrency"].as_u64()), (1, Some(1)), "{listed}");
    assert_eq!(k["in_use"].as_u64(), Some(leased), "one lease a shard with groups of k, summed: {listed}");
    assert_eq!(k["held"].as_u64(), Some(6 - leased), "{listed}");
    // The stats count the held groups too, summed, and per shard in a HELD column.
    let stats = json(&with(&["stats"]));
    assert_eq!(stats["held"].as_u64(), Some(6 - leased), "{stats}");
    let per_shard: u64 = stats["shards"].as_array().unwrap().iter().map(|s| s["held"].as_u64().unwrap()).sum();
    assert_eq!(per_shard, 6 - leased, "{stats}");
    assert!(line(&ok(&with(&["stats"])), "SHARD").contains(" PARKED  HELD  DEAD"));
    let text = ok(&with(&["limit", "list"]));
    assert!(text.contains("sharded over 3 databases") && text.contains("the limit times 3"), "{text}");
    ok(&with(&["limit", "remove", "--routing-key", "k"]));
    assert_eq!(json(&with(&["limit", "list"])), serde_json::json!({"limits": []}));
    // The archive: shard after shard, each message with its shard, in a SHARD column.
    let mut archiving = Options::new();
    archiving.archive(3_600.0).unwrap();
    let t = Transport::open_shards(&list, &archiving).unwrap();
    let mut acked = Vec::new();
    for _ in 0..3 {
        let lease = t.claim("w-archive", HELD, 0, &[]).unwrap().unwrap();
        t.ack(&lease).unwrap();
        acked.push(lease.group_id);
    }
    drop(t);
    let archive = json(&with(&["archive"]));
    let shards: Vec<usize> = archived(&archive).iter().map(|a| a["shard"].as_u64().unwrap() as usize).collect();
    assert_eq!(shards.len(), 3, "{archive}");
    assert!(shards.windows(2).all(|w| w[0] <= w[1]), "shard after shard: {archive}");
    for a in archived(&archive) {
        let id = a["group_id"].as_str().unwrap();
        assert!(acked.iter().any(|g| g == id), "{archive}");
        assert_eq!(a["shard"].as_u64().unwrap() as usize, harel_transport::shard_of(id, 3), "{a}");
    }
    let table = ok(&with(&["archive"]));
    assert!(table.starts_with("SHARD  SEQ  GROUP"), "{table}");
    let one: &'static str = acked[0].clone().leak();
    let history = json(&with(&["archive", "--group", one]));
    assert_eq!(archived(&history).len(), 1, "{history}");
    let reordered = fails(&["-d", list[1], "-d", list[0], "-d", list[2], "stats"], 1);
    assert!(reordered.contains("databases[0]") && reordered.contains("reordered"), "{reordered}");
}
