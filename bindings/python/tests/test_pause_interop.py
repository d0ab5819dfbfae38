"""harel 0.9's own `SqliteTransport`, in another process, on a queue file this package
pauses and resumes: harel's claims never return a paused group's messages and go on with
the others'; with the queue paused they return nothing, and a group harel itself makes
meanwhile is paused too (the file's trigger does it, in harel's process); harel's ack of a
lease it took before the pause leaves the group paused; resumed, harel and we serve the
groups again, each in its order.

harel's sqlite3 never opens the file in this process (README, "The hazard"): its peer is a
subprocess driven line by line, holding its leases between our calls."""

from __future__ import annotations

import pytest
from harel.spec.states import Event

from harel_peer import HarelPeer
from harel_transport import Pause, Transport


@pytest.fixture
def harel_peer(qpath):
    Transport(qpath).close()  # ours makes the file first: the schema with the pauses table and triggers
    peer = HarelPeer(qpath)
    yield peer
    assert peer.close() == "", "harel never errors, nor warns"


def publish(t, group, id, **options):
    t.publish(group, Event(id=id, kind="from-ours", data={}).model_dump_json(), **options)


def claim_id(t):
    lease = t.claim("ours", 30)
    if lease is None:
        return None
    t.ack(lease)
    return (lease.group_id, Event.model_validate_json(lease.event).id)


def states(t):
    return {g.group_id: g.state for g in t.groups()}


def test_harel_never_claims_a_paused_group(qpath, harel_peer):
    harel = harel_peer
    with Transport(qpath) as t:
        for i in range(3):
            publish(t, "a", f"a{i}")
        publish(t, "b", "b0")
        publish(t, "b", "b1")
        publish(t, "eu", "eu0", routing_key="eu")
        harel.publish("c", "c0")
        assert t.pause(group_id="a") is True
        assert t.pause(routing_key="eu") is True

        served = harel.drain()
        assert sorted(served) == [("b", "b0"), ("b", "b1"), ("c", "c0")], "the others', none of a's nor eu's"
        assert [x for x in served if x[0] == "b"] == [("b", "b0"), ("b", "b1")]
        harel.publish("a", "a3")  # harel's publish into the paused group
        harel.publish("eu", "eu1")
        assert harel.claim() is None
        assert states(t) == {"a": "paused", "eu": "paused"}
        assert [m.seq for m in t.peek("a")] == sorted(m.seq for m in t.peek("a")) and len(t.peek("a")) == 4

        # resumed: harel and we take turns on a, in its order
        assert t.resume(group_id="a") is True
        lease = harel.claim()
        assert (lease["group"], lease["id"]) == ("a", "a0")
        assert t.claim("ours", 30) is None, "a is harel's now: one in flight per group"
        harel.ack(lease)
        assert claim_id(t) == ("a", "a1")
        assert harel.drain() == [("a", "a2"), ("a", "a3")]
        assert states(t) == {"eu": "paused"}
        assert t.resume(routing_key="eu") is True
        assert harel.drain() == [("eu", "eu0"), ("eu", "eu1")]
        assert t.pauses() == [] and t.stats().messages == 0


def test_a_queue_pause_holds_harel_and_the_groups_it_makes(qpath, harel_peer):
    harel = harel_peer
    with Transport(qpath) as t:
        publish(t, "x", "x0")
        publish(t, "x", "x1")
        publish(t, "x", "x2")
        publish(t, "y", "y0")
        before = harel.claim()  # a lease harel takes before the pause
        assert (before["group"], before["id"]) == ("x", "x0")
        assert t.pause() is True

        assert harel.claim() is None, "the queue is paused"
        harel.publish("h", "h0", priority=2)  # a group harel makes while the queue is paused
        harel.publish("y", "y1")
        assert harel.claim() is None, "nor the group harel just made"
        assert states(t) == {"x": "paused", "y": "paused", "h": "paused"}
        (h,) = [g for g in t.groups("paused") if g.group_id == "h"]
        assert h.priority == 2, "harel's priority, shown as it was given"
        (x,) = [g for g in t.groups() if g.group_id == "x"]
        assert x.holder == "harel-worker", "harel's lease from before the pause still shows"
        s = t.stats()
        assert (s.groups, s.paused, s.ready, s.leased) == (3, 3, 0, 0)

        harel.ack(before)  # harel's ack of the lease it took before the pause
        (x,) = [g for g in t.groups() if g.group_id == "x"]
        assert (x.state, x.holder, x.depth) == ("paused", None, 2), "x stays paused"
        assert harel.claim() is None and t.claim("ours", 30) is None

        # h is also paused on its own: resuming the queue leaves it paused
        assert t.pause(group_id="h") is True
        assert t.pauses()[0] == Pause("queue", "", t.pauses()[0].paused_at)
        assert t.resume() is True
        assert states(t) == {"x": "ready", "y": "ready", "h": "paused"}
        # harel and we serve the groups again, each in its order
        lease = harel.claim()
        assert (lease["group"], lease["id"]) in {("x", "x1"), ("y", "y0")}
        harel.ack(lease)
        mine = [claim_id(t)]
        rest = harel.drain()
        mine.append(claim_id(t))
        served = [(lease["group"], lease["id"])] + mine + rest
        served = [s for s in served if s is not None]
        assert [s for s in served if s[0] == "x"] == [("x", "x1"), ("x", "x2")]
        assert [s for s in served if s[0] == "y"] == [("y", "y0"), ("y", "y1")]
        assert "h" not in {s[0] for s in served}
        assert t.resume(group_id="h") is True
        assert claim_id(t) == ("h", "h0")
        assert t.pauses() == [] and t.stats().messages == 0
