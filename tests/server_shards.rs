//! A queue sharded over three sqld servers (docs/queue.md, "Sharded queues"): the shared
//! contract, and a shard killed and restarted while workers drain the queue — the others
//! served meanwhile, its publishes refused with `Error::Connect`, nothing lost. Without
//! sqld (HAREL_SQLD or PATH) each test passes as skipped and says so.

use harel_transport_testkit as common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::contract::{CHECKS, OTHERWISE_SHARDED};
use common::sqld::{serial, Sqld};
use common::sqld_or_skip;
use harel_transport::{shard_of, Error, Options, Transport};

fn open(servers: &[Sqld], options: &Options) -> harel_transport::Result<Transport> {
    let urls: Vec<String> = servers.iter().map(Sqld::url).collect();
    Transport::open_shards(&urls.iter().map(String::as_str).collect::<Vec<_>>(), options)
}

#[test]
fn the_shared_contract_on_three_sqld_shards() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("the_shared_contract_on_three_sqld_shards");
    let _serial = serial();
    let servers = three(&binary);
    on_every_check("sqld", &|| Box::new(|options: &Options| open(&servers, options).expect("open three sqld shards")));
}

/// Three servers, started together.
fn three(binary: &std::path::Path) -> Vec<Sqld> {
    std::thread::scope(|s| {
        let starting: Vec<_> = (0..3).map(|_| s.spawn(|| Sqld::start(binary, false))).collect();
        starting.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// How a check opens its queue, and what that queue lives on (servers, files) until the
/// check ends.
type Queue<'a> = Box<dyn Fn(&Options) -> Transport + 'a>;

/// Runs the contract's checks for a sharded queue, each on tables of its own prefix in the
/// queue `queue` gives it, and fails naming those that failed; `what` names the shards in
/// the output.
fn on_every_check<'a>(what: &str, queue: &dyn Fn() -> Queue<'a>) {
    let mut failed = Vec::new();
    for (i, &(name, check)) in
        CHECKS.iter().enumerate().filter(|(_, (name, _))| !OTHERWISE_SHARDED.iter().any(|(o, _)| o == name))
    {
        let open = queue();
        let started = Instant::now();
        let run = || {
            check(&|options: &Options| {
                let mut o = options.clone();
                o.prefix(&format!("c{i}")).unwrap();
                open(&o)
            })
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(()) => println!("sharded {what} contract: {name}: ok ({:.2} s)", started.elapsed().as_secs_f64()),
            Err(panic) => {
                let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                println!("sharded {what} contract: {name}: FAILED: {text}");
                failed.push(name);
            }
        }
    }
    assert!(failed.is_empty(), "failed on three {what} shards: {failed:?}");
}

/// Workers drain 3 shards × 20 groups × 5 messages while shard 1's server is killed and,
/// two seconds later, started again: the other shards' messages keep coming out, a publish
/// to a group of shard 1 fails with `Error::Connect` and one of shard 0 is stored, and in
/// the end every message came out once, each group in order.
#[test]
fn a_shard_killed_and_restarted_mid_run_loses_nothing() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("a_shard_killed_and_restarted_mid_run_loses_nothing");
    let _serial = serial();
    let mut servers = three(&binary);
    let mut o = Options::new();
    o.busy_timeout(30.0).unwrap();
    let t = open(&servers, &o).unwrap();
    let groups: Vec<String> = (0..60).map(|i| format!("g{i}")).collect();
    for k in 0..5 {
        let events: Vec<String> = groups.iter().map(|g| format!(r#"{{"g":"{g}","k":{k}}}"#)).collect();
        let batch: Vec<harel_transport::Message> = groups
            .iter()
            .zip(&events)
            .map(|(g, e)| harel_transport::Message { group_id: g, event_json: e, priority: 0, routing_key: None, headers: None })
            .collect();
        t.publish_many(&batch).unwrap();
    }
    let total = groups.len() * 5;
    let on = |s: usize| groups.iter().find(|g| shard_of(g, 3) == s).unwrap().clone();
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for _ in 0..total / 4 {
        assert!(take(&t, &mut out).unwrap());
    }
    servers[1].kill();
    let (mut served, mut refused) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        match take(&t, &mut out) {
            Ok(true) => served += 1,
            Ok(false) => break,
            Err(Error::Connect(m)) => {
                assert!(m.contains("shard 1"), "{m}");
                refused += 1;
                break;
            }
            Err(e) => panic!("with shard 1 down: {e:?}"),
        }
    }
    assert!(served > 0, "the other shards are served while shard 1 is down");
    println!("while shard 1 was down: {served} messages from the others, then {refused} refusal");
    match t.publish(&on(1), r#"{"late":1}"#, 0, None) {
        Err(Error::Connect(_)) => {}
        other => panic!("a publish to shard 1's group while it is down: {other:?}"),
    }
    t.publish(&on(0), r#"{"g":"x","k":5}"#, 0, None).expect("shard 0 takes publishes meanwhile");
    servers[1].restart();
    let deadline = Instant::now() + Duration::from_secs(60);
    while out.values().map(Vec::len).sum::<usize>() < total + 1 {
        match take(&t, &mut out) {
            Ok(true) => {}
            Ok(false) => std::thread::sleep(Duration::from_millis(50)),
            Err(Error::Connect(_)) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => panic!("after the restart: {e:?}"),
        }
        assert!(Instant::now() < deadline, "drained {} of {}", out.values().map(Vec::len).sum::<usize>(), total + 1);
    }
    for (g, ks) in &out {
        let want: Vec<u64> = if *g == on(0) { (0..=5).collect() } else { (0..5).collect() };
        assert_eq!(ks, &want, "{g}: each message once, in order");
    }
    assert_eq!(t.stats().unwrap().messages, 0);
}

/// Claims and acks one message, noting its k under its group.
fn take(t: &Transport, out: &mut BTreeMap<String, Vec<u64>>) -> harel_transport::Result<bool> {
    match t.claim("w", 30.0, 0, &[])? {
        Some(lease) => {
            let v: serde_json::Value = serde_json::from_str(&lease.event).unwrap();
            out.entry(lease.group_id.clone()).or_default().push(v["k"].as_u64().unwrap());
            t.ack(&lease)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Paths for three replica shards, new at every call: a replica's file is its transport's
/// own.
fn replica_paths(dir: &std::path::Path) -> Vec<String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    (0..3).map(|i| dir.join(format!("replica-{n}-{i}.db")).to_str().unwrap().to_owned()).collect()
}

/// `options` with the three servers as the primaries of three replica shards.
fn replica_options(servers: &[Sqld], options: &Options) -> Options {
    let urls: Vec<String> = servers.iter().map(Sqld::url).collect();
    let mut o = options.clone();
    o.sync_urls(&urls.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
    o
}

fn open_replicas(dir: &std::path::Path, servers: &[Sqld], options: &Options) -> harel_transport::Result<Transport> {
    let paths = replica_paths(dir);
    Transport::open_shards(&paths.iter().map(String::as_str).collect::<Vec<_>>(), &replica_options(servers, options))
}

#[test]
fn the_shared_contract_on_three_replica_shards() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("the_shared_contract_on_three_replica_shards");
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    // A new replica copies its primary's whole log when it opens, and every check writes to
    // it: on shared servers, each check's replicas opened slower than the last (the run
    // took minutes). So each check gets three servers of its own.
    on_every_check("replica", &|| {
        let servers = three(&binary);
        let dir = dir.path();
        Box::new(move |options: &Options| open_replicas(dir, &servers, options).expect("open three replica shards"))
    });
}

/// The set a list of replicas makes is recorded on the primaries: the same servers opened
/// as URLs are the same queue, and replicas of them in another order are refused.
#[test]
fn replica_shards_record_their_set_on_the_primaries() {
    let _limit = common::time_limit();
    let binary = sqld_or_skip!("replica_shards_record_their_set_on_the_primaries");
    let _serial = serial();
    let servers = three(&binary);
    let dir = tempfile::tempdir().unwrap();
    let t = open_replicas(dir.path(), &servers, &Options::new()).unwrap();
    assert_eq!(t.shard_count(), 3);
    for g in ["a", "b", "c", "d", "e", "f"] {
        t.publish(g, &format!(r#"{{"g":"{g}"}}"#), 0, None).unwrap();
    }
    let remote = open(&servers, &Options::new()).expect("the primaries as URLs are the same set");
    let listed: Vec<(String, usize)> =
        remote.groups(None, None, 10).unwrap().items.into_iter().map(|g| (g.group_id, g.shard)).collect();
    let want: Vec<(String, usize)> =
        ["a", "b", "c", "d", "e", "f"].iter().map(|g| (g.to_string(), shard_of(g, 3))).collect();
    assert_eq!(listed, want, "each group on its shard's primary");
    let lease = remote.claim("w", 30.0, 0, &[]).unwrap().unwrap();
    remote.ack(&lease).unwrap();
    assert_eq!(t.stats().unwrap().messages, 5, "the replicas see the primaries' writes");
    let reordered = [&servers[1], &servers[0], &servers[2]].map(Sqld::url);
    let mut o = Options::new();
    o.sync_urls(&reordered.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
    let paths = replica_paths(dir.path());
    match Transport::open_shards(&paths.iter().map(String::as_str).collect::<Vec<_>>(), &o) {
        Err(Error::Argument(m)) => assert!(m.contains("databases[0]") && m.contains("shard 1"), "{m}"),
        other => panic!("replicas of the primaries reordered: {:?}", other.map(|_| ())),
    }
}

fn refused(databases: &[&str], options: &Options, says: &str) {
    match Transport::open_shards(databases, options) {
        Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
        other => panic!("want Error::Argument saying {says:?}, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn replica_shards_need_one_primary_each() {
    let _limit = common::time_limit();
    let mut one = Options::new();
    one.sync_url(Some("http://127.0.0.1:9")).unwrap();
    refused(&["a.db", "b.db"], &one, "sync_url names one primary, and a list of 2 databases");
    let mut two = Options::new();
    two.sync_urls(&["http://127.0.0.1:9", "http://127.0.0.1:10"]).unwrap();
    refused(&["a.db", "b.db", "c.db"], &two, "sync_urls has 2 URLs and databases 3 paths");
    two.sync_url(Some("http://127.0.0.1:9")).unwrap();
    refused(&["a.db", "b.db"], &two, "sync_url and sync_urls are both set");
    for (urls, says) in
        [(&["http://x", "http://x"][..], "urls[1] repeats urls[0]"), (&["http://x", ""][..], "urls[1] is empty")]
    {
        match Options::new().sync_urls(urls) {
            Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
            other => panic!("{urls:?}: {:?}", other.map(|_| ())),
        }
    }
}
