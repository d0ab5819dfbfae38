"""`AsyncTransport`: every operation as a coroutine, run off the event loop, with calls
of one transport in flight at once."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import harel_transport as ht
from conftest import LoopTicker
from harel_transport import AsyncTransport, Message


def test_every_operation(qpath, clock):
    async def main():
        async with await AsyncTransport.open(qpath, clock=clock, busy_timeout=2, synchronous_full=True) as t:
            assert t.path == qpath and not t.closed
            await t.publish("g", '{"n":1}', priority=1, routing_key="k")
            await t.publish("g", '{"n":2}')
            await t.publish_many([Message("h", '{"n":3}'), ("h", '{"n":4}')])
            assert await t.claim("w", 10, 2) is None
            a = await t.claim("w", 10, 1, ["k"])
            assert (a.group_id, a.event, a.lock_expiry) == ("g", '{"n":1}', 1010.0)
            b = await t.ack_and_claim(a, "w", 10)
            assert b.event == '{"n":3}'
            await t.nack(b, 5)
            assert (await t.claim("w")).event == '{"n":2}'
            clock.now += 6
            c = await t.claim("w")
            assert c.event == '{"n":3}'
            await t.ack(c)
            with pytest.raises(ht.LeaseLostError):
                await t.ack(c)
            assert isinstance(t.transport, ht.Transport)
        assert t.closed
        with pytest.raises(ht.TransportClosedError):
            await t.claim("w")
        await t.close()  # again: nothing

    asyncio.run(main())


def test_open_errors_are_ours(tmp_path):
    async def main():
        with pytest.raises(ht.ArgumentError):
            await AsyncTransport.open(str(tmp_path / "q.db"), prefix="no way")
        with pytest.raises(ht.DatabaseError):
            await AsyncTransport.open(str(tmp_path))

    asyncio.run(main())


def test_calls_run_off_the_event_loop(qpath):
    """A claim whose clock takes 0.3 s: the loop keeps ticking meanwhile, and the clock runs
    on another thread than the loop's."""
    threads = set()

    def slow_clock():
        threads.add(threading.get_ident())
        time.sleep(0.3)
        return time.time()

    async def main():
        t = await AsyncTransport.open(qpath, clock=slow_clock)
        await t.publish("g", "{}")
        ticker = LoopTicker()
        started = time.monotonic()
        lease = await t.claim("w")
        took = time.monotonic() - started
        ticks = await ticker.stop()
        assert lease is not None and took >= 0.3
        assert ticks >= 10, f"the loop was blocked: {ticks} ticks in {took:.2f} s"
        assert threading.get_ident() not in threads
        await t.close()

    asyncio.run(main())


def test_concurrent_calls_each_get_their_own_outcome(qpath):
    async def main():
        with ThreadPoolExecutor(8) as pool:
            t = await AsyncTransport.open(qpath, executor=pool)
            good = [t.publish(f"g{i % 7}", json.dumps({"i": i})) for i in range(200)]
            # Bad ones in between, each failing in the library with its own message.
            bad = [t.publish("g", "{}", priority=p) for p in (5, 6, 7, 8)]
            results = await asyncio.gather(*good, *bad, return_exceptions=True)
            assert results[:200] == [None] * 200
            for p, e in zip((5, 6, 7, 8), results[200:]):
                assert isinstance(e, ht.ArgumentError)
                assert e.message == f"priority is {p}; it must be 0..4"
            # Claims of one transport at once: each a different group.
            leases = await asyncio.gather(*[t.claim(f"w{i}") for i in range(10)])
            got = [lease for lease in leases if lease is not None]
            assert len(got) == 7 and len({lease.group_id for lease in got}) == 7
            await asyncio.gather(*[t.ack(lease) for lease in got])
            seen = len(got)
            while True:
                lease = await t.claim("w")
                if lease is None:
                    break
                await t.ack(lease)
                seen += 1
            assert seen == 200
            await t.close()

    asyncio.run(main())


def test_close_waits_for_calls_in_flight(qpath):
    armed, gate = threading.Event(), threading.Event()

    def clock():
        if armed.is_set():
            gate.wait(5)
        return time.time()

    async def main():
        t = await AsyncTransport.open(qpath, clock=clock)
        await t.publish("g", "{}")
        armed.set()
        claim = asyncio.create_task(t.claim("w"))
        await asyncio.sleep(0.05)
        closing = asyncio.create_task(t.close())
        await asyncio.sleep(0.05)
        assert not closing.done(), "close waits for the claim in flight"
        gate.set()
        lease = await claim
        await closing
        assert lease.group_id == "g" and t.closed

    asyncio.run(main())
