//! The transport contract (docs/queue.md), in-process, with a moved clock:
//! every check of tests/common/contract.rs on a local file of its own, and what only a
//! local file can show.

use harel_transport_testkit as common;

use common::contract::Check;
use common::{file, temp_db, TestClock};
use harel_transport::{Options, Transport};

const V: f64 = 30.0;

fn on_a_local_file(check: Check) {
    let (_dir, path) = temp_db();
    check(&|options: &Options| Transport::open(&path, options).expect("open a local file"));
}

/// One test per check, named after it.
macro_rules! local {
    ($($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                on_a_local_file(common::contract::$check);
            }
        )*

        #[test]
        fn every_check_of_the_contract_runs_here() {
            let shared: Vec<&str> = common::contract::CHECKS.iter().map(|(name, _)| *name).collect();
            assert_eq!(shared, [$(stringify!($check)),*]);
        }
    };
}

local!(
    fifo_within_a_group,
    one_in_flight_per_group_while_others_proceed,
    lease_fields,
    ack_frees_the_group_and_removes_the_message,
    nack_now_makes_the_message_claimable_at_once,
    nack_with_delay_parks_and_blocks_the_group,
    a_parked_group_does_not_block_others,
    a_lapsed_lease_is_claimable_again,
    round_robin_a_group_just_served_yields_to_one_never_claimed,
    round_robin_cycles_through_groups,
    priority_floor_skips_lower_groups,
    the_first_publish_fixes_priority_and_routing_key,
    routing_keys_restrict_claims,
    many_routing_keys_take_the_json_path,
    lost_leases_are_detected_and_change_nothing,
    a_nacked_lease_is_over,
    a_forged_lease_for_another_group_is_lost,
    in_flight_and_parked_groups_do_not_hide_a_ready_one,
    ack_and_claim_acks_then_claims_in_one_go,
    ack_and_claim_claims_nothing_when_the_ack_fails,
    a_long_batch_keeps_its_order_and_first_messages_across_inserts,
    attempts_count_every_claim,
    max_attempts_moves_a_poison_message_out_and_serves_its_group,
    a_worker_dead_letters_a_message_it_holds,
    redrive_moves_dead_letters_back_as_the_newest,
    purge_dead_deletes_what_it_is_asked,
    stats_count_every_state,
    groups_are_listed_in_pages_and_by_state,
    peek_shows_a_groups_messages_without_claiming,
    purge_empties_a_group_or_the_queue,
    release_frees_a_stuck_group_now,
    claim_many_hands_out_distinct_groups_in_serving_order,
    claim_many_keeps_the_floor_and_routing_keys,
    claim_many_buries_a_poison_head_and_serves_its_group_in_its_place,
    ack_many_reports_a_lost_lease_and_acks_the_others,
    ack_and_claim_many_acks_a_batch_then_claims_the_next,
    extend_moves_the_lease_end_and_keeps_the_group_out,
    extend_after_a_lapse_no_one_claimed_keeps_the_lease,
    a_waiting_claim_returns_as_soon_as_another_transport_publishes,
    a_waiting_claim_lets_other_calls_on_its_transport_run,
    a_waiting_claim_wakes_when_a_park_ends,
    a_waiting_claim_returns_nothing_when_its_wait_is_over,
    a_cancelled_or_interrupted_wait_claims_nothing,
    eight_waiters_one_publish_exactly_one_gets_it,
    metrics_count_what_the_transport_did,
    a_watch_is_readable_until_a_look_finds_nothing,
    a_watch_rings_when_another_transport_publishes,
    a_watch_rings_at_a_park_end_and_a_lease_end,
    a_watch_looks_with_its_filter,
    a_watch_belongs_to_its_transport,
    a_key_seen_again_stores_nothing_and_names_the_first_message,
    keys_in_a_batch_each_stored_once,
    a_key_is_forgotten_after_its_retention,
    a_delayed_message_is_not_delivered_before_its_time,
    a_delayed_message_keeps_its_place_in_its_group,
    a_waiting_claim_wakes_when_a_delayed_message_is_due,
    bad_delivery_options_are_refused_and_change_nothing,
    a_transaction_commits_its_rows_and_messages_together,
    a_transaction_that_fails_keeps_nothing,
    a_query_begins_the_transaction_and_sees_its_own_writes,
    a_waiting_claim_wakes_when_a_transaction_commits,
    transaction_misuse_is_refused_and_changes_nothing,
    headers_come_back_with_every_lease_and_look,
    headers_live_through_dead_letters_and_redrive,
    a_unique_key_holds_one_pending_message_until_it_is_processed,
    replace_gives_the_pending_message_the_new_event_in_its_place,
    debounce_moves_the_due_time_never_past_max_delay,
    unique_keys_in_a_batch_are_checked_in_order,
    a_unique_duplicate_in_a_transaction_is_an_answer,
    bad_unique_keys_are_refused_and_change_nothing,
    a_paused_group_keeps_its_messages_in_order_and_is_not_claimed,
    a_lease_in_hand_finishes_while_its_group_is_paused,
    a_paused_queue_holds_every_group_and_new_ones,
    a_paused_routing_key_holds_its_groups_and_new_ones,
    a_pause_names_a_group_before_and_after_it_has_messages,
    resume_keeps_a_held_head_until_its_time,
    bad_pause_targets_are_refused_and_change_nothing,
    an_expired_message_is_dead_lettered_and_its_group_goes_on,
    a_leased_message_never_expires_under_its_worker,
    a_claim_never_hands_out_an_expired_head,
    the_sweep_expires_messages_behind_a_head_parked_and_paused,
    an_expired_message_frees_its_unique_key,
    bad_expiries_are_refused_and_change_nothing,
    an_expiry_in_a_transaction_is_checked_as_it_is_queued,
    an_acked_message_is_archived_with_what_was_done,
    every_ack_archives_and_nothing_else_does,
    the_archive_is_off_by_default,
    a_groups_history_reads_in_order_in_pages,
    the_archive_is_pruned_after_its_retention_a_bounded_number_per_ack,
    bad_archive_arguments_are_refused,
    a_concurrency_limit_leases_at_most_n_of_its_key,
    a_lapse_or_a_dead_letter_ends_a_slot_and_a_lost_ack_does_not,
    a_park_ends_a_slot,
    a_rate_limit_admits_its_burst_then_its_rate,
    limits_change_at_run_time_and_outlive_their_setter,
    a_waiting_claim_wakes_when_its_key_has_room,
    bad_limits_are_refused_and_change_nothing,
    held_and_retrying_groups_list_as_stats_counts_them,
    a_nack_without_a_delay_waits_the_backoff_which_grows_to_its_cap,
    a_lapsed_lease_waits_the_backoff_and_counts_toward_max_attempts,
    a_message_s_own_policy_wins_over_the_queue_s,
    a_transaction_s_publish_keeps_its_own_policy,
    jitter_spreads_the_backoff_within_its_range,
    bad_retry_policies_are_refused_naming_the_field,
);

#[test]
fn a_group_written_with_priority_above_4_is_still_served() {
    // harel's Python publish does not check priority; such a group must not be stranded.
    let clock = TestClock::at(1000.0);
    let (_dir, path) = temp_db();
    let t = file(&path, &clock);
    common::Raw::open(&path).batch(
        "INSERT INTO harel_transport_messages (group_id, event) VALUES ('py', '{}');
         INSERT INTO harel_transport_groups (group_id, priority) VALUES ('py', 7);",
    );
    let lease = t.claim("w", V, 4, &[]).unwrap().expect("priority 7 is above the floor 4");
    assert_eq!(lease.group_id, "py");
}

