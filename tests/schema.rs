//! The schema at `open`: upgrading a harel 0.9 file in place (also with several openers at
//! once), prefixes, `create_schema` off, and the statements `schema_sql` and
//! `schema_upgrade_sql` hand to a migration tool.

use harel_transport_testkit as common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{event, expect_success, file, harel_09_schema, temp_db, this_test_binary, Raw, TestClock};
use harel_transport::{schema_sql, schema_upgrade_sql, Error, Options, PauseTarget, Transport};

const V: f64 = 30.0;

/// A harel 0.9 file (no `routing_key`) holding one message of group "old", priority 2.
fn harel_09_file(path: &str, prefix: &str) -> Raw {
    let raw = Raw::open(path);
    raw.batch(&harel_09_schema(prefix));
    raw.batch(&format!(
        "INSERT INTO {prefix}_transport_messages (group_id, event) VALUES ('old', '{ev}');
         INSERT INTO {prefix}_transport_groups (group_id, priority) VALUES ('old', 2);",
        ev = event(0)
    ));
    assert!(!raw.columns(&format!("{prefix}_transport_groups")).contains(&"routing_key".to_owned()));
    raw
}

fn no_schema(clock: &TestClock) -> Options {
    let mut o = clock.options();
    o.create_schema(false);
    o
}

fn database_error(result: Result<Transport, Error>) -> String {
    match result {
        Err(Error::Database(m)) => m,
        Err(e) => panic!("expected Error::Database, got {e:?}"),
        Ok(_) => panic!("expected Error::Database, the open succeeded"),
    }
}

/// Claims, checks and acks the 0.9 file's message.
fn claim_the_old_message(t: &Transport) {
    let lease = t.claim("w", V, 0, &[]).unwrap().expect("the 0.9 message is claimable");
    assert_eq!((lease.group_id.as_str(), lease.event.as_str()), ("old", event(0).as_str()));
    t.ack(&lease).unwrap();
}

#[test]
fn a_harel_09_file_is_upgraded_in_place() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let raw = harel_09_file(&path, "harel");
    let clock = TestClock::at(1000.0);
    let t = file(&path, &clock);

    let columns = raw.columns("harel_transport_groups");
    assert_eq!(columns, ["group_id", "last_claimed_at", "priority", "routing_key"]);
    let columns = raw.columns("harel_transport_messages");
    let ours = [
        "attempts",
        "enqueued_at",
        "headers",
        "unique_key",
        "expires_at",
        "claimed_at",
        "retry",
        "retry_delay",
        "limited_key",
    ];
    assert_eq!(columns, [&["seq", "group_id", "event", "locked_by", "lock_expiry"][..], &ours].concat());
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_messages WHERE attempts = 0"), raw.count("SELECT count(*) FROM harel_transport_messages"), "old messages start at 0 claims");
    let index = raw.rows("SELECT name FROM pragma_index_info('harel_transport_groups_by_routing_key') ORDER BY seqno");
    assert_eq!(
        index,
        [["routing_key"], ["last_claimed_at"]],
        "the routing index exists, on (routing_key, last_claimed_at)"
    );
    assert_eq!(raw.count("SELECT count(*) FROM harel_transport_groups WHERE routing_key IS NULL"), 1);

    assert!(t.claim("w", V, 3, &[]).unwrap().is_none(), "the old group kept its priority 2");
    assert!(t.claim("w", V, 0, &["k"]).unwrap().is_none(), "the old group has no routing key");
    claim_the_old_message(&t);
    t.publish("new", &event(1), 0, Some("k")).unwrap();
    assert_eq!(t.claim("w", V, 0, &["k"]).unwrap().unwrap().group_id, "new");
    drop(t);

    let again = file(&path, &clock);
    assert_eq!(raw.columns("harel_transport_groups").len(), 4, "a second open changes nothing");
    assert!(again.claim("w", V, 0, &[]).unwrap().is_none(), "new is still leased");
}

#[test]
fn threads_opening_a_harel_09_file_at_once_all_succeed() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let _raw = harel_09_file(&path, "harel");
    let barrier = std::sync::Barrier::new(4);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                barrier.wait();
                Transport::open(&path, &Options::new()).expect("open at the same moment");
            });
        }
    });
    claim_the_old_message(&file(&path, &TestClock::at(1000.0)));
}

/// Several processes wait for one go signal, then open the same 0.9 file: every open must
/// succeed (the ALTER runs once, under the write lock) and each can publish at once.
#[test]
fn processes_opening_a_harel_09_file_at_once_all_succeed() {
    let _limit = common::time_limit();
    for round in 0..3 {
        let (dir, path) = temp_db();
        let raw = harel_09_file(&path, "harel");
        open_at_once(dir.path(), &path, &format!("round {round}"));
        assert_eq!(raw.columns("harel_transport_groups").len(), 4);
        let t = file(&path, &TestClock::at(1000.0));
        claim_the_old_message(&t);
        expect_one_message_per_process(&t);
    }
}

/// The same with no file yet: each process may be the one that creates it.
#[test]
fn processes_creating_a_new_file_at_once_all_succeed() {
    let _limit = common::time_limit();
    for round in 0..2 {
        let (dir, path) = temp_db();
        open_at_once(dir.path(), &path, &format!("round {round}"));
        expect_one_message_per_process(&file(&path, &TestClock::at(1000.0)));
    }
}

const PROCESSES: usize = 4;

fn open_at_once(dir: &Path, path: &str, what: &str) {
    let go = dir.join("go");
    let children: Vec<_> = (0..PROCESSES)
        .map(|n| {
            this_test_binary("open_worker")
                .env("HAREL_TEST_DB", path)
                .env("HAREL_TEST_GO", &go)
                .env("HAREL_TEST_READY", dir.join(format!("ready-{n}")))
                .env("HAREL_TEST_GROUP", format!("p{n}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a process")
        })
        .collect();
    let ready = |n: usize| dir.join(format!("ready-{n}")).exists();
    wait_for(|| (0..PROCESSES).all(ready), "every process to be ready");
    std::fs::write(&go, "").unwrap();
    for (n, child) in children.into_iter().enumerate() {
        expect_success(child, &format!("{what}, process {n}"));
    }
}

fn expect_one_message_per_process(t: &Transport) {
    let mut groups: Vec<String> = (0..PROCESSES).map(|_| t.claim("w", V, 0, &[]).unwrap().unwrap().group_id).collect();
    groups.sort();
    assert_eq!(groups, (0..PROCESSES).map(|n| format!("p{n}")).collect::<Vec<_>>());
    assert!(t.claim("w", V, 0, &[]).unwrap().is_none());
}

fn wait_for(done: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The process side of the `processes_..._at_once` tests.
#[test]
#[ignore = "run in a process of its own by the processes_..._at_once tests"]
fn open_worker() {
    let _limit = common::time_limit();
    let Ok(path) = std::env::var("HAREL_TEST_DB") else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    std::fs::write(var("HAREL_TEST_READY"), "").unwrap();
    let go = var("HAREL_TEST_GO");
    wait_for(|| Path::new(&go).exists(), "the go signal");
    let t = Transport::open(&path, &Options::new()).expect("open at the same moment");
    t.publish(&var("HAREL_TEST_GROUP"), &event(1), 0, None).expect("publish after open");
}

#[test]
fn prefixes_are_isolated() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let with_prefix = |p: &str| {
        let mut o = clock.options();
        o.prefix(p).unwrap();
        Transport::open(&path, &o).unwrap()
    };
    let (a, b, default) = (with_prefix("a"), with_prefix("tenant_b"), file(&path, &clock));
    a.publish("g", &event(1), 0, None).unwrap();
    b.publish("g", &event(2), 0, None).unwrap();
    b.publish("h", &event(3), 0, None).unwrap();

    assert!(default.claim("w", V, 0, &[]).unwrap().is_none(), "harel_ sees neither");
    let from_a = a.claim("wa", V, 0, &[]).unwrap().unwrap();
    assert_eq!((from_a.group_id.as_str(), from_a.event.as_str()), ("g", event(1).as_str()));
    assert!(a.claim("w", V, 0, &[]).unwrap().is_none(), "a sees only its own message");
    let from_b = b.claim("w", V, 0, &[]).unwrap().unwrap();
    assert_eq!((from_b.group_id.as_str(), from_b.event.as_str()), ("g", event(2).as_str()), "b's g is not in flight");
    assert_eq!(b.claim("w", V, 0, &[]).unwrap().unwrap().event, event(3));
    assert_eq!(from_a.seq, from_b.seq, "each prefix has its own seqs");
    assert!(matches!(b.ack(&from_a), Err(Error::LeaseLost(_))), "a's lease means nothing to b");
    a.ack(&from_a).unwrap();
    b.ack(&from_b).unwrap();

    let tables: Vec<String> =
        Raw::open(&path).objects().into_iter().filter(|(ty, _)| ty == "table").map(|(_, name)| name).collect();
    let mut expected: Vec<String> = ["a", "harel", "tenant_b"]
        .iter()
        .flat_map(|p| {
            ["archive", "dead", "groups", "keys", "limits", "messages", "pauses"]
                .map(|table| format!("{p}_transport_{table}"))
        })
        .collect();
    expected.sort();
    assert_eq!(tables, expected);
}

#[test]
fn create_schema_off_with_no_tables_fails_at_open_naming_them() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    let message = database_error(Transport::open(&path, &no_schema(&clock)));
    assert!(message.contains("harel_transport_messages"), "{message}");
    assert!(message.contains("harel_transport_groups"), "{message}");
    assert!(Raw::open(&path).objects().is_empty(), "nothing was created");

    let mut custom = no_schema(&clock);
    custom.prefix("acme").unwrap();
    let message = database_error(Transport::open(&path, &custom));
    assert!(message.contains("acme_transport_messages"), "{message}");
}

#[test]
fn create_schema_off_with_one_table_missing_fails_at_open() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let raw = Raw::open(&path);
    raw.batch(&harel_09_schema("harel"));
    raw.batch("DROP TABLE harel_transport_groups");
    let message = database_error(Transport::open(&path, &no_schema(&TestClock::at(1000.0))));
    assert!(message.contains("harel_transport_groups"), "{message}");
}

#[test]
fn create_schema_off_on_a_harel_09_file_fails_naming_what_it_lacks() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let raw = harel_09_file(&path, "harel");
    let message = database_error(Transport::open(&path, &no_schema(&TestClock::at(1000.0))));
    for lacking in ["the table harel_transport_dead", "harel_transport_groups.routing_key", "harel_transport_messages.attempts", "harel_transport_messages.enqueued_at"] {
        assert!(message.contains(lacking), "names {lacking}: {message}");
    }
    assert_eq!(raw.columns("harel_transport_groups").len(), 3, "nothing was altered");
}

#[test]
fn create_schema_off_with_the_tables_present_works() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let clock = TestClock::at(1000.0);
    file(&path, &clock).publish("g", &event(1), 0, None).unwrap();
    let before = Raw::open(&path).objects();
    let t = Transport::open(&path, &no_schema(&clock)).expect("the tables are there");
    t.publish("g", &event(2), 0, None).unwrap();
    for n in 1..=2 {
        let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
        assert_eq!(lease.event, event(n));
        t.ack(&lease).unwrap();
    }
    assert_eq!(Raw::open(&path).objects(), before, "create_schema off created nothing");
}

/// A file made before pauses (or with a trigger dropped), opened with create_schema off,
/// works; only pause and resume are refused, naming what is missing.
#[test]
fn create_schema_off_without_the_pauses_refuses_only_pause_and_resume() {
    let _limit = common::time_limit();
    let clock = TestClock::at(1000.0);
    for drop in ["DROP TABLE harel_transport_pauses", "DROP TRIGGER harel_transport_groups_paused_turn"] {
        let (_dir, path) = temp_db();
        file(&path, &clock).publish("g", &event(1), 0, None).unwrap();
        Raw::open(&path).batch(drop);
        let t = Transport::open(&path, &no_schema(&clock)).expect("pauses are optional");
        for outcome in [t.pause(PauseTarget::Queue), t.resume(PauseTarget::Group("g"))] {
            match outcome {
                Err(Error::Database(m)) => {
                    assert!(m.contains("harel_transport_pauses or its triggers are missing"), "{drop}: {m}")
                }
                other => panic!("{drop}: {other:?}"),
            }
        }
        assert!(t.pauses().unwrap().is_empty());
        assert_eq!(t.stats().unwrap().paused, 0);
        t.ack(&t.claim("w", V, 0, &[]).unwrap().unwrap()).unwrap();
    }
}

/// A file made before the archive, opened with create_schema off, works with the archive
/// off (its look finds nothing); with the archive on, open is refused, naming the table.
#[test]
fn create_schema_off_without_the_archive_refuses_only_to_keep_one() {
    let _limit = common::time_limit();
    let clock = TestClock::at(1000.0);
    let (_dir, path) = temp_db();
    file(&path, &clock).publish("g", &event(1), 0, None).unwrap();
    Raw::open(&path).batch("DROP TABLE harel_transport_archive");
    let t = Transport::open(&path, &no_schema(&clock)).expect("the archive is optional while off");
    assert!(t.archive(None, None, 10).unwrap().items.is_empty());
    t.ack(&t.claim("w", V, 0, &[]).unwrap().unwrap()).unwrap();
    drop(t);
    let mut archiving = no_schema(&clock);
    archiving.archive(3600.0).unwrap();
    let message = database_error(Transport::open(&path, &archiving));
    assert!(message.contains("the table harel_transport_archive is missing"), "{message}");
    assert!(Raw::open(&path).objects().iter().all(|(_, name)| name != "harel_transport_archive"), "nothing made");
}

#[test]
fn schema_sql_gives_the_schema_open_creates() {
    let _limit = common::time_limit();
    let script = schema_sql("harel").unwrap();
    for line in script.lines() {
        assert!(line.starts_with("CREATE ") && line.ends_with(';'), "one statement per line: {line}");
    }
    assert!(script.ends_with(";\n"));

    let (_dir, by_tool) = temp_db();
    let raw = Raw::open(&by_tool);
    raw.batch(&script);
    raw.batch(&script); // idempotent
    let (_dir2, by_open) = temp_db();
    drop(file(&by_open, &TestClock::at(1000.0)));
    let schema = |r: &Raw| r.rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name");
    assert_eq!(schema(&raw), schema(&Raw::open(&by_open)), "the same tables and indexes, to the letter");

    let t = Transport::open(&by_tool, &no_schema(&TestClock::at(1000.0))).expect("create_schema off opens it");
    t.publish("g", &event(1), 1, Some("k")).unwrap();
    let lease = t.claim("w", V, 1, &["k"]).unwrap().unwrap();
    t.ack(&lease).unwrap();
}

#[test]
fn schema_sql_names_only_its_prefix() {
    let _limit = common::time_limit();
    let script = schema_sql("tenant_7").unwrap();
    let (_dir, path) = temp_db();
    let raw = Raw::open(&path);
    raw.batch(&script);
    let objects = raw.objects();
    assert_eq!(objects.len(), 24, "7 tables, 13 indexes, 4 triggers: {objects:?}");
    assert!(objects.iter().all(|(_, name)| name.starts_with("tenant_7_transport_")), "{objects:?}");
    let mut o = no_schema(&TestClock::at(1000.0));
    o.prefix("tenant_7").unwrap();
    Transport::open(&path, &o).expect("opens under its prefix");
    assert!(Transport::open(&path, &no_schema(&TestClock::at(1000.0))).is_err(), "harel_ tables do not exist");
}

#[test]
fn schema_upgrade_sql_upgrades_a_harel_09_file() {
    let _limit = common::time_limit();
    let script = schema_upgrade_sql("harel").unwrap();
    assert!(script.lines().all(|l| l.ends_with(';')), "{script}");
    let (_dir, by_tool) = temp_db();
    let raw = harel_09_file(&by_tool, "harel");
    raw.batch(&script);
    assert!(raw.try_batch(&script).is_err(), "not idempotent: the ALTER fails a second time");

    let (_dir2, by_open) = temp_db();
    let upgraded_by_open = harel_09_file(&by_open, "harel");
    drop(file(&by_open, &TestClock::at(1000.0)));
    let schema = |r: &Raw| r.rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name");
    assert_eq!(schema(&raw), schema(&upgraded_by_open), "the tool's upgrade equals open's");

    let t = Transport::open(&by_tool, &no_schema(&TestClock::at(1000.0))).expect("create_schema off opens it");
    claim_the_old_message(&t);
}

const BAD_PREFIXES: &[&str] = &["", "1abc", "a-b", "a b", "préfixe", "é", "x;DROP TABLE y", "tab\tle", "a.b"];

#[test]
fn bad_prefixes_are_rejected() {
    let _limit = common::time_limit();
    let too_long = "a".repeat(31);
    let bad = BAD_PREFIXES.iter().copied().chain([too_long.as_str()]);
    for prefix in bad {
        let mut o = Options::new();
        match o.prefix(prefix) {
            Err(Error::Argument(m)) => assert!(m.contains("prefix"), "{prefix:?}: {m}"),
            other => panic!("{prefix:?}: expected Error::Argument, got {:?}", other.map(|_| ())),
        }
        assert_eq!(o.get_prefix(), "harel", "{prefix:?}: a rejected prefix is not kept");
        for result in [schema_sql(prefix), schema_upgrade_sql(prefix)] {
            match result {
                Err(Error::Argument(m)) => assert!(m.contains("prefix"), "{prefix:?}: {m}"),
                other => panic!("{prefix:?}: expected Error::Argument, got {other:?}"),
            }
        }
    }
}

#[test]
fn good_prefixes_are_accepted() {
    let _limit = common::time_limit();
    let longest = "a".repeat(30);
    for prefix in ["a", "_", "_9", "A_b9", "harel", longest.as_str()] {
        Options::new().prefix(prefix).unwrap_or_else(|e| panic!("{prefix:?}: {e}"));
        assert!(schema_sql(prefix).unwrap().contains(&format!("{prefix}_transport_groups")));
        schema_upgrade_sql(prefix).unwrap();
    }
}

fn as_is(clock: &TestClock) -> Options {
    let mut o = clock.options();
    o.schema_as_is(true);
    o
}

/// `schema_as_is` opens a harel 0.9 file as it is: every look reads what its columns hold
/// (harel's claim-instant lease and park counted from the rows), `absent` names what it
/// lacks, and every write is refused naming it, with nothing of the file changed.
#[test]
fn schema_as_is_looks_at_a_harel_09_file_and_changes_nothing() {
    let _limit = common::time_limit();
    let (_dir, path) = temp_db();
    let raw = harel_09_file(&path, "harel");
    // As harel's SqliteTransport leaves them at 1000: "old" leased (claim-instant stamp),
    // "parked" parked, "free" ready.
    raw.batch(&format!(
        "UPDATE harel_transport_messages SET locked_by = 'py', lock_expiry = 1600 WHERE group_id = 'old';
         UPDATE harel_transport_groups SET last_claimed_at = 1000 WHERE group_id = 'old';
         INSERT INTO harel_transport_messages (group_id, event, locked_by, lock_expiry)
           VALUES ('parked', '{ev}', '__parked__', 1700), ('free', '{ev}', NULL, NULL), ('free', '{ev}', NULL, NULL);
         INSERT INTO harel_transport_groups (group_id, last_claimed_at) VALUES ('parked', 990), ('free', 0);",
        ev = event(1)
    ));
    let before = raw.objects();
    let clock = TestClock::at(1000.0);
    let t = Transport::open(&path, &as_is(&clock)).expect("opened as it is");
    assert_eq!(
        t.absent(),
        [
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
        ]
    );

    let s = t.stats().unwrap();
    assert_eq!((s.messages, s.groups, s.ready, s.leased, s.parked, s.dead), (4, 3, 1, 1, 1, 0), "{s:?}");
    assert_eq!((s.oldest_ready_age, s.oldest_ready_seq, s.next_release_at), (None, Some(3), Some(1600.0)), "{s:?}");
    let listed = |state| {
        let page = t.groups(state, None, 10).unwrap();
        page.items.iter().map(|g| (g.group_id.clone(), g.state.name(), g.head_attempts)).collect::<Vec<_>>()
    };
    assert_eq!(
        listed(None),
        [("free".into(), "ready", 0), ("old".into(), "leased", 0), ("parked".into(), "parked", 0)]
    );
    assert_eq!(listed(Some(harel_transport::GroupState::Leased)), [("old".to_owned(), "leased", 0)]);
    assert_eq!(listed(Some(harel_transport::GroupState::Parked)), [("parked".to_owned(), "parked", 0)]);
    let old = &t.groups(None, None, 10).unwrap().items[1];
    assert_eq!((old.holder.as_deref(), old.routing_key.as_deref(), old.head_age), (Some("py"), None, None));
    let peeked = t.peek("free", None, 10).unwrap().items;
    assert_eq!(peeked.iter().map(|m| (m.attempts, m.published_at)).collect::<Vec<_>>(), [(0, None), (0, None)]);
    assert!(t.dead_letters(None, None, 10).unwrap().items.is_empty());

    let refused = |what: &str, result: Result<(), Error>| match result {
        Err(Error::Database(m)) => {
            assert!(m.starts_with(&format!("{what}: ")), "{what}: {m}");
            for part in ["harel_transport_messages.attempts", "the table harel_transport_dead", "create_schema on"] {
                assert!(m.contains(part), "{what} names {part}: {m}");
            }
        }
        other => panic!("{what}: expected Error::Database, got {other:?}"),
    };
    refused("publish", t.publish("g", &event(2), 0, None));
    refused("claim", t.claim("w", V, 0, &[]).map(drop));
    refused("purge", t.purge().map(drop));
    refused("purge_group", t.purge_group("free").map(drop));
    refused("release", t.release("old").map(drop));
    refused("redrive", t.redrive(harel_transport::DeadLetters::All).map(drop));
    refused("purge_dead", t.purge_dead(harel_transport::DeadLetters::All).map(drop));
    refused("pause", t.pause(harel_transport::PauseTarget::Queue).map(drop));
    refused("resume", t.resume(harel_transport::PauseTarget::Group("old")).map(drop));
    assert!(t.pauses().unwrap().is_empty(), "no pauses table: none in force");
    assert!(t.archive(None, None, 10).unwrap().items.is_empty(), "no archive table: nothing archived");
    drop(t);
    assert_eq!(raw.objects(), before, "opened as it is, the file is as it was");
    assert_eq!(raw.rows("SELECT count(*) FROM harel_transport_messages"), [["4"]]);

    // A file without harel's tables is not a queue; one with all of ours lacks nothing.
    let (_dir2, empty) = temp_db();
    Raw::open(&empty).batch("CREATE TABLE other (x)");
    let message = database_error(Transport::open(&empty, &as_is(&clock)));
    assert!(message.contains("harel_transport_messages") && message.contains("harel_transport_groups"), "{message}");
    let full = file(&path, &clock);
    drop(full);
    let t = Transport::open(&path, &as_is(&clock)).unwrap();
    assert!(t.absent().is_empty());
    t.publish("g", &event(3), 0, None).expect("a full schema is written as usual");
}
