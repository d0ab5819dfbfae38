"""harel's sync `Worker` running statecharts on `harel_transport.harel.SqliteTransport`:
a retried action (an `on error` backoff through a durable timer), a message parked while
its execution is suspended (the worker's `nack(delay)`), and a lease that lapses while an
action runs, so another worker takes the message over and the first one's ack or nack is
lost: logged and dropped, and the worker goes on.

The workers run inline (`execution="inline"`), each in its own thread with its own
transport and store connection; the store is harel's SqliteStore in its own file (never
the queue file: README, "The hazard"). Besides, harel's AsyncWorker on
`AsyncSqliteTransport`, at its defaults and with its speed options."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import flow_actions
import pytest
from harel import SqliteStore, definition_from_dsl
from harel.engine.aio.distributed import AsyncDistributedRunner, AsyncWorker
from harel.engine.aio_store.dict import AsyncDictStore
from harel.engine.distributed import DistributedRunner, Worker
from harel.engine.execution import Status
from harel.spec.states import Event

import harel_transport as ht
from conftest import inspect_db
from harel_transport.harel import AsyncSqliteTransport, HarelTransport, SqliteTransport

FLOW = """
event Go {}
event Finish {}

machine job {
  initial Idle
  state Idle {}
  state Working {
    on enter flow_actions.work
  }
  state Backoff {
    timeout 1
  }
  final Done success

  from Idle to Working on Go
  from Working to Backoff on error
  from Backoff to Working on Timeout
  from Working to Done on Finish
}
"""


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def dropped():
    handler = Records()
    logger = logging.getLogger("harel_transport.harel")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


class WorkerThread(threading.Thread):
    """`Worker.run(stop)` in a thread, keeping what killed it."""

    def __init__(self, worker: Worker, stop: threading.Event, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.worker, self.stop, self.died_of = worker, stop, None

    def run(self) -> None:
        try:
            self.worker.run(self.stop)
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            self.died_of = e


def wait_for(what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what.__doc__ or what}")


def test_a_flow_with_a_retry_a_park_and_a_lapsed_lease(tmp_path, dropped):
    queue, store_path = str(tmp_path / "queue.db"), str(tmp_path / "store.db")
    defn = definition_from_dsl(FLOW, "job")
    defs = {defn.id: defn}
    # Try 1 fails (the model backs off 1 s, then a Timeout event retries); try 2 runs 1.2 s
    # with a 0.5 s lease: the other worker claims the message again and runs try 3.
    flow_actions.reset({1: "fail", 2: 1.2})
    runner = DistributedRunner(SqliteStore(store_path), SqliteTransport(queue), defs, execution="inline")
    stop = threading.Event()
    workers = [
        WorkerThread(
            Worker(
                SqliteStore(store_path),
                SqliteTransport(queue),
                defs,
                worker_id=name,
                visibility=0.5,
                suspend_recheck=0.3,
                execution="inline",
            ),
            stop,
            name,
        )
        for name in ("worker-a", "worker-b")
    ]
    for w in workers:
        w.start()
    try:
        exe = runner.create(defn.id)
        runner.send(exe.id, Event(kind="Go"))

        def worked():
            """three tries of the action, the last one done"""
            e = runner.store.load(exe.id)
            return len(flow_actions.calls) >= 3 and e.status is Status.RUNNING and e.active_path.endswith("Working")

        wait_for(worked)
        assert flow_actions.calls[1] != flow_actions.calls[2], "the lapsed message went to the other worker"

        def settled():
            """the lapsed lease's holder's ack or nack dropped"""
            return len(dropped) >= 1

        wait_for(settled)
        assert "lease of worker" in dropped[0].getMessage()

        # Suspended: the Finish event is parked (nack with the worker's suspend_recheck).
        runner.suspend(exe.id)
        runner.send(exe.id, Event(kind="Finish"))

        def parked():
            """the Finish event parked"""
            return inspect_db(queue, "SELECT locked_by FROM harel_transport_messages") == [["__parked__"]]

        wait_for(parked)
        assert runner.store.load(exe.id).status is Status.SUSPENDED
        runner.resume(exe.id)

        def done():
            """the execution done"""
            return runner.store.load(exe.id).status is Status.DONE

        try:
            wait_for(done)
        except AssertionError:
            e = runner.store.load(exe.id)
            raise AssertionError(f"{e.status} {e.active_path} {inspect_db(queue, 'SELECT * FROM harel_transport_messages')} {[w.died_of for w in workers]} {flow_actions.calls}")
        assert runner.store.load(exe.id).active_path.endswith("Done")
        assert all(w.is_alive() and w.died_of is None for w in workers), [w.died_of for w in workers]
        assert inspect_db(queue, "SELECT count(*) FROM harel_transport_messages") == [[0]]
    finally:
        stop.set()
        for w in workers:
            w.join(5)
        runner.transport.close()
        for w in workers:
            w.worker.transport.close()


class RaisingTransport(HarelTransport):
    """What a transport without harel's lost-lease rule does: the native ack and nack,
    which raise LeaseLostError."""

    def ack(self, lease):
        self.transport.ack(ht.Lease(lease.seq, lease.group_id, "", lease.token, 0.0))

    def nack(self, lease, delay=0.0):
        self.transport.nack(ht.Lease(lease.seq, lease.group_id, "", lease.token, 0.0), delay)


@pytest.mark.parametrize("transport_class, survives", [(SqliteTransport, True), (RaisingTransport, False)])
def test_a_lost_ack_does_not_kill_the_worker(tmp_path, dropped, transport_class, survives):
    """The issue's failure, reproduced with a transport that raises, and gone with ours: the
    worker's lease lapses mid-action and another consumer takes the message."""
    queue, store_path = str(tmp_path / "queue.db"), str(tmp_path / "store.db")
    defn = definition_from_dsl(FLOW, "job")
    defs = {defn.id: defn}
    flow_actions.reset({1: 0.8})
    runner = DistributedRunner(SqliteStore(store_path), SqliteTransport(queue), defs, execution="inline")
    stop = threading.Event()
    worker = WorkerThread(
        Worker(SqliteStore(store_path), transport_class(queue), defs, worker_id="slow", visibility=0.3, execution="inline"),
        stop,
        "slow",
    )
    thief = ht.Transport(queue)
    worker.start()
    try:
        exe = runner.create(defn.id)
        runner.send(exe.id, Event(kind="Go"))
        wait_for(lambda: flow_actions.calls)
        stolen = wait_for(lambda: thief.claim("thief", 30))  # once the 0.3 s lease lapsed
        assert worker.is_alive(), "still in the action"
        if survives:
            wait_for(lambda: dropped)
            assert worker.is_alive() and worker.died_of is None
            assert "'slow'" in dropped[0].getMessage()
            thief.ack(stolen)  # the thief's lease was never touched
        else:
            worker.join(5)
            assert isinstance(worker.died_of, ht.LeaseLostError), worker.died_of
    finally:
        stop.set()
        worker.join(5)
        thief.close()
        runner.transport.close()
        worker.worker.transport.close()


ONE_STEP = """
event Go {}
machine step {
  initial Waiting
  state Waiting {}
  final Done success
  from Waiting to Done on Go
}
"""


@pytest.mark.parametrize(
    "options", [{}, {"prefetch": "auto"}, {"defer_ack": True}, {"prefetch": 16, "defer_ack": True}], ids=repr
)
def test_harels_async_worker_runs_executions_to_the_end(tmp_path, options):
    """harel's AsyncWorker claims in one loop and handles up to `concurrency` messages at
    once: at the defaults, and with a prefetch (its claims served from the batch) and
    deferred acks."""
    queue = str(tmp_path / "queue.db")
    defn = definition_from_dsl(ONE_STEP, "step")
    defs = {defn.id: defn}

    async def main():
        store = AsyncDictStore()
        sender = await AsyncSqliteTransport.create(queue)
        runner = AsyncDistributedRunner(store, sender, defs)
        ids = []
        for _ in range(60):
            exe = await runner.create(defn.id)
            await runner.send(exe.id, Event(kind="Go"))
            ids.append(exe.id)
        await sender.close()
        transport = await AsyncSqliteTransport.create(queue, **options)
        stop = asyncio.Event()
        run = asyncio.create_task(AsyncWorker(store, transport, defs, worker_id="aw", concurrency=32).run(stop))
        deadline = time.monotonic() + 20
        while (statuses := {(await store.load(i)).status for i in ids}) != {Status.DONE}:
            assert time.monotonic() < deadline, statuses
            await asyncio.sleep(0.02)
        stop.set()
        await run
        await transport.close()

    asyncio.run(main())
    assert inspect_db(queue, "SELECT count(*) FROM harel_transport_messages") == [[0]], "every message acked"
