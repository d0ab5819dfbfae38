//! The contract's checks of pause and resume (docs/queue.md, "Pause and resume"): listed
//! in contract.rs's `CHECKS` with the others, and run wherever they run. None expects one
//! group served before another, so each holds on a sharded queue too.

use harel_transport::{Error, GroupState, Lease, Message, Options, PauseKind, PauseTarget, Transport};

use super::contract::Open;
use super::{event, TestClock};

const V: f64 = 30.0;

fn claim(t: &Transport) -> Option<Lease> {
    t.claim("w", V, 0, &[]).unwrap()
}

/// The groups of every lease the claims hand out until none is left (each acked).
fn drain(t: &Transport) -> Vec<(String, String)> {
    let mut served = Vec::new();
    while let Some(lease) = claim(t) {
        served.push((lease.group_id.clone(), lease.event.clone()));
        t.ack(&lease).unwrap();
    }
    served
}

fn groups_of(served: &[(String, String)]) -> Vec<&str> {
    let mut groups: Vec<&str> = served.iter().map(|(g, _)| g.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

fn state_of(t: &Transport, group_id: &str) -> GroupState {
    let page = t.groups(None, None, 100).unwrap();
    page.items.iter().find(|g| g.group_id == group_id).map(|g| g.state).expect("the group is listed")
}

pub fn a_paused_group_keeps_its_messages_in_order_and_is_not_claimed(open: Open<'_>) {
    let t = open(&Options::new());
    let e: Vec<String> = (0..4).map(event).collect();
    t.publish("p", &e[0], 2, None).unwrap();
    t.publish("p", &e[1], 2, None).unwrap();
    t.publish("q", &e[2], 0, None).unwrap();
    assert!(t.pause(PauseTarget::Group("p")).unwrap(), "a new pause");
    assert!(!t.pause(PauseTarget::Group("p")).unwrap(), "paused already");
    t.publish("p", &e[3], 2, None).unwrap();
    assert_eq!(state_of(&t, "p"), GroupState::Paused);
    let stats = t.stats().unwrap();
    assert_eq!((stats.messages, stats.groups, stats.paused, stats.ready), (4, 2, 1, 1));
    let level = stats.by_priority.iter().find(|l| l.priority == 2).expect("its own level");
    assert_eq!((level.groups, level.paused, level.ready), (1, 1, 0));
    let paused = t.groups(Some(GroupState::Paused), None, 10).unwrap().items;
    assert_eq!(paused.iter().map(|g| (g.group_id.as_str(), g.priority, g.depth)).collect::<Vec<_>>(), [("p", 2, 3)]);
    assert!(t.groups(Some(GroupState::Ready), None, 10).unwrap().items.iter().all(|g| g.group_id == "q"));
    assert!(t.claim("w", V, 2, &[]).unwrap().is_none(), "a floor claim passes it too");
    // Stored in the database: another transport (a process, a restart) sees it.
    let other = open(&Options::new());
    assert_eq!(other.pauses().unwrap().len(), 1);
    assert!(other.claim("w", V, 2, &[]).unwrap().is_none());
    drop(other);
    assert_eq!(drain(&t), [("q".to_owned(), e[2].clone())], "only the other group");
    assert!(t.resume(PauseTarget::Group("p")).unwrap());
    assert!(!t.resume(PauseTarget::Group("p")).unwrap(), "resumed already");
    let served: Vec<String> = drain(&t).into_iter().map(|(_, event)| event).collect();
    assert_eq!(served, [e[0].as_str(), &e[1], &e[3]], "in order, the one published while paused last");
    assert_eq!(t.stats().unwrap().paused, 0);
}

/// A lease taken before the pause finishes: its ack, extend and nack work, and the group's
/// next message waits for the resume.
pub fn a_lease_in_hand_finishes_while_its_group_is_paused(open: Open<'_>) {
    let t = open(&Options::new());
    let e: Vec<String> = (0..3).map(event).collect();
    for event in &e {
        t.publish("g", event, 0, None).unwrap();
    }
    let mut lease = claim(&t).unwrap();
    t.pause(PauseTarget::Group("g")).unwrap();
    let listed = t.groups(None, None, 10).unwrap().items.remove(0);
    assert_eq!((listed.state, listed.holder.as_deref()), (GroupState::Paused, Some("w")), "its holder shows");
    t.extend(&mut lease, V).unwrap();
    t.ack(&lease).unwrap();
    assert!(claim(&t).is_none(), "the ack leaves the group paused");
    t.resume(PauseTarget::Group("g")).unwrap();
    let second = claim(&t).unwrap();
    assert_eq!(second.event, e[1]);
    t.pause(PauseTarget::Group("g")).unwrap();
    t.nack(&second, 0.0).unwrap();
    assert!(claim(&t).is_none(), "a nack now leaves it paused too");
    t.resume(PauseTarget::Group("g")).unwrap();
    let third = claim(&t).unwrap();
    assert_eq!(third.event, e[1], "the nacked message");
    t.pause(PauseTarget::Group("g")).unwrap();
    t.dead_letter(&third, "failed while paused").unwrap();
    t.resume(PauseTarget::Group("g")).unwrap();
    t.purge_group("g").unwrap();
    // The dead letter's group comes back as it was made, not paused.
    assert_eq!(t.redrive(harel_transport::DeadLetters::Group("g")).unwrap(), 1);
    let back = t.groups(None, None, 10).unwrap().items.remove(0);
    assert_eq!((back.state, back.priority), (GroupState::Ready, 0));
    assert_eq!(drain(&t).len(), 1);
}

/// A paused queue pauses every group, new ones too; a group paused on its own stays paused
/// when the queue resumes.
pub fn a_paused_queue_holds_every_group_and_new_ones(open: Open<'_>) {
    let t = open(&Options::new());
    let e0 = event(0);
    t.publish("a", &e0, 0, None).unwrap();
    assert!(t.pause(PauseTarget::Queue).unwrap());
    t.publish("b", &e0, 0, None).unwrap();
    t.publish("c", &e0, 1, Some("k")).unwrap();
    assert!(claim(&t).is_none());
    assert!(t.claim("w", V, 0, &["k"]).unwrap().is_none(), "a routed claim passes it too");
    assert_eq!(t.stats().unwrap().paused, 3);
    t.pause(PauseTarget::Group("b")).unwrap();
    let pauses = t.pauses().unwrap();
    let listed: Vec<(PauseKind, &str)> = pauses.iter().map(|p| (p.kind, p.name.as_str())).collect();
    assert_eq!(listed, [(PauseKind::Queue, ""), (PauseKind::Group, "b")], "the queue's first");
    assert!(pauses.iter().all(|p| p.paused_at > 0.0));
    assert!(t.resume(PauseTarget::Queue).unwrap());
    assert_eq!(groups_of(&drain(&t)), ["a", "c"], "b is still paused on its own");
    assert_eq!(state_of(&t, "b"), GroupState::Paused);
    t.resume(PauseTarget::Group("b")).unwrap();
    assert_eq!(groups_of(&drain(&t)), ["b"]);
    assert!(t.pauses().unwrap().is_empty());
}

pub fn a_paused_routing_key_holds_its_groups_and_new_ones(open: Open<'_>) {
    let t = open(&Options::new());
    let e0 = event(0);
    t.publish("k1", &e0, 0, Some("k")).unwrap();
    t.publish("other", &e0, 0, Some("j")).unwrap();
    t.pause(PauseTarget::RoutingKey("k")).unwrap();
    t.publish("k2", &e0, 0, Some("k")).unwrap();
    assert!(t.claim("w", V, 0, &["k"]).unwrap().is_none());
    assert_eq!(groups_of(&drain(&t)), ["other"]);
    assert_eq!(t.stats().unwrap().paused, 2, "the group made while paused too");
    t.resume(PauseTarget::RoutingKey("k")).unwrap();
    let mut served = Vec::new();
    while let Some(lease) = t.claim("w", V, 0, &["k"]).unwrap() {
        served.push(lease.group_id.clone());
        t.ack(&lease).unwrap();
    }
    served.sort();
    assert_eq!(served, ["k1", "k2"]);
}

/// A pause of a group with no messages yet holds it from its first publish; a group that
/// drains while paused and comes back is still paused.
pub fn a_pause_names_a_group_before_and_after_it_has_messages(open: Open<'_>) {
    let t = open(&Options::new());
    let e0 = event(0);
    assert!(t.pause(PauseTarget::Group("later")).unwrap());
    t.publish("later", &e0, 0, None).unwrap();
    assert!(claim(&t).is_none());
    t.purge_group("later").unwrap();
    t.publish("later", &e0, 0, None).unwrap();
    assert!(claim(&t).is_none(), "the pause is the name's, not the row's");
    t.resume(PauseTarget::Group("later")).unwrap();
    assert_eq!(groups_of(&drain(&t)), ["later"]);
}

/// Resume gives a group its turn from its head: a parked or delayed head stays held until
/// its own time, as it would have without the pause.
pub fn resume_keeps_a_held_head_until_its_time(open: Open<'_>) {
    let clock = TestClock::at(1000.0);
    let t = open(&clock.options());
    let e0 = event(0);
    t.publish("parked", &e0, 0, None).unwrap();
    let delivery = harel_transport::Delivery { delay: 60.0, ..Default::default() };
    let message = Message { group_id: "delayed", event_json: &e0, priority: 0, routing_key: None, headers: None };
    t.publish_with(message, delivery).unwrap();
    t.nack(&claim(&t).unwrap(), 60.0).unwrap();
    t.pause(PauseTarget::Queue).unwrap();
    clock.advance(10.0);
    t.resume(PauseTarget::Queue).unwrap();
    assert!(claim(&t).is_none(), "both heads still held");
    clock.advance(51.0);
    assert_eq!(groups_of(&drain(&t)), ["delayed", "parked"]);
}

pub fn bad_pause_targets_are_refused_and_change_nothing(open: Open<'_>) {
    let t = open(&Options::new());
    t.publish("g", &event(0), 0, None).unwrap();
    for (target, says) in [(PauseTarget::Group(""), "group_id is empty"), (PauseTarget::RoutingKey(""), "routing_key")]
    {
        for outcome in [t.pause(target), t.resume(target)] {
            match outcome {
                Err(Error::Argument(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
                other => panic!("{target:?}: {other:?}"),
            }
        }
    }
    assert!(t.pauses().unwrap().is_empty());
    assert_eq!(t.stats().unwrap().paused, 0);
    assert!(claim(&t).is_some());
}
