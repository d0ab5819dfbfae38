"""Bad input becomes our exceptions, before anything reaches the queue; the exception
classes, one per status under `HarelError`."""

from __future__ import annotations

import pickle

import pytest

import harel_transport as ht
from conftest import inspect_db
from harel_transport import Lease, Message, Transport


@pytest.fixture
def t(qpath):
    transport = Transport(qpath)
    yield transport
    transport.close()


def assert_empty(path):
    assert inspect_db(path, "SELECT count(*) FROM harel_transport_messages") == [[0]]
    assert inspect_db(path, "SELECT count(*) FROM harel_transport_groups") == [[0]]


@pytest.mark.parametrize(
    "call, names",
    [
        # A NUL would cut the C string short: refused, never truncated.
        (lambda t: t.publish("order\0-42", "{}"), "group_id holds a NUL"),
        (lambda t: t.publish("g", '{"a":"\0"}'), "event_json holds a NUL"),
        (lambda t: t.publish("g", b"{}\0"), "event_json holds a NUL"),
        (lambda t: t.publish("g", "{}", routing_key="k\0"), "routing_key holds a NUL"),
        (lambda t: t.publish_many([("g", "{}"), ("x\0", "{}")]), "messages[1].group_id holds a NUL"),
        # Not a str.
        (lambda t: t.publish(42, "{}"), "group_id must be a str, got int 42"),
        (lambda t: t.publish(b"g", "{}"), "group_id must be a str, got bytes"),
        (lambda t: t.publish(None, "{}"), "group_id must be a str"),
        (lambda t: t.publish("g", {"kind": "x"}), "event_json must be JSON text"),
        (lambda t: t.publish("g", "{}", routing_key=7), "routing_key must be a str"),
        (lambda t: t.publish_many("gg"), "messages must be an iterable of Message"),
        (lambda t: t.publish_many(5), "messages must be an iterable of Message"),
        (lambda t: t.publish_many([["g", "{}"]]), "messages[0] must be a Message or a tuple"),
        (lambda t: t.publish_many([Message("g", "{}", priority="1")]), "messages[0].priority must be an int"),
        # Out of range, or the wrong kind of number.
        (lambda t: t.publish("g", "{}", priority=5), "priority is 5; it must be 0..4"),
        (lambda t: t.publish("g", "{}", priority=-1), "priority is -1"),
        (lambda t: t.publish("g", "{}", priority=2**40), "priority must be 0..4, got 1099511627776"),
        (lambda t: t.publish("g", "{}", priority=True), "priority must be an int, got bool"),
        (lambda t: t.publish("g", "{}", priority=1.0), "priority must be an int, got float"),
        (lambda t: t.publish("", "{}"), "group_id is empty"),
        (lambda t: t.publish("g", "not json"), "event_json is not valid JSON"),
        (lambda t: t.publish("g\ud800", "{}"), "group_id is not valid Unicode"),
    ],
)
def test_bad_publish_arguments(t, qpath, call, names):
    with pytest.raises(ht.ArgumentError) as e:
        call(t)
    assert names in e.value.message
    assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
    assert isinstance(e.value, ValueError) and isinstance(e.value, ht.HarelError)
    assert_empty(qpath)


@pytest.mark.parametrize(
    "kwargs, names",
    [
        (dict(worker_id="w\0x"), "worker_id holds a NUL"),
        (dict(worker_id=3), "worker_id must be a str"),
        (dict(worker_id=""), "worker_id is empty"),
        (dict(worker_id="__parked__"), "reserved"),
        (dict(visibility=0), "visibility is 0"),
        (dict(visibility=-1.5), "visibility is -1.5"),
        (dict(visibility=float("nan")), "visibility is NaN"),
        (dict(visibility=float("inf")), "visibility is inf"),
        (dict(visibility="30"), "visibility must be a number of seconds"),
        (dict(visibility=True), "visibility must be a number of seconds"),
        (dict(visibility=10**400), "visibility is too large"),
        (dict(min_priority=5), "min_priority is 5"),
        (dict(min_priority=-(2**33)), "min_priority must be 0..4"),
        (dict(routing_keys="eu"), "routing_keys must be a sequence of str, not a single str"),
        (dict(routing_keys=["eu", 1]), "routing_keys[1] must be a str"),
        (dict(routing_keys=["eu\0"]), "routing_keys[0] holds a NUL"),
        (dict(routing_keys=[""]), "routing_keys element is empty"),
        (dict(routing_keys=3), "routing_keys must be a sequence of str"),
    ],
)
def test_bad_claim_arguments(t, qpath, kwargs, names):
    t.publish("g", "{}")
    args = dict(worker_id="w")
    args.update(kwargs)
    with pytest.raises(ht.ArgumentError) as e:
        t.claim(**args)
    assert names in e.value.message, e.value.message
    assert inspect_db(qpath, "SELECT locked_by FROM harel_transport_messages") == [[None]], "nothing leased"


def test_bad_leases(t, qpath):
    t.publish("g", "{}")
    lease = t.claim("w")
    cases = [
        (lambda: t.ack("not a lease"), "lease must be a Lease"),
        (lambda: t.ack(None), "lease must be a Lease"),
        (lambda: t.ack(Lease(lease.seq, "", "{}", "w", 0.0)), "lease.group_id is empty"),
        (lambda: t.ack(Lease(lease.seq, 5, "{}", "w", 0.0)), "lease.group_id must be a str"),
        (lambda: t.ack(Lease("1", "g", "{}", "w", 0.0)), "lease.seq must be an int64"),
        (lambda: t.ack(Lease(2**64, "g", "{}", "w", 0.0)), "lease.seq must be an int64"),
        (lambda: t.ack(Lease(lease.seq, "g", "{}", "w\0", 0.0)), "lease.worker_id holds a NUL"),
        (lambda: t.ack(Lease(lease.seq, "g", "{}", "__parked__", 0.0)), "reserved"),
        (lambda: t.nack(lease, -1), "delay is -1"),
        (lambda: t.nack(lease, float("nan")), "delay is NaN"),
        (lambda: t.nack(lease, "1"), "delay must be a number of seconds"),
        (lambda: t.ack_and_claim(lease, "w", 0), "visibility is 0"),
    ]
    for call, names in cases:
        with pytest.raises(ht.ArgumentError) as e:
            call()
        assert names in e.value.message, e.value.message
    # The lease is still the worker's: nothing changed.
    assert inspect_db(qpath, "SELECT locked_by FROM harel_transport_messages") == [["w"]]
    t.ack(lease)


def test_bad_open_arguments(tmp_path):
    path = str(tmp_path / "q.db")
    cases = [
        (dict(path="q\0.db"), "path holds a NUL"),
        (dict(path=7), "path must be a str"),
        (dict(path=""), "database is empty"),
        (dict(prefix="bad prefix"), "is not an identifier"),
        (dict(prefix="p\0"), "prefix holds a NUL"),
        (dict(prefix="p" * 31), "is not an identifier"),
        (dict(busy_timeout=-1), "busy_timeout is -1"),
        (dict(busy_timeout="5"), "busy_timeout must be a number"),
        (dict(sync_interval=float("inf")), "sync_interval is inf"),
        (dict(create_schema=1), "create_schema must be a bool"),
        (dict(synchronous_full="yes"), "synchronous_full must be a bool"),
        (dict(clock=5), "clock must be a callable"),
    ]
    for kwargs, names in cases:
        args = dict(path=path)
        args.update(kwargs)
        with pytest.raises(ht.ArgumentError) as e:
            Transport(args.pop("path"), **args)
        assert names in e.value.message, e.value.message
    with pytest.raises(TypeError):
        Transport(path, no_such_option=1)


def test_a_path_object_opens(tmp_path):
    with Transport(tmp_path / "p.db") as t:
        t.publish("g", "{}")
    assert (tmp_path / "p.db").exists()


def test_a_directory_is_a_database_error(tmp_path):
    with pytest.raises(ht.DatabaseError) as e:
        Transport(str(tmp_path))
    assert e.value.status == -2 and e.value.code == "HAREL_ERR_DATABASE"


def test_one_class_per_status():
    expected = {
        -1: ht.ArgumentError,
        -2: ht.DatabaseError,
        -3: ht.BusyError,
        -4: ht.LeaseLostError,
        -5: ht.ConnectError,
        -6: ht.WaitInterruptedError,
        -99: ht.PanicError,
    }
    for status, cls in expected.items():
        e = ht.error_for_status(status, "why")
        assert type(e) is cls and isinstance(e, ht.HarelError)
        assert e.status == status == cls.STATUS
        assert e.code == ht.STATUS_NAMES[status]
        assert str(e) == f"{ht.STATUS_NAMES[status]}: why"
        again = pickle.loads(pickle.dumps(e))
        assert type(again) is cls and again.status == status and again.message == "why"
    unknown = ht.error_for_status(-7, "new")
    assert type(unknown) is ht.UnknownStatusError and unknown.status == -7
    assert unknown.code == "HAREL_UNKNOWN(-7)"
    assert issubclass(ht.TransportClosedError, ht.ArgumentError)
    assert issubclass(ht.LibraryLoadError, ht.HarelError) and issubclass(ht.LibraryLoadError, OSError)
