"""What another transport or process observes after each call of the harel drop-in: at its
defaults, what harel's own transport would leave (the other being a second transport of
ours, and harel's own `SqliteTransport` in another process); with each speed option, the
one difference it makes (README, "The harel drop-in")."""

from __future__ import annotations

import asyncio

import pytest
from harel.spec.states import Event

from conftest import inspect_db, run_python
from harel_transport.harel import AsyncLibsqlTransport, AsyncSqliteTransport, LibsqlTransport, SqliteTransport

_HARELS_CLAIM = """
import sys
from harel.engine.transport import SqliteTransport
t = SqliteTransport(sys.argv[1])
lease = t.claim("theirs", 30)
print(lease.event.kind if lease else None)
t.close()
"""


def harels_claim(path: str) -> str:
    """What harel's own SqliteTransport claims from `path`, in another process."""
    return run_python(_HARELS_CLAIM, path).strip()


def publish_two(t, first_group="G", second_group="G"):
    t.publish(first_group, Event(kind="E1"))
    t.publish(second_group, Event(kind="E2"))


def test_by_default_an_ack_frees_its_group_when_it_returns(qpath):
    """The issue's example: harel's protocol says an ack removes the message and frees its
    group."""
    with SqliteTransport(qpath) as a, SqliteTransport(qpath) as b:
        publish_two(a)
        a.ack(a.claim("w1", 30))
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[1]]
        lease = b.claim("w2", 30)
        assert lease.event.kind == "E2"
        b.nack(lease)
        assert harels_claim(qpath) == "E2"


@pytest.mark.parametrize("build", ["create", "over a sync transport"])
def test_by_default_the_async_classes_free_the_group_when_the_ack_returns(qpath, build):
    async def main():
        if build == "create":
            a = await AsyncSqliteTransport.create(qpath)
        else:
            a = AsyncLibsqlTransport(LibsqlTransport(qpath))
        with SqliteTransport(qpath) as b:
            await a.publish("G", Event(kind="E1"))
            await a.publish("G", Event(kind="E2"))
            await a.ack(await a.claim("w1", 30))
            lease = b.claim("w2", 30)
            assert lease.event.kind == "E2"
            b.nack(lease)
        await a.close()

    asyncio.run(main())
    assert harels_claim(qpath) == "E2"


def test_by_default_a_claim_leases_one_message(qpath):
    with SqliteTransport(qpath) as a, SqliteTransport(qpath) as b:
        publish_two(a, "G1", "G2")
        first = a.claim("w1", 30)
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages WHERE locked_by IS NOT NULL") == [[1]]
        second = b.claim("w2", 30)
        assert {first.group_id, second.group_id} == {"G1", "G2"}


def test_defer_ack_keeps_the_group_leased_until_the_acking_transport_claims_again(qpath):
    """`defer_ack=True`: after `ack` returns the message is still leased to its worker, so
    its group gives nobody anything, until the acking transport's next claim (or `flush`,
    `close`)."""
    with SqliteTransport(qpath, defer_ack=True) as a, SqliteTransport(qpath) as b:
        publish_two(a)
        first = a.claim("w1", 30)
        a.ack(first)
        assert inspect_db(qpath, "SELECT locked_by FROM harel_transport_messages WHERE seq = ?", [first.seq]) == [["w1"]]
        assert b.claim("w2", 30) is None
        assert harels_claim(qpath) == "None"
        a.flush()
        assert b.claim("w2", 30).event.kind == "E2"


def test_prefetch_holds_the_heads_of_groups_its_worker_has_not_started(qpath):
    """`prefetch=N`: a claim leases up to N groups' heads; those not handed out yet are
    leased to the worker, so their groups give nobody else anything. Its acks stay a commit
    each."""
    with SqliteTransport(qpath, prefetch=2) as a, SqliteTransport(qpath) as b:
        publish_two(a, "G1", "G2")
        first = a.claim("w1", 30)
        assert a.held == 1
        assert b.claim("w2", 30) is None, "the other group's head is held for w1"
        assert harels_claim(qpath) == "None"
        a.ack(first)
        assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[1]], "acked at once"
        second = a.claim("w1", 30)
        assert {first.group_id, second.group_id} == {"G1", "G2"} and a.held == 0
        a.ack(second)
    assert inspect_db(qpath, "SELECT count(*) FROM harel_transport_messages") == [[0]]
