//! The transport contract (docs/queue.md), written once over a way to open
//! the queue: tests/contract.rs runs every check on a local file, tests/server.rs on sqld,
//! remote and as embedded replicas. A check gets `open`, which opens a transport on the
//! check's own queue with the options it is given (its clock, say); a second `open`
//! reaches the same queue (a second connection; on a server, a second client).

use std::time::{Duration, Instant};

use harel_transport::{
    Cancel, Delivery, Error, GroupState, Headers, Lease, Message, Options, Published, Transport, Value, Wait,
};

pub use super::contract_archive::*;
pub use super::contract_expiry::*;
pub use super::contract_limits::*;
pub use super::contract_pause::*;
pub use super::contract_retry::*;
pub use super::contract_rules::*;
use super::drain::claim_and_ack_all;
use super::poll::{readable_within, work_within};
use super::{event, TestClock};

pub type Open<'a> = &'a dyn Fn(&Options) -> Transport;
pub type Check = fn(Open<'_>);

const V: f64 = 30.0;

/// Every check, by name.
/// The checks of what a queue of one database does otherwise than a sharded one: each names
/// the difference docs/queue.md ("Sharded queues") states; tests/shards.rs shows the sharded
/// rule. The sharded runs of the contract (tests/shards.rs, tests/server_shards.rs) leave them out.
pub const OTHERWISE_SHARDED: &[(&str, &str)] = &[
    ("nack_now_makes_the_message_claimable_at_once", "it expects one group served before another: serving order"),
    ("stats_count_every_state", "it expects one group served before another: serving order"),
    ("round_robin_cycles_through_groups", "serving order is each shard's; claims take the shards in turn"),
    ("priority_floor_skips_lower_groups", "serving order is each shard's; claims take the shards in turn"),
    ("claim_many_hands_out_distinct_groups_in_serving_order", "serving order is each shard's"),
    ("claim_many_buries_a_poison_head_and_serves_its_group_in_its_place", "serving order is each shard's"),
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
    ("a_unique_duplicate_in_a_transaction_is_an_answer", "a transaction is one database's: refused"),
    ("an_expiry_in_a_transaction_is_checked_as_it_is_queued", "a transaction is one database's: refused"),
    ("a_transaction_s_publish_keeps_its_own_policy", "a transaction is one database's: refused"),
    ("a_concurrency_limit_leases_at_most_n_of_its_key", "a limit is each shard's: it counts one shard's leases"),
    ("a_lapse_or_a_dead_letter_ends_a_slot_and_a_lost_ack_does_not", "a limit is each shard's: it counts one shard's leases"),
    ("a_park_ends_a_slot", "a limit is each shard's: it counts one shard's leases"),
    ("a_rate_limit_admits_its_burst_then_its_rate", "a limit is each shard's: each shard has its own bucket"),
    ("limits_change_at_run_time_and_outlive_their_setter", "a limit is each shard's: it counts one shard's leases"),
    ("a_waiting_claim_wakes_when_its_key_has_room", "a limit is each shard's: each shard has its own bucket"),
    ("held_and_retrying_groups_list_as_stats_counts_them", "a limit is each shard's: it counts one shard's leases"),
];

pub const CHECKS: &[(&str, Check)] = &[
    ("fifo_within_a_group", fifo_within_a_group),
    ("one_in_flight_per_group_while_others_proceed", one_in_flight_per_group_while_others_proceed),
    ("lease_fields", lease_fields),
    ("ack_frees_the_group_and_removes_the_message", ack_frees_the_group_and_removes_the_message),
    ("nack_now_makes_the_message_claimable_at_once", nack_now_makes_the_message_claimable_at_once),
    ("nack_with_delay_parks_and_blocks_the_group", nack_with_delay_parks_and_blocks_the_group),
    ("a_parked_group_does_not_block_others", a_parked_group_does_not_block_others),
    ("a_lapsed_lease_is_claimable_again", a_lapsed_lease_is_claimable_again),
    (
        "round_robin_a_group_just_served_yields_to_one_never_claimed",
        round_robin_a_group_just_served_yields_to_one_never_claimed,
    ),
    ("round_robin_cycles_through_groups", round_robin_cycles_through_groups),
    ("priority_floor_skips_lower_groups", priority_floor_skips_lower_groups),
    ("the_first_publish_fixes_priority_and_routing_key", the_first_publish_fixes_priority_and_routing_key),
    ("routing_keys_restrict_claims", routing_keys_restrict_claims),
    ("many_routing_keys_take_the_json_path", many_routing_keys_take_the_json_path),
    ("lost_leases_are_detected_and_change_nothing", lost_leases_are_detected_and_change_nothing),
    ("a_nacked_lease_is_over", a_nacked_lease_is_over),
    ("a_forged_lease_for_another_group_is_lost", a_forged_lease_for_another_group_is_lost),
    ("in_flight_and_parked_groups_do_not_hide_a_ready_one", in_flight_and_parked_groups_do_not_hide_a_ready_one),
    ("ack_and_claim_acks_then_claims_in_one_go", ack_and_claim_acks_then_claims_in_one_go),
    ("ack_and_claim_claims_nothing_when_the_ack_fails", ack_and_claim_claims_nothing_when_the_ack_fails),
    (
        "a_long_batch_keeps_its_order_and_first_messages_across_inserts",
        a_long_batch_keeps_its_order_and_first_messages_across_inserts,
    ),
    ("attempts_count_every_claim", attempts_count_every_claim),
    (
        "max_attempts_moves_a_poison_message_out_and_serves_its_group",
        max_attempts_moves_a_poison_message_out_and_serves_its_group,
    ),
    ("a_worker_dead_letters_a_message_it_holds", a_worker_dead_letters_a_message_it_holds),
    ("redrive_moves_dead_letters_back_as_the_newest", redrive_moves_dead_letters_back_as_the_newest),
    ("purge_dead_deletes_what_it_is_asked", purge_dead_deletes_what_it_is_asked),
    ("stats_count_every_state", stats_count_every_state),
    ("groups_are_listed_in_pages_and_by_state", groups_are_listed_in_pages_and_by_state),
    ("peek_shows_a_groups_messages_without_claiming", peek_shows_a_groups_messages_without_claiming),
    ("purge_empties_a_group_or_the_queue", purge_empties_a_group_or_the_queue),
    ("release_frees_a_stuck_group_now", release_frees_a_stuck_group_now),
    ("claim_many_hands_out_distinct_groups_in_serving_order", claim_many_hands_out_distinct_groups_in_serving_order),
    ("claim_many_keeps_the_floor_and_routing_keys", claim_many_keeps_the_floor_and_routing_keys),
    (
        "claim_many_buries_a_poison_head_and_serves_its_group_in_its_place",
        claim_many_buries_a_poison_head_and_serves_its_group_in_its_place,
    ),
    ("ack_many_reports_a_lost_lease_and_acks_the_others", ack_many_reports_a_lost_lease_and_acks_the_others),
    ("ack_and_claim_many_acks_a_batch_then_claims_the_next", ack_and_claim_many_acks_a_batch_then_claims_the_next),
    ("extend_moves_the_lease_end_and_keeps_the_group_out", extend_moves_the_lease_end_and_keeps_the_group_out),
    ("extend_after_a_lapse_no_one_claimed_keeps_the_lease", extend_after_a_lapse_no_one_claimed_keeps_the_lease),
    (
        "a_waiting_claim_returns_as_soon_as_another_transport_publishes",
        a_waiting_claim_returns_as_soon_as_another_transport_publishes,
    ),
    ("a_waiting_claim_lets_other_calls_on_its_transport_run", a_waiting_claim_lets_other_calls_on_its_transport_run),
    ("a_waiting_claim_wakes_when_a_park_ends", a_waiting_claim_wakes_when_a_park_ends),
    ("a_waiting_claim_returns_nothing_when_its_wait_is_over", a_waiting_claim_returns_nothing_when_its_wait_is_over),
    ("a_cancelled_or_interrupted_wait_claims_nothing", a_cancelled_or_interrupted_wait_claims_nothing),
    ("eight_waiters_one_publish_exactly_one_gets_it", eight_waiters_one_publish_exactly_one_gets_it),
    ("metrics_count_what_the_transport_did", metrics_count_what_the_transport_did),
    ("a_watch_is_readable_until_a_look_finds_nothing", a_watch_is_readable_until_a_look_finds_nothing),
    ("a_watch_rings_when_another_transport_publishes", a_watch_rings_when_another_transport_publishes),
    ("a_watch_rings_at_a_park_end_and_a_lease_end", a_watch_rings_at_a_park_end_and_a_lease_end),
    ("a_watch_looks_with_its_filter", a_watch_looks_with_its_filter),
    ("a_watch_belongs_to_its_transport", a_watch_belongs_to_its_transport),
    (
        "a_key_seen_again_stores_nothing_and_names_the_first_message",
        a_key_seen_again_stores_nothing_and_names_the_first_message,
    ),
    ("keys_in_a_batch_each_stored_once", keys_in_a_batch_each_stored_once),
    ("a_key_is_forgotten_after_its_retention", a_key_is_forgotten_after_its_retention),
    ("a_delayed_message_is_not_delivered_before_its_time", a_delayed_message_is_not_delivered_before_its_time),
    ("a_delayed_message_keeps_its_place_in_its_group", a_delayed_message_keeps_its_place_in_its_group),
    ("a_waiting_claim_wakes_when_a_delayed_message_is_due", a_waiting_claim_wakes_when_a_delayed_message_is_due),
    ("bad_delivery_options_are_refused_and_change_nothing", bad_delivery_options_are_refused_and_change_nothing),
    ("a_transaction_commits_its_rows_and_messages_together", a_transaction_commits_its_rows_and_messages_together),
    ("a_transaction_that_fails_keeps_nothing", a_transaction_that_fails_keeps_nothing),
    ("a_query_begins_the_transaction_and_sees_its_own_writes", a_query_begins_the_transaction_and_sees_its_own_writes),
    ("a_waiting_claim_wakes_when_a_transaction_commits", a_waiting_claim_wakes_when_a_transaction_commits),
    ("transaction_misuse_is_refused_and_changes_nothing", transaction_misuse_is_refused_and_changes_nothing),
    ("headers_come_back_with_every_lease_and_look", headers_come_back_with_every_lease_and_look),
    ("headers_live_through_dead_letters_and_redrive", headers_live_through_dead_letters_and_redrive),
    (
        "a_unique_key_holds_one_pending_message_until_it_is_processed",
        a_unique_key_holds_one_pending_message_until_it_is_processed,
    ),
    (
        "replace_gives_the_pending_message_the_new_event_in_its_place",
        replace_gives_the_pending_message_the_new_event_in_its_place,
    ),
    ("debounce_moves_the_due_time_never_past_max_delay", debounce_moves_the_due_time_never_past_max_delay),
    ("unique_keys_in_a_batch_are_checked_in_order", unique_keys_in_a_batch_are_checked_in_order),
    ("a_unique_duplicate_in_a_transaction_is_an_answer", a_unique_duplicate_in_a_transaction_is_an_answer),
    ("bad_unique_keys_are_refused_and_change_nothing", bad_unique_keys_are_refused_and_change_nothing),
    (
        "a_paused_group_keeps_its_messages_in_order_and_is_not_claimed",
        a_paused_group_keeps_its_messages_in_order_and_is_not_claimed,
    ),
    ("a_lease_in_hand_finishes_while_its_group_is_paused", a_lease_in_hand_finishes_while_its_group_is_paused),
    ("a_paused_queue_holds_every_group_and_new_ones", a_paused_queue_holds_every_group_and_new_ones),
    ("a_paused_routing_key_holds_its_groups_and_new_ones", a_paused_routing_key_holds_its_groups_and_new_ones),
    ("a_pause_names_a_group_before_and_after_it_has_messages", a_pause_names_a_group_before_and_after_it_has_messages),
    ("resume_keeps_a_held_head_until_its_time", resume_keeps_a_held_head_until_its_time),
    ("bad_pause_targets_are_refused_and_change_nothing", bad_pause_targets_are_refused_and_change_nothing),
    (
        "an_expired_message_is_dead_lettered_and_its_group_goes_on",
        an_expired_message_is_dead_lettered_and_its_group_goes_on,
    ),
    ("a_leased_message_never_expires_under_its_worker", a_leased_message_never_expires_under_its_worker),
    ("a_claim_never_hands_out_an_expired_head", a_claim_never_hands_out_an_expired_head),
    (
        "the_sweep_expires_messages_behind_a_head_parked_and_paused",
        the_sweep_expires_messages_behind_a_head_parked_and_paused,
    ),
    ("an_expired_message_frees_its_unique_key", an_expired_message_frees_its_unique_key),
    ("bad_expiries_are_refused_and_change_nothing", bad_expiries_are_refused_and_change_nothing),
    (
        "an_expiry_in_a_transaction_is_checked_as_it_is_queued",
        an_expiry_in_a_transaction_is_checked_as_it_is_queued,
    ),
    ("an_acked_message_is_archived_with_what_was_done", an_acked_message_is_archived_with_what_was_done),
    ("every_ack_archives_and_nothing_else_does", every_ack_archives_and_nothing_else_does),
    ("the_archive_is_off_by_default", the_archive_is_off_by_default),
    ("a_groups_history_reads_in_order_in_pages", a_groups_history_reads_in_order_in_pages),
    (
        "the_archive_is_pruned_after_its_retention_a_bounded_number_per_ack",
        the_archive_is_pruned_after_its_retention_a_bounded_number_per_ack,
    ),
    ("bad_archive_arguments_are_refused", bad_archive_arguments_are_refused),
    ("a_concurrency_limit_leases_at_most_n_of_its_key", a_concurrency_limit_leases_at_most_n_of_its_key),
    (
        "a_lapse_or_a_dead_letter_ends_a_slot_and_a_lost_ack_does_not",
        a_lapse_or_a_dead_letter_ends_a_slot_and_a_lost_ack_does_not,
    ),
    ("a_park_ends_a_slot", a_park_ends_a_slot),
    ("a_rate_limit_admits_its_burst_then_its_rate", a_rate_limit_admits_its_burst_then_its_rate),
    ("limits_change_at_run_time_and_outlive_their_setter", limits_change_at_run_time_and_outlive_their_setter),
    ("a_waiting_claim_wakes_when_its_key_has_room", a_waiting_claim_wakes_when_its_key_has_room),
    ("bad_limits_are_refused_and_change_nothing", bad_limits_are_refused_and_change_nothing),
    (
        "held_and_retrying_groups_list_as_stats_counts_them",
        held_and_retrying_groups_list_as_stats_counts_them,
    ),
    (
        "a_nack_without_a_delay_waits_the_backoff_which_grows_to_its_cap",
        a_nack_without_a_delay_waits_the_backoff_which_grows_to_its_cap,
    ),
    (
        "a_lapsed_lease_waits_the_backoff_and_counts_toward_max_attempts",
        a_lapsed_lease_waits_the_backoff_and_counts_toward_max_attempts,
    ),
    ("a_message_s_own_policy_wins_over_the_queue_s", a_message_s_own_policy_wins_over_the_queue_s),
    ("a_transaction_s_publish_keeps_its_own_policy", a_transaction_s_publish_keeps_its_own_policy),
    ("jitter_spreads_the_backoff_within_its_range", jitter_spreads_the_backoff_within_its_range),
    ("bad_retry_policies_are_refused_naming_the_field", bad_retry_policies_are_refused_naming_the_field),
];

fn claim(t: &Transport, worker: &str) -> Option<Lease> {
    t.claim(worker, V, 0, &[]).expect("claim")
}

pub fn fifo_within_a_group(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for n in 0..5 {
        t.publish("g", &event(n), 0, None).unwrap();
    }
    for n in 0..5 {
        let lease = claim(&t, "w").expect("a message");
        assert_eq!(lease.event, event(n));
        t.ack(&lease).unwrap();
    }
    assert!(claim(&t, "w").is_none());
}

pub fn one_in_flight_per_group_while_others_proceed(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("a", &event(2), 0, None).unwrap();
    t.publish("b", &event(3), 0, None).unwrap();
    let first = claim(&t, "w1").unwrap();
    assert_eq!(first.group_id, "a");
    // A second transport (another connection; on a server, another client) sees the lease.
    let other = open(&clock.options());
    let second = claim(&other, "w2").unwrap();
    assert_eq!(second.group_id, "b", "a is in flight, b proceeds");
    assert!(claim(&other, "w3").is_none(), "both groups in flight");
    t.ack(&first).unwrap();
    let third = claim(&other, "w3").unwrap();
    assert_eq!((third.group_id.as_str(), third.event.as_str()), ("a", event(2).as_str()));
}

pub fn lease_fields(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let odd = " {\"kind\": \"x\", \"text\": \"h\u{e9}llo \u{2603} \\u0000 \u{1F600}\"}\n ";
    t.publish("g", odd, 0, None).unwrap();
    let lease = claim(&t, "worker-7").unwrap();
    assert_eq!(lease.group_id, "g");
    assert_eq!(lease.event, odd, "stored byte for byte");
    assert_eq!(lease.worker_id, "worker-7");
    assert_eq!(lease.lock_expiry, 1000.0 + V);
    assert!(lease.seq > 0);
}

pub fn ack_frees_the_group_and_removes_the_message(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.ack(&lease).unwrap();
    assert!(claim(&t, "w").is_none());
    clock.advance(V * 10.0);
    assert!(claim(&t, "w").is_none(), "an acked message never comes back");
}

pub fn nack_now_makes_the_message_claimable_at_once(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    t.publish("g", &event(2), 0, None).unwrap();
    t.publish("h", &event(3), 0, None).unwrap();
    let lease = claim(&t, "w1").unwrap();
    t.nack(&lease, 0.0).unwrap();
    let h = claim(&t, "w2").expect("h");
    assert_eq!(h.group_id, "h", "g went to the back of the turn order");
    t.ack(&h).unwrap();
    let again = claim(&t, "w2").expect("claimable at once");
    assert_eq!((again.seq, again.worker_id.as_str()), (lease.seq, "w2"));
}

pub fn nack_with_delay_parks_and_blocks_the_group(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    t.publish("g", &event(2), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.nack(&lease, 60.0).unwrap();
    assert!(claim(&t, "w").is_none(), "parked head blocks its group");
    clock.advance(59.0);
    assert!(claim(&t, "w").is_none(), "still parked");
    clock.advance(2.0);
    let again = claim(&t, "w").expect("park over");
    assert_eq!(again.seq, lease.seq, "the parked head comes back first");
}

pub fn a_parked_group_does_not_block_others(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("b", &event(2), 0, None).unwrap();
    let a = claim(&t, "w").unwrap();
    t.nack(&a, 60.0).unwrap();
    assert_eq!(claim(&t, "w").unwrap().group_id, "b");
}

pub fn a_lapsed_lease_is_claimable_again(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w1").unwrap();
    clock.advance(V);
    assert!(claim(&t, "w2").is_none(), "lock_expiry >= now is still in flight");
    clock.advance(0.5);
    let again = claim(&t, "w2").expect("lease lapsed");
    assert_eq!((again.seq, again.worker_id.as_str()), (lease.seq, "w2"));
}

pub fn round_robin_a_group_just_served_yields_to_one_never_claimed(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("a", &event(2), 0, None).unwrap();
    let first = claim(&t, "w").unwrap();
    assert_eq!(first.group_id, "a");
    t.publish("b", &event(3), 0, None).unwrap();
    clock.advance(1.0);
    t.ack(&first).unwrap();
    assert_eq!(claim(&t, "w").unwrap().group_id, "b", "never-claimed b goes before served a");
}

pub fn round_robin_cycles_through_groups(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for round in 0..3 {
        for g in ["a", "b", "c"] {
            t.publish(g, &event(round), 0, None).unwrap();
        }
    }
    let mut order = Vec::new();
    for _ in 0..9 {
        clock.advance(1.0);
        let lease = claim(&t, "w").unwrap();
        order.push(lease.group_id.clone());
        t.ack(&lease).unwrap();
    }
    assert_eq!(order.join(""), "abcabcabc");
}

pub fn priority_floor_skips_lower_groups(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("low", &event(1), 1, None).unwrap();
    t.publish("high", &event(2), 3, None).unwrap();
    t.publish("top", &event(3), 4, None).unwrap();
    let lease = t.claim("w", V, 3, &[]).unwrap().unwrap();
    assert_eq!(lease.group_id, "high", "oldest at or above the floor");
    let lease = t.claim("w", V, 3, &[]).unwrap().unwrap();
    assert_eq!(lease.group_id, "top");
    assert!(t.claim("w", V, 3, &[]).unwrap().is_none(), "low is below the floor");
    assert_eq!(t.claim("w", V, 0, &[]).unwrap().unwrap().group_id, "low");
}

pub fn the_first_publish_fixes_priority_and_routing_key(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 4, Some("east")).unwrap();
    t.publish("g", &event(2), 0, Some("west")).unwrap();
    assert!(t.claim("w", V, 0, &["west"]).unwrap().is_none(), "the routing key stayed east");
    let first = t.claim("w", V, 4, &["east"]).unwrap().expect("priority stayed 4");
    t.ack(&first).unwrap();
    assert!(t.claim("w", V, 4, &["east"]).unwrap().is_some(), "second message: same group, same key");
}

pub fn routing_keys_restrict_claims(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("a", &event(1), 0, Some("k1")).unwrap();
    t.publish("b", &event(2), 0, Some("k2")).unwrap();
    t.publish("c", &event(3), 0, None).unwrap();
    t.publish("d", &event(4), 0, Some("k3")).unwrap();
    assert_eq!(t.claim("w", V, 0, &["k2"]).unwrap().unwrap().group_id, "b");
    assert!(t.claim("w", V, 0, &["k2"]).unwrap().is_none());
    assert_eq!(t.claim("w", V, 0, &["k3", "k1"]).unwrap().unwrap().group_id, "a", "oldest of either key");
    assert_eq!(t.claim("w", V, 0, &["k3", "k1"]).unwrap().unwrap().group_id, "d");
    assert_eq!(t.claim("w", V, 0, &[]).unwrap().unwrap().group_id, "c", "no keys: any group");
}

pub fn many_routing_keys_take_the_json_path(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, Some("key-40")).unwrap();
    t.publish("h", &event(2), 0, Some("elsewhere")).unwrap();
    let keys: Vec<String> = (0..50).map(|i| format!("key-{i}")).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_eq!(t.claim("w", V, 0, &refs).unwrap().unwrap().group_id, "g");
    assert!(t.claim("w", V, 0, &refs).unwrap().is_none());
}

pub fn lost_leases_are_detected_and_change_nothing(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    let stale = claim(&t, "w1").unwrap();
    clock.advance(V + 1.0);
    let fresh = claim(&t, "w2").unwrap();
    assert!(matches!(t.ack(&stale), Err(Error::LeaseLost(_))), "leased to w2 now");
    assert!(matches!(t.nack(&stale, 0.0), Err(Error::LeaseLost(_))));
    t.ack(&fresh).expect("w2's lease is intact");
    assert!(matches!(t.ack(&fresh), Err(Error::LeaseLost(_))), "gone");
}

pub fn a_nacked_lease_is_over(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.nack(&lease, 10.0).unwrap();
    assert!(matches!(t.ack(&lease), Err(Error::LeaseLost(_))), "parked");
    assert!(matches!(t.nack(&lease, 0.0), Err(Error::LeaseLost(_))), "parked");
    clock.advance(11.0);
    let again = claim(&t, "w").unwrap();
    t.nack(&again, 0.0).unwrap();
    assert!(matches!(t.ack(&again), Err(Error::LeaseLost(_))), "free");
    assert!(claim(&t, "w").is_some(), "the message is still there");
}

pub fn a_forged_lease_for_another_group_is_lost(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    let forged = Lease { group_id: "other".into(), ..lease.clone() };
    assert!(matches!(t.ack(&forged), Err(Error::LeaseLost(_))));
    t.ack(&lease).unwrap();
}

pub fn in_flight_and_parked_groups_do_not_hide_a_ready_one(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for g in 0..50 {
        t.publish(&format!("g{g}"), &event(g), 0, None).unwrap();
    }
    t.publish("ready", &event(99), 0, None).unwrap();
    t.publish("ready", &event(100), 0, None).unwrap();
    let mut leases = Vec::new();
    for _ in 0..51 {
        leases.push(claim(&t, "w").unwrap());
    }
    for (i, lease) in leases.iter().enumerate() {
        match (lease.group_id.as_str(), i % 2) {
            ("ready", _) => t.ack(lease).unwrap(),
            (_, 0) => t.nack(lease, 100.0).unwrap(),
            _ => {}
        }
    }
    assert_eq!(claim(&t, "w").unwrap().group_id, "ready");
    assert!(claim(&t, "w").is_none());
}

pub fn ack_and_claim_acks_then_claims_in_one_go(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("a", &event(2), 0, None).unwrap();
    t.publish("b", &event(3), 0, None).unwrap();
    let first = claim(&t, "w").unwrap();
    let second = t.ack_and_claim(&first, "w", V, 0, &[]).unwrap().expect("b is ready");
    assert_eq!(second.group_id, "b", "a was just served: b first");
    let third = t.ack_and_claim(&second, "w", V, 0, &[]).unwrap().expect("a's second message");
    assert_eq!(third.event, event(2));
    assert!(t.ack_and_claim(&third, "w", V, 0, &[]).unwrap().is_none(), "acked, and nothing left");
    assert!(claim(&t, "w").is_none());
}

pub fn ack_and_claim_claims_nothing_when_the_ack_fails(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("a", &event(1), 0, None).unwrap();
    t.publish("b", &event(2), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.ack(&lease).unwrap();
    assert!(matches!(t.ack_and_claim(&lease, "w", V, 0, &[]), Err(Error::LeaseLost(_))));
    assert_eq!(claim(&t, "w").expect("b was not claimed by the failed call").group_id, "b");
    let bad = t.ack_and_claim(&lease, "w", 0.0, 0, &[]);
    assert!(matches!(bad, Err(Error::Argument(m)) if m.contains("visibility")));
}

/// A batch longer than one INSERT (301 messages: locally 128 + 128 + 32 + 8 + 4 + 1 rows,
/// on a server 128 + 128 + 45): order, and the first message's say over its group, hold
/// across the cuts.
pub fn a_long_batch_keeps_its_order_and_first_messages_across_inserts(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let events: Vec<String> = (0..301).map(event).collect();
    let groups = ["a", "b", "c", "d", "e", "f", "g"];
    let batch: Vec<Message> = events
        .iter()
        .enumerate()
        .map(|(i, e)| match i {
            // "late" first appears at 200, in a later INSERT, fixing priority 3 and key k;
            // its later messages ask for other values.
            200 => Message { group_id: "late", event_json: e, priority: 3, routing_key: Some("k"), headers: None },
            _ if i > 200 && i % 10 == 0 => Message { group_id: "late", event_json: e, priority: 0, routing_key: None, headers: None },
            _ => Message { group_id: groups[i % groups.len()], event_json: e, priority: 0, routing_key: None, headers: None },
        })
        .collect();
    t.publish_many(&batch).unwrap();
    let first_late = t.claim("w", V, 3, &["k"]).unwrap().expect("late kept priority 3 and key k");
    assert_eq!(first_late.event, events[200]);
    t.ack(&first_late).unwrap();
    let mut got: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (g, e) in std::iter::once(("late".to_owned(), first_late.event)).chain(claim_and_ack_all(&t)) {
        got.entry(g).or_default().push(e);
    }
    assert_eq!(got.values().map(Vec::len).sum::<usize>(), 301, "every message once");
    for (g, events) in got {
        let want: Vec<String> = batch.iter().filter(|m| m.group_id == g).map(|m| m.event_json.to_owned()).collect();
        assert_eq!(events, want, "group {g} in batch order");
    }
}

// ---- when a message keeps failing: delivery counts, dead letters, a look inside ----------

fn with_max_attempts(clock: &TestClock, max_attempts: u32) -> Options {
    let mut o = clock.options();
    o.max_attempts(max_attempts);
    o
}

pub fn attempts_count_every_claim(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(0), 0, None).unwrap();
    let first = claim(&t, "w").unwrap();
    assert_eq!(first.attempts, 1);
    t.nack(&first, 0.0).unwrap();
    let second = claim(&t, "w").unwrap();
    assert_eq!(second.attempts, 2, "a nack(0) is a delivery");
    clock.advance(V + 1.0);
    let third = claim(&t, "w").unwrap();
    assert_eq!((third.seq, third.attempts), (first.seq, 3), "a lapsed lease is a delivery");
    let page = t.peek("g", None, 10).unwrap();
    assert_eq!(page.items[0].attempts, 3);
}

pub fn max_attempts_moves_a_poison_message_out_and_serves_its_group(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&with_max_attempts(&clock, 2));
    t.publish("g", &event(0), 0, None).unwrap();
    t.publish("g", &event(1), 0, None).unwrap();
    let first = claim(&t, "w1").unwrap();
    t.nack(&first, 0.0).unwrap();
    let again = claim(&t, "w2").unwrap();
    assert_eq!((again.seq, again.attempts), (first.seq, 2));
    clock.advance(V + 1.0); // w2 dies holding it
    let next = claim(&t, "w3").expect("the group goes on with its next message");
    assert_eq!(next.event, event(1));
    let dead = t.dead_letters(None, None, 10).unwrap();
    assert_eq!(dead.items.len(), 1);
    let d = &dead.items[0];
    assert_eq!((d.seq, d.group_id.as_str(), d.event.as_str(), d.attempts), (first.seq, "g", event(0).as_str(), 2));
    assert_eq!(d.last_worker.as_deref(), Some("w2"));
    assert!(d.reason.contains("max_attempts is 2"), "{}", d.reason);
    assert_eq!(d.dead_at, clock.now());
    assert!(matches!(t.ack(&again), Err(Error::LeaseLost(_))), "the dead message's lease is over");
    t.ack(&next).unwrap();
    assert!(claim(&t, "w").is_none());
    assert_eq!(t.stats().unwrap().groups, 0, "the emptied group is gone");
}

pub fn a_worker_dead_letters_a_message_it_holds(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(0), 3, Some("k")).unwrap();
    t.publish("g", &event(1), 0, None).unwrap();
    let lease = t.claim("w", V, 0, &["k"]).unwrap().unwrap();
    t.dead_letter(&lease, "cannot parse").unwrap();
    assert!(matches!(t.dead_letter(&lease, "again"), Err(Error::LeaseLost(_))));
    assert!(matches!(t.dead_letter(&lease, ""), Err(Error::Argument(m)) if m.contains("reason")));
    let next = t.claim("w", V, 0, &["k"]).unwrap().expect("the group goes on at once");
    assert_eq!(next.event, event(1));
    let d = &t.dead_letters(Some("g"), None, 10).unwrap().items[0];
    assert_eq!((d.reason.as_str(), d.last_worker.as_deref(), d.attempts), ("cannot parse", Some("w"), 1));
    assert!(t.dead_letters(Some("other"), None, 10).unwrap().items.is_empty());
}

pub fn redrive_moves_dead_letters_back_as_the_newest(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for n in 0..3 {
        t.publish("g", &event(n), 2, Some("k")).unwrap();
    }
    for _ in 0..3 {
        let lease = claim(&t, "w").unwrap();
        t.dead_letter(&lease, "poison").unwrap();
    }
    assert_eq!(t.stats().unwrap().groups, 0);
    t.publish("g2", &event(9), 0, None).unwrap();
    let seqs: Vec<i64> = t.dead_letters(None, None, 10).unwrap().items.iter().map(|d| d.seq).collect();
    assert_eq!(t.redrive(harel_transport::DeadLetters::Seqs(&seqs[2..])).unwrap(), 1);
    assert_eq!(t.redrive(harel_transport::DeadLetters::Group("g")).unwrap(), 2);
    assert_eq!(t.redrive(harel_transport::DeadLetters::All).unwrap(), 0);
    // Back in g, the order they had (event 2 first: it was redriven first), counted anew,
    // and the group made again as its first publish made it.
    let back: Vec<_> = t.peek("g", None, 10).unwrap().items;
    assert_eq!(back.iter().map(|m| m.event.clone()).collect::<Vec<_>>(), [event(2), event(0), event(1)]);
    assert!(back.iter().all(|m| m.attempts == 0 && m.seq > seqs[2]), "new seqs: the newest messages");
    let lease = t.claim("w", V, 2, &["k"]).unwrap().expect("priority and routing key came back");
    assert_eq!(lease.event, event(2));
    assert!(matches!(t.redrive(harel_transport::DeadLetters::Seqs(&[])), Err(Error::Argument(_))));
}

pub fn purge_dead_deletes_what_it_is_asked(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for g in ["a", "a", "b", "c"] {
        t.publish(g, &event(0), 0, None).unwrap();
    }
    while let Some(lease) = claim(&t, "w") {
        t.dead_letter(&lease, "x").unwrap();
    }
    let first = t.dead_letters(None, None, 1).unwrap();
    assert_eq!(t.purge_dead(harel_transport::DeadLetters::Seqs(&[first.items[0].seq, 999_999])).unwrap(), 1);
    assert_eq!(t.purge_dead(harel_transport::DeadLetters::Group("a")).unwrap(), 1);
    assert_eq!(t.purge_dead(harel_transport::DeadLetters::All).unwrap(), 2);
    assert_eq!(t.stats().unwrap().dead, 0);
}

pub fn stats_count_every_state(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let empty = t.stats().unwrap();
    assert_eq!((empty.messages, empty.groups, empty.ready, empty.dead), (0, 0, 0, 0));
    assert_eq!((empty.oldest_ready_age, empty.next_release_at, empty.by_priority.len()), (None, None, 0));
    t.publish("leased", &event(0), 0, None).unwrap();
    clock.advance(1.0);
    t.publish("parked", &event(1), 2, None).unwrap();
    t.publish("parked", &event(2), 2, None).unwrap();
    t.publish("ready", &event(3), 2, None).unwrap();
    t.publish("dead", &event(4), 4, None).unwrap();
    let leased = t.claim("w", 10.0, 0, &[]).unwrap().unwrap();
    assert_eq!(leased.group_id, "leased");
    let parked = t.claim("w", 10.0, 0, &[]).unwrap().unwrap();
    assert_eq!(parked.group_id, "parked");
    t.nack(&parked, 5.0).unwrap();
    let poison = t.claim("w", 10.0, 4, &[]).unwrap().unwrap();
    t.dead_letter(&poison, "x").unwrap();
    clock.advance(2.0);
    let s = t.stats().unwrap();
    assert_eq!((s.messages, s.groups, s.ready, s.leased, s.parked, s.dead), (4, 3, 1, 1, 1, 1));
    assert_eq!(s.now, clock.now());
    assert_eq!(s.oldest_ready_age, Some(2.0), "the ready group's message was published 2 s ago");
    let ready_head = t.groups(Some(GroupState::Ready), None, 10).unwrap().items[0].head_seq;
    assert_eq!(s.oldest_ready_seq, Some(ready_head), "that message is the ready group's head");
    assert_eq!(s.next_release_at, Some(1001.0 + 5.0), "the park ends before the lease");
    assert_eq!((empty.oldest_overdue_lease, s.oldest_overdue_lease), (None, None), "no lease has lapsed");
    let levels: Vec<_> = s.by_priority.iter().map(|p| (p.priority, p.groups, p.ready, p.leased, p.parked)).collect();
    assert_eq!(levels, [(0, 1, 0, 1, 0), (2, 2, 1, 0, 1)]);
    clock.advance(20.0);
    let later = t.stats().unwrap();
    assert_eq!((later.ready, later.leased, later.parked, later.next_release_at), (3, 0, 0, None), "lapsed: ready");
    assert_eq!(later.oldest_ready_age, Some(22.0 + 1.0), "the leased group's message, now ready, is the oldest");
    assert_eq!(later.oldest_ready_seq, Some(leased.seq));
    assert_eq!(later.oldest_overdue_lease, Some(1023.0 - 1011.0), "the lease lapsed at 1011; the park is not a lease");
    t.purge().unwrap();
    assert_eq!(t.stats().unwrap().oldest_ready_seq, None, "nothing is ready");
}

pub fn groups_are_listed_in_pages_and_by_state(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for (n, g) in ["e", "d", "c", "b", "a"].iter().enumerate() {
        t.publish(g, &event(n), 1, Some("key")).unwrap();
    }
    t.publish("a", &event(9), 0, None).unwrap();
    let a = claim(&t, "w1").unwrap(); // the first group in arrival order: "e"
    let b = claim(&t, "w2").unwrap();
    t.nack(&b, 60.0).unwrap();
    let first = t.groups(None, None, 2).unwrap();
    let ids: Vec<_> = first.items.iter().map(|g| g.group_id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    let g = &first.items[0];
    assert_eq!(
        (g.state, g.depth, g.priority, g.routing_key.as_deref(), g.head_attempts),
        (harel_transport::GroupState::Ready, 2, 1, Some("key"), 0)
    );
    let rest = t.groups(None, first.next.as_deref(), 10).unwrap();
    assert_eq!(rest.items.iter().map(|g| g.group_id.as_str()).collect::<Vec<_>>(), ["c", "d", "e"]);
    assert_eq!(rest.next, None);
    let leased = t.groups(Some(harel_transport::GroupState::Leased), None, 10).unwrap();
    assert_eq!(leased.items.len(), 1);
    let l = &leased.items[0];
    assert_eq!(
        (l.group_id.as_str(), l.holder.as_deref(), l.lock_expiry, l.head_attempts),
        (a.group_id.as_str(), Some("w1"), Some(1030.0), 1)
    );
    let parked = t.groups(Some(harel_transport::GroupState::Parked), None, 10).unwrap();
    assert_eq!(
        parked.items.iter().map(|g| (g.group_id.as_str(), g.holder.clone(), g.lock_expiry)).collect::<Vec<_>>(),
        [(b.group_id.as_str(), None, Some(1060.0))]
    );
    let ready = t.groups(Some(harel_transport::GroupState::Ready), None, 2).unwrap();
    assert_eq!(ready.items.len(), 2);
    let more = t.groups(Some(harel_transport::GroupState::Ready), ready.next.as_deref(), 2).unwrap();
    assert_eq!((more.items.len(), more.next), (1, None));
    assert!(matches!(t.groups(None, Some("x1.00"), 10), Err(Error::Argument(m)) if m.contains("cursor")));
    assert!(matches!(
        t.groups(None, first.next.as_deref().map(|c| c.replacen('g', "m", 1)).as_deref(), 10),
        Err(Error::Argument(_))
    ));
    assert!(matches!(t.groups(None, None, 0), Err(Error::Argument(m)) if m.contains("limit")));
}

pub fn peek_shows_a_groups_messages_without_claiming(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for n in 0..5 {
        t.publish("g", &event(n), 0, None).unwrap();
        clock.advance(1.0);
    }
    let lease = claim(&t, "w").unwrap();
    let first = t.peek("g", None, 3).unwrap();
    let got: Vec<_> = first.items.iter().map(|m| (m.event.clone(), m.locked_by.clone(), m.published_at)).collect();
    assert_eq!(got[0], (event(0), Some("w".to_owned()), Some(1000.0)));
    assert_eq!(got[2], (event(2), None, Some(1002.0)));
    let rest = t.peek("g", first.next.as_deref(), 3).unwrap();
    assert_eq!(rest.items.iter().map(|m| m.event.clone()).collect::<Vec<_>>(), [event(3), event(4)]);
    assert_eq!(rest.next, None);
    assert!(t.peek("none", None, 3).unwrap().items.is_empty());
    t.ack(&lease).unwrap();
    assert_eq!(claim(&t, "w").unwrap().event, event(1), "peek claimed nothing");
}

pub fn purge_empties_a_group_or_the_queue(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for g in ["a", "a", "b", "c"] {
        t.publish(g, &event(0), 0, None).unwrap();
    }
    let held = t.claim("w", V, 0, &[]).unwrap().unwrap();
    assert_eq!(t.purge_group(&held.group_id).unwrap(), if held.group_id == "a" { 2 } else { 1 });
    assert!(matches!(t.ack(&held), Err(Error::LeaseLost(_))), "a purged message's lease is lost");
    let lease = claim(&t, "w").unwrap();
    t.dead_letter(&lease, "kept").unwrap();
    assert!(t.purge().unwrap() >= 1);
    let s = t.stats().unwrap();
    assert_eq!((s.messages, s.groups, s.dead), (0, 0, 1), "dead letters stay");
    t.publish("a", &event(1), 0, None).unwrap();
    assert_eq!(claim(&t, "w").unwrap().event, event(1), "the queue works after a purge");
}

pub fn release_frees_a_stuck_group_now(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(0), 0, None).unwrap();
    t.publish("p", &event(1), 0, None).unwrap();
    let stuck = t.claim("w1", 3600.0, 0, &[]).unwrap().unwrap();
    let parked = t.claim("w1", 3600.0, 0, &[]).unwrap().unwrap();
    t.nack(&parked, 3600.0).unwrap();
    assert!(claim(&t, "w2").is_none());
    assert!(t.release(&stuck.group_id).unwrap());
    assert!(t.release(&parked.group_id).unwrap());
    assert!(!t.release(&stuck.group_id).unwrap(), "nothing held any more");
    assert!(!t.release("none").unwrap());
    assert_eq!(t.stats().unwrap().ready, 2);
    let again = claim(&t, "w2").expect("served at once");
    assert_eq!(again.attempts, 2);
    assert!(matches!(t.ack(&stuck), Err(Error::LeaseLost(_))), "the old holder's lease is lost");
    t.ack(&again).unwrap();
}

// ---------------------------------------------------------------------------------------
// The worker loop (issue 15): batches, extension, waiting claims.

fn claim_many(t: &Transport, worker: &str, max: usize) -> Vec<Lease> {
    t.claim_many(worker, V, 0, &[], max, &Wait::none()).expect("claim_many")
}

fn groups_of(leases: &[Lease]) -> Vec<&str> {
    leases.iter().map(|l| l.group_id.as_str()).collect()
}

pub fn claim_many_hands_out_distinct_groups_in_serving_order(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for g in ["a", "b", "c", "d", "e"] {
        t.publish(g, &event(0), 0, None).unwrap();
        t.publish(g, &event(1), 0, None).unwrap();
    }
    let first = claim_many(&t, "w", 3);
    assert_eq!(groups_of(&first), ["a", "b", "c"], "arrival order, one head per group");
    assert!(first.iter().all(|l| l.event == event(0) && l.attempts == 1 && l.lock_expiry == 1000.0 + V));
    let rest = claim_many(&t, "w", 10);
    assert_eq!(groups_of(&rest), ["d", "e"], "fewer than max: what there is");
    assert!(claim_many(&t, "w", 10).is_empty(), "every group has its head in flight");
    t.ack(&first[1]).unwrap();
    let next = claim_many(&t, "w", 10);
    assert_eq!((groups_of(&next), next[0].event.as_str()), (vec!["b"], event(1).as_str()));
    let bad = t.claim_many("w", V, 0, &[], 0, &Wait::none());
    assert!(matches!(bad, Err(Error::Argument(m)) if m.contains("max is 0")));
    let bad = t.claim_many("w", V, 0, &[], harel_transport::MAX_CLAIM + 1, &Wait::none());
    assert!(matches!(bad, Err(Error::Argument(m)) if m.contains("max is 1001")));
}

/// A head over max_attempts in the middle of a batch: buried, and its group's next message
/// takes its place in serving order, before the groups after it.
pub fn claim_many_buries_a_poison_head_and_serves_its_group_in_its_place(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(clock.options().max_attempts(2));
    t.publish("g1", &event(1), 0, None).unwrap();
    t.publish("g2", &event(2), 0, Some("p")).unwrap();
    t.publish("g2", &event(3), 0, Some("p")).unwrap();
    t.publish("g3", &event(4), 0, None).unwrap();
    // Each head claimed once and given back at one instant: served g1, g2, g3 (arrival).
    for lease in claim_many(&t, "w", 3) {
        t.nack(&lease, 0.0).unwrap();
    }
    // g2's head a second time (only g2 has the key): it is at max_attempts, in the middle.
    let second = t.claim("w", V, 0, &["p"]).unwrap().expect("g2's head");
    t.nack(&second, 0.0).unwrap();
    let batch = claim_many(&t, "w", 3);
    assert_eq!(groups_of(&batch), ["g1", "g2", "g3"], "the poison's group keeps its place");
    assert_eq!(batch[1].event, event(3), "g2's next message, its head buried");
    let dead = t.dead_letters(None, None, 10).unwrap().items;
    assert_eq!(dead.iter().map(|d| (d.group_id.as_str(), d.attempts)).collect::<Vec<_>>(), [("g2", 2)]);
}

pub fn claim_many_keeps_the_floor_and_routing_keys(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("low", &event(0), 0, Some("k")).unwrap();
    t.publish("high", &event(1), 3, Some("k")).unwrap();
    t.publish("other", &event(2), 4, Some("x")).unwrap();
    t.publish("high2", &event(3), 2, Some("k")).unwrap();
    // A key given twice is one key: each head once.
    let floor = t.claim_many("w", V, 2, &["k", "k"], 10, &Wait::none()).unwrap();
    assert_eq!(groups_of(&floor), ["high", "high2"]);
    let rest = t.claim_many("w", V, 0, &[], 10, &Wait::none()).unwrap();
    assert_eq!(groups_of(&rest), ["low", "other"]);
}

pub fn ack_many_reports_a_lost_lease_and_acks_the_others(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for g in ["a", "b", "c"] {
        t.publish(g, &event(0), 0, None).unwrap();
    }
    t.publish("b", &event(1), 0, None).unwrap();
    let leases = claim_many(&t, "w", 3);
    t.ack(&leases[0]).unwrap();
    let outcomes = t.ack_many(&leases).unwrap();
    assert!(matches!(&outcomes[0], Err(Error::LeaseLost(m)) if m.contains("no longer leased")), "{outcomes:?}");
    assert!(outcomes[1].is_ok() && outcomes[2].is_ok());
    let s = t.stats().unwrap();
    assert_eq!((s.messages, s.groups), (1, 1), "b's second message is left");
    let b = claim(&t, "w").unwrap();
    assert_eq!(b.event, event(1));
    assert!(t.ack_many(&[]).unwrap().is_empty());
    let forged = Lease { worker_id: String::new(), ..leases[1].clone() };
    let bad = t.ack_many(&[leases[2].clone(), forged]);
    assert!(matches!(bad, Err(Error::Argument(m)) if m.contains("leases[1].worker_id is empty")), "named by index");

    // A lease given twice is acked once. A lease that lapsed and went to another worker
    // is lost, and the other worker's lease and its group's place are left as they were.
    for g in ["d", "e"] {
        t.publish(g, &event(2), 0, None).unwrap();
        t.publish(g, &event(3), 0, None).unwrap();
    }
    t.ack(&b).unwrap();
    let stale = claim_many(&t, "w", 2);
    clock.advance(V + 1.0);
    let taken = claim(&t, "w2").unwrap();
    let (lapsed, kept) = match stale.iter().position(|l| l.group_id == taken.group_id) {
        Some(0) => (&stale[0], &stale[1]),
        _ => (&stale[1], &stale[0]),
    };
    assert_eq!(taken.seq, lapsed.seq);
    let outcomes = t.ack_many(&[kept.clone(), kept.clone(), lapsed.clone()]).unwrap();
    assert!(outcomes[0].is_ok(), "{outcomes:?}");
    assert!(matches!(&outcomes[1], Err(Error::LeaseLost(_))), "the second time: {outcomes:?}");
    assert!(matches!(&outcomes[2], Err(Error::LeaseLost(_))), "held by w2: {outcomes:?}");
    let next = claim(&t, "w3").expect("the acked group goes on with its next message");
    assert_eq!((next.group_id.as_str(), next.event.as_str()), (kept.group_id.as_str(), event(3).as_str()));
    assert!(claim(&t, "w3").is_none(), "the other group is still w2's");
    assert_eq!(t.ack_many(&[taken.clone(), next]).unwrap().iter().filter(|o| o.is_ok()).count(), 2);
    let last = claim(&t, "w3").unwrap();
    assert_eq!((last.group_id, last.event), (taken.group_id, event(3)), "its next message");
}

pub fn ack_and_claim_many_acks_a_batch_then_claims_the_next(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    for g in ["a", "b", "c", "d"] {
        t.publish(g, &event(0), 0, None).unwrap();
    }
    t.publish("a", &event(1), 0, None).unwrap();
    let first = claim_many(&t, "w", 2);
    let lost = Lease { seq: first[1].seq + 1000, ..first[1].clone() };
    let (acked, next) = t.ack_and_claim_many(&[first[0].clone(), lost], "w", V, 0, &[], 10).unwrap();
    assert!(acked[0].is_ok() && matches!(acked[1], Err(Error::LeaseLost(_))), "a lost lease does not stop the batch");
    assert_eq!(groups_of(&next), ["c", "d", "a"], "a was just served: it goes last");
    let (acked, none) = t.ack_and_claim_many(&next, "w", V, 0, &[], 10).unwrap();
    assert!(acked.iter().all(Result::is_ok) && none.is_empty(), "b is still leased");
    t.ack(&first[1]).unwrap();
    assert_eq!(t.stats().unwrap().messages, 0);
}

pub fn extend_moves_the_lease_end_and_keeps_the_group_out(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(0), 0, None).unwrap();
    t.publish("h", &event(1), 0, None).unwrap();
    let mut lease = claim(&t, "w1").unwrap();
    clock.advance(20.0);
    t.extend(&mut lease, 100.0).unwrap();
    assert_eq!(lease.lock_expiry, 1120.0, "the lease value shows the new end");
    clock.advance(50.0);
    let h = claim(&t, "w2").unwrap();
    assert_eq!(h.group_id, "h", "past the old end, g is still held");
    assert!(claim(&t, "w2").is_none());
    t.ack(&h).unwrap();
    clock.advance(51.0);
    let again = claim(&t, "w2").expect("past the new end the lease lapsed");
    assert_eq!(again.seq, lease.seq);
    let stale = lease.lock_expiry;
    assert!(matches!(t.extend(&mut lease, 10.0), Err(Error::LeaseLost(_))), "claimed by another worker");
    assert_eq!(lease.lock_expiry, stale, "a failed extend leaves the lease as it was");
    let bad = t.extend(&mut lease, 0.0);
    assert!(matches!(bad, Err(Error::Argument(m)) if m.contains("visibility")));
    t.ack(&again).unwrap();
    assert!(matches!(t.extend(&mut lease, 10.0), Err(Error::LeaseLost(_))), "acked");
}

pub fn extend_after_a_lapse_no_one_claimed_keeps_the_lease(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    t.publish("g", &event(0), 0, None).unwrap();
    let mut lease = claim(&t, "w1").unwrap();
    clock.advance(V + 5.0);
    t.extend(&mut lease, 60.0).unwrap();
    assert_eq!(lease.lock_expiry, 1000.0 + V + 5.0 + 60.0);
    assert!(claim(&t, "w2").is_none(), "extended: no longer claimable");
    t.ack(&lease).unwrap();
}

/// Real time from here on: these checks wait.
fn elapsed_since(started: Instant) -> Duration {
    started.elapsed()
}

pub fn a_waiting_claim_returns_as_soon_as_another_transport_publishes(open: Open<'_>) {
    let waiter = open(&Options::new());
    let publisher = open(&Options::new());
    let started = Instant::now();
    let leased = std::thread::scope(|s| {
        let waiting = s.spawn(|| waiter.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(20))));
        std::thread::sleep(Duration::from_millis(300));
        publisher.publish("g", &event(7), 0, None).unwrap();
        waiting.join().unwrap()
    });
    let took = elapsed_since(started);
    assert_eq!(leased.unwrap().expect("woken with the message").event, event(7));
    assert!(took < Duration::from_secs(10), "woken by the publish, not by the timeout: {took:?}");
}

pub fn a_waiting_claim_lets_other_calls_on_its_transport_run(open: Open<'_>) {
    let t = open(&Options::new());
    let started = Instant::now();
    let leased = std::thread::scope(|s| {
        let waiting = s.spawn(|| t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(20))));
        std::thread::sleep(Duration::from_millis(300));
        t.publish("g", &event(1), 0, None).expect("a publish on the waiting transport goes ahead");
        waiting.join().unwrap()
    });
    assert!(leased.unwrap().is_some());
    assert!(elapsed_since(started) < Duration::from_secs(10));
}

pub fn a_waiting_claim_wakes_when_a_park_ends(open: Open<'_>) {
    let t = open(&Options::new());
    t.publish("g", &event(0), 0, None).unwrap();
    let lease = t.claim("w", V, 0, &[]).unwrap().unwrap();
    // The park runs from the instant the nack reads the clock, before its request goes out:
    // timed from after it returned, a slow round trip made the wake look early.
    let started = Instant::now();
    t.nack(&lease, 1.0).unwrap();
    let again = t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(20))).unwrap();
    let took = elapsed_since(started);
    assert_eq!(again.expect("served when the park ended").seq, lease.seq);
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "at the park's end: {took:?}");
}

pub fn a_waiting_claim_returns_nothing_when_its_wait_is_over(open: Open<'_>) {
    let t = open(&Options::new());
    let started = Instant::now();
    assert!(t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_millis(400))).unwrap().is_none());
    let took = elapsed_since(started);
    assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(5), "{took:?}");
    assert!(t.claim_many("w", V, 0, &[], 5, &Wait::up_to(Duration::from_millis(100))).unwrap().is_empty());
}

pub fn a_cancelled_or_interrupted_wait_claims_nothing(open: Open<'_>) {
    let t = open(&Options::new());
    let cancel = Cancel::new();
    let wait = Wait::up_to(Duration::from_secs(20)).or_until(&cancel);
    let started = Instant::now();
    let outcome = std::thread::scope(|s| {
        let waiting = s.spawn(|| t.claim_many("w", V, 0, &[], 10, &wait));
        std::thread::sleep(Duration::from_millis(200));
        cancel.fire();
        waiting.join().unwrap()
    });
    assert!(matches!(outcome, Err(Error::Interrupted(m)) if m.contains("cancelled")), "promptly");
    assert!(elapsed_since(started) < Duration::from_secs(10));
    assert!(matches!(t.claim_wait("w", V, 0, &[], &wait), Err(Error::Interrupted(_))), "a fired cancel stays fired");
    let outcome = std::thread::scope(|s| {
        let waiting = s.spawn(|| t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(20))));
        std::thread::sleep(Duration::from_millis(200));
        t.interrupt();
        waiting.join().unwrap()
    });
    assert!(matches!(outcome, Err(Error::Interrupted(m)) if m.contains("interrupted")));
    t.publish("g", &event(0), 0, None).unwrap();
    let s = t.stats().unwrap();
    assert_eq!((s.ready, s.leased), (1, 0), "nothing was left leased");
    assert!(t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(5))).unwrap().is_some(), "later waits work");
}

pub fn eight_waiters_one_publish_exactly_one_gets_it(open: Open<'_>) {
    let waiters: Vec<Transport> = (0..8).map(|_| open(&Options::new())).collect();
    let publisher = open(&Options::new());
    let got = std::thread::scope(|s| {
        let waiting: Vec<_> = waiters
            .iter()
            .enumerate()
            .map(|(i, t)| {
                s.spawn(move || t.claim_wait(&format!("w{i}"), V, 0, &[], &Wait::up_to(Duration::from_secs(3))))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        publisher.publish("g", &event(0), 0, None).unwrap();
        waiting.into_iter().map(|w| w.join().unwrap().unwrap()).filter(Option::is_some).count()
    });
    assert_eq!(got, 1);
}

/// Every counter and histogram after known operations, a lost lease of each kind and a
/// head buried by a claim among them; a second transport on the queue counts apart.
pub fn metrics_count_what_the_transport_did(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(clock.options().max_attempts(2));
    t.publish("g1", &event(1), 0, None).unwrap();
    let batch: Vec<String> = (2..=5).map(event).collect();
    let groups = ["g2", "g3", "g4", "g5"];
    let messages: Vec<Message> = groups
        .iter()
        .zip(&batch)
        .map(|(group_id, e)| Message { group_id, event_json: e, priority: 0, routing_key: None, headers: None })
        .collect();
    t.publish_many(&messages).unwrap();
    let mut ls = t.claim_many("w1", V, 0, &[], 5, &Wait::none()).unwrap();
    assert_eq!(ls.len(), 5);
    // By group: a sharded queue hands them out in the shards' turn, not in arrival order.
    ls.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    t.ack(&ls[0]).unwrap();
    let outcomes = t.ack_many(&[ls[1].clone(), ls[0].clone()]).unwrap();
    assert!(matches!(outcomes[..], [Ok(()), Err(Error::LeaseLost(_))]));
    t.nack(&ls[2], 0.0).unwrap();
    t.nack(&ls[3], 5.0).unwrap();
    t.dead_letter(&ls[4], "cannot parse").unwrap();
    assert!(matches!(t.extend(&mut ls[2], V), Err(Error::LeaseLost(_))));
    // Refused before it runs: not a call the histograms see.
    assert!(matches!(t.nack(&ls[3], -1.0), Err(Error::Argument(_))));
    let third = t.claim("w1", 10.0, 0, &[]).unwrap().expect("g3 again, its second claim");
    clock.advance(11.0);
    // g4's park is over; g3's head, claimed twice, is buried instead of handed out.
    let next = t.claim_many("w2", V, 0, &[], 5, &Wait::none()).unwrap();
    assert_eq!(next.iter().map(|l| l.group_id.as_str()).collect::<Vec<_>>(), ["g4"]);
    assert!(matches!(t.ack(&third), Err(Error::LeaseLost(_))));
    assert!(t.ack_and_claim(&next[0], "w2", V, 0, &[]).unwrap().is_none());
    assert!(t.claim_wait("w2", V, 0, &[], &Wait::up_to(Duration::from_millis(20))).unwrap().is_none());

    let m = t.metrics();
    let counts = (m.published, m.claimed, m.acked, m.nacked, m.parked, m.dead_lettered, m.dead_lettered_by_claim);
    assert_eq!(counts, (5, 7, 3, 1, 1, 1, 1));
    assert_eq!(m.lost_leases, 3);
    let l = &m.latency;
    let calls = [&l.publish, &l.claim, &l.claim_wait, &l.ack, &l.ack_and_claim, &l.nack, &l.extend, &l.dead_letter];
    assert_eq!(calls.map(|h| h.count), [2, 3, 1, 3, 1, 2, 1, 1]);
    for h in calls {
        assert!(h.buckets.windows(2).all(|w| w[0] <= w[1]) && h.buckets[15] <= h.count, "{h:?}");
        assert!(h.sum > 0.0, "{h:?}");
    }
    assert!(l.claim_wait.sum >= 0.02, "the wait is in claim_wait: {:?}", l.claim_wait);
    assert_eq!(open(&clock.options()).metrics().claimed, 0);
}

pub fn a_watch_is_readable_until_a_look_finds_nothing(open: Open<'_>) {
    let t = open(&Options::new());
    let w = t.watch(0, &[]).unwrap();
    assert!(readable_within(&w, Duration::ZERO).is_some(), "a new watch is readable");
    let looked = Instant::now();
    assert!(!t.rearm(&w).unwrap(), "an empty queue: nothing to claim");
    // On a server the look arms the first poll, 20 ms on: on a loaded machine it may ring
    // before the check, which then proves nothing.
    let cleared = readable_within(&w, Duration::ZERO).is_none();
    assert!(cleared || looked.elapsed() >= Duration::from_millis(20), "cleared by a look that found nothing");
    t.publish("g", &event(0), 0, None).unwrap();
    assert!(readable_within(&w, Duration::ZERO).is_some(), "this transport's own publish rings it");
    assert!(t.rearm(&w).unwrap(), "a claim would find the message");
    assert!(readable_within(&w, Duration::ZERO).is_some(), "it stays readable while there is work");
    let lease = claim(&t, "w").expect("the message");
    assert!(!t.rearm(&w).unwrap(), "the only group is leased");
    // (Readable it may be: on a file the claim's own WAL write is heard, and looked into.)
    let look = || t.rearm(&w).unwrap();
    assert!(work_within(&w, Duration::from_millis(300), look).is_none(), "no work while the lease lasts");
    t.ack(&lease).unwrap();
    assert!(readable_within(&w, Duration::ZERO).is_some(), "an ack rings it");
    assert!(!t.rearm(&w).unwrap(), "an empty queue again");
}

pub fn a_watch_rings_when_another_transport_publishes(open: Open<'_>) {
    let t = open(&Options::new());
    let publisher = open(&Options::new());
    let w = t.watch(0, &[]).unwrap();
    assert!(!t.rearm(&w).unwrap());
    let woke = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            publisher.publish("g", &event(1), 0, None).unwrap();
        });
        work_within(&w, Duration::from_secs(10), || t.rearm(&w).unwrap())
    });
    assert!(woke.is_some_and(|took| took < Duration::from_secs(5)), "woken by the publish: {woke:?}");
    assert_eq!(claim(&t, "w").expect("the published message").event, event(1));
}

pub fn a_watch_rings_at_a_park_end_and_a_lease_end(open: Open<'_>) {
    let t = open(&Options::new());
    t.publish("g", &event(0), 0, None).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.nack(&lease, 0.6).unwrap();
    let w = t.watch(0, &[]).unwrap();
    assert!(!t.rearm(&w).unwrap(), "parked");
    let woke = work_within(&w, Duration::from_secs(10), || t.rearm(&w).unwrap());
    assert!(
        woke.is_some_and(|took| took >= Duration::from_millis(450) && took < Duration::from_secs(5)),
        "at the park's end: {woke:?}"
    );
    let lease = t.claim("w", 0.6, 0, &[]).unwrap().expect("served after the park");
    assert!(!t.rearm(&w).unwrap(), "leased");
    let woke = work_within(&w, Duration::from_secs(10), || t.rearm(&w).unwrap());
    assert!(
        woke.is_some_and(|took| took >= Duration::from_millis(450) && took < Duration::from_secs(5)),
        "at the lease's end: {woke:?}"
    );
    assert_eq!(claim(&t, "w2").expect("the lapsed lease's message").seq, lease.seq);
}

pub fn a_watch_looks_with_its_filter(open: Open<'_>) {
    let t = open(&Options::new());
    let high = t.watch(3, &[]).unwrap();
    let routed = t.watch(0, &["billing"]).unwrap();
    assert!(!t.rearm(&high).unwrap() && !t.rearm(&routed).unwrap());
    t.publish("low", &event(0), 0, None).unwrap();
    assert!(readable_within(&high, Duration::ZERO).is_some(), "any commit rings (a wake means \"may\")");
    assert!(!t.rearm(&high).unwrap(), "below the watch's floor");
    assert!(!t.rearm(&routed).unwrap(), "not the watch's routing key");
    t.publish("urgent", &event(1), 3, None).unwrap();
    t.publish("bill", &event(2), 0, Some("billing")).unwrap();
    assert!(t.rearm(&high).unwrap(), "at the floor");
    assert!(t.rearm(&routed).unwrap(), "the watch's routing key");
    for (priority, keys) in [(-1, vec![]), (5, vec![]), (0, vec![""])] {
        let refused = t.watch(priority, &keys);
        assert!(matches!(&refused, Err(Error::Argument(m)) if m.starts_with("watch: ")), "{refused:?}");
    }
}

pub fn a_watch_belongs_to_its_transport(open: Open<'_>) {
    let t = open(&Options::new());
    let other = open(&Options::new());
    let w = t.watch(0, &[]).unwrap();
    let refused = other.rearm(&w);
    assert!(matches!(&refused, Err(Error::Argument(m)) if m.contains("another transport")), "{refused:?}");
    assert!(!t.rearm(&w).unwrap());
    t.close();
    assert!(readable_within(&w, Duration::ZERO).is_some(), "closing its transport rings it");
    assert!(readable_within(&w, Duration::from_millis(50)).is_some(), "for good");
}

// ---- producers: idempotency keys and delayed delivery ------------------------------------

fn msg<'a>(group_id: &'a str, event_json: &'a str) -> Message<'a> {
    Message { group_id, event_json, priority: 0, routing_key: None, headers: None }
}

/// A duplicate's outcome: nothing stored, `seq` the first message's.
fn duplicate_of(seq: i64) -> Published {
    Published { seq, duplicate: true, replaced: false }
}

fn keyed(key: &str) -> Delivery<'_> {
    Delivery { key: Some(key), ..Delivery::default() }
}

pub fn a_key_seen_again_stores_nothing_and_names_the_first_message(open: Open<'_>) {
    let t = open(&Options::new());
    let (e0, e1) = (event(0), event(1));
    let first = t.publish_with(msg("g", &e0), keyed("order-1")).unwrap();
    assert!(!first.duplicate);
    let again = t.publish_with(msg("g", &e1), keyed("order-1")).unwrap();
    assert_eq!(again, duplicate_of(first.seq), "the first message's seq");
    assert_eq!(t.stats().unwrap().messages, 1, "nothing stored");
    let lease = claim(&t, "w").unwrap();
    assert_eq!((lease.seq, lease.event.as_str()), (first.seq, e0.as_str()));
    t.ack(&lease).unwrap();
    let after_ack = t.publish_with(msg("g", &e1), keyed("order-1")).unwrap();
    assert_eq!(after_ack, duplicate_of(first.seq), "the key outlives the ack");
    assert!(claim(&t, "w").is_none(), "a retry after the consumer finished delivers nothing");
    let other = t.publish_with(msg("g", &e1), keyed("order-2")).unwrap();
    assert!(!other.duplicate && other.seq > first.seq);
    let plain = t.publish_with(msg("g", &e1), Delivery::default()).unwrap();
    assert!(!plain.duplicate && plain.seq > other.seq, "no key: always stored, its seq returned");
}

pub fn keys_in_a_batch_each_stored_once(open: Open<'_>) {
    let t = open(&Options::new());
    let e: Vec<String> = (0..6).map(event).collect();
    let batch = [
        (msg("a", &e[0]), keyed("k1")),
        (msg("b", &e[1]), keyed("k2")),
        (msg("a", &e[2]), keyed("k1")),
        (msg("c", &e[3]), Delivery::default()),
    ];
    let out = t.publish_many_with(&batch).unwrap();
    assert_eq!(out.iter().map(|p| p.duplicate).collect::<Vec<_>>(), [false, false, true, false]);
    assert_eq!(out[2].seq, out[0].seq, "a key met earlier in the batch: the earlier message's seq");
    assert_eq!(t.stats().unwrap().messages, 3);
    let mixed = t.publish_many_with(&[(msg("b", &e[4]), keyed("k2")), (msg("d", &e[5]), keyed("k3"))]).unwrap();
    assert_eq!((mixed[0], mixed[1].duplicate), (duplicate_of(out[1].seq), false));
    let mut got: Vec<String> = Vec::new();
    while let Some(l) = claim(&t, "w") {
        got.push(l.event.clone());
        t.ack(&l).unwrap();
    }
    got.sort();
    let mut want = vec![e[0].clone(), e[1].clone(), e[3].clone(), e[5].clone()];
    want.sort();
    assert_eq!(got, want, "each message once, no duplicate delivered");
    assert!(t.publish_many_with(&[]).unwrap().is_empty());
}

pub fn a_key_is_forgotten_after_its_retention(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let mut options = clock.options();
    options.key_retention(60.0).unwrap();
    let t = open(&options);
    let first = t.publish_with(msg("g", &event(0)), keyed("k")).unwrap();
    clock.advance(59.0);
    assert!(t.publish_with(msg("g", &event(1)), keyed("k")).unwrap().duplicate, "within the retention");
    clock.advance(2.0);
    let later = t.publish_with(msg("g", &event(2)), keyed("k")).unwrap();
    assert!(!later.duplicate && later.seq > first.seq, "forgotten after it: stored again");
    // Expired keys are swept by later keyed publishes, a few at a time.
    for i in 0..40 {
        t.publish_with(msg("g", &event(i)), keyed(&format!("old-{i}"))).unwrap();
    }
    clock.advance(61.0);
    for i in 0..40 {
        assert!(!t.publish_with(msg("g", &event(i)), keyed(&format!("new-{i}"))).unwrap().duplicate);
    }
    assert!(!t.publish_with(msg("g", &event(0)), keyed("old-0")).unwrap().duplicate);
}

pub fn a_delayed_message_is_not_delivered_before_its_time(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let delayed = t.publish_with(msg("later", &event(0)), Delivery { delay: 30.0, ..Delivery::default() }).unwrap();
    let at =
        t.publish_with(msg("at", &event(1)), Delivery { not_before: Some(1010.0), ..Delivery::default() }).unwrap();
    assert!(claim(&t, "w").is_none(), "neither is due");
    let s = t.stats().unwrap();
    assert_eq!((s.groups, s.ready, s.leased, s.delayed, s.next_due_at), (2, 0, 0, 2, Some(1010.0)));
    let listed = t.groups(Some(GroupState::Delayed), None, 10).unwrap();
    assert_eq!(listed.items.len(), 2, "listed as delayed");
    assert!(t.groups(Some(GroupState::Leased), None, 10).unwrap().items.is_empty(), "not as leased");
    clock.advance(9.5);
    assert!(claim(&t, "w").is_none(), "half a second early");
    clock.advance(1.0);
    assert_eq!(claim(&t, "w").expect("due after not_before").seq, at.seq);
    assert!(claim(&t, "w").is_none());
    clock.advance(20.0);
    let lease = claim(&t, "w").expect("due after its delay");
    assert_eq!((lease.seq, lease.attempts), (delayed.seq, 1), "its first claim");
}

pub fn a_delayed_message_keeps_its_place_in_its_group(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let (e0, e1, e2) = (event(0), event(1), event(2));
    t.publish("g", &e0, 0, None).unwrap();
    t.publish_with(msg("g", &e1), Delivery { delay: 30.0, ..Delivery::default() }).unwrap();
    t.publish("g", &e2, 0, None).unwrap();
    t.publish("other", &event(3), 0, None).unwrap();
    let first = claim(&t, "w").unwrap();
    assert_eq!(first.event, e0);
    t.ack(&first).unwrap();
    let other = claim(&t, "w").expect("another group goes on");
    assert_eq!(other.group_id, "other");
    t.ack(&other).unwrap();
    assert!(claim(&t, "w").is_none(), "the later message waits behind the delayed one");
    assert_eq!(t.stats().unwrap().delayed, 1);
    clock.advance(31.0);
    let second = claim(&t, "w").unwrap();
    assert_eq!(second.event, e1);
    t.ack(&second).unwrap();
    assert_eq!(claim(&t, "w").unwrap().event, e2, "then the rest, in order");
}

pub fn a_waiting_claim_wakes_when_a_delayed_message_is_due(open: Open<'_>) {
    let t = open(&Options::new());
    t.publish_with(msg("g", &event(0)), Delivery { delay: 0.8, ..Delivery::default() }).unwrap();
    let started = Instant::now();
    let lease = t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(20))).unwrap();
    let took = elapsed_since(started);
    assert!(lease.is_some());
    assert!(took >= Duration::from_millis(700) && took < Duration::from_secs(5), "at its due time: {took:?}");
}

pub fn bad_delivery_options_are_refused_and_change_nothing(open: Open<'_>) {
    let t = open(&Options::new());
    t.publish("g", &event(0), 0, None).unwrap();
    let long = "k".repeat(257);
    let bad: [(Delivery<'_>, &str); 8] = [
        (keyed(""), "key is empty"),
        (keyed(&long), "key is 257 bytes"),
        (Delivery { delay: f64::NAN, ..Delivery::default() }, "delay is NaN"),
        (Delivery { delay: -1.0, ..Delivery::default() }, "delay is -1"),
        (Delivery { delay: 1e12, ..Delivery::default() }, "delay is 1000000000000"),
        (Delivery { not_before: Some(f64::INFINITY), ..Delivery::default() }, "not_before is inf"),
        (Delivery { not_before: Some(-5.0), ..Delivery::default() }, "not_before is -5"),
        (Delivery { not_before: Some(1e15), ..Delivery::default() }, "more than ten years"),
    ];
    for (delivery, says) in bad {
        let refused = t.publish_with(msg("g", &event(1)), delivery);
        assert!(
            matches!(&refused, Err(Error::Argument(m)) if m.contains(says) && m.starts_with("publish: ")),
            "{refused:?}"
        );
    }
    let refused = t.publish_many_with(&[(msg("g", &event(1)), keyed("ok")), (msg("g", &event(2)), keyed(""))]);
    assert!(matches!(&refused, Err(Error::Argument(m)) if m.contains("messages[1].key is empty")), "{refused:?}");
    let refused = t.publish_with(msg("g", &event(1)), Delivery { ..keyed("fine") }).map(|_| ());
    assert!(refused.is_ok());
    let s = t.stats().unwrap();
    assert_eq!(s.messages, 2, "only the good publish stored");
    let mut o = Options::new();
    for retention in [0.0, -1.0, f64::NAN, 1e12] {
        assert!(matches!(o.key_retention(retention), Err(Error::Argument(m)) if m.contains("key_retention")));
    }
}

/// A table of the application's own, named apart from every other check's (on a server the
/// checks share one database).
pub(super) fn app_table(t: &Transport, what: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let table = format!("app_{what}_{nanos}");
    t.transaction(|tx| tx.execute(&format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY, note TEXT)"), []))
        .expect("create the application's table");
    table
}

pub(super) fn count(t: &Transport, table: &str) -> i64 {
    let (rows, _) = t.transaction(|tx| tx.query(&format!("SELECT count(*) FROM {table}"), [])).unwrap();
    match rows[0][0] {
        Value::Integer(n) => n,
        ref other => panic!("count(*) is {other:?}"),
    }
}

pub fn a_transaction_commits_its_rows_and_messages_together(open: Open<'_>) {
    let t = open(&Options::new());
    let orders = app_table(&t, "orders");
    let insert = format!("INSERT INTO {orders} (id, note) VALUES (?1, ?2)");
    let (e1, e2) = (event(1), event(2));
    let ((), published) = t
        .transaction(|tx| {
            tx.execute(&insert, [Value::Integer(1), Value::Text("first order".into())])?;
            tx.publish(msg("order-1", &e1))?;
            tx.publish_with(msg("order-1", &e2), keyed("order-1-created"))
        })
        .unwrap();
    assert_eq!(published.len(), 2);
    assert!(published.iter().all(|p| !p.duplicate) && published[1].seq > published[0].seq);
    assert_eq!(count(&t, &orders), 1, "the application's row is there");
    let other = open(&Options::new());
    let lease = claim(&other, "w").expect("the message is there, for any transport");
    assert_eq!((lease.seq, lease.event.as_str()), (published[0].seq, e1.as_str()));
    other.ack(&lease).unwrap();
    assert_eq!(claim(&other, "w").unwrap().event, e2, "FIFO, in the order published");
    // A key seen before: the retried transaction's message is a duplicate, its row is new.
    let mut tx = t.begin();
    tx.execute(&insert, [Value::Integer(2), Value::Null]).unwrap();
    tx.publish_with(msg("order-1", &e2), keyed("order-1-created")).unwrap();
    assert_eq!(tx.commit().unwrap(), [duplicate_of(published[1].seq)]);
    assert_eq!(count(&t, &orders), 2);
    // Nothing asked: a commit that does nothing.
    assert_eq!(t.begin().commit().unwrap(), []);
}

pub fn a_transaction_that_fails_keeps_nothing(open: Open<'_>) {
    let t = open(&Options::new());
    let orders = app_table(&t, "failing");
    let insert = format!("INSERT INTO {orders} (id, note) VALUES (?1, ?2)");
    let nothing_kept = |what: &str| {
        assert_eq!(count(&t, &orders), 0, "{what}: no row kept");
        assert_eq!(t.stats().unwrap().messages, 0, "{what}: no message kept");
    };
    let mut tx = t.begin();
    tx.execute(&insert, [Value::Integer(1), Value::Null]).unwrap();
    tx.publish(msg("g", &event(1))).unwrap();
    tx.rollback();
    nothing_kept("rolled back");
    {
        let mut dropped = t.begin();
        dropped.execute(&insert, [Value::Integer(1), Value::Null]).unwrap();
        dropped.publish(msg("g", &event(1))).unwrap();
        assert_eq!(dropped.query(&format!("SELECT count(*) FROM {orders}"), []).unwrap()[0][0], Value::Integer(1));
    }
    nothing_kept("dropped after a query began it");
    // A statement that fails at the commit takes the publishes before it with it.
    let failed = t.transaction(|tx| {
        tx.execute(&insert, [Value::Integer(1), Value::Null])?;
        tx.publish(msg("g", &event(1)))?;
        tx.execute(&insert, [Value::Integer(1), Value::Null])
    });
    assert!(
        matches!(&failed, Err(Error::Database(m)) if m.contains("UNIQUE") && m.starts_with("commit: ")),
        "{failed:?}"
    );
    nothing_kept("a constraint failed at the commit");
    let failed = t.transaction(|tx| {
        tx.publish(msg("g", &event(1)))?;
        tx.query("SELECT no_such_column FROM no_such_table", [])
    });
    assert!(matches!(&failed, Err(Error::Database(m)) if m.contains("no_such_table")), "{failed:?}");
    nothing_kept("a query failed");
    let failed: Result<((), _), Error> = t.transaction(|tx| {
        tx.execute(&insert, [Value::Integer(1), Value::Null])?;
        tx.publish(msg("g", &event(1)))?;
        Err(Error::Argument("the application changed its mind".into()))
    });
    assert!(matches!(&failed, Err(Error::Argument(m)) if m.contains("changed its mind")));
    nothing_kept("the work returned an error");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = t.transaction(|tx| -> Result<(), Error> {
            tx.execute(&insert, [Value::Integer(1), Value::Null])?;
            tx.publish(msg("g", &event(1)))?;
            tx.query(&format!("SELECT * FROM {orders}"), [])?;
            panic!("the application's code panicked");
        });
    }));
    assert!(panicked.is_err());
    nothing_kept("the work panicked");
    t.publish("g", &event(9), 0, None).expect("the transport is usable after all of it");
    assert_eq!(claim(&t, "w").unwrap().event, event(9));
}

pub fn a_query_begins_the_transaction_and_sees_its_own_writes(open: Open<'_>) {
    let t = open(&Options::new());
    let orders = app_table(&t, "reads");
    let (e1, e2) = (event(1), event(2));
    let (seen, published) = t
        .transaction(|tx| {
            tx.execute(&format!("INSERT INTO {orders} (id, note) VALUES (1, 'a'), (2, 'b')"), [])?;
            tx.publish_with(msg("g", &e1), keyed("k"))?;
            let seen = tx.query(&format!("SELECT id, note FROM {orders} ORDER BY id"), [])?;
            tx.publish_with(msg("g", &e2), keyed("k"))?;
            let returned = tx.query(
                &format!("UPDATE {orders} SET note = ?1 WHERE id = 2 RETURNING note"),
                [Value::Text("changed".into())],
            )?;
            assert_eq!(returned, [vec![Value::Text("changed".into())]]);
            Ok::<_, Error>(seen)
        })
        .unwrap();
    assert_eq!(
        seen,
        [vec![Value::Integer(1), Value::Text("a".into())], vec![Value::Integer(2), Value::Text("b".into())]]
    );
    assert_eq!(published[1], duplicate_of(published[0].seq), "the key seen earlier in it");
    assert_eq!(t.stats().unwrap().messages, 1);
    let values = [
        Value::Null,
        Value::Integer(i64::MIN),
        Value::Real(0.1 + 0.2),
        Value::Text("a'\"\u{10FFFF}".into()),
        Value::Blob(vec![0, 255]),
    ];
    let (rows, _) = t.transaction(|tx| tx.query("SELECT ?1, ?2, ?3, ?4, ?5", values.clone())).unwrap();
    assert_eq!(rows, [values.to_vec()], "every type goes and comes back exactly");
}

pub fn a_waiting_claim_wakes_when_a_transaction_commits(open: Open<'_>) {
    let waiter = open(&Options::new());
    let producer = open(&Options::new());
    let started = Instant::now();
    let leased = std::thread::scope(|s| {
        let waiting = s.spawn(|| waiter.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(20))));
        let same = s.spawn(|| producer.claim_wait("w2", V, 0, &[], &Wait::up_to(Duration::from_secs(3))));
        std::thread::sleep(Duration::from_millis(300));
        let mut tx = producer.begin();
        tx.publish(msg("g", &event(7))).unwrap();
        tx.publish(msg("h", &event(8))).unwrap();
        tx.commit().unwrap();
        [waiting.join().unwrap().unwrap(), same.join().unwrap().unwrap()]
    });
    let took = elapsed_since(started);
    let mut got: Vec<String> = leased.iter().flatten().map(|l| l.event.clone()).collect();
    got.sort();
    assert_eq!(got, [event(7), event(8)], "both waiters woken, on this transport and another");
    assert!(took < Duration::from_secs(3), "woken by the commit, not by a timeout: {took:?}");
}

pub fn transaction_misuse_is_refused_and_changes_nothing(open: Open<'_>) {
    let mut o = Options::new();
    o.busy_timeout(0.3).unwrap();
    let t = open(&o);
    let orders = app_table(&t, "misuse");
    let insert = format!("INSERT INTO {orders} (id) VALUES (?1)");
    let mut tx = t.begin();
    let argument = |r: Result<(), Error>, says: &str| {
        assert!(matches!(&r, Err(Error::Argument(m)) if m.contains(says)), "want {says:?}: {r:?}");
    };
    argument(tx.execute("", []), "sql is empty");
    argument(tx.execute(&insert, [Value::Real(f64::NAN)]), "params[0] is NaN");
    argument(tx.execute(&insert, [Value::Integer(1), Value::Real(f64::INFINITY)]), "params[1] is inf");
    argument(tx.publish(msg("", &event(1))), "group_id");
    argument(tx.publish(msg("g", "not json")), "event_json");
    argument(tx.publish_with(msg("g", &event(1)), keyed("")), "key is empty");
    argument(tx.publish_with(msg("g", &event(1)), Delivery { delay: -1.0, ..Delivery::default() }), "delay");
    argument(
        tx.publish_with(msg("g", &event(1)), Delivery { not_before: Some(1e15), ..Delivery::default() }),
        "ten years",
    );
    // Refused arguments queued nothing; the transaction goes on.
    tx.execute(&insert, [Value::Integer(1)]).unwrap();
    tx.publish(msg("g", &event(1))).unwrap();
    tx.query("SELECT 1", []).unwrap();
    // It holds the connection now: the transport's own calls, and a transaction inside
    // it, wait the busy timeout and say why.
    let nested = t.transaction(|inner| inner.query("SELECT 1", []));
    assert!(matches!(&nested, Err(Error::Busy(m)) if m.contains("do not nest")), "{nested:?}");
    let outside = t.publish("g", &event(2), 0, None);
    assert!(matches!(&outside, Err(Error::Busy(m)) if m.contains("transaction's own publish")), "{outside:?}");
    // A second transaction that could not have the connection is over, its work dropped:
    // a retried commit is refused rather than committing nothing.
    let mut second = t.begin();
    second.execute(&insert, [Value::Integer(2)]).unwrap();
    assert!(matches!(second.query("SELECT 1", []), Err(Error::Busy(_))));
    argument(second.execute(&insert, [Value::Integer(3)]), "rolled back after an error");
    let mut third = t.begin();
    third.execute(&insert, [Value::Integer(2)]).unwrap();
    assert!(matches!(third.commit(), Err(Error::Busy(_))), "its commit waits for the connection too");
    assert_eq!(tx.commit().unwrap().len(), 1);
    assert_eq!(count(&t, &orders), 1);
    assert_eq!(t.stats().unwrap().messages, 1, "only the transaction's message");
    // Ended: every call is refused with why.
    let mut failed = t.begin();
    failed.execute("INSERT INTO no_such_table VALUES (1)", []).unwrap();
    assert!(matches!(failed.query("SELECT 1", []), Err(Error::Database(_))));
    argument(failed.execute(&insert, [Value::Integer(5)]), "rolled back after an error");
    argument(failed.publish(msg("g", &event(3))), "rolled back after an error");
    assert!(matches!(failed.query("SELECT 1", []), Err(Error::Argument(m)) if m.contains("begin a new one")));
    assert!(
        matches!(failed.commit(), Err(Error::Argument(m)) if m.starts_with("commit: the transaction was rolled back"))
    );
    assert_eq!(count(&t, &orders), 1);
    assert_eq!(t.stats().unwrap().messages, 1);
}

// ---- headers -------------------------------------------------------------------------------

/// Headers every publish form may carry: odd bytes, a repeated name, '=' in a value.
fn sample_headers(n: usize) -> Headers {
    let pairs = [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), ("x", "a=b; c"),
        ("x", "caf\u{e9} \u{1f600}\n\t\\\""), ("content-type", "")];
    Headers::new(&pairs[..n]).unwrap()
}

pub fn headers_come_back_with_every_lease_and_look(open: Open<'_>) {
    let t = open(&Options::new());
    let e: Vec<String> = (0..10).map(event).collect();
    let (h1, h2, h3, h4) = (sample_headers(1), sample_headers(2), sample_headers(3), sample_headers(4));
    let with = |group_id, event_json, headers| Message { headers: Some(headers), ..msg(group_id, event_json) };
    // Four groups of two messages each, one publish form after another.
    t.publish_many(&[with("plain", &e[0], &h4), msg("plain", &e[1])]).unwrap();
    t.publish_with(with("keyed", &e[2], &h3), keyed("k-1")).unwrap();
    let again = t.publish_with(with("keyed", &e[9], &h1), keyed("k-1")).unwrap();
    assert!(again.duplicate, "a duplicate stores nothing, its headers neither");
    t.publish_many(&[msg("keyed", &e[3])]).unwrap();
    t.publish_many_with(&[(with("batch", &e[4], &h2), Delivery::default()), (msg("batch", &e[5]), keyed("k-2"))])
        .unwrap();
    let in_tx = [with("tx", &e[6], &h1), msg("tx", &e[7])];
    if t.shard_count() == 1 {
        t.transaction(|tx| {
            tx.publish(in_tx[0])?;
            tx.publish_with(in_tx[1], Delivery::default())
        })
        .unwrap();
    } else {
        // A sharded queue refuses an application's transaction (shards.rs says so).
        t.publish_many(&in_tx).unwrap();
    }
    let peeked = t.peek("plain", None, 10).unwrap().items;
    assert_eq!(peeked.iter().map(|m| m.headers.clone()).collect::<Vec<_>>(), [h4.clone(), Headers::none()]);

    // Every way to be handed a lease: each group's second message comes after its first is acked.
    let first = claim(&t, "w").expect("a lease");
    let many = t.claim_many("w", V, 0, &[], 2, &Wait::none()).unwrap();
    let next = t.ack_and_claim(&first, "w", V, 0, &[]).unwrap().expect("ack_and_claim's lease");
    let waited =
        t.claim_wait("w", V, 0, &[], &Wait::up_to(Duration::from_secs(5))).unwrap().expect("a waiting claim's lease");
    let mut leases = vec![first, next.clone(), waited.clone()];
    leases.extend(many.iter().cloned());
    let mut held = [many, vec![next, waited]].concat();
    while !held.is_empty() {
        let (acked, more) = t.ack_and_claim_many(&held, "w", V, 0, &[], 10).unwrap();
        assert!(acked.iter().all(Result::is_ok));
        leases.extend(more.iter().cloned());
        held = more;
    }
    let expected = [h4, Headers::none(), h3, Headers::none(), h2, Headers::none(), h1, Headers::none()];
    assert_eq!(leases.len(), expected.len(), "every message once");
    for (i, headers) in expected.iter().enumerate() {
        let lease = leases.iter().find(|l| l.event == e[i]).unwrap_or_else(|| panic!("event {i} was claimed"));
        assert_eq!(&lease.headers, headers, "event {i}: in order, byte for byte");
    }
}

pub fn headers_live_through_dead_letters_and_redrive(open: Open<'_>) {
    let t = open(&Options::new());
    let h = sample_headers(4);
    t.publish_many(&[Message { headers: Some(&h), ..msg("g", &event(0)) }]).unwrap();
    let lease = claim(&t, "w").unwrap();
    t.dead_letter(&lease, "poison").unwrap();
    let dead = t.dead_letters(Some("g"), None, 10).unwrap().items;
    assert_eq!(dead[0].headers, h, "a dead letter keeps them");
    assert_eq!(t.redrive(harel_transport::DeadLetters::Group("g")).unwrap(), 1);
    assert_eq!(t.peek("g", None, 10).unwrap().items[0].headers, h, "so does a redrive");
    assert_eq!(claim(&t, "w").unwrap().headers, h);
}
