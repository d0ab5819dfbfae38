"""The worker loop of the sync face: claims that wait (and what ends their wait: a
`Cancel`, `interrupt()`, `close()`, Ctrl-C on the main thread), `claim_many`, `ack_many`,
`ack_and_claim_many`, `extend`, `keep_alive`; what wakes a wait (another transport's
publish, another process's, a park's or a lease's end); and that nothing leaks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import harel_transport as ht
from conftest import child_env, inspect_db
from harel_transport import Cancel, Lease, Message, Transport


def leased(t: Transport) -> int:
    return t.stats().leased


class Waiter(threading.Thread):
    """`fn()` on a thread: what it returned or raised, and when it returned."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.error, self.ended = fn, None, None, None

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            self.error = e
        self.ended = time.monotonic()


def waiting(fn, settle: float = 0.2) -> Waiter:
    """A Waiter started, given `settle` seconds to get into its wait."""
    w = Waiter(fn)
    w.start()
    time.sleep(settle)
    assert w.is_alive(), f"it returned at once: {w.result!r} {w.error!r}"
    return w


# -- batches ------------------------------------------------------------------------------


def publish_mix(t: Transport) -> None:
    t.publish_many(
        [Message("a", "1"), Message("a", "2"), Message("b", "3", 2), Message("c", "4", 0, "eu"),
         Message("d", "5", 4), Message("e", "6", 2), Message("b", "7")]
    )


def test_claim_many_hands_out_distinct_groups_in_serving_order(tmp_path, clock):
    """A batch is what claims one after another would hand out: the same file history
    claimed both ways gives the same leases, each a different group."""
    with Transport(str(tmp_path / "one.db"), clock=clock) as one, Transport(str(tmp_path / "many.db"), clock=clock) as many:
        publish_mix(one)
        publish_mix(many)
        singly = []
        while (lease := one.claim("w", 30)) is not None:
            singly.append((lease.seq, lease.group_id, lease.event))
        batch = many.claim_many("w", 30, max=100)
        assert [(x.seq, x.group_id, x.event) for x in batch] == singly
        assert [x.group_id for x in batch] == ["a", "b", "c", "d", "e"], "new groups in their arrival order"
        assert len({x.group_id for x in batch}) == len(batch)
        assert all(x.worker_id == "w" and x.lock_expiry == clock.now + 30 and x.attempts == 1 for x in batch)
        assert many.claim_many("w", 30, max=100) == [], "every group is in flight"
        assert many.stats().leased == 5


def test_claim_many_max_floor_and_routing_keys(qpath):
    with Transport(qpath) as t:
        publish_mix(t)
        assert [x.group_id for x in t.claim_many("w", max=1)] == ["a"]
        assert [x.group_id for x in t.claim_many("w", 30, 2, max=10)] == ["b", "d", "e"], "the floor"
        assert [x.group_id for x in t.claim_many("w", routing_keys=["eu"], max=10)] == ["c"]
        assert t.claim_many("w", max=10, wait=0.05) == []


def test_a_full_batch_of_max_claim(qpath):
    with Transport(qpath) as t:
        t.publish_many([(f"g{i:04d}", str(i)) for i in range(ht.MAX_CLAIM + 5)])
        batch = t.claim_many("w", max=ht.MAX_CLAIM)
        assert len(batch) == ht.MAX_CLAIM == 1000
        assert len({x.group_id for x in batch}) == ht.MAX_CLAIM
        assert t.ack_many(batch) == [None] * ht.MAX_CLAIM
        assert len(t.claim_many("w", max=ht.MAX_CLAIM)) == 5


def test_ack_many_with_one_lost_lease(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish_many([("a", "1"), ("b", "2"), ("c", "3"), ("a", "4")])
        a = t.claim("w1", 5)
        b, c = t.claim("w1", 30), t.claim("w1", 30)
        clock.now += 6
        taken = t.claim("w2", 30)
        assert taken.seq == a.seq, "a's lease lapsed and w2 has the message"
        outcomes = t.ack_many([a, b, c])
        assert outcomes[1:] == [None, None]
        lost = outcomes[0]
        assert isinstance(lost, ht.LeaseLostError) and lost.status == -4 and lost.code == "HAREL_ERR_LEASE_LOST"
        assert f"leases[0]: message {a.seq} of group 'a' is no longer leased to 'w1'" in lost.message
        assert "nothing of it changed" in lost.message
        # w2 still holds a's message; b and c are gone.
        assert [(g.group_id, g.holder) for g in t.groups()] == [("a", "w2")]
        assert t.ack_many([taken]) == [None]
        assert t.claim("w").event == "4"
        assert t.ack_many([]) == []


def test_ack_many_refuses_what_is_not_a_lease_and_acks_nothing(qpath):
    with Transport(qpath) as t:
        t.publish_many([("a", "1"), ("b", "2")])
        batch = t.claim_many("w", max=2)
        for bad, names in (
            (batch + ["nope"], "leases[2] must be a Lease from claim(), got the str 'nope'"),
            ([batch[0], None], "leases[1] must be a Lease"),
            ([batch[0], Lease(1, "", "{}", "w", 0.0)], "leases[1].group_id is empty"),
            ([Lease(1, "a", "{}", "w\0", 0.0)], "leases[0].worker_id holds a NUL"),
            ([Lease(1, "a", "{}", "__parked__", 0.0)], "reserved"),
            (batch[0], "leases must be an iterable of Lease, not a single Lease"),
            (5, "leases must be an iterable of Lease, got int 5"),
        ):
            with pytest.raises(ht.ArgumentError) as e:
                t.ack_many(bad)
            assert names in e.value.message, e.value.message
            with pytest.raises(ht.ArgumentError):
                t.ack_and_claim_many(bad, "w", max=1)
        assert leased(t) == 2, "nothing was acked"
        assert t.ack_many(x for x in batch) == [None, None], "any iterable"


def test_ack_and_claim_many(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish_many([("a", "1"), ("a", "2"), ("b", "3"), ("c", "4", 1)])
        first = t.claim_many("w", 10, max=2)
        assert [x.event for x in first] == ["1", "3"]
        leases, acked = t.ack_and_claim_many(first, "w", 10, max=5)
        assert acked == [None, None]
        assert sorted(x.event for x in leases) == ["2", "4"]
        clock.now += 11  # both lapse; w2 takes one of them
        stolen = t.claim("w2", 10)
        result = t.ack_and_claim_many(leases, "w", 10, max=5)
        assert isinstance(result, ht.AckAndClaimResult)
        lost = [x for x, outcome in zip(leases, result.acked) if outcome is not None]
        assert [x.seq for x in lost] == [stolen.seq] and isinstance(result.acked[leases.index(lost[0])], ht.LeaseLostError)
        assert result.leases == [], "a lost lease does not stop the claim; nothing else is deliverable"
        t.ack(stolen)
        assert t.ack_and_claim_many([], "w", max=1) == ([], [])
        assert t.stats().messages == 0


def test_extend(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish_many([("g", "1"), ("h", "2")])
        lease = t.claim("w", 10)
        clock.now += 8
        longer = t.extend(lease, 20)
        assert isinstance(longer, Lease) and longer is not lease
        assert longer.lock_expiry == clock.now + 20 and lease.lock_expiry == 1010.0, "a new Lease; the old one unchanged"
        assert (longer.seq, longer.group_id, longer.event, longer.attempts) == (lease.seq, "g", "1", 1)
        clock.now += 5  # past the first end, within the new one
        assert t.claim("w2", 10).group_id == "h", "g is still held"
        assert [(g.group_id, g.lock_expiry) for g in t.groups("leased")][0] == ("g", longer.lock_expiry)
        t.ack(lease)  # the lease given to extend acks as well
        with pytest.raises(ht.LeaseLostError):
            t.extend(longer, 10)


def test_extend_after_a_lapse(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish("g", "1")
        lease = t.claim("w", 5)
        clock.now += 6
        kept = t.extend(lease, 10)  # lapsed, but no one claimed it since: still ours
        assert kept.lock_expiry == clock.now + 10
        assert t.claim("w2") is None
        clock.now += 11
        other = t.claim("w2", 10)
        assert other.seq == lease.seq
        with pytest.raises(ht.LeaseLostError) as e:
            t.extend(kept, 10)
        assert e.value.status == -4
        assert [(g.holder, g.lock_expiry) for g in t.groups()] == [("w2", clock.now + 10)], "nothing changed"
        t.nack(other)
        with pytest.raises(ht.LeaseLostError):
            t.extend(other, 10)


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda t: t.claim_many("w", max=0), "max is 0"),
        (lambda t: t.claim_many("w", max=1001), "max is 1001"),
        (lambda t: t.claim_many("w", max=-1), "max is -1; it must be 1..1000"),
        (lambda t: t.claim_many("w", max=2**64), "max is 18446744073709551616; it must be 1..1000"),
        (lambda t: t.claim_many("w", max=2.0), "max must be an int, got float"),
        (lambda t: t.claim_many("w", max=True), "max must be an int, got bool"),
        (lambda t: t.claim_many("w", max="10"), "max must be an int"),
        (lambda t: t.ack_and_claim_many([], "w", max=0), "max is 0"),
        (lambda t: t.ack_and_claim_many([], "w", max=1001), "max is 1001"),
        (lambda t: t.claim("w", wait=-1), "wait is -1"),
        (lambda t: t.claim("w", wait=float("nan")), "wait is NaN"),
        (lambda t: t.claim("w", wait=float("inf")), "wait is inf"),
        (lambda t: t.claim("w", wait="1"), "wait must be a number of seconds"),
        (lambda t: t.claim("w", wait=None), "wait must be a number of seconds"),
        (lambda t: t.claim_many("w", max=1, wait=-0.5), "wait is -0.5"),
        (lambda t: t.claim_many("w", max=1, wait=float("nan")), "wait is NaN"),
        (lambda t: t.claim_many("w", max=1, wait=[1]), "wait must be a number of seconds"),
        (lambda t: t.claim("w", wait=1, cancel=threading.Event()), "cancel must be a harel_transport.Cancel"),
        (lambda t: t.claim_many("w", max=1, cancel=True), "cancel must be a harel_transport.Cancel"),
        (lambda t: t.claim_many("", max=1), "worker_id is empty"),
        (lambda t: t.claim_many("w", 0, max=1), "visibility is 0"),
        (lambda t: t.claim_many("w", min_priority=5, max=1), "min_priority is 5"),
        (lambda t: t.claim_many("w", routing_keys="eu", max=1), "routing_keys must be a sequence of str"),
        (lambda t: t.extend(Lease(1, "g", "{}", "w", 0.0), 0), "visibility is 0"),
        (lambda t: t.extend(Lease(1, "g", "{}", "w", 0.0), float("inf")), "visibility is inf"),
        (lambda t: t.extend(Lease(1, "g", "{}", "w", 0.0), "5"), "visibility must be a number"),
        (lambda t: t.extend("lease", 5), "lease must be a Lease"),
        (lambda t: t.keep_alive("lease", 5), "lease must be a Lease"),
        (lambda t: t.keep_alive(Lease(1, "g", "{}", "w", 0.0), 3, every=3), "every is 3 and visibility 3.0"),
        (lambda t: t.keep_alive(Lease(1, "g", "{}", "w", 0.0), 3, every=0), "which must be > 0"),
        (lambda t: t.keep_alive(Lease(1, "g", "{}", "w", 0.0), 3, every="1"), "every must be a number"),
        (lambda t: t.keep_alive(Lease(1, "g", "{}", "w", 0.0), -3), "every is -1.0 and visibility -3.0"),
    ],
)
def test_bad_worker_loop_arguments(qpath, call, names):
    with Transport(qpath) as t:
        t.publish("g", "{}")
        with pytest.raises(ht.ArgumentError) as e:
            call(t)
        assert names in e.value.message, e.value.message
        assert e.value.status == -1 and e.value.code == "HAREL_ERR_ARGUMENT"
        assert leased(t) == 0, "nothing claimed"
    assert inspect_db(qpath, "SELECT locked_by FROM harel_transport_messages") == [[None]]


def test_interrupted_is_its_own_class():
    e = ht.error_for_status(-6, "why")
    assert type(e) is ht.WaitInterruptedError and isinstance(e, ht.HarelError)
    assert e.code == "HAREL_ERR_INTERRUPTED" == ht.status_name(-6) and ht.WaitInterruptedError.STATUS == -6
    assert not isinstance(e, InterruptedError), "not the builtin (an OSError for EINTR)"


# -- waits --------------------------------------------------------------------------------


def test_a_wait_that_finds_nothing_returns_empty_after_its_wait(qpath):
    with Transport(qpath) as t:
        for call, empty in ((lambda: t.claim("w", wait=0.3), None), (lambda: t.claim_many("w", max=3, wait=0.3), [])):
            started = time.monotonic()
            assert call() == empty
            assert 0.28 <= time.monotonic() - started < 2
        # From a thread that is not the main one (no helper thread there) the same.
        w = Waiter(lambda: t.claim_many("w", max=3, wait=0.3))
        started = time.monotonic()
        w.start()
        w.join(5)
        assert w.result == [] and 0.28 <= w.ended - started < 2


def test_a_wait_returns_at_once_when_there_is_work(qpath):
    with Transport(qpath) as t:
        t.publish("g", "1")
        started = time.monotonic()
        assert t.claim("w", wait=30).event == "1"
        t.publish("h", "2")
        assert [x.event for x in t.claim_many("w", max=5, wait=30)] == ["2"]
        assert time.monotonic() - started < 1


@pytest.mark.parametrize("many", [False, True])
def test_a_waiter_is_woken_by_another_transports_publish(qpath, many):
    with Transport(qpath) as waiter, Transport(qpath) as publisher:
        if many:
            w = waiting(lambda: waiter.claim_many("w", max=5, wait=10))
        else:
            w = waiting(lambda: waiter.claim("w", wait=10))
        sent = time.monotonic()
        publisher.publish("g", '"hello"')
        w.join(5)
        assert w.error is None
        got = w.result if many else [w.result]
        assert [x.event for x in got] == ['"hello"']
        assert w.ended - sent < 0.5, f"woken after {w.ended - sent:.3f} s"


_PUBLISHER = """
import sys, time
import harel_transport as ht
t = ht.Transport(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
sent = time.time()
t.publish("g", '"from another process"')
print(sent, flush=True)
t.close()
"""


def test_a_waiter_is_woken_by_another_process_publishing(qpath):
    with Transport(qpath) as t:
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_PUBLISHER), qpath],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env(),
        )
        try:
            assert child.stdout.readline().strip() == "ready"
            woke = {}

            def claim():
                lease = t.claim("w", wait=20)
                woke["at"] = time.time()
                return lease

            w = waiting(claim, settle=0.3)
            child.stdin.write("\n")
            child.stdin.flush()
            sent = float(child.stdout.readline())
            w.join(10)
        finally:
            child.communicate(timeout=10)
        assert w.error is None and w.result.event == '"from another process"'
        latency = woke["at"] - sent
        print(f"\nwoken by another process's publish after {latency * 1000:.1f} ms (the publish's commit included)")
        assert latency < 1.0


def test_a_waiter_is_woken_by_a_parks_end_and_a_leases_end(qpath):
    with Transport(qpath) as t:
        t.publish("g", "1")
        t.nack(t.claim("w"), 0.5)
        started = time.monotonic()
        lease = t.claim("w", wait=10)
        took = time.monotonic() - started
        assert lease.event == "1" and 0.4 < took < 1.5, f"the park's end woke it after {took:.3f} s"
        # The lease lapses at 0.5 s: another worker waiting gets it then.
        t.nack(lease)
        t.claim("w1", 0.5)
        started = time.monotonic()
        batch = t.claim_many("w2", max=5, wait=10)
        took = time.monotonic() - started
        assert [(x.event, x.worker_id, x.attempts) for x in batch] == [("1", "w2", 4)]
        assert 0.4 < took < 1.5, f"the lease's end woke it after {took:.3f} s"


def test_a_cancel_ends_a_wait_promptly_and_claims_nothing(qpath):
    with Transport(qpath) as t:
        cancel = Cancel()
        assert not cancel.fired and repr(cancel) == "<harel_transport.Cancel>"
        waiters = [
            waiting(lambda: t.claim("w", wait=30, cancel=cancel), settle=0),
            waiting(lambda: t.claim_many("w", max=4, wait=30, cancel=cancel), settle=0),
        ]
        with Transport(qpath) as other:  # one Cancel, calls on two transports
            waiters.append(waiting(lambda: other.claim("w", wait=30, cancel=cancel)))
            fired = time.monotonic()
            cancel.fire()
            for w in waiters:
                w.join(5)
                assert isinstance(w.error, ht.WaitInterruptedError), w.error
                assert w.error.status == -6 and "cancelled" in w.error.message
                assert w.ended - fired < 0.5
        assert cancel.fired and "fired" in repr(cancel)
        cancel.fire()  # again: nothing
        # A fired cancel ends a claim at once, even one with work to claim.
        t.publish("g", "1")
        for call in (lambda: t.claim("w", wait=30, cancel=cancel), lambda: t.claim("w", cancel=cancel),
                     lambda: t.claim_many("w", max=1, wait=30, cancel=cancel)):
            with pytest.raises(ht.WaitInterruptedError):
                call()
        assert leased(t) == 0
        assert t.claim("w", wait=30, cancel=Cancel()).event == "1", "a new cancel"


def test_interrupt_ends_every_wait_on_the_handle(qpath):
    with Transport(qpath) as t:
        waiters = [waiting(lambda: t.claim("w", wait=30), settle=0), waiting(lambda: t.claim_many("w", max=2, wait=30))]
        started = time.monotonic()
        t.interrupt()
        for w in waiters:
            w.join(5)
            assert isinstance(w.error, ht.WaitInterruptedError) and "interrupted" in w.error.message
            assert w.ended - started < 0.5
        # Later claims wait as usual.
        started = time.monotonic()
        assert t.claim("w", wait=0.2) is None and time.monotonic() - started >= 0.18
    t.interrupt()  # closed: nothing


def test_eight_waiters_one_publish(qpath):
    """Four waiting on one shared transport, four on their own: one message, one taker."""
    with Transport(qpath) as shared:
        own = [Transport(qpath) for _ in range(4)]
        try:
            waiters = [waiting(lambda: shared.claim("w-shared", wait=2), settle=0) for _ in range(4)]
            waiters += [waiting(lambda t=t: t.claim_many("w-own", max=3, wait=2), settle=0) for t in own]
            time.sleep(0.3)
            sent = time.monotonic()
            shared.publish("g", '"one"')
            for w in waiters:
                w.join(10)
                assert w.error is None
            got = [(w, w.result) for w in waiters if w.result]
            assert len(got) == 1, [w.result for w in waiters]
            w, result = got[0]
            lease = result if isinstance(result, Lease) else result[0]
            assert lease.event == '"one"' and w.ended - sent < 0.5
            assert shared.stats().leased == 1
        finally:
            for t in own:
                t.close()


def test_close_ends_a_waiting_claim(qpath):
    t = Transport(qpath)
    waiters = [waiting(lambda: t.claim("w", wait=30), settle=0), waiting(lambda: t.claim_many("w", max=2, wait=30))]
    started = time.monotonic()
    t.close()
    assert time.monotonic() - started < 1, "close does not wait for the waits"
    for w in waiters:
        w.join(5)
        assert isinstance(w.error, ht.WaitInterruptedError)
        assert "the transport was closed while the claim waited; nothing was claimed" in w.error.message
    with pytest.raises(ht.TransportClosedError):
        t.claim("w", wait=1)
    with Transport(qpath) as again:
        assert again.stats().leased == 0


def _sigint_soon(after: float) -> threading.Timer:
    """Ctrl-C in `after` seconds, to the main thread, where a terminal's lands (sent to the
    process, it may land on another of its threads, which wakes no wait of the main one)."""
    main = threading.main_thread().ident
    timer = threading.Timer(after, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_ends_a_wait_of_the_main_thread(qpath):
    assert threading.current_thread() is threading.main_thread()
    # Python's own Ctrl-C handler, whatever an earlier test of the process left installed.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_ends_the_waits(qpath)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_ends_the_waits(qpath):
    with Transport(qpath) as t:
        for call in (lambda: t.claim("w", wait=30), lambda: t.claim_many("w", max=2, wait=30)):
            _sigint_soon(0.3)
            started = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                call()
            assert time.monotonic() - started < 1.5
        assert leased(t) == 0
        t.publish("g", "1")
        assert t.claim("w", wait=1).event == "1", "the transport goes on"


def test_a_signal_handler_can_fire_a_cancel(qpath):
    cancel = Cancel()
    previous = signal.signal(signal.SIGUSR1, lambda *_: cancel.fire())
    try:
        with Transport(qpath) as t:
            threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
            started = time.monotonic()
            with pytest.raises(ht.WaitInterruptedError):
                t.claim_many("w", max=2, wait=30, cancel=cancel)
            assert time.monotonic() - started < 1.5
    finally:
        signal.signal(signal.SIGUSR1, previous)


# -- keep_alive ---------------------------------------------------------------------------


def test_keep_alive_keeps_a_lease_past_its_visibility(qpath):
    with Transport(qpath) as t, Transport(qpath) as other:
        t.publish("g", "1")
        lease = t.claim("w", 0.6)
        with t.keep_alive(lease, 0.6, every=0.15) as alive:
            assert "beating" in repr(alive)
            time.sleep(1.5)
            assert other.claim("w2", wait=0.3) is None, "still held, well past 0.6 s"
            assert alive.error is None and not alive.lost.is_set()
            assert alive.lease.lock_expiry > lease.lock_expiry + 0.8
        assert alive.stop() is None and "stopped" in repr(alive)
        t.ack(alive.lease)
        assert t.stats().messages == 0


def test_keep_alive_reports_a_lost_lease(qpath, clock):
    with Transport(qpath, clock=clock) as t:
        t.publish("g", "1")
        lease = t.claim("w", 5)
        clock.now += 6
        t.claim("w2", 30)  # lapsed and taken: the next beat finds it lost
        alive = t.keep_alive(lease, 5, every=0.05)
        assert alive.lost.wait(5)
        assert isinstance(alive.error, ht.LeaseLostError) and "lost" in repr(alive)
        assert alive.stop() is alive.error
        assert alive.lease is lease, "never extended"


def test_keep_alive_ends_with_the_transport(qpath):
    t = Transport(qpath)
    t.publish("g", "1")
    alive = t.keep_alive(t.claim("w", 3), 3, every=0.05)
    t.close()
    assert alive.lost.wait(5) and isinstance(alive.error, ht.TransportClosedError)


# -- leaks --------------------------------------------------------------------------------


def test_every_lease_and_cancel_the_library_hands_out_is_freed(qpath, monkeypatch):
    """Counts harel_cancel_new against harel_cancel_free, and the leases the batch calls
    write against harel_lease_free, over every path: leases, empty, a fired cancel, an
    interrupt, an error, close."""
    lib = ht._native.lib()
    counts = {"cancel_new": 0, "cancel_free": 0, "lease_free": 0}

    def counting(fn, key, nonnull=False):
        def wrapper(*args):
            if not nonnull or args[0]:  # harel_lease_free(NULL) frees nothing
                counts[key] += 1
            return fn(*args)

        return wrapper

    monkeypatch.setattr(lib, "harel_cancel_new", counting(lib.harel_cancel_new, "cancel_new"))
    monkeypatch.setattr(lib, "harel_cancel_free", counting(lib.harel_cancel_free, "cancel_free"))
    monkeypatch.setattr(lib, "harel_lease_free", counting(lib.harel_lease_free, "lease_free", True))

    t = Transport(qpath)
    claimed = 0
    for round in range(20):
        t.publish_many([(f"g{i}", str(i)) for i in range(7)])
        batch = t.claim_many("w", max=5, wait=1, cancel=Cancel())
        one = t.claim("w", wait=1)
        rest, acked = t.ack_and_claim_many(batch + [one], "w", max=5)
        claimed += len(batch) + 1 + len(rest)
        assert t.ack_many(rest) == [None] * len(rest)
        assert t.claim_many("w", max=5, wait=0.01) == [] and t.claim("w", wait=0.01) is None
        fired = Cancel()
        fired.fire()
        with pytest.raises(ht.WaitInterruptedError):
            t.claim_many("w", max=5, wait=1, cancel=fired)
        with pytest.raises(ht.ArgumentError):
            t.claim_many("w", 0, max=5, wait=1)
    w = waiting(lambda: t.claim_many("w", max=5, wait=30))
    t.interrupt()
    w.join(5)
    w = waiting(lambda: t.claim("w", wait=30))
    t.close()
    w.join(5)
    assert isinstance(w.error, ht.WaitInterruptedError)
    assert counts["cancel_new"] == counts["cancel_free"] > 0, counts
    assert counts["lease_free"] == claimed, counts


def test_no_memory_grows_over_many_waits_and_batches(qpath):
    """The process's resident memory over 1,500 rounds of the worker loop, after 300 to
    warm up: leases of 2 KB events kept by the mapping (3 a round) would add some 9 MB."""

    def rss_kib() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    with Transport(qpath, synchronous_full=False) as t:
        payload = '"' + "x" * 2000 + '"'

        def rounds(n):
            for i in range(n):
                t.publish_many([("a", payload), ("b", payload), ("c", payload)])
                batch = t.claim_many("w", max=3, wait=0.5, cancel=Cancel())
                batch = [t.extend(x, 30) for x in batch]
                more, _ = t.ack_and_claim_many(batch, "w", max=3)
                t.ack_many(more)
                if i % 10 == 0:  # a wait that runs out, on the helper thread
                    t.claim("w", wait=0.001)

        rounds(300)
        before = rss_kib()
        rounds(1500)
        grew = rss_kib() - before
        assert grew < 4096, f"resident memory grew by {grew} KiB over 1,500 rounds"
