"""The worker loop of the async face: waits that hold an executor thread and never the
loop, many at once; a cancelled task (``task.cancel()``, ``asyncio.wait_for``) ends its
call's wait at once and leaves no lease behind, even one claimed in that instant;
`keep_alive` as a task."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import harel_transport as ht
from conftest import LoopTicker
from harel_transport import AsyncTransport, Cancel, Transport


def test_every_worker_loop_operation(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            await t.publish_many([("a", "1"), ("a", "2"), ("b", "3"), ("c", "4")])
            batch = await t.claim_many("w", 10, max=2, wait=1)
            assert [x.event for x in batch] == ["1", "3"]
            longer = await t.extend(batch[0], 20)
            assert longer.lock_expiry == clock.now + 20
            leases, acked = await t.ack_and_claim_many(batch, "w", 10, max=5)
            assert acked == [None, None] and sorted(x.event for x in leases) == ["2", "4"]
            outcomes = await t.ack_many(leases + leases[:1])
            assert outcomes[:2] == [None, None] and isinstance(outcomes[2], ht.LeaseLostError), "acked just before"
            assert await t.claim("w", wait=0.05) is None
            assert await t.claim_many("w", max=3, wait=0.05) == []
            assert (await t.stats()).messages == 0
            await t.publish("g", "5")
            assert (await t.claim("w", 10, wait=5)).event == "5"
            t.interrupt()  # nothing waits: nothing happens

    asyncio.run(main())


def test_ack_many_outcomes(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            await t.publish_many([("a", "1"), ("b", "2")])
            a, b = await t.claim_many("w", max=2)
            await t.ack(a)
            outcomes = await t.ack_many([a, b])
            assert outcomes[1] is None and isinstance(outcomes[0], ht.LeaseLostError)
            with pytest.raises(ht.ArgumentError, match=r"leases\[1\] must be a Lease"):
                await t.ack_many([b, "x"])

    asyncio.run(main())


def test_waits_hold_a_thread_not_the_loop(qpath):
    """Eight waits in flight at once (an executor of eight), the loop ticking meanwhile;
    one publish, one taker."""

    async def main():
        with ThreadPoolExecutor(9) as pool:
            t = await AsyncTransport.open(qpath, executor=pool)
            ticker = LoopTicker()
            waits = [asyncio.create_task(t.claim_many(f"w{i}", max=2, wait=1.5)) for i in range(4)]
            waits += [asyncio.create_task(t.claim(f"w{i}", wait=1.5)) for i in range(4, 8)]
            await asyncio.sleep(0.3)
            sent = time.monotonic()
            await t.publish("g", '"one"')
            first, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            took = time.monotonic() - sent
            results = await asyncio.gather(*waits)
            ticks = await ticker.stop()
            got = [r for r in results if r]
            assert len(got) == 1, results
            assert took < 0.5, f"the taker returned {took:.3f} s after the publish"
            assert ticks >= 100, f"the loop was blocked: {ticks} ticks"
            await t.close()

    asyncio.run(main())


def test_a_cancelled_task_ends_its_wait_and_leaves_nothing(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            for make in (lambda: t.claim("w", wait=30), lambda: t.claim_many("w", max=5, wait=30)):
                task = asyncio.create_task(make())
                await asyncio.sleep(0.2)
                started = time.monotonic()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert time.monotonic() - started < 0.5
                # The executor's thread is free again at once: a claim gets the next message.
                await t.publish("g", "1")
                started = time.monotonic()
                lease = await t.claim("w", wait=5)
                assert lease.event == "1" and time.monotonic() - started < 0.5
                await t.ack(lease)
                assert (await t.stats()).leased == 0

    asyncio.run(main())


def test_wait_for_times_a_wait_out(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            started = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(t.claim_many("w", max=5, wait=30), 0.3)
            assert 0.28 <= time.monotonic() - started < 0.8
            assert (await t.stats()).leased == 0
            await t.publish("g", "1")
            assert [x.event for x in await asyncio.wait_for(t.claim_many("w", max=5, wait=30), 5)] == ["1"]

    asyncio.run(main())


class BlockingClock:
    """A clock that, once armed, holds the call reading it until `release()`: a task can
    be cancelled while its C call is in the middle of claiming."""

    def __init__(self) -> None:
        self.armed, self.inside, self.gate = threading.Event(), threading.Event(), threading.Event()

    def __call__(self) -> float:
        if self.armed.is_set():
            self.inside.set()
            self.gate.wait(5)
        return time.time()

    async def arm_and_cancel(self, task: "asyncio.Task") -> None:
        """Waits until `task`'s call is inside the clock, cancels the task, then lets the
        call go on."""
        assert await asyncio.get_running_loop().run_in_executor(None, self.inside.wait, 5)
        task.cancel()
        await asyncio.sleep(0.05)
        self.armed.clear()
        self.gate.set()

    def arm(self) -> None:
        self.inside.clear()
        self.gate.clear()
        self.armed.set()


def test_what_a_cancelled_claim_had_claimed_is_given_back(qpath):
    """A task cancelled while its C call claims (held up in the clock, inside the call):
    what the call claims all the same is nacked (delay 0) before CancelledError is raised,
    so the message is ready again."""
    clock = BlockingClock()

    async def main():
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            for make in (
                lambda lease: t.ack_and_claim(lease, "w"),
                lambda lease: t.ack_and_claim_many([lease], "w", max=3),
                lambda lease: t.claim("w", wait=30),
                lambda lease: t.claim_many("w", max=3, wait=30),
            ):
                await t.publish_many([("g", "1"), ("h", "2")])
                first = await t.claim("w")
                clock.arm()
                task = asyncio.create_task(make(first))
                await clock.arm_and_cancel(task)
                with pytest.raises(asyncio.CancelledError):
                    await task
                # Only what was held before is held: h's message is ready (given back, or
                # never claimed: a wait that saw its cancel in time claims nothing).
                assert {g.group_id for g in await t.groups("leased")} <= {first.group_id}
                assert (await t.stats()).parked == 0
                h = (await t.peek("h")).items[0]
                assert h.locked_by is None and h.attempts in (0, 1)
                await t.purge()

    asyncio.run(main())


def test_a_cancel_object_and_interrupt_end_async_waits(qpath):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            cancel = Cancel()
            task = asyncio.create_task(t.claim_many("w", max=2, wait=30, cancel=cancel))
            await asyncio.sleep(0.2)
            cancel.fire()
            with pytest.raises(ht.WaitInterruptedError, match="cancelled"):
                await task
            task = asyncio.create_task(t.claim("w", wait=30))
            await asyncio.sleep(0.2)
            t.interrupt()
            with pytest.raises(ht.WaitInterruptedError, match="interrupted"):
                await task

    asyncio.run(main())


def test_close_ends_async_waits(qpath):
    async def main():
        t = await AsyncTransport.open(qpath)
        tasks = [asyncio.create_task(t.claim("w", wait=30)), asyncio.create_task(t.claim_many("w", max=2, wait=30))]
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await t.close()
        assert time.monotonic() - started < 1
        for task in tasks:
            with pytest.raises(ht.WaitInterruptedError, match="closed"):
                await task

    asyncio.run(main())


def test_keep_alive_as_a_task(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath) as t:
            await t.publish("g", "1")
            lease = await t.claim("w", 0.6)
            async with t.keep_alive(lease, 0.6, every=0.15) as alive:
                await asyncio.sleep(1.5)
                assert await t.claim("w2") is None, "still held, well past 0.6 s"
                assert alive.error is None and not alive.lost.is_set() and "beating" in repr(alive)
            assert alive.lease.lock_expiry > lease.lock_expiry + 0.8
            assert await alive.stop() is None
            await t.ack(alive.lease)
        async with await AsyncTransport.open(qpath, clock=clock) as t:
            await t.publish("g", "1")
            lease = await t.claim("w", 5)
            clock.now += 6
            await t.claim("w2")
            alive = t.keep_alive(lease, 5, every=0.05)
            await asyncio.wait_for(alive.lost.wait(), 5)
            assert isinstance(await alive.stop(), ht.LeaseLostError) and "lost" in repr(alive)
            with pytest.raises(ht.ArgumentError, match="every"):
                t.keep_alive(lease, 5, every=10)

    asyncio.run(main())


def test_the_harel_async_drop_in_leaves_no_lease_behind_a_cancelled_claim(qpath):
    """harel's AsyncTransport protocol on ours: a claim cancelled mid-call, its ack
    deferred onto it, leaves nothing leased (the ack is made, the claimed message given
    back)."""
    from harel.spec.states import Event

    from harel_transport.harel import AsyncSqliteTransport

    clock = BlockingClock()

    async def main():
        t = await AsyncSqliteTransport.create(qpath, clock=clock, defer_ack=True)
        await t.publish("g", Event(id="e1", kind="k"))
        await t.publish("h", Event(id="e2", kind="k"))
        await t.ack(await t.claim("w", 30))  # deferred onto the next claim
        clock.arm()
        task = asyncio.create_task(t.claim("w", 30))
        await clock.arm_and_cancel(task)
        with pytest.raises(asyncio.CancelledError):
            await task
        await t.close()

    asyncio.run(main())
    with Transport(qpath) as sync:
        stats = sync.stats()
        assert (stats.messages, stats.leased) == (1, 0)
