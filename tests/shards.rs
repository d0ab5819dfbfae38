//! A queue sharded over three local files (docs/queue.md, "Sharded queues"): the shared
//! contract, and what only a sharded queue has — the set each database records and the
//! lists refused against it, groups found on the wrong shard, processes draining it.

use harel_transport_testkit as common;

use common::contract::{Check, CHECKS, OTHERWISE_SHARDED as OTHERWISE};
use common::TestClock;
use harel_transport::{shard_of, Error, Options, Transport};

/// Three file paths in a directory of their own.
fn three_files() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = (0..3).map(|i| dir.path().join(format!("shard{i}.db")).to_str().unwrap().to_owned()).collect();
    (dir, paths)
}

fn open(paths: &[String], options: &Options) -> harel_transport::Result<Transport> {
    let list: Vec<&str> = paths.iter().map(String::as_str).collect();
    Transport::open_shards(&list, options)
}

fn on_three_files(check: Check) {
    let (_dir, paths) = three_files();
    check(&|options: &Options| open(&paths, options).expect("open three shards"));
}

#[test]
fn the_shared_contract_on_three_files() {
    let _limit = common::time_limit();
    for (name, _) in OTHERWISE {
        assert!(CHECKS.iter().any(|(check, _)| check == name), "{name} is not a check of the contract");
    }
    let mut failed = Vec::new();
    for &(name, check) in CHECKS.iter().filter(|(name, _)| !OTHERWISE.iter().any(|(o, _)| o == name)) {
        if let Err(panic) = std::panic::catch_unwind(|| on_three_files(check)) {
            let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
            println!("sharded contract: {name}: FAILED: {text}");
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "failed on three shards: {failed:?}");
}

/// A group id that lives on shard `shard` of `n`, the `k`-th such.
fn group_on(shard: usize, n: usize, k: usize) -> String {
    (0..).map(|i| format!("s{shard}-{i}")).filter(|g| shard_of(g, n) == shard).nth(k).unwrap()
}

fn refused(paths: &[&str], says: &str) {
    match Transport::open_shards(paths, &Options::new()) {
        Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
        other => panic!("{paths:?}: want Error::Argument saying {says:?}, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn the_set_is_recorded_and_a_list_that_does_not_match_is_refused() {
    let _limit = common::time_limit();
    let (dir, paths) = three_files();
    let list: Vec<&str> = paths.iter().map(String::as_str).collect();
    let t = Transport::open_shards(&list, &Options::new()).unwrap();
    assert_eq!(t.shard_count(), 3);
    for s in 0..3 {
        t.publish(&group_on(s, 3, 0), "{}", 0, None).unwrap();
    }
    drop(t);
    let other: Vec<String> =
        (0..2).map(|i| dir.path().join(format!("other{i}.db")).to_str().unwrap().to_owned()).collect();
    drop(Transport::open_shards(&[other[0].as_str(), other[1].as_str()], &Options::new()).unwrap());
    let lone = dir.path().join("lone.db").to_str().unwrap().to_owned();
    Transport::open(&lone, &Options::new()).unwrap().publish("g", "{}", 0, None).unwrap();
    let empty = dir.path().join("empty.db").to_str().unwrap().to_owned();
    drop(Transport::open(&empty, &Options::new()).unwrap()); // a queue of its own, empty
    let missing = dir.path().join("missing.db").to_str().unwrap().to_owned();

    refused(&list[..2], "1 database is missing");
    refused(&[list[0], list[1], list[2], &empty], "1 database is extra");
    refused(&[list[1], list[0], list[2]], "is shard 1 of queue");
    refused(&[list[0], list[1], &other[1]], "belongs to another sharded queue");
    refused(&[list[0], list[1], &empty], "the set is in use");
    refused(&[list[0], list[1], &missing], "databases[2] (");
    refused(&[list[0], list[1], &missing], "does not exist");
    refused(&[list[0]], "is shard 0 of 3 of the sharded queue");
    refused(&[&empty, &lone], "databases[1] (");
    refused(&[&empty, &lone], "holds messages and belongs to no shard set");
    refused(&[], "databases has 0 entries");
    refused(&[list[0], list[0]], "databases[1] repeats databases[0]");
    refused(&[list[0], ""], "databases[1] is empty");
    let spelled = list[0].replace("/shard0.db", "/./shard0.db");
    refused(&[list[0], list[1], &spelled], "databases[2] (");
    refused(&[list[0], list[1], &spelled], "is the file databases[0]");
    match Transport::open(list[2], &Options::new()) {
        Err(Error::Argument(m)) => assert!(m.contains("shard 2 of 3"), "{m}"),
        other => panic!("a member alone: {:?}", other.map(|_| ())),
    }
    let t = Transport::open_shards(&list, &Options::new()).expect("the same list again");
    assert_eq!(t.stats().unwrap().messages, 3, "the refusals changed nothing");
    let per_shard: Vec<u64> = t.shard_stats().unwrap().iter().map(|s| s.messages).collect();
    assert_eq!(per_shard, [1, 1, 1], "each group on the shard its hash names");
}

/// What a database holds: every message and group row, and its record of a set if it has one.
fn contents(path: &str) -> Vec<Vec<String>> {
    let raw = common::Raw::open(path);
    let mut all = raw.snapshot("harel");
    if raw.objects().iter().any(|(_, name)| name == "harel_transport_shard") {
        all.extend(raw.rows("SELECT queue_id, shard, shards FROM harel_transport_shard"));
    }
    all
}

/// `path` and the files SQLite and our lock keep beside it: none of them exists.
fn nothing_at(path: &str) {
    for file in ["", "-wal", "-shm", "-harel"].map(|s| format!("{path}{s}")) {
        assert!(!std::path::Path::new(&file).exists(), "a refused open left {file}");
    }
}

/// A refused open creates nothing: each new path it named stays absent (with its -wal,
/// -shm and -harel files), and the databases that were there hold what they held.
#[test]
fn a_refused_open_leaves_no_new_file_and_changes_nothing() {
    let _limit = common::time_limit();
    let (dir, paths) = three_files();
    let list: Vec<&str> = paths.iter().map(String::as_str).collect();
    let t = Transport::open_shards(&list, &Options::new()).unwrap();
    for s in 0..3 {
        t.publish(&group_on(s, 3, 0), "{}", 0, None).unwrap();
    }
    drop(t);
    let lone = dir.path().join("lone.db").to_str().unwrap().to_owned();
    Transport::open(&lone, &Options::new()).unwrap().publish("g", "{}", 0, None).unwrap();
    let new = dir.path().join("new.db").to_str().unwrap().to_owned();
    let same_new = dir.path().join(".").join("new.db").to_str().unwrap().to_owned();
    let before: Vec<_> = paths.iter().chain([&lone]).map(|p| contents(p)).collect();

    refused(&[list[0], list[1], list[2], &new], "1 database is extra");
    nothing_at(&new);
    refused(&[&new, &lone], "databases[1] (");
    nothing_at(&new);
    refused(&[&new, &same_new], "databases[1] (");
    refused(&[&new, &same_new], "is the file databases[0]");
    nothing_at(&new);

    let after: Vec<_> = paths.iter().chain([&lone]).map(|p| contents(p)).collect();
    assert_eq!(after, before, "the refusals changed nothing");
    assert_eq!(open(&paths, &Options::new()).unwrap().stats().unwrap().messages, 3);
}

/// A mistyped path in the list, beside a set whose messages are all on the shard the path
/// should have named, parked or delayed: no database of the list holds a message, yet the
/// set is in use. Refused, and the mistyped path is not made a shard (nor a file).
#[test]
fn a_mistyped_path_beside_a_set_whose_messages_are_parked_or_delayed_is_refused() {
    let _limit = common::time_limit();
    for how in ["parked", "delayed"] {
        let (dir, paths) = three_files();
        let clock = TestClock::at(1000.0);
        let t = open(&paths, &clock.options()).unwrap();
        let g = group_on(2, 3, 0);
        if how == "parked" {
            t.publish(&g, "{}", 0, None).unwrap();
            let lease = t.claim("w", 30.0, 0, &[]).unwrap().unwrap();
            t.nack(&lease, 3600.0).unwrap();
        } else {
            let message = harel_transport::Message { group_id: &g, event_json: "{}", priority: 0, routing_key: None, headers: None };
            t.publish_with(message, harel_transport::Delivery { delay: 3600.0, ..Default::default() }).unwrap();
        }
        assert_eq!(t.stats().unwrap().messages, 1, "{how}");
        drop(t);
        let typo = dir.path().join("shard2.bd").to_str().unwrap().to_owned();
        let before: Vec<_> = paths.iter().map(|p| contents(p)).collect();
        refused(&[&paths[0], &paths[1], &typo], "databases[2] (");
        nothing_at(&typo);
        assert_eq!(paths.iter().map(|p| contents(p)).collect::<Vec<_>>(), before, "{how}: nothing written");
        let t = open(&paths, &clock.options()).expect("the right list still opens");
        assert_eq!(t.shard_stats().unwrap()[2].messages, 1, "{how}");
    }
}

/// `ack_many` with one shard's write lock held past the busy timeout (another connection's
/// BEGIN IMMEDIATE): each lease of that shard gets the busy error an `ack` of it gets, not
/// a lost lease (it is still held: acked once the lock is free), and the other shards'
/// leases their own outcomes; in the C ABI, each its status.
#[test]
fn ack_many_gives_each_lease_of_a_busy_shard_the_busy_error() {
    let _limit = common::time_limit();
    use harel_transport::ffi::{
        harel_lease, harel_options_free, harel_options_new, harel_options_set_busy_timeout, harel_status,
        harel_transport_ack_many, harel_transport_close, harel_transport_open_shards,
    };
    use std::ffi::CString;
    use std::ptr::null_mut;
    let (_dir, paths) = three_files();
    let mut options = Options::new();
    options.busy_timeout(0.2).unwrap();
    let t = open(&paths, &options).unwrap();
    let c_paths: Vec<CString> = paths.iter().map(|p| CString::new(p.as_str()).unwrap()).collect();
    let c_list: Vec<*const std::ffi::c_char> = c_paths.iter().map(|p| p.as_ptr()).collect();
    let (o, mut ct) = (harel_options_new(), null_mut());
    assert_eq!(harel_options_set_busy_timeout(o, 0.2, null_mut()), harel_status::HAREL_OK);
    assert_eq!(harel_transport_open_shards(c_list.as_ptr(), 3, o, &mut ct, null_mut()), harel_status::HAREL_OK);
    harel_options_free(o);
    for k in 0..2 {
        for s in 0..2 {
            t.publish(&group_on(s, 3, k), "{}", 0, None).unwrap();
        }
    }
    let leases: Vec<harel_transport::Lease> = std::iter::from_fn(|| t.claim("w", 60.0, 0, &[]).unwrap()).collect();
    assert_eq!(leases.len(), 4);
    let on_busy = |l: &harel_transport::Lease| shard_of(&l.group_id, 3) == 1;
    let holder = common::Raw::open(&paths[1]);
    holder.batch("BEGIN IMMEDIATE");
    let alone = t.ack(leases.iter().find(|l| on_busy(l)).unwrap());
    assert!(matches!(alone, Err(Error::Busy(_))), "an ack on the busy shard: {alone:?}");

    // The C face: the leases as a binding fills them, one status each.
    let strings: Vec<[CString; 2]> = leases
        .iter()
        .map(|l| [CString::new(l.group_id.as_str()).unwrap(), CString::new(l.worker_id.as_str()).unwrap()])
        .collect();
    let c_leases: Vec<harel_lease> = leases
        .iter()
        .zip(&strings)
        .map(|(l, [g, w])| harel_lease {
            seq: l.seq,
            group_id: g.as_ptr() as *mut _,
            group_id_len: l.group_id.len(),
            event: g.as_ptr() as *mut _,
            event_len: 0,
            worker_id: w.as_ptr() as *mut _,
            lock_expiry: l.lock_expiry,
            attempts: l.attempts,
            headers: std::ptr::null(),
            n_headers: 0,
        })
        .collect();
    let pointers: Vec<*const harel_lease> = c_leases.iter().map(|l| l as *const _).collect();
    let mut statuses = vec![harel_status::HAREL_OK; 4];
    let status = harel_transport_ack_many(ct, pointers.as_ptr(), 4, statuses.as_mut_ptr(), null_mut());
    assert_eq!(status, harel_status::HAREL_OK);
    let want: Vec<harel_status> =
        leases.iter().map(|l| if on_busy(l) { harel_status::HAREL_ERR_BUSY } else { harel_status::HAREL_OK }).collect();
    assert_eq!(statuses, want, "C: the busy shard's leases HAREL_ERR_BUSY, the others acked");
    harel_transport_close(ct);

    // The Rust face: the other shard's leases were acked just now, so they are lost.
    for (lease, outcome) in leases.iter().zip(t.ack_many(&leases).unwrap()) {
        match on_busy(lease) {
            true => assert!(matches!(outcome, Err(Error::Busy(_))), "a lease of the busy shard: {outcome:?}"),
            false => assert!(matches!(outcome, Err(Error::LeaseLost(_))), "acked by the C call: {outcome:?}"),
        }
    }
    holder.batch("ROLLBACK");
    for lease in leases.iter().filter(|l| on_busy(l)) {
        t.ack(lease).expect("the busy shard's leases were still held");
    }
    assert_eq!(t.stats().unwrap().messages, 0);
}

/// `ack_and_claim` (and `_many`) on a sharded queue whose other shard is busy past the busy
/// timeout: the ack commits on the lease's shard, the claim that follows fails on the busy
/// one, and the call returns the ack's outcome with no lease, not that error, which would
/// say nothing was acked (the faults matrix found it on sqld: "shard 0 ... could not be
/// reached (nothing was applied)" for an ack that was committed).
#[test]
fn ack_and_claim_is_not_failed_by_another_shard_once_its_ack_committed() {
    let _limit = common::time_limit();
    let (_dir, paths) = three_files();
    let mut options = Options::new();
    options.busy_timeout(0.2).unwrap();
    let t = open(&paths, &options).unwrap();
    for k in 0..2 {
        t.publish(&group_on(0, 3, k), "{}", 0, None).unwrap();
    }
    let first = t.claim("w", 60.0, 0, &[]).unwrap().expect("a message of shard 0");
    let second = t.claim("w", 60.0, 0, &[]).unwrap().expect("the other message of shard 0");
    let holder = common::Raw::open(&paths[1]);
    holder.batch("BEGIN IMMEDIATE");
    let next = t.ack_and_claim(&first, "w", 60.0, 0, &[]);
    assert!(matches!(next, Ok(None)), "acked, nothing claimed: {next:?}");
    let (acked, claimed) = t.ack_and_claim_many(&[second], "w", 60.0, 0, &[], 5).expect("acked");
    assert!(acked[0].is_ok() && claimed.is_empty(), "{acked:?} {claimed:?}");
    holder.batch("ROLLBACK");
    assert_eq!(t.stats().unwrap().messages, 0, "both acks were committed");
}

#[test]
fn claims_take_the_shards_in_turn_and_listings_show_the_shard() {
    let _limit = common::time_limit();
    let (_dir, paths) = three_files();
    let t = open(&paths, &Options::new()).unwrap();
    for k in 0..2 {
        for s in 0..3 {
            t.publish(&group_on(s, 3, k), &format!(r#"{{"k":{k}}}"#), 0, None).unwrap();
        }
    }
    let groups = t.groups(None, None, 10).unwrap();
    assert_eq!(groups.items.len(), 6);
    assert!(groups.items.windows(2).all(|w| w[0].group_id < w[1].group_id), "in group id order");
    assert!(groups.items.iter().all(|g| g.shard == shard_of(&g.group_id, 3)), "{:?}", groups.items);
    let first = t.groups(None, None, 4).unwrap();
    let rest = t.groups(None, first.next.as_deref(), 4).unwrap();
    assert_eq!((first.items.len(), rest.items.len(), rest.next), (4, 2, None), "paged across shards");
    let mut shards = Vec::new();
    while let Some(lease) = t.claim("w", 30.0, 0, &[]).unwrap() {
        shards.push(shard_of(&lease.group_id, 3));
        t.ack(&lease).unwrap();
    }
    assert_eq!(shards.len(), 6);
    assert!(shards.windows(2).all(|w| w[0] != w[1]), "each claim starts at the next shard: {shards:?}");
}

#[test]
fn batches_split_by_shard_and_keep_each_groups_order() {
    let _limit = common::time_limit();
    let (_dir, paths) = three_files();
    let t = open(&paths, &Options::new()).unwrap();
    let groups: Vec<String> = (0..3).map(|s| group_on(s, 3, 0)).collect();
    let events: Vec<String> = (0..30).map(|i| format!(r#"{{"i":{i}}}"#)).collect();
    let messages: Vec<harel_transport::Message> = (0..30)
        .map(|i| harel_transport::Message {
            group_id: &groups[i % 3],
            event_json: &events[i],
            priority: 0,
            routing_key: None,
            headers: None,
        })
        .collect();
    t.publish_many(&messages).unwrap();
    let leases = t.ack_and_claim_many(&[], "w", 30.0, 0, &[], 3).unwrap().1;
    assert_eq!(leases.len(), 3, "a batch filled from every shard");
    let (mut outcomes, mut leases) = (Vec::new(), leases);
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); 3];
    while !leases.is_empty() {
        for l in &leases {
            seen[shard_of(&l.group_id, 3)].push(l.event.clone());
        }
        let (done, next) = t.ack_and_claim_many(&leases, "w", 30.0, 0, &[], 3).unwrap();
        outcomes.extend(done);
        leases = next;
    }
    assert!(outcomes.iter().all(Result::is_ok));
    for (s, events_seen) in seen.iter().enumerate() {
        let want: Vec<String> = (s..30).step_by(3).map(|i| events[i].clone()).collect();
        assert_eq!(events_seen, &want, "shard {s}'s group in the batch's order");
    }
    assert_eq!(t.stats().unwrap().messages, 0);
}

#[test]
fn a_transaction_and_seqs_of_dead_letters_name_one_database() {
    let _limit = common::time_limit();
    let (_dir, paths) = three_files();
    let clock = TestClock::at(1000.0);
    let t = open(&paths, &clock.options()).unwrap();
    let mut tx = t.begin();
    match tx.execute("CREATE TABLE orders (id INTEGER)", []) {
        Err(Error::Argument(m)) => assert!(m.contains("a transaction runs on one database"), "{m}"),
        other => panic!("{other:?}"),
    }
    drop(tx);
    let g = group_on(2, 3, 0);
    t.publish(&g, "{}", 0, None).unwrap();
    let lease = t.claim("w", 30.0, 0, &[]).unwrap().unwrap();
    t.dead_letter(&lease, "bad").unwrap();
    let dead = t.dead_letters(None, None, 10).unwrap();
    assert_eq!((dead.items.len(), dead.items[0].shard), (1, 2));
    let seqs = [dead.items[0].seq];
    assert!(
        matches!(t.redrive(harel_transport::DeadLetters::Seqs(&seqs)), Err(Error::Argument(m)) if m.contains("one shard"))
    );
    assert_eq!(t.redrive_on(2, harel_transport::DeadLetters::Seqs(&seqs)).unwrap(), 1);
    assert!(
        matches!(t.redrive_on(3, harel_transport::DeadLetters::All), Err(Error::Argument(m)) if m.contains("shard is 3"))
    );
    assert_eq!(t.stats().unwrap().messages, 1);
}

/// Writes, from another process (Python's sqlite3), a message of `group` to `path` as
/// harel's Python publish does: a program that does not shard.
fn publish_from_another_program(path: &str, group: &str) {
    let script = "import sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        c.execute('INSERT INTO harel_transport_messages (group_id, event) VALUES (?, ?)', (sys.argv[2], '{\"misplaced\":1}'))\n\
        c.execute('INSERT OR IGNORE INTO harel_transport_groups (group_id, priority) VALUES (?, 0)', (sys.argv[2],))\n\
        c.commit()\n";
    let status = std::process::Command::new("python3").args(["-c", script, path, group]).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_group_on_a_shard_its_hash_does_not_name_is_set_aside() {
    let _limit = common::time_limit();
    let (_dir, paths) = three_files();
    let t = open(&paths, &Options::new()).unwrap();
    let g = group_on(0, 3, 0);
    t.publish(&g, r#"{"home":1}"#, 0, None).unwrap();
    drop(t);
    publish_from_another_program(&paths[1], &g);
    let t = open(&paths, &Options::new()).unwrap();
    let mut got = Vec::new();
    while let Some(lease) = t.claim("w", 30.0, 0, &[]).unwrap() {
        got.push(lease.event.clone());
        t.ack(&lease).unwrap();
    }
    assert_eq!(got, [r#"{"home":1}"#], "only its own shard's message is served");
    let held = t.groups(None, None, 10).unwrap().items;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!((held[0].shard, held[0].holder.as_deref()), (1, Some("__misplaced__")));
    assert_eq!(t.stats().unwrap().leased, 1);
    t.publish(&g, r#"{"home":2}"#, 0, None).unwrap();
    let next = t.claim("w", 30.0, 0, &[]).unwrap().expect("its home shard goes on");
    assert_eq!((next.event.as_str(), shard_of(&next.group_id, 3)), (r#"{"home":2}"#, 0));
    assert_eq!(t.purge_group(&g).unwrap(), 2, "purge_group reaches every shard");
}

/// Four processes drain three shards: each message once, each group in order, never two
/// of a group in flight (the ledger of tests/common/drain.rs, kept across processes by
/// each one's log).
#[test]
fn four_processes_drain_three_shards_exactly_once_in_order() {
    let _limit = common::time_limit();
    let (dir, paths) = three_files();
    let t = open(&paths, &Options::new()).unwrap();
    common::drain::fill(&t, common::drain::GROUPS, common::drain::PER_GROUP);
    drop(t);
    let logs: Vec<_> = (0..4).map(|n| dir.path().join(format!("worker-{n}.log"))).collect();
    let children: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(n, log)| {
            let mut c = common::this_test_binary("drain_worker");
            c.env("HAREL_TEST_SHARDS", paths.join("\n")).env("HAREL_TEST_ID", format!("p{n}"));
            c.env("HAREL_TEST_LOG", log).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for (n, child) in children.into_iter().enumerate() {
        common::expect_success(child, &format!("worker {n}"));
    }
    check_handled(&logs, common::drain::TOTAL, common::drain::PER_GROUP);
    assert!(open(&paths, &Options::new()).unwrap().stats().unwrap().messages == 0);
}

/// Checks the workers' logs (lines `claimed acking group event`): `total` messages, each
/// once; each group's `0..per_group` in order, none claimed before the one before it was
/// acked.
fn check_handled(logs: &[std::path::PathBuf], total: usize, per_group: usize) {
    let mut handled: Vec<(u128, u128, usize, usize)> = Vec::new();
    for log in logs {
        for line in std::fs::read_to_string(log).unwrap().lines() {
            let f: Vec<&str> = line.splitn(4, ' ').collect();
            let (g, i) = common::drain::parse_message(f[2], f[3]);
            handled.push((f[0].parse().unwrap(), f[1].parse().unwrap(), g, i));
        }
    }
    assert_eq!(handled.len(), total, "every message once");
    handled.sort();
    let mut last: std::collections::HashMap<usize, (usize, u128)> = Default::default();
    for (claimed, acking, g, i) in &handled {
        if let Some((prev, done)) = last.get(g) {
            assert_eq!(*i, prev + 1, "group {g}: FIFO");
            assert!(done <= claimed, "group {g}: message {i} claimed while {prev} was in flight");
        } else {
            assert_eq!(*i, 0, "group {g} starts at its first message");
        }
        last.insert(*g, (*i, *acking));
    }
    assert!(last.values().all(|(i, _)| i + 1 == per_group), "every group to its last message");
}

/// Changing N, as docs/queue.md ("Changing the number of shards") says: producers move to a
/// new set at once, the old set's workers drain it (one of them killed holding a lease),
/// and each moves to the new set when the old one's `stats` shows no message. Nothing is
/// lost or repeated and every group keeps its order across the two sets.
#[test]
fn changing_the_number_of_shards_by_drain_and_switch_keeps_every_group_in_order() {
    let _limit = common::time_limit();
    const GROUPS: usize = 30;
    let dir = tempfile::tempdir().unwrap();
    let set = |n: usize, name: &str| -> Vec<String> {
        (0..n).map(|i| dir.path().join(format!("{name}{i}.db")).to_str().unwrap().to_owned()).collect()
    };
    let (old, new) = (set(2, "old"), set(3, "new"));
    common::drain::fill(&open(&old, &Options::new()).unwrap(), GROUPS, 4);
    let producer = open(&new, &Options::new()).unwrap();
    let done = dir.path().join("producers-done");
    let worker = |role: &str, n: usize| {
        let mut c = common::this_test_binary("switch_worker");
        c.env("HAREL_TEST_OLD", old.join("\n")).env("HAREL_TEST_NEW", new.join("\n")).env("HAREL_TEST_ROLE", role);
        c.env("HAREL_TEST_ID", format!("{role}{n}")).env("HAREL_TEST_DONE", &done);
        c.env("HAREL_TEST_LOG", dir.path().join(format!("{role}{n}.log")));
        c
    };
    let mut victim = common::procs::Watched::spawn(worker("victim", 0), "the worker killed holding a lease");
    let claimed = victim.wait_for("claimed ", std::time::Duration::from_secs(60));
    victim.kill();
    let workers: Vec<_> =
        (0..2).map(|n| worker("worker", n).stdout(std::process::Stdio::piped()).spawn().unwrap()).collect();
    for i in 4..8 {
        for g in 0..GROUPS {
            producer.publish(&common::drain::group(g), &common::drain::message(g, i), 0, None).unwrap();
        }
    }
    std::fs::write(&done, "").unwrap();
    for (n, child) in workers.into_iter().enumerate() {
        common::expect_success(child, &format!("worker {n}"));
    }
    let logs: Vec<_> = (0..2).map(|n| dir.path().join(format!("worker{n}.log"))).collect();
    check_handled(&logs, GROUPS * 8, 8);
    let (g, event) = claimed.trim_start_matches("claimed ").split_once(' ').unwrap();
    let served = logs.iter().map(|l| std::fs::read_to_string(l).unwrap()).collect::<String>();
    assert!(served.contains(&format!(" {g} {event}\n")), "the killed worker's message was served by another");
    for set in [&old, &new] {
        assert_eq!(open(set, &Options::new()).unwrap().stats().unwrap().messages, 0);
    }
}

/// A worker's loop: claims and acks, logging `claimed acking group event` for each, until
/// a claim finds nothing, `stats` shows no message and `finished` says so.
fn serve(t: &Transport, id: &str, log: &mut String, finished: &dyn Fn() -> bool) {
    loop {
        match t.claim(id, 60.0, 0, &[]).unwrap() {
            Some(lease) => {
                let claimed = common::procs::nanos();
                let acking = common::procs::nanos();
                log.push_str(&format!("{claimed} {acking} {} {}\n", lease.group_id, lease.event));
                t.ack(&lease).unwrap();
            }
            None if t.stats().unwrap().messages == 0 && finished() => break,
            None => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

#[test]
#[ignore = "a worker process of changing_the_number_of_shards_by_drain_and_switch_keeps_every_group_in_order"]
fn switch_worker() {
    let _limit = common::time_limit();
    let Ok(role) = std::env::var("HAREL_TEST_ROLE") else { return };
    let set = |name: &str| -> Vec<String> { common::procs::env(name).lines().map(str::to_owned).collect() };
    let mut o = Options::new();
    o.busy_timeout(60.0).unwrap();
    let old = open(&set("HAREL_TEST_OLD"), &o).unwrap();
    let id = common::procs::env("HAREL_TEST_ID");
    if role == "victim" {
        common::procs::say(""); // libtest has printed "test switch_worker ... " without a line end
        let lease = old.claim(&id, 1.0, 0, &[]).unwrap().expect("the old set has work");
        common::procs::say(&format!("claimed {} {}", lease.group_id, lease.event));
        std::thread::sleep(std::time::Duration::from_secs(600));
    }
    let mut log = String::new();
    serve(&old, &id, &mut log, &|| true);
    drop(old);
    let done = common::procs::env("HAREL_TEST_DONE");
    serve(&open(&set("HAREL_TEST_NEW"), &o).unwrap(), &id, &mut log, &|| std::path::Path::new(&done).exists());
    std::fs::write(common::procs::env("HAREL_TEST_LOG"), log).unwrap();
}

#[test]
#[ignore = "a worker process of four_processes_drain_three_shards_exactly_once_in_order"]
fn drain_worker() {
    let _limit = common::time_limit();
    let Ok(shards) = std::env::var("HAREL_TEST_SHARDS") else { return };
    let paths: Vec<String> = shards.lines().map(str::to_owned).collect();
    let mut o = Options::new();
    o.busy_timeout(60.0).unwrap();
    let t = open(&paths, &o).unwrap();
    let id = std::env::var("HAREL_TEST_ID").unwrap();
    let mut log = String::new();
    serve(&t, &id, &mut log, &|| true);
    std::fs::write(std::env::var("HAREL_TEST_LOG").unwrap(), log).unwrap();
}
