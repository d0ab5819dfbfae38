"""Waits without threads: the waiting claims of `AsyncTransport` (and so of the harel
drop-in's async transports) on the library's readiness descriptor, a *watch*
(``harel_transport_watch``, ``harel_watch_fd``, ``harel_watch_rearm``, ``harel_watch_free``).

One watch per filter (``min_priority`` and routing keys) and event loop serves every task
that waits with that filter; the tasks wait in a FIFO, on the loop, holding no thread:

- A task that starts to wait first makes one non-waiting claim itself (in the executor),
  unless a relay (below) is running: then it joins the FIFO and the relay serves it.
- While the FIFO has tasks, the watch's descriptor is polled with ``loop.add_reader``.
  When it is readable, the reader is removed and a *relay* runs: ``harel_watch_rearm``
  in the executor (always before claiming: a commit after it rings again, so no wake is
  lost); on HAREL_EMPTY the reader is added back; on HAREL_OK the tasks claim one after
  another in FIFO order, each a non-waiting claim (``harel_transport_claim`` or
  ``claim_many`` with no wait) in the executor, as long as each one got something. The
  first that gets nothing stays first in the FIFO, and the reader is added back.
- Each task has its own deadline (``loop.call_later``): at it, a task not claiming ends
  with nothing; one claiming ends with what that claim returns.
- A cancelled task (``task.cancel()``, ``asyncio.wait_for``, ``asyncio.timeout``) leaves
  the FIFO at once, having claimed nothing. One cancelled while its claim runs waits for
  it, and what it claimed is released (nacked, delay 0: claimable at once, and the commit
  wakes the watch, so the next task in the FIFO claims it) before CancelledError is raised.
- A fired `Cancel`, `interrupt()` and `close()` end the tasks waiting with the errors the
  library's waits raise (`WaitInterruptedError`, the same messages); `close()` removes
  the readers and frees the watches.

A watch no task has waited on for `IDLE_FREE` seconds is freed (its descriptor closed).
"""

from __future__ import annotations

import asyncio
import copy
import math
import weakref
from collections import deque
from concurrent.futures import Executor
from ctypes import byref, c_int, c_void_p
from typing import Any, Callable, Deque, Dict, FrozenSet, List, Optional, Set, Tuple

from . import _native
from ._args import ClaimArgs
from ._errors import TransportClosedError, WaitInterruptedError
from ._handle import _raise
from ._values import Lease, _leases_in
from ._waiting import Cancel, _CallCancel

#: The library's messages for a wait ended by its Cancel and by interrupt (src/waiting/wait.rs).
CANCELLED = "the wait was cancelled; nothing was claimed"
INTERRUPTED = "the transport was interrupted while the claim waited; nothing was claimed"

#: A watch no task waited on for this long is freed (its descriptor closed).
IDLE_FREE = 30.0
#: After this many relays in a row whose rearm said "may claim" and whose first claim found
#: nothing, the next look is put off (a library whose rearm and claim disagree would
#: otherwise spin): from `_FRUITLESS_DELAY`, doubling up to `_FRUITLESS_DELAY_MAX` seconds.
FRUITLESS = 3
_FRUITLESS_DELAY = 0.005
_FRUITLESS_DELAY_MAX = 0.1

#: The filter a watch is for: (min_priority, the routing keys, encoded).
Filter = Tuple[int, FrozenSet[bytes]]


def closed_error(what: str, gave_back: bool = False) -> WaitInterruptedError:
    """What a wait ended by close raises (the sync wait's messages)."""
    if gave_back:
        return WaitInterruptedError(
            f"{what}: the transport was closed while the claim waited; what it claimed in that instant was given back"
        )
    return WaitInterruptedError(f"{what}: the transport was closed while the claim waited; nothing was claimed")


class _Watch:
    """A harel_watch and its descriptor. Made, and rearmed, holding the transport (as any
    call: close waits for it); freed on the loop once its reader is removed, when no
    call on it can be running."""

    __slots__ = ("_lib", "ptr", "fd")

    def __init__(self, t: Any, what: str, min_priority: int, keys: Any, n: int) -> None:
        """Runs in the executor. Raises as `harel_transport_watch` and `harel_watch_fd` fail."""
        lib = t._lib
        self._lib = lib
        self.ptr: Optional[int] = None
        handle = t._enter(what)
        try:
            out = c_void_p()
            t._call_on(handle, lib.harel_transport_watch, min_priority, keys, n, byref(out))
            fd = c_int(-1)
            err = c_void_p()
            status = lib.harel_watch_fd(out, byref(fd), byref(err))
            if status < 0:
                lib.harel_watch_free(out)
                _raise(lib, status, err)
        finally:
            t._leave()
        self.ptr = out.value
        self.fd: int = fd.value

    def rearm(self, t: Any, what: str) -> bool:
        """`harel_watch_rearm` (in the executor): True for HAREL_OK (claim now), False for
        HAREL_EMPTY (the descriptor is clear until a claim may find work)."""
        handle = t._enter(what)
        try:
            return t._call_on(handle, self._lib.harel_watch_rearm, self.ptr) == _native.OK
        finally:
            t._leave()

    def free(self) -> None:
        ptr, self.ptr = self.ptr, None
        if ptr is not None:
            self._lib.harel_watch_free(ptr)


class _Waiter:
    """One waiting call: its claim (``call(handle)``, non-waiting), what it returns when
    nothing came (`empty`: None or []), and its state. Touched on the loop only, but
    `abandoned`, which the claim's thread reads."""

    __slots__ = ("what", "call", "empty", "future", "seen", "claiming", "abandoned", "expired", "ended", "deadline")

    def __init__(self, what: str, call: Callable[[int], Any], empty: Any, future: "asyncio.Future[Any]",
                 seen: int) -> None:
        self.what = what
        self.call = call
        self.empty = empty
        self.future = future
        self.seen = seen  # the transport's interrupts when it began (interrupt ends earlier waits only)
        self.claiming = False
        self.abandoned = False  # its task was cancelled
        self.expired = False
        self.ended: Optional[BaseException] = None  # a Cancel, interrupt or close, while it claimed
        self.deadline: Optional[asyncio.TimerHandle] = None


class _Link:
    """What a `Cancel` fires for one waiting call (in place of a harel_cancel): from any
    thread or a signal handler, it ends the call's wait on its loop."""

    __slots__ = ("_loop", "_watcher", "_waiter", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, watcher: "_Watcher", waiter: _Waiter) -> None:
        self._loop, self._watcher, self._waiter = loop, watcher, waiter

    def fire(self, reason: str) -> None:
        try:
            self._loop.call_soon_threadsafe(self._watcher.end, self._waiter, WaitInterruptedError(CANCELLED))
        except RuntimeError:  # the loop is closed: nothing waits on it any more
            pass


class _Watcher:
    """One watch on one loop: its FIFO of waiting calls, its reader and its relays."""

    def __init__(self, waits: "AsyncWaits", loop: asyncio.AbstractEventLoop, key: Filter, a: ClaimArgs) -> None:
        self._waits = waits
        self.loop = loop
        self.key = key
        self._args = a  # the filter's C array (and the bytes it points to), for the watch
        self.watch: Optional[_Watch] = None
        self.failed: Optional[BaseException] = None  # why the watch could not be made
        self.waiters: Set[_Waiter] = set()  # every call waiting here, those in their first claim included
        self.fifo: Deque[_Waiter] = deque()  # those waiting for the descriptor, in arrival order
        self.busy = False  # a relay runs: its rearm, then its claims
        self.reading = False  # the descriptor is in the loop's poll set
        self.opening = True
        self.fruitless = 0
        self.rearms = 0  # how many rearms were made (for the tests)
        self._later: Optional[asyncio.TimerHandle] = None  # a look put off (FRUITLESS)
        self._idle: Optional[asyncio.TimerHandle] = None  # the watch's free when no one waits
        self._tasks: Set["asyncio.Task[Any]"] = set()
        self._spawn(self._open())

    # -- the loop's side ---------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _run(self, fn: Callable[..., Any], *args: Any) -> "asyncio.Future[Any]":
        return self.loop.run_in_executor(self._waits.executor, fn, *args)

    async def _open(self) -> None:
        a = self._args
        job = self._run(_Watch, self._waits.t, "claim", a.min_priority, a.routing_keys, a.n_routing_keys)
        try:
            watch = await asyncio.shield(job)
        except asyncio.CancelledError:  # the loop is ending: free what the job makes
            job.add_done_callback(lambda f: f.cancelled() or f.exception() or f.result().free())
            raise
        except BaseException as e:  # noqa: BLE001 - handed to the waiting calls
            self.opening = False
            self.failed = e
            self._waits.forget(self)
            for w in list(self.fifo):
                self.finish(w, exc=copy.copy(e))
            return
        self.opening = False
        if self._waits.closed:
            watch.free()  # nothing else has it: no call on it runs
            return
        self.watch = watch
        self.update()

    def update(self) -> None:
        """Puts the descriptor in the loop's poll set while calls wait for it and no relay
        runs, out of it otherwise; arms the idle free when no call waits."""
        closed = self._waits.closed
        want = bool(self.fifo) and not self.busy and self.watch is not None and self._later is None and not closed
        if want and not self.reading:
            self.loop.add_reader(self.watch.fd, self._readable)  # type: ignore[union-attr]
            self.reading = True
        elif not want and self.reading:
            self.loop.remove_reader(self.watch.fd)  # type: ignore[union-attr]
            self.reading = False
        idle = not self.waiters and not self.busy and not self.opening and not closed and self.failed is None
        if idle and self._idle is None:
            self._idle = self.loop.call_later(IDLE_FREE, self._retire)
        elif not idle and self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _retire(self) -> None:
        self._idle = None
        if self.waiters or self.busy or self.opening or self._waits.closed:
            return
        self._waits.forget(self)
        self.drop()

    def drop(self) -> None:
        """Out of the poll set, timers off, the watch freed. On the loop, when no call on
        the watch can be running (idle, or the transport closed)."""
        if self.reading and self.watch is not None:
            self.loop.remove_reader(self.watch.fd)
        self.reading = False
        self.drop_off_loop()

    def drop_off_loop(self) -> None:
        """`drop` for a loop that is closed (its poll set is gone with it)."""
        for timer in (self._later, self._idle):
            if timer is not None:
                timer.cancel()
        self._later = self._idle = None
        if self.watch is not None:
            self.watch.free()
            self.watch = None

    def _readable(self) -> None:
        if self.reading and self.watch is not None:
            self.loop.remove_reader(self.watch.fd)
        self.reading = False
        self.busy = True
        self._spawn(self._relay())

    def _resume(self) -> None:
        self._later = None
        self.update()

    async def _relay(self) -> None:
        """A rearm; on HAREL_OK, claims in FIFO order while each gets something."""
        try:
            self.rearms += 1
            try:
                may = await self._run(self.watch.rearm, self._waits.t, "claim")  # type: ignore[union-attr]
            except asyncio.CancelledError:
                raise
            except BaseException as e:  # noqa: BLE001 - the calls waiting on this watch get it
                if not self._waits.closed:
                    for w in list(self.fifo):
                        self.finish(w, exc=copy.copy(e))
                return
            if not may:
                self.fruitless = 0
                return
            first = True
            while self.fifo and not self._waits.closed:
                if not await self.claim_for(self.fifo[0]):
                    if first:
                        self.fruitless += 1
                    break
                first = False
                self.fruitless = 0
        finally:
            self.busy = False
            if self.fruitless >= FRUITLESS and self._later is None and not self._waits.closed:
                delay = min(_FRUITLESS_DELAY * 2 ** (self.fruitless - FRUITLESS), _FRUITLESS_DELAY_MAX)
                self._later = self.loop.call_later(delay, self._resume)
            self.update()

    # -- the waiting calls -----------------------------------------------------------

    def add(self, w: _Waiter, seconds: float) -> None:
        """A call starts to wait: its deadline, then its own first claim, or, while a relay
        runs, its place in the FIFO (the relay serves it)."""
        self.waiters.add(w)
        w.deadline = self.loop.call_later(seconds, self.expire, w)
        if self.busy:
            self.fifo.append(w)
        else:
            self._spawn(self._first_claim(w))
        self.update()

    async def _first_claim(self, w: _Waiter) -> None:
        await self.claim_for(w)
        if w.future.done():
            return
        if self.failed is not None:
            self.finish(w, exc=copy.copy(self.failed))
            return
        self.fifo.append(w)
        self.update()

    async def claim_for(self, w: _Waiter) -> bool:
        """`w`'s non-waiting claim, in the executor; settles `w` when that ends its wait.
        True when the claim got something (the relay goes on to the next call)."""
        if w.future.done():
            return False
        w.claiming = True
        job = self._run(self._waits.claim_job, w)
        cancelled = False
        while not job.done():
            try:
                await asyncio.shield(job)
            except asyncio.CancelledError:
                # This relay's task is cancelled (its loop is ending): the claim is quick;
                # `w` is settled all the same (its own task waits for that), then it stops.
                cancelled = True
                w.abandoned = True
            except BaseException:  # noqa: BLE001 - read below
                break
        try:
            result, gave_back = job.result()
        except BaseException as e:  # noqa: BLE001 - the call's own error
            w.claiming = False
            if isinstance(e, TransportClosedError) and self._waits.closed:
                e = closed_error(w.what)
            self.finish(w, exc=e)
            if cancelled:
                raise asyncio.CancelledError from None
            return False
        w.claiming = False
        if cancelled:
            self.finish(w, result=w.empty if gave_back else result)
            raise asyncio.CancelledError
        if gave_back:  # abandoned, or the transport closed: released on the claim's handle
            if w.abandoned:
                self.finish(w, result=w.empty)
            else:
                self.finish(w, exc=closed_error(w.what, gave_back=True))
            return True
        if _leases_in(result):
            # Its own, even if it was ended or its deadline passed in that instant (a task
            # cancelled meanwhile gives it back).
            self.finish(w, result=result)
            return True
        if w.abandoned or w.expired:
            self.finish(w, result=w.empty)
        elif w.ended is not None:
            self.finish(w, exc=w.ended)
        elif self._waits.closed:
            self.finish(w, exc=closed_error(w.what))
        return False

    def finish(self, w: _Waiter, result: Any = None, exc: Optional[BaseException] = None) -> None:
        """`w`'s wait is over: out of the FIFO, its deadline off, its outcome set."""
        self.waiters.discard(w)
        try:
            self.fifo.remove(w)
        except ValueError:
            pass
        if w.deadline is not None:
            w.deadline.cancel()
            w.deadline = None
        if not w.future.done():
            if exc is not None:
                w.future.set_exception(exc)
            else:
                w.future.set_result(result)
        self.update()

    def expire(self, w: _Waiter) -> None:
        w.deadline = None
        if w.claiming:
            w.expired = True
        else:
            self.finish(w, result=w.empty)

    def end(self, w: _Waiter, exc: BaseException) -> None:
        """A Cancel, interrupt or close ends `w`'s wait; one claiming ends with that
        claim's leases if it got any."""
        if w.future.done():
            return
        if w.claiming:
            if w.ended is None:
                w.ended = exc
        else:
            self.finish(w, exc=exc)

    def abandon(self, w: _Waiter) -> None:
        """`w`'s task was cancelled."""
        if w.future.done():
            return
        if w.claiming:
            w.abandoned = True  # read by the claim's thread: it gives back what it claims
        else:
            self.finish(w, result=w.empty)


class AsyncWaits:
    """The waiting claims of one `AsyncTransport`: its watches, by loop and filter, and
    the ends of waits that come from the transport (`interrupt`, `close`: hooks the
    handle calls from any thread)."""

    def __init__(self, t: Any, executor: Optional[Executor]) -> None:
        self.t = t
        self.executor = executor
        self.closed = False
        self.interrupts = 0
        self._watchers: Dict[Tuple[asyncio.AbstractEventLoop, Filter], _Watcher] = {}
        # A harel_cancel never fired, given to the waiting calls' claims (wait 0): the
        # library then times them as waiting claims (metrics' claim_wait) and, on a local
        # file, looks before it claims, so a claim on an empty queue takes no write lock.
        self._cancel = _CallCancel(t._lib)
        weakref.finalize(self, self._cancel.free)
        t._async_waits.add(self)

    @property
    def cancel(self) -> Optional[int]:
        return self._cancel.ptr

    def watchers(self) -> List[_Watcher]:
        return list(self._watchers.values())

    def forget(self, watcher: _Watcher) -> None:
        if self._watchers.get((watcher.loop, watcher.key)) is watcher:
            del self._watchers[(watcher.loop, watcher.key)]

    def _watcher(self, loop: asyncio.AbstractEventLoop, a: ClaimArgs) -> _Watcher:
        for (other, _), stale in list(self._watchers.items()):
            if other.is_closed():  # a loop that ended without closing the transport
                self.forget(stale)
                stale.drop_off_loop()
        key: Filter = (a.min_priority, frozenset(a.keys))
        watcher = self._watchers.get((loop, key))
        if watcher is None:
            watcher = _Watcher(self, loop, key, a)
            self._watchers[(loop, key)] = watcher
        return watcher

    async def claim(self, what: str, call: Callable[[int], Any], empty: Any, a: ClaimArgs, seconds: float,
                    cancels: Tuple[Cancel, ...]) -> Any:
        """A claim that waits up to `seconds` (finite, > 0) on the loop, holding no thread,
        on the watch of `a`'s filter."""
        loop = asyncio.get_running_loop()
        if self.t.closed:
            raise TransportClosedError(f"{what}: the transport is closed")
        if any(c.fired for c in cancels):
            raise WaitInterruptedError(CANCELLED)
        watcher = self._watcher(loop, a)
        w = _Waiter(what, call, empty, loop.create_future(), self.interrupts)
        link = _Link(loop, watcher, w)
        for c in cancels:
            c._link(link)
        try:
            watcher.add(w, seconds)
            try:
                # shield: the task's cancel must not cancel the outcome, which may be leases.
                return await asyncio.shield(w.future)
            except asyncio.CancelledError:
                watcher.abandon(w)
                while not w.future.done():
                    try:
                        await asyncio.shield(w.future)
                    except asyncio.CancelledError:
                        continue  # cancelled again: its claim is ending; wait for it all the same
                    except BaseException:  # noqa: BLE001 - read below
                        break
                if not w.future.cancelled() and w.future.exception() is None:
                    # settled with leases in the instant the task was cancelled
                    await give_back(loop, self.executor, self.t, _leases_in(w.future.result()))
                raise
        finally:
            for c in cancels:
                c._unlink(link)

    def claim_job(self, w: _Waiter) -> Tuple[Any, bool]:
        """In the executor: `w`'s claim on the handle it holds; what it claimed for a task
        cancelled meanwhile, or on a transport closing, is given back on that handle.
        (result, whether it was given back)."""
        t = self.t
        handle = t._enter(w.what)
        try:
            result = w.call(handle)
            if (w.abandoned or t._closed) and _leases_in(result):
                t._give_back(handle, result)
                return result, True
            return result, False
        finally:
            t._leave()

    # -- hooks of the handle, from any thread -------------------------------------------

    def _loops(self) -> Set[asyncio.AbstractEventLoop]:
        return {w.loop for w in list(self._watchers.values())}

    def _on_loops(self, fn: Callable[[asyncio.AbstractEventLoop], None]) -> None:
        for loop in self._loops():
            try:
                loop.call_soon_threadsafe(fn, loop)
            except RuntimeError:  # closed meanwhile
                pass

    def interrupted(self) -> None:
        """`Transport.interrupt`: ends the waits in progress (not those that begin later)."""
        self.interrupts += 1
        seen = self.interrupts
        self._on_loops(lambda loop: self._interrupt_on(loop, seen))

    def _interrupt_on(self, loop: asyncio.AbstractEventLoop, seen: int) -> None:
        for watcher in self.watchers():
            if watcher.loop is loop:
                for w in list(watcher.waiters):
                    if w.seen < seen:
                        watcher.end(w, WaitInterruptedError(INTERRUPTED))

    def closing(self) -> None:
        """`Transport.close` begins (under its lock): the waits end, the readers go."""
        self.closed = True
        self._on_loops(self._close_on)

    def _close_on(self, loop: asyncio.AbstractEventLoop) -> None:
        for watcher in self.watchers():
            if watcher.loop is loop:
                for w in list(watcher.waiters):
                    watcher.end(w, closed_error(w.what))
                watcher.update()

    def closed_handle(self) -> None:
        """`Transport.close` closed the handle: no call on a watch runs or can start, so
        each is freed (on its loop, after its reader is removed)."""
        self._cancel.free()
        for watcher in self.watchers():
            if watcher.loop.is_closed():
                self.forget(watcher)
                watcher.drop_off_loop()
                continue
            try:
                watcher.loop.call_soon_threadsafe(self._drop_on, watcher)
            except RuntimeError:  # closed meanwhile
                self.forget(watcher)
                watcher.drop_off_loop()

    def _drop_on(self, watcher: _Watcher) -> None:
        self.forget(watcher)
        watcher.drop()


def waits_for(seconds: float) -> bool:
    """Whether a claim's `wait` is one this module waits (finite, > 0); 0 looks once, and
    the library refuses the rest with its own message."""
    return 0 < seconds < math.inf


async def give_back(loop: asyncio.AbstractEventLoop, executor: Optional[Executor], t: Any, leases: List[Lease]) -> None:
    """Nacks (delay 0) leases claimed for a task that was cancelled meanwhile, in the
    executor, best effort (a lease not nacked lapses at its visibility), and waits for that
    through further cancels of the task."""
    if not leases:
        return

    def nack_all() -> None:
        for lease in leases:
            try:
                t.nack(lease, 0.0)
            except Exception:  # noqa: BLE001 - best effort, as above
                pass

    done = loop.run_in_executor(executor, nack_all)
    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            continue
