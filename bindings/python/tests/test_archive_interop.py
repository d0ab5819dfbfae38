"""harel 0.9's own `SqliteTransport` and `LibsqlTransport`, in another process, on a queue
file where our transport keeps the archive (the file made by ours, or made by harel and
upgraded by ours): harel publishes, claims, nacks and acks as ever (the messages'
`claimed_at` column and the archive table do not disturb it, and it never errs nor
warns); harel's acks archive nothing, our messages included; our acks of the messages
harel published are archived, with `published_at` None (harel stamps no time) and our
claim's time, worker and headers (none).

harel's SQLite never opens the file in this process (README, "The hazard"): its peer is a
subprocess driven line by line, holding its leases between our calls."""

from __future__ import annotations

import time

import pytest
from harel.spec.states import Event

from conftest import inspect_db
from harel_peer import HAREL_TRANSPORTS, HarelPeer
from harel_transport import Transport


def publish(t, group, id, **options):
    t.publish(group, Event(id=id, kind="from-ours", data={}).model_dump_json(), **options)


def ids(t, **look):
    """(group, event id) of each archived message, in the archive's order."""
    return [(a.group_id, Event.model_validate_json(a.event).id) for a in t.archive(**look)]


@pytest.mark.parametrize("made_by", ["ours", "harel"])
@pytest.mark.parametrize("kind", HAREL_TRANSPORTS)
def test_harel_on_a_file_that_keeps_the_archive(qpath, kind, made_by):
    if made_by == "ours":
        Transport(qpath).close()  # the schema with messages.claimed_at and the archive table
    harel = HarelPeer(qpath, kind)  # made_by "harel": harel's schema, which ours upgrades below
    try:
        with Transport(qpath, archive_retention=3600) as t:
            columns = [r[1] for r in inspect_db(qpath, "PRAGMA table_info(harel_transport_messages)")]
            assert "claimed_at" in columns
            assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_archive") == [[0]]

            # harel publishes, claims, nacks, claims again and acks, as ever
            harel.publish("h", "h0")
            harel.publish("h", "h1")
            lease = harel.claim()
            assert (lease["group"], lease["id"]) == ("h", "h0")
            assert t.claim("ours", 30) is None, "h is harel's: one in flight per group"
            harel.nack(lease)
            lease = harel.claim()
            assert (lease["group"], lease["id"]) == ("h", "h0"), "given back by harel's nack"
            harel.ack(lease)
            assert t.archive().items == [], "harel's ack archives nothing"

            # ours, served by harel: nothing archived either; nor a message our claim stamped
            publish(t, "o", "o0", headers=[("k", "v")])
            publish(t, "o", "o1")
            stamped = t.claim("ours", 30)
            assert stamped.event and stamped.group_id in ("h", "o")
            t.nack(stamped)
            served = harel.drain()
            assert sorted(served) == [("h", "h1"), ("o", "o0"), ("o", "o1")]
            assert [s for s in served if s[0] == "o"] == [("o", "o0"), ("o", "o1")], "in the group's order"
            assert t.archive().items == [] and t.stats().messages == 0

            # harel publishes, we claim and ack: archived, published_at unknown
            harel.publish("x", "x0")
            harel.publish("x", "x1")
            harel.publish("y", "y0")
            before = time.time()
            mine = t.claim("ours", 30)
            assert (mine.group_id, mine.attempts) == ("x", 1)
            t.ack(mine)
            after = time.time()
            (a,) = t.archive().items
            assert (a.seq, a.group_id, a.worker_id, a.attempts, a.headers, a.shard) == (mine.seq, "x", "ours", 1, [], 0)
            assert Event.model_validate_json(a.event).id == "x0" and a.event == mine.event, "harel's JSON as stored"
            assert a.published_at is None, "harel stamps no publish time"
            assert a.claimed_at is not None and before - 1 <= a.claimed_at <= a.acked_at <= after + 1

            # harel claims one and gives it back; ours claims both and acks them: archived
            lease = harel.claim()
            assert (lease["group"], lease["id"]) in {("x", "x1"), ("y", "y0")}
            harel.nack(lease)
            leases = t.claim_many("ours-2", max=2)
            assert sorted((lease.group_id, lease.attempts) for lease in leases) == [("x", 1), ("y", 1)], (
                "harel's claims count no attempts"
            )
            assert t.ack_many(leases) == [None, None]
            assert ids(t) == [("x", "x0"), ("x", "x1"), ("y", "y0")], "in seq order"
            assert ids(t, group_id="x") == [("x", "x0"), ("x", "x1")], "x's history"
            for x in t.archive().items:
                assert x.published_at is None and x.claimed_at is not None and x.claimed_at <= x.acked_at
                assert x.attempts == 1

            # harel goes on as ever after our archiving acks
            harel.publish("z", "z0")
            publish(t, "z", "z1")
            assert harel.drain() == [("z", "z0"), ("z", "z1")]
            assert len(t.archive()) == 3, "harel's acks archived nothing"
            assert t.stats().messages == 0
        rows = inspect_db(qpath, "SELECT group_id, worker, enqueued_at FROM harel_transport_archive ORDER BY seq")
        assert rows == [["x", "ours", None], ["x", "ours-2", None], ["y", "ours-2", None]]
    finally:
        err = harel.close()
    assert err == "", f"harel never errors, nor warns: {err}"
