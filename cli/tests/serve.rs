//! `harel-transport serve` as an operator runs it: the built binary serving a queue built to
//! known counts (tests/console_queue), asked over plain HTTP. /metrics is read by a parser
//! of Prometheus' text format, every number checked; the API's changes need the admin token
//! and the console's own origin, and each leaves an audit line without the token; it fails
//! clearly on a bad address or token file, and answers while a server it reads is away.

mod console_queue;
mod harel_queue;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harel_transport::{Delivery, Jitter, Message, Options, Retry, Transport};
use harel_transport_testkit::sqld;
use prometheus_parse::{Scrape, Value as Metric};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_harel-transport");
const TOKEN: &str = "admin-token-for-the-test";

/// A running `serve`: its address, and its stderr once stopped.
struct Serving {
    child: Child,
    address: String,
}

impl Serving {
    /// Starts `serve` on a free loopback port with `args` and `env` (and no HAREL_* of ours).
    fn start(database: &str, args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut command = Command::new(BIN);
        command.args(["-d", database, "serve", "--listen", "127.0.0.1:0"]).args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("HAREL_") {
                command.env_remove(key);
            }
        }
        command.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("start harel-transport serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("its first line");
        let address = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| {
            let _ = child.kill();
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("serve did not start: {line:?}\n{err}")
        });
        Serving { address: address.to_owned(), child }
    }

    /// Stops it; its stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let _ = self.child.wait();
        err
    }

    fn get(&self, path: &str) -> Answer {
        self.request("GET", path, &[], "")
    }

    /// A change as the console sends it, with `headers` besides Content-Type.
    fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        self.request("POST", path, &all, body)
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut stream = TcpStream::connect(&self.address).expect("connect to serve");
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n", self.address);
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("an answer");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
        let mut lines = head.lines();
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
            .collect();
        Answer { status, headers, body: body.to_owned() }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A queue file built to known counts; removed at the end of the test.
struct Queue {
    _dir: tempfile::TempDir,
    path: String,
    dead_seq: i64,
    built: Instant,
}

fn queue() -> Queue {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("queue.db").to_str().unwrap().to_owned();
    let started = Instant::now();
    let t = Transport::open(&path, &console_queue::options()).unwrap();
    let dead_seq = console_queue::build(&t);
    t.close();
    Queue { _dir: dir, path, dead_seq, built: started }
}

/// Every sample of a scrape by name and labels (`queue` first, then the others sorted),
/// each checked to be a gauge with HELP text.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus' text format");
    let mut all = BTreeMap::new();
    for s in &scrape.samples {
        let Metric::Gauge(value) = s.value else { panic!("{} is not a gauge: {:?}", s.metric, s.value) };
        assert!(scrape.docs.get(&s.metric).is_some_and(|h| !h.is_empty()), "{} has no HELP", s.metric);
        let mut labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        assert!(all.insert(format!("{}{{{}}}", s.metric, labels.join(",")), value).is_none(), "a series twice");
    }
    all
}

#[test]
fn metrics_hold_every_count_of_a_known_queue() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[]);
    let before = q.built.elapsed().as_secs_f64();
    let answer = serving.get("/metrics");
    let after = q.built.elapsed().as_secs_f64();
    assert_eq!(answer.status, 200);
    assert_eq!(answer.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    assert!(answer.body.contains("# TYPE harel_transport_groups gauge"), "{}", answer.body);
    let mut got = samples(&answer.body);

    // The ages run from the build: the oldest ready message (ready-a's first) was published
    // at its start, the overdue lease ended just after it.
    let age = got.remove("harel_transport_oldest_ready_age_seconds{queue=harel}").expect("the oldest ready age");
    assert!((before - 0.5..=after).contains(&age), "{age} not within the {before}..{after} s since the build");
    let overdue = got.remove("harel_transport_oldest_overdue_lease_seconds{queue=harel}").expect("an overdue lease");
    assert!(overdue > 0.0 && overdue <= after, "{overdue}");

    let mut want = BTreeMap::from([
        ("harel_transport_up{queue=harel}".to_owned(), 1.0),
        ("harel_transport_messages{queue=harel}".to_owned(), 8.0),
        ("harel_transport_dead_letters{queue=harel}".to_owned(), 1.0),
        ("harel_transport_expired_dead_letters{queue=harel}".to_owned(), 0.0),
        // The limits: "leased" at most 1 at once, its one lease using it; "delayed" a rate
        // whose bucket is full (nothing claimed); neither holds a group.
        ("harel_transport_limit_capacity{queue=harel,routing_key=leased}".to_owned(), 1.0),
        ("harel_transport_limit_in_use{queue=harel,routing_key=leased}".to_owned(), 1.0),
        ("harel_transport_limit_tokens{queue=harel,routing_key=delayed}".to_owned(), console_queue::BURST),
        ("harel_transport_limit_held{queue=harel,routing_key=delayed}".to_owned(), 0.0),
        ("harel_transport_limit_held{queue=harel,routing_key=leased}".to_owned(), 0.0),
    ]);
    // (priority, ready, leased, parked, delayed): ready-a and the markup group; leased and
    // delayed; parked and overdue (whose lease lapsed, so it is ready: no retry policy). None
    // is paused, held by a limit or retrying.
    for (priority, ready, leased, parked, delayed) in [(0, 2, 0, 0, 0), (1, 0, 1, 0, 1), (2, 1, 0, 1, 0)] {
        let states = [
            ("ready", ready),
            ("leased", leased),
            ("parked", parked),
            ("delayed", delayed),
            ("paused", 0),
            ("held", 0),
            ("retrying", 0),
        ];
        for (state, n) in states {
            want.insert(format!("harel_transport_groups{{priority={priority},queue=harel,state={state}}}"), n as f64);
        }
    }
    assert_eq!(got, want);

    // The same through the library, and after a redrive brings the poison group back.
    let t = Transport::open(&q.path, &Options::new()).unwrap();
    assert_eq!(t.redrive(harel_transport::DeadLetters::Seqs(&[q.dead_seq])).unwrap(), 1);
    let s = t.stats().unwrap();
    let got = samples(&serving.get("/metrics").body);
    assert_eq!(got["harel_transport_messages{queue=harel}"], s.messages as f64);
    assert_eq!(got["harel_transport_dead_letters{queue=harel}"], 0.0);
    assert_eq!(got["harel_transport_groups{priority=3,queue=harel,state=ready}"], 1.0);
    assert_eq!(
        got["harel_transport_oldest_overdue_lease_seconds{queue=harel}"] > 0.0,
        s.oldest_overdue_lease.is_some()
    );
    t.close();
    let err = serving.stop();
    assert!(!err.contains("/metrics: "), "no read failed:\n{err}");
}

#[test]
fn changes_need_the_token_and_the_consoles_own_origin() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[("HAREL_ADMIN_TOKEN", TOKEN)]);
    let bearer = format!("Bearer {TOKEN}");
    let redrive = format!(r#"{{"seqs":[{}]}}"#, q.dead_seq);
    let dead = || serving.get("/api/dead").json()["dead_letters"].as_array().unwrap().len();
    // The dead letter's headers, and a message's none, as [[name, value], ...].
    let pairs: Vec<[&str; 2]> = console_queue::POISON_HEADERS.iter().map(|(n, v)| [*n, *v]).collect();
    assert_eq!(serving.get("/api/dead").json()["dead_letters"][0]["headers"], serde_json::json!(pairs));
    assert_eq!(serving.get("/api/peek?group=ready-a").json()["messages"][0]["headers"], serde_json::json!([]));

    let refused = [
        (serving.post("/api/dead/redrive", &[], &redrive), 401, "needs the admin token"),
        (serving.post("/api/dead/redrive", &[("Authorization", "Bearer nope")], &redrive), 403, "wrong admin token"),
        (serving.post(&format!("/api/dead/redrive?token={TOKEN}"), &[], &redrive), 401, "needs the admin token"),
        (
            serving.post(
                "/api/dead/redrive",
                &[("Authorization", &bearer), ("Origin", "http://evil.example")],
                &redrive,
            ),
            403,
            "cross-site request refused",
        ),
        (
            serving.post(
                "/api/dead/redrive",
                &[("Authorization", &bearer), ("Sec-Fetch-Site", "cross-site")],
                &redrive,
            ),
            403,
            "cross-site request refused",
        ),
        (serving.request("POST", "/api/dead/redrive", &[("Authorization", &bearer)], &redrive), 415, "JSON body"),
        (serving.post("/api/dead/redrive", &[("Authorization", &bearer)], "{}"), 400, "expected one of"),
    ];
    for (answer, status, says) in refused {
        assert_eq!(
            (answer.status, answer.json()["error"].as_str().unwrap().contains(says)),
            (status, true),
            "{}",
            answer.body
        );
    }
    assert_eq!(dead(), 1, "every refused redrive left the dead letter");

    let origin = format!("http://{}", serving.address);
    let headers = [("Authorization", bearer.as_str()), ("Origin", origin.as_str()), ("Sec-Fetch-Site", "same-origin")];
    let answer = serving.post("/api/dead/redrive", &headers, &redrive);
    assert_eq!((answer.status, answer.json()), (200, serde_json::json!({"redriven": 1})));
    assert_eq!(dead(), 0);
    let poison = serving.get("/api/peek?group=poison").json();
    assert_eq!(poison["messages"][0]["event"], console_queue::SCRIPT_EVENT, "back in its group, as stored");
    let pairs: Vec<[&str; 2]> = console_queue::POISON_HEADERS.iter().map(|(n, v)| [*n, *v]).collect();
    assert_eq!(poison["messages"][0]["headers"], serde_json::json!(pairs), "its headers kept by the redrive");

    let release = serving.post("/api/release", &headers, r#"{"group":"leased"}"#);
    assert_eq!(release.json(), serde_json::json!({"group_id": "leased", "released": true}));
    let purge = serving.post("/api/dead/purge", &headers, r#"{"all":true}"#);
    assert_eq!(purge.json(), serde_json::json!({"purged": 0}));

    let err = serving.stop();
    let audit: Vec<&str> = err.lines().filter(|l| l.contains(": audit ")).collect();
    assert_eq!(audit.len(), 10, "one line per change asked for, refused ones too:\n{err}");
    assert!(!err.contains(TOKEN), "the token is never written:\n{err}");
    let ok = audit[7];
    assert!(ok.contains("action=redrive") && ok.contains(&format!("target=\"seqs [{}]\"", q.dead_seq)), "{ok}");
    assert!(ok.contains("result=\"200 {\\\"redriven\\\":1}\"") && ok.contains("remote=127.0.0.1:"), "{ok}");
    assert!(audit[0].contains("result=\"401 "), "{}", audit[0]);
    assert!(audit[8].contains("action=release target=\"group leased\""), "{}", audit[8]);
}

/// `/api/archive`: the archive's page as `archive --json` prints it (every field, a group's
/// history with `group`, page by page with `cursor` and `limit`), bad input refused with 400
/// naming it; a look, so open as the other looks are (no token needed, none checked) and
/// read-only (nothing to POST there).
#[test]
fn the_archive_is_a_look_page_by_page() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let served_at = harel_transport::system_clock();
    let serving = Serving::start(&q.path, &[], &[("HAREL_ADMIN_TOKEN", TOKEN)]);
    let answer = serving.get("/api/archive");
    assert_eq!((answer.status, answer.headers["content-type"].as_str()), (200, "application/json"), "{}", answer.body);
    let keys = [
        "seq",
        "group_id",
        "event",
        "attempts",
        "worker_id",
        "published_at",
        "claimed_at",
        "acked_at",
        "shard",
        "headers",
        "next",
    ];
    let at: Vec<usize> = keys.iter().map(|k| answer.body.find(&format!("\"{k}\":")).expect(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "the fields in this order: {}", answer.body);
    let page = answer.json();
    assert_eq!(page["next"], Value::Null);
    let items = page["archived"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{page}");
    let pairs: Vec<[&str; 2]> = console_queue::ARCHIVED_HEADERS.iter().map(|(n, v)| [*n, *v]).collect();
    for (i, (a, attempts)) in items.iter().zip([2, 1]).enumerate() {
        assert_eq!(a["group_id"], console_queue::ARCHIVED_GROUP, "{a}");
        assert_eq!(a["event"], console_queue::ARCHIVED_EVENTS[i], "the exact text stored, in order");
        let worker = Some(console_queue::ARCHIVE_WORKER);
        assert_eq!((a["attempts"].as_i64(), a["worker_id"].as_str()), (Some(attempts), worker), "{a}");
        assert_eq!(a["shard"], 0);
        assert_eq!(a["headers"], if i == 0 { serde_json::json!(pairs) } else { serde_json::json!([]) });
        let time = |key: &str| a[key].as_f64().unwrap_or_else(|| panic!("{key} in {a}"));
        let (published, claimed, acked) = (time("published_at"), time("claimed_at"), time("acked_at"));
        assert!(published <= claimed && claimed <= acked && acked <= served_at, "{a}");
        assert!(served_at - published < 60.0, "{a}");
    }
    assert!(items[0]["seq"].as_i64() < items[1]["seq"].as_i64());

    // A group's history; another group's (none); an empty group is every group's.
    assert_eq!(serving.get("/api/archive?group=archived").json(), page);
    assert_eq!(serving.get("/api/archive?group=").json(), page);
    assert_eq!(serving.get("/api/archive?group=ready-a").json(), serde_json::json!({"archived": [], "next": null}));

    // Page by page, by the library's cursor.
    let first = serving.get("/api/archive?group=archived&limit=1").json();
    assert_eq!(first["archived"].as_array().unwrap().len(), 1);
    assert_eq!(first["archived"][0], items[0]);
    let next = first["next"].as_str().expect("more after 1 of 2");
    let second = serving.get(&format!("/api/archive?limit=1&cursor={next}")).json();
    assert_eq!((&second["archived"][0], &second["next"]), (&items[1], &Value::Null), "{second}");

    // Bad input: 400, naming it.
    let groups_cursor = serving.get("/api/groups?limit=1").json()["next"].as_str().unwrap().to_owned();
    for (query, says) in [
        ("limit=0".to_owned(), r#"limit "0": expected a page size from 1 to 10000"#.to_owned()),
        ("limit=10001".to_owned(), r#"limit "10001""#.to_owned()),
        ("limit=ten".to_owned(), r#"limit "ten""#.to_owned()),
        ("cursor=nonsense".to_owned(), r#"cursor "nonsense" is not a cursor of this listing"#.to_owned()),
        (format!("cursor={groups_cursor}"), format!("cursor {groups_cursor:?} is not a cursor of this listing")),
    ] {
        let answer = serving.get(&format!("/api/archive?{query}"));
        let error = answer.json()["error"].as_str().unwrap_or_default().to_owned();
        assert_eq!((answer.status, error.contains(&says)), (400, true), "{query}: {}", answer.body);
    }

    // A look: open to whoever reaches the address, a token or not, a wrong one too; no change
    // there, so a POST finds nothing, with the token or without, and leaves no audit line.
    let wrong = serving.request("GET", "/api/archive", &[("Authorization", "Bearer nope")], "");
    assert_eq!((wrong.status, wrong.json()), (200, page.clone()));
    let origin = format!("http://{}", serving.address);
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Origin", origin.as_str()), ("Sec-Fetch-Site", "same-origin")];
    for answer in [serving.post("/api/archive", &headers, "{}"), serving.post("/api/archive", &[], "{}")] {
        assert_eq!(answer.status, 404, "{}", answer.body);
    }
    assert_eq!(serving.get("/api/archive").json(), page, "unchanged");
    let err = serving.stop();
    assert!(!err.contains(": audit "), "no change was made:\n{err}");

    // Without an admin token too.
    let serving = Serving::start(&q.path, &[], &[]);
    assert_eq!(serving.get("/api/archive").json(), page);
}

/// A harel 0.9 file is served as it is: /metrics and the looks from its rows (harel's
/// leases and park counted; no dead-letter series, no age it cannot know), every change
/// refused with 409 naming what the file lacks, and the file left as harel wrote it.
#[test]
fn a_harel_09_queue_is_served_as_it_is() {
    let _limit = harel_transport_testkit::time_limit();
    let Some((_dir, path)) = harel_queue::make("serve::a_harel_09_queue_is_served_as_it_is") else { return };
    let before = std::fs::read(&path).unwrap();
    let serving = Serving::start(&path, &[], &[("HAREL_ADMIN_TOKEN", TOKEN)]);

    let mut want = BTreeMap::from([
        ("harel_transport_up{queue=harel}".to_owned(), 1.0),
        ("harel_transport_messages{queue=harel}".to_owned(), 30.0),
        ("harel_transport_oldest_overdue_lease_seconds{queue=harel}".to_owned(), 0.0),
    ]);
    let states = [("ready", 7.0), ("leased", 2.0), ("parked", 1.0), ("delayed", 0.0), ("paused", 0.0)];
    for (state, n) in states.into_iter().chain([("held", 0.0), ("retrying", 0.0)]) {
        want.insert(format!("harel_transport_groups{{priority=0,queue=harel,state={state}}}"), n);
    }
    assert_eq!(samples(&serving.get("/metrics").body), want);
    let stats = serving.get("/api/stats").json();
    assert_eq!((stats["leased"].as_u64(), stats["dead"].is_null()), (Some(2), true), "{stats}");
    assert!(stats["expired"].is_null(), "no dead-letter table: unknown, as dead: {stats}");
    let leased = serving.get("/api/groups?state=leased").json();
    let holders: Vec<&str> =
        leased["groups"].as_array().unwrap().iter().map(|g| g["holder"].as_str().unwrap()).collect();
    assert_eq!(holders, ["w1", "w2"]);

    let origin = format!("http://{}", serving.address);
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Origin", origin.as_str()), ("Sec-Fetch-Site", "same-origin")];
    assert_eq!(serving.get("/api/pauses").json(), serde_json::json!({"pauses": []}));
    assert_eq!(serving.get("/api/limits").json(), serde_json::json!({"limits": []}));
    let archive = serving.get("/api/archive?group=g0");
    assert_eq!((archive.status, archive.json()), (200, serde_json::json!({"archived": [], "next": null})));
    for (path, body) in [
        ("/api/release", r#"{"group":"g0"}"#),
        ("/api/dead/redrive", r#"{"all":true}"#),
        ("/api/pause", r#"{"group":"g0"}"#),
        ("/api/resume", r#"{"queue":true}"#),
        ("/api/limits/set", r#"{"routing_key":"k","concurrency":1}"#),
        ("/api/limits/remove", r#"{"routing_key":"k"}"#),
    ] {
        let answer = serving.post(path, &headers, body);
        let error = answer.json()["error"].as_str().unwrap().to_owned();
        assert_eq!(answer.status, 409, "{path}: {error}");
        assert!(
            error.contains("refused: this queue lacks") && error.contains("the table harel_transport_dead"),
            "{error}"
        );
    }
    drop(serving);
    assert!(std::fs::read(&path).unwrap() == before, "the file is as harel left it");
}

/// Messages that expired undelivered: their own gauge in /metrics (within the dead letters),
/// `expired` in /api/stats; a redrive takes them back out.
#[test]
fn expired_dead_letters_in_metrics_and_the_api() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    // Published with a ttl of 10 s by a clock 100 s behind: expired 90 s ago by the system's.
    let mut behind = Options::new();
    behind.clock(|| harel_transport::system_clock() - 100.0);
    let t = Transport::open(&q.path, &behind).unwrap();
    for n in 0..2 {
        let event = format!(r#"{{"n":{n}}}"#);
        let m = Message { group_id: "expiring", event_json: &event, priority: 0, routing_key: None, headers: None };
        t.publish_with(m, Delivery { ttl: Some(10.0), ..Delivery::default() }).unwrap();
    }
    t.close();
    let serving = Serving::start(&q.path, &[], &[]);
    let got = samples(&serving.get("/metrics").body);
    assert_eq!(got["harel_transport_expired_dead_letters{queue=harel}"], 0.0, "nothing moves before a claim");
    let t = Transport::open(&q.path, &Options::new()).unwrap();
    assert!(t.claim("w", 30.0, 0, &["no-such-key"]).unwrap().is_none(), "a claim that sweeps");
    let got = samples(&serving.get("/metrics").body);
    assert_eq!(got["harel_transport_dead_letters{queue=harel}"], 3.0);
    assert_eq!(got["harel_transport_expired_dead_letters{queue=harel}"], 2.0);
    let stats = serving.get("/api/stats").json();
    assert_eq!((stats["dead"].as_u64(), stats["expired"].as_u64()), (Some(3), Some(2)), "{stats}");
    assert_eq!(t.redrive(harel_transport::DeadLetters::Group("expiring")).unwrap(), 2);
    t.close();
    let got = samples(&serving.get("/metrics").body);
    assert_eq!(got["harel_transport_expired_dead_letters{queue=harel}"], 0.0);
    assert_eq!(serving.get("/api/stats").json()["expired"], 0);
    let err = serving.stop();
    assert!(!err.contains("/metrics: "), "no read failed:\n{err}");
}

/// Groups a limit holds and groups whose lapsed lease waits its retry backoff: states of
/// their own in /metrics' `harel_transport_groups` (per level, not in `ready`), `held` and
/// `retrying` in /api/stats (total and per level); the states add up to the groups.
#[test]
fn held_and_retrying_groups_in_metrics_and_the_api() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    // The fixture's "leased" key is at its limit of 1: two more of its groups, at priority 1,
    // are held by the claim that meets them.
    let t = Transport::open(&q.path, &Options::new()).unwrap();
    for n in 1..=2 {
        t.publish(&format!("leased-{n}"), r#"{"n":"l"}"#, 1, Some(console_queue::CONCURRENCY_KEY)).unwrap();
    }
    assert!(t.claim("w", 600.0, 0, &[console_queue::CONCURRENCY_KEY]).unwrap().is_none(), "no room: held");
    t.close();
    // A retry policy of 600 s and a lease of 50 ms that lapses, at priority 2.
    let mut options = Options::new();
    options.retry(Some(Retry { base: 600.0, factor: 1.0, cap: 600.0, jitter: Jitter::None })).unwrap();
    let t = Transport::open(&q.path, &options).unwrap();
    t.publish("retry-me", r#"{"n":"r"}"#, 2, Some("k-retry")).unwrap();
    t.claim("w", 0.05, 0, &["k-retry"]).unwrap().expect("retry-me's head");
    t.close();
    std::thread::sleep(std::time::Duration::from_millis(200));

    let serving = Serving::start(&q.path, &[], &[]);
    let metrics = samples(&serving.get("/metrics").body);
    let gauge = |priority: i32, state: &str| {
        metrics[&format!("harel_transport_groups{{priority={priority},queue=harel,state={state}}}")]
    };
    assert_eq!([0, 1, 2].map(|p| gauge(p, "held")), [0.0, 2.0, 0.0]);
    assert_eq!([0, 1, 2].map(|p| gauge(p, "retrying")), [0.0, 0.0, 1.0]);
    assert_eq!([0, 1, 2].map(|p| gauge(p, "ready")), [2.0, 0.0, 1.0], "neither is ready");
    let stats = serving.get("/api/stats").json();
    let counts = (stats["held"].as_u64(), stats["retrying"].as_u64(), stats["ready"].as_u64());
    assert_eq!(counts, (Some(2), Some(1), Some(3)), "{stats}");
    let states = ["ready", "leased", "parked", "delayed", "paused", "held", "retrying"];
    for (i, level) in stats["by_priority"].as_array().unwrap().iter().enumerate() {
        let priority = level["priority"].as_i64().unwrap() as i32;
        let sum: u64 = states.iter().map(|s| level[s].as_u64().unwrap()).sum();
        assert_eq!(sum, level["groups"].as_u64().unwrap(), "level {i}: {level}");
        let scraped: f64 = states.iter().map(|s| gauge(priority, s)).sum();
        assert_eq!(scraped, sum as f64, "level {priority}'s series add up to its groups");
    }
    let levels = &stats["by_priority"];
    assert_eq!((levels[1]["held"].as_u64(), levels[2]["retrying"].as_u64()), (Some(2), Some(1)), "{stats}");
    let sum: u64 = states.iter().map(|s| stats[s].as_u64().unwrap()).sum();
    assert_eq!(sum, stats["groups"].as_u64().unwrap(), "{stats}");
    let listed = |state: &str| -> Vec<String> {
        let page = serving.get(&format!("/api/groups?state={state}")).json();
        page["groups"].as_array().unwrap().iter().map(|g| g["group_id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(listed("held"), ["leased-1", "leased-2"], "/api/groups' filters agree with the stats");
    assert_eq!(listed("retrying"), ["retry-me"]);
    assert_eq!(listed("ready").len(), 3, "the groups stats counts ready");
    let console = serving.get("/console.js").body;
    assert!(console.contains(r#""paused", "held", "retrying""#), "the console shows them");
    let page = serving.get("/").body;
    assert!(page.contains(r#"id="stat-held""#) && page.contains(r#"id="priority-retrying""#), "{page}");
    assert!(page.contains(r#"<option value="held">"#) && page.contains(r#"<option value="retrying">"#), "{page}");
    let err = serving.stop();
    assert!(!err.contains("/metrics: "), "no read failed:\n{err}");
}

/// A message's retry backoff in /api/peek: `retry_delay`, the one its last claim drew under a
/// retry policy (the queue's or its own), null when none.
#[test]
fn the_api_shows_each_messages_retry_delay() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let mut options = Options::new();
    options.retry(Some(Retry { base: 6.0, factor: 2.0, cap: 60.0, jitter: Jitter::None })).unwrap();
    let t = Transport::open(&q.path, &options).unwrap();
    for n in 0..2 {
        let event = format!(r#"{{"n":{n}}}"#);
        t.publish("retrying", &event, 0, Some("k-retry")).unwrap();
    }
    let policy = Retry { base: 0.25, factor: 1.0, cap: 0.25, jitter: Jitter::None };
    let own = Delivery { retry: Some(policy), ..Delivery::default() };
    let m = Message { group_id: "own", event_json: "{}", priority: 0, routing_key: Some("k-own"), headers: None };
    t.publish_with(m, own).unwrap();
    t.claim("w", 600.0, 0, &["k-retry"]).unwrap().expect("retrying's head");
    let lease = t.claim("w", 600.0, 0, &["k-own"]).unwrap().expect("own's head");
    t.nack(&lease, 0.0).unwrap();
    t.close();
    let serving = Serving::start(&q.path, &[], &[]);
    let peek = serving.get("/api/peek?group=retrying").json();
    let delays: Vec<Value> = peek["messages"].as_array().unwrap().iter().map(|m| m["retry_delay"].clone()).collect();
    assert_eq!(delays, [serde_json::json!(6.0), Value::Null], "{peek}");
    assert_eq!(serving.get("/api/peek?group=own").json()["messages"][0]["retry_delay"], 0.25);
    let ready = serving.get("/api/peek?group=ready-a").json();
    assert!(ready["messages"].as_array().unwrap().iter().all(|m| m["retry_delay"].is_null()), "{ready}");
    let leased = serving.get("/api/peek?group=leased").json();
    assert!(leased["messages"][0]["retry_delay"].is_null(), "claimed without a policy: {leased}");
    assert!(serving.get("/console.js").body.contains("retryIn(m.retry_delay)"), "the console shows it");
}

#[test]
fn without_an_admin_token_the_console_only_looks() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[]);
    let queue = r#"{"queue":true}"#;
    let changes = [
        ("/api/release", r#"{"group":"leased"}"#),
        ("/api/pause", queue),
        ("/api/resume", queue),
        ("/api/limits/set", r#"{"routing_key":"a","concurrency":1}"#),
        ("/api/limits/remove", r#"{"routing_key":"leased"}"#),
    ];
    for (path, body) in changes {
        let answer = serving.post(path, &[("Authorization", "Bearer anything")], body);
        assert_eq!(answer.status, 403, "{path}");
        let message = answer.json()["error"].as_str().unwrap().to_owned();
        assert!(message.contains("HAREL_ADMIN_TOKEN") && message.contains("--admin-token-file"), "{message}");
    }
    assert_eq!(serving.get("/api/pauses").json(), serde_json::json!({"pauses": []}));
    let keys: Vec<String> = serving.get("/api/limits").json()["limits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["routing_key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys, [console_queue::RATE_KEY, console_queue::CONCURRENCY_KEY], "a look, open; unchanged");
    assert_eq!(serving.get("/api/groups?state=leased").json()["groups"][0]["group_id"], "leased", "still held");
    assert!(serving.stop().contains("no admin token: looks only"));
}

/// Pause and resume through the API: refused without the admin token (and audited), done
/// with it, each answered as `--json` answers; the pauses listed, the paused groups by
/// state, and the paused count in /metrics and /api/stats.
#[test]
fn pause_and_resume_need_the_token_and_show_in_the_looks_and_metrics() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[("HAREL_ADMIN_TOKEN", TOKEN)]);
    let origin = format!("http://{}", serving.address);
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Origin", origin.as_str()), ("Sec-Fetch-Site", "same-origin")];
    let pauses = || serving.get("/api/pauses").json();
    assert_eq!(pauses(), serde_json::json!({"pauses": []}));

    let group = r#"{"group":"ready-a"}"#;
    let refused = [
        (serving.post("/api/pause", &[], group), 401, "needs the admin token"),
        (serving.post("/api/pause", &[("Authorization", "Bearer nope")], group), 403, "wrong admin token"),
        (serving.post("/api/resume", &[], r#"{"queue":true}"#), 401, "needs the admin token"),
        (
            serving.post("/api/pause", &[("Authorization", &bearer), ("Origin", "http://evil.example")], group),
            403,
            "cross-site",
        ),
        (serving.request("POST", "/api/pause", &[("Authorization", &bearer)], group), 415, "JSON body"),
        (serving.post("/api/pause", &headers, "{}"), 400, "expected one of"),
        (serving.post("/api/pause", &headers, r#"{"group":"a","queue":true}"#), 400, "expected one of"),
        (serving.post("/api/resume", &headers, r#"{"group":"a","routing_key":"b"}"#), 400, "expected one of"),
        (serving.post("/api/pause", &headers, r#"{"queue":false}"#), 400, "expected one of"),
        (serving.post("/api/pause", &headers, r#"{"name":"a"}"#), 400, "expected one of"),
        (serving.post("/api/pause", &headers, r#"{"group":""}"#), 400, "group_id is empty"),
    ];
    for (answer, status, says) in refused {
        let error = answer.json()["error"].as_str().unwrap().to_owned();
        assert_eq!((answer.status, error.contains(says)), (status, true), "{error}");
    }
    assert_eq!(pauses(), serde_json::json!({"pauses": []}), "every refused change left the queue as it was");

    let answer = serving.post("/api/pause", &headers, group);
    let done = serde_json::json!({"kind": "group", "name": "ready-a", "paused": true});
    assert_eq!((answer.status, answer.json()), (200, done));
    let again = serving.post("/api/pause", &headers, group).json();
    assert_eq!(again, serde_json::json!({"kind": "group", "name": "ready-a", "paused": false}));
    let key = serving.post("/api/pause", &headers, r#"{"routing_key":"leased"}"#).json();
    assert_eq!(key, serde_json::json!({"kind": "routing_key", "name": "leased", "paused": true}));
    let paused: Vec<String> = serving.get("/api/groups?state=paused").json()["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| format!("{} {}", g["group_id"].as_str().unwrap(), g["state"].as_str().unwrap()))
        .collect();
    assert_eq!(paused, ["leased paused", "ready-a paused"]);
    let metrics = samples(&serving.get("/metrics").body);
    let gauge = |metrics: &BTreeMap<String, f64>, priority: i32, state: &str| {
        metrics[&format!("harel_transport_groups{{priority={priority},queue=harel,state={state}}}")]
    };
    // ready-a (priority 0) and leased (1, whose lease goes on) are counted as paused only.
    assert_eq!([0, 1, 2].map(|p| gauge(&metrics, p, "paused")), [1.0, 1.0, 0.0]);
    assert_eq!((gauge(&metrics, 0, "ready"), gauge(&metrics, 1, "leased")), (1.0, 0.0));
    assert_eq!(serving.get("/api/stats").json()["paused"], 2);

    let queue = serving.post("/api/pause", &headers, r#"{"queue":true}"#).json();
    assert_eq!(queue, serde_json::json!({"kind": "queue", "name": "", "paused": true}));
    let listed: Vec<(String, String)> = pauses()["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["kind"].as_str().unwrap().to_owned(), p["name"].as_str().unwrap().to_owned()))
        .collect();
    let want =
        [("queue", ""), ("group", "ready-a"), ("routing_key", "leased")].map(|(k, n)| (k.to_owned(), n.to_owned()));
    assert_eq!(listed, want);
    assert!(pauses()["pauses"][0]["paused_at"].as_f64().is_some());
    let metrics = samples(&serving.get("/metrics").body);
    assert_eq!([0, 1, 2].map(|p| gauge(&metrics, p, "paused")), [2.0, 2.0, 2.0], "every group of the queue");
    let stats = serving.get("/api/stats").json();
    assert_eq!((stats["paused"].as_u64(), stats["ready"].as_u64()), (Some(6), Some(0)), "{stats}");
    assert_eq!(stats["by_priority"][1]["paused"], 2);

    let resumed = serving.post("/api/resume", &headers, r#"{"queue":true}"#).json();
    assert_eq!(resumed, serde_json::json!({"kind": "queue", "name": "", "resumed": true}));
    let none = serving.post("/api/resume", &headers, r#"{"group":"nobody"}"#).json();
    assert_eq!(none, serde_json::json!({"kind": "group", "name": "nobody", "resumed": false}));
    assert_eq!(serving.get("/api/stats").json()["paused"], 2, "the group's and the key's pauses go on");
    for body in [r#"{"routing_key":"leased"}"#, group] {
        assert_eq!(serving.post("/api/resume", &headers, body).json()["resumed"], true, "{body}");
    }
    assert_eq!(pauses(), serde_json::json!({"pauses": []}));
    let metrics = samples(&serving.get("/metrics").body);
    assert_eq!([0, 1, 2].map(|p| gauge(&metrics, p, "paused")), [0.0, 0.0, 0.0]);
    assert_eq!(gauge(&metrics, 1, "leased"), 1.0, "the lease taken before the pause goes on");

    let err = serving.stop();
    assert!(!err.contains(TOKEN), "the token is never written:\n{err}");
    let audit: Vec<&str> = err.lines().filter(|l| l.contains(": audit ")).collect();
    assert_eq!(audit.len(), 11 + 8, "one line per change asked for, refused ones too:\n{err}");
    for (line, action, target, result) in [
        (0, "pause", "-", "401 "),
        (1, "pause", "-", "403 "),
        (2, "resume", "-", "401 "),
        (5, "pause", "-", "400 "),
        (10, "pause", "group ", "400 "),
        (11, "pause", "group ready-a", r#"200 {\"kind\":\"group\",\"name\":\"ready-a\",\"paused\":true}"#),
        (12, "pause", "group ready-a", "200 "),
        (13, "pause", "routing_key leased", "200 "),
        (14, "pause", "queue", "200 "),
        (15, "resume", "queue", "200 "),
        (16, "resume", "group nobody", "200 "),
        (17, "resume", "routing_key leased", "200 "),
        (18, "resume", "group ready-a", "200 "),
    ] {
        let want = format!("action={action} target={target:?} result=\"{result}");
        assert!(audit[line].contains(&want), "audit line {line}: {}\nwants {want}", audit[line]);
    }
}

/// The limits of `/api/limits`, by routing key.
fn limits(serving: &Serving) -> Vec<Value> {
    serving.get("/api/limits").json()["limits"].as_array().expect("a limits list").clone()
}

/// Limits through the API: listed with their use (open, as `limit list --json` prints them),
/// set and removed only with the admin token (each change audited, refused ones too), every
/// bad body refused with 400 naming it; the gauges of /metrics follow a key that workers use:
/// its capacity, the lease in use, the groups held, the tokens.
#[test]
fn limits_need_the_token_and_show_in_the_looks_and_metrics() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[("HAREL_ADMIN_TOKEN", TOKEN)]);
    let origin = format!("http://{}", serving.address);
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Origin", origin.as_str()), ("Sec-Fetch-Site", "same-origin")];

    // The fixture's two limits, by key, every field in this order.
    let answer = serving.get("/api/limits");
    assert_eq!((answer.status, answer.headers["content-type"].as_str()), (200, "application/json"));
    let keys = ["routing_key", "concurrency", "in_use", "rate", "burst", "tokens", "held"];
    let at: Vec<usize> = keys.iter().map(|k| answer.body.find(&format!("\"{k}\":")).expect(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "the fields in this order: {}", answer.body);
    let fixture = serde_json::json!({"limits": [
        {"routing_key": "delayed", "concurrency": null, "in_use": 0, "rate": console_queue::RATE,
         "burst": console_queue::BURST, "tokens": console_queue::BURST, "held": 0},
        {"routing_key": "leased", "concurrency": 1, "in_use": 1, "rate": null, "burst": null, "tokens": null,
         "held": 0},
    ]});
    assert_eq!(answer.json(), fixture);
    let wrong = serving.request("GET", "/api/limits", &[("Authorization", "Bearer nope")], "");
    assert_eq!((wrong.status, wrong.json()), (200, fixture.clone()), "a look: open, a wrong token or not");

    let set = r#"{"routing_key":"a","concurrency":1}"#;
    let set_with = |body: &str| serving.post("/api/limits/set", &headers, body);
    let remove_with = |body: &str| serving.post("/api/limits/remove", &headers, body);
    let refused = [
        (serving.post("/api/limits/set", &[], set), 401, "needs the admin token"),
        (serving.post("/api/limits/set", &[("Authorization", "Bearer nope")], set), 403, "wrong admin token"),
        (serving.post("/api/limits/remove", &[], r#"{"routing_key":"leased"}"#), 401, "needs the admin token"),
        (
            serving.post("/api/limits/set", &[("Authorization", &bearer), ("Origin", "http://evil.example")], set),
            403,
            "cross-site",
        ),
        (
            serving.post("/api/limits/set", &[("Authorization", &bearer), ("Sec-Fetch-Site", "cross-site")], set),
            403,
            "cross-site",
        ),
        (serving.request("POST", "/api/limits/set", &[("Authorization", &bearer)], set), 415, "JSON body"),
        (set_with("{}"), 400, "set-limit: expected {\"routing_key\""),
        (set_with("not json"), 400, "set-limit: expected"),
        (set_with(r#"{"routing_key":"a","limit":1}"#), 400, "unknown field `limit`"),
        (set_with(r#"{"routing_key":"a","concurrency":-1}"#), 400, "set-limit: expected"),
        (set_with(r#"{"routing_key":"a","concurrency":1.5}"#), 400, "set-limit: expected"),
        (set_with(r#"{"routing_key":"a"}"#), 400, "neither a concurrency nor a rate"),
        (set_with(r#"{"routing_key":"a","rate":1}"#), 400, "rate and burst go together"),
        (set_with(r#"{"routing_key":"a","burst":1}"#), 400, "rate and burst go together"),
        (set_with(r#"{"routing_key":"a","concurrency":0}"#), 400, "concurrency is 0; it must be 1..1000000"),
        (set_with(r#"{"routing_key":"a","concurrency":1000001}"#), 400, "concurrency is 1000001"),
        (set_with(r#"{"routing_key":"a","rate":0,"burst":1}"#), 400, "rate is 0; it must be a finite number > 0"),
        (set_with(r#"{"routing_key":"a","rate":2000000,"burst":1}"#), 400, "rate is 2000000"),
        (set_with(r#"{"routing_key":"a","rate":1,"burst":0.5}"#), 400, "burst is 0.5; it must be a finite number >= 1"),
        (set_with(r#"{"routing_key":"","concurrency":1}"#), 400, "routing_key is empty"),
        (remove_with("{}"), 400, "remove-limit: expected {\"routing_key\": \"...\"}"),
        (remove_with(r#"{"routing_key":"a"}"#), 400, "routing key \"a\" has no limit to remove"),
        (remove_with(r#"{"routing_key":""}"#), 400, "routing_key is empty"),
    ];
    let refusals = refused.len();
    for (answer, status, says) in refused {
        let error = answer.json()["error"].as_str().unwrap().to_owned();
        assert_eq!((answer.status, error.contains(says)), (status, true), "{says}: {error}");
    }
    assert_eq!(serving.get("/api/limits").json(), fixture, "every refused change left the limits as they were");
    assert_eq!(serving.post("/api/limits", &headers, set).status, 404, "the look takes no change");

    // Set with the token, answered as `limit set --json` answers; then used by workers: one
    // claim of "a" goes through, the next holds the key's other groups.
    let answer = serving.post("/api/limits/set", &headers, set);
    let done = serde_json::json!({"routing_key": "a", "concurrency": 1, "rate": null, "burst": null});
    assert_eq!((answer.status, answer.json()), (200, done));
    let t = Transport::open(&q.path, &Options::new()).unwrap();
    t.publish("a-2", r#"{"n":"a2"}"#, 0, Some("a")).unwrap();
    t.publish("a-3", r#"{"n":"a3"}"#, 0, Some("a")).unwrap();
    let lease = t.claim("worker-a", 600.0, 0, &["a"]).unwrap().expect("one of a's groups");
    assert!(t.claim("worker-a", 600.0, 0, &["a"]).unwrap().is_none(), "a has no room");
    let a = &limits(&serving)[0];
    assert_eq!(
        *a,
        serde_json::json!({"routing_key": "a", "concurrency": 1, "in_use": 1, "rate": null, "burst": null,
                           "tokens": null, "held": 2})
    );
    let metrics = samples(&serving.get("/metrics").body);
    let gauge = |metrics: &BTreeMap<String, f64>, name: &str, key: &str| {
        metrics.get(&format!("harel_transport_limit_{name}{{queue=harel,routing_key={key}}}")).copied()
    };
    assert_eq!(
        ["capacity", "in_use", "held", "tokens"].map(|name| gauge(&metrics, name, "a")),
        [Some(1.0), Some(1.0), Some(2.0), None],
        "no tokens without a rate limit"
    );
    let rate = r#"{"routing_key":"a","concurrency":2,"rate":0.01,"burst":3}"#;
    let answer = serving.post("/api/limits/set", &headers, rate).json();
    assert_eq!(answer, serde_json::json!({"routing_key": "a", "concurrency": 2, "rate": 0.01, "burst": 3.0}));
    let next = t.claim("worker-a", 600.0, 0, &["a"]).unwrap().expect("room for a second lease");
    assert_ne!(next.group_id, lease.group_id);
    let metrics = samples(&serving.get("/metrics").body);
    let [capacity, in_use, held, tokens] =
        ["capacity", "in_use", "held", "tokens"].map(|name| gauge(&metrics, name, "a"));
    assert_eq!((capacity, in_use, held), (Some(2.0), Some(2.0), Some(1.0)));
    let tokens = tokens.expect("a rate limit: its tokens");
    assert!((2.0..2.1).contains(&tokens), "a burst of 3, one taken: {tokens}");
    assert_eq!(gauge(&metrics, "capacity", "delayed"), None, "no concurrency limit: no capacity");
    assert_eq!(gauge(&metrics, "tokens", "delayed"), Some(console_queue::BURST));

    // Removed: the held group is served at once; the key's series are gone.
    let removed = serving.post("/api/limits/remove", &headers, r#"{"routing_key":"a"}"#);
    assert_eq!((removed.status, removed.json()), (200, serde_json::json!({"routing_key": "a", "removed": true})));
    t.claim("worker-a", 600.0, 0, &["a"]).unwrap().expect("the held group, served");
    t.close();
    assert_eq!(serving.get("/api/limits").json(), fixture);
    let metrics = samples(&serving.get("/metrics").body);
    assert!(!metrics.keys().any(|k| k.contains("routing_key=a}")), "{metrics:?}");

    let err = serving.stop();
    assert!(!err.contains(TOKEN), "the token is never written:\n{err}");
    assert!(!err.contains("/metrics: "), "no read failed:\n{err}");
    let audit: Vec<&str> = err.lines().filter(|l| l.contains(": audit ")).collect();
    assert_eq!(audit.len(), refusals + 3, "one line per change asked for, refused ones too:\n{err}");
    for (line, action, target, result) in [
        (0, "set-limit", "-", "401 "),
        (1, "set-limit", "-", "403 "),
        (2, "remove-limit", "-", "401 "),
        (5, "set-limit", "-", "415 "),
        (6, "set-limit", "-", "400 "),
        (11, "set-limit", "routing_key a", "400 "),
        (12, "set-limit", "routing_key a", "400 "),
        (19, "set-limit", "routing_key ", "400 "),
        (20, "remove-limit", "-", "400 "),
        (21, "remove-limit", "routing_key a", "400 "),
        (
            refusals,
            "set-limit",
            "routing_key a",
            r#"200 {\"routing_key\":\"a\",\"concurrency\":1,\"rate\":null,\"burst\":null}"#,
        ),
        (refusals + 1, "set-limit", "routing_key a", "200 "),
        (refusals + 2, "remove-limit", "routing_key a", r#"200 {\"routing_key\":\"a\",\"removed\":true}"#),
    ] {
        let want = format!("action={action} target={target:?} result=\"{result}");
        assert!(audit[line].contains(&want), "audit line {line}: {}\nwants {want}", audit[line]);
    }
}

#[test]
fn the_token_file_is_read_and_a_missing_one_is_refused() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let serving = Serving::start(&q.path, &["--admin-token-file", file.to_str().unwrap()], &[]);
    let answer = serving.post("/api/release", &[("Authorization", &format!("Bearer {TOKEN}"))], r#"{"group":"x"}"#);
    assert_eq!((answer.status, answer.json()["released"].as_bool()), (200, Some(false)));
    drop(serving);

    let missing = dir.path().join("absent");
    let out = Command::new(BIN)
        .args(["-d", &q.path, "serve", "--listen", "127.0.0.1:0", "--admin-token-file", missing.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--admin-token-file") && err.contains("No such file"), "{err}");
    let flag = Command::new(BIN).args(["-d", &q.path, "serve", "--admin-token", TOKEN]).output().unwrap();
    assert_eq!(flag.status.code(), Some(2));
    assert!(String::from_utf8(flag.stderr).unwrap().contains("HAREL_ADMIN_TOKEN"));
}

#[test]
fn a_bad_address_is_refused_clearly() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (address, says) in [("not-an-address", "invalid socket address"), (taken.as_str(), "in use")] {
        let out = Command::new(BIN).args(["-d", &q.path, "serve", "--listen", address]).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!((out.status.code(), out.stdout.len()), (Some(1), 0), "{err}");
        assert!(err.contains(&format!("--listen {address:?}")) && err.contains(says), "{err}");
    }
}

#[test]
fn the_page_and_its_answers_carry_the_security_headers() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[]);
    for (path, content_type) in [
        ("/", "text/html; charset=utf-8"),
        ("/console.js", "text/javascript; charset=utf-8"),
        ("/console.css", "text/css; charset=utf-8"),
        ("/api/stats", "application/json"),
        ("/api/archive", "application/json"),
        ("/api/limits", "application/json"),
        ("/api/nothing", "application/json"),
    ] {
        let answer = serving.get(path);
        assert_eq!(answer.headers["content-type"], content_type, "{path}");
        let csp = &answer.headers["content-security-policy"];
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(
            (answer.headers["x-content-type-options"].as_str(), answer.headers["referrer-policy"].as_str()),
            ("nosniff", "no-referrer")
        );
        assert_eq!(answer.headers["connection"], "close", "{path}");
    }
    assert_eq!(serving.get("/api/nothing").status, 404);
    assert_eq!(serving.get("/api/groups?state=stuck").status, 400);
    assert_eq!(serving.get("/api/peek").status, 400);
    let group = serving.get("/api/groups?limit=1").json();
    assert_eq!(
        group["groups"][0]["group_id"],
        console_queue::MARKUP_GROUP,
        "a group id is data, sent as a JSON string"
    );
    let next = group["next"].as_str().unwrap();
    let second = serving.get(&format!("/api/groups?limit=1&cursor={next}")).json();
    assert_eq!(second["groups"][0]["group_id"], "delayed", "the next page, by the library's cursor");
}

/// Every answer says it ends its connection (`Connection: close`), even when the client
/// would keep it, so a browser opens a connection a request and closes each: tiny_http's pool
/// could leave one of several connections opened at once waiting while its threads served
/// kept-alive ones, and a console request hung until a browser's idle connection closed,
/// minutes later. Eight clients at once, none asking to close, each get their whole answer
/// (its length as said, nothing after it); a HEAD gets the head alone.
#[test]
fn every_answer_ends_its_connection() {
    let _limit = harel_transport_testkit::time_limit();
    let q = queue();
    let serving = Serving::start(&q.path, &[], &[]);
    let paths =
        ["/", "/console.js", "/api/stats", "/api/pauses", "/api/limits", "/api/dead", "/api/archive", "/metrics"];
    let clients: Vec<_> = paths
        .iter()
        .map(|path| {
            let mut stream = TcpStream::connect(&serving.address).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let head = format!("GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n\r\n", serving.address);
            stream.write_all(head.as_bytes()).unwrap();
            std::thread::spawn(move || {
                // The head, then as many bytes as it says; a little more would show a second answer.
                let mut raw = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = stream.read(&mut chunk).expect("an answer before the timeout");
                    raw.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&raw);
                    let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
                    let length = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).expect("a length");
                    if body.len() >= length.parse::<usize>().unwrap() || n == 0 {
                        return text.into_owned();
                    }
                }
            })
        })
        .collect();
    for (path, client) in paths.iter().zip(clients) {
        let raw = client.join().unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let closes = head.lines().any(|l| l == "Connection: close");
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n") && closes, "{path}: {head}");
        let length = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap();
        assert_eq!(length.parse::<usize>().unwrap(), body.len(), "{path}: the whole body, nothing after it");
    }
    let head = serving.request("HEAD", "/api/stats", &[], "");
    assert_eq!((head.status, head.body.as_str()), (200, ""), "a HEAD has no body");
    assert!(head.headers["content-length"].parse::<usize>().unwrap() > 0);
}

/// sqld killed while `serve` reads it: /metrics answers `harel_transport_up 0` and no
/// counts; started again, the same serve recovers.
#[test]
fn a_server_that_goes_away_and_comes_back() {
    let _limit = harel_transport_testkit::time_limit();
    let Some(binary) = sqld::binary_or_skip("serve::a_server_that_goes_away_and_comes_back") else { return };
    let mut server = sqld::Sqld::start(&binary, false);
    let t = Transport::open(&server.url(), &Options::new()).unwrap();
    t.publish("g", "{}", 0, None).unwrap();
    t.close();
    let serving = Serving::start(&server.url(), &[], &[]);
    let up = |serving: &Serving| {
        let got = samples(&serving.get("/metrics").body);
        (got["harel_transport_up{queue=harel}"], got.get("harel_transport_messages{queue=harel}").copied())
    };
    assert_eq!(up(&serving), (1.0, Some(1.0)));
    server.kill();
    assert_eq!(up(&serving), (0.0, None), "away: no stale counts");
    server.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    while up(&serving).0 == 0.0 {
        assert!(Instant::now() < deadline, "serve did not recover:\n{}", server.log_tail());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(up(&serving), (1.0, Some(1.0)));
    let err = serving.stop();
    assert!(err.contains("/metrics: stats:"), "the failure is on stderr:\n{err}");
}
