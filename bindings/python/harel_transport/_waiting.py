"""Ending waits: `Cancel` (the caller's), `_CallCancel` (one waiting call's
``harel_cancel``), and the helper thread a waiting claim of the main thread runs on.

Every claim that may wait gets a ``harel_cancel`` of its own, freed when it returns. It is
fired by whatever may end that call's wait: the `Cancel` objects it was given, `close()`,
and its caller giving up (Ctrl-C on the main thread, a cancelled asyncio task). One
`Cancel` can so be given to any number of calls, and firing it never touches a freed
``harel_cancel``.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Set, Tuple

from ._errors import ArgumentError, PanicError

#: Why a call's harel_cancel fired first (`_CallCancel.reason`).
BY_CANCEL = "cancel"
BY_CLOSE = "closed"
BY_CALLER = "abandoned"


class _CallCancel:
    """One waiting call's harel_cancel. `fire` may come from any thread (a signal handler
    of the main thread included: the lock is reentrant, and the pointer is cleared before
    it is freed); `free` once the call has returned."""

    __slots__ = ("_lib", "ptr", "_lock", "reason")

    def __init__(self, lib: Any) -> None:
        ptr = lib.harel_cancel_new()
        if not ptr:
            raise PanicError("harel_cancel_new failed")
        self._lib = lib
        self.ptr: Optional[int] = ptr
        self._lock = threading.RLock()
        #: What fired it first (BY_CANCEL, BY_CLOSE, BY_CALLER); None while not fired.
        self.reason: Optional[str] = None

    def fire(self, reason: str) -> None:
        with self._lock:
            if self.ptr is not None:
                if self.reason is None:
                    self.reason = reason
                self._lib.harel_cancel_fire(self.ptr)

    def free(self) -> None:
        with self._lock:
            ptr, self.ptr = self.ptr, None
        self._lib.harel_cancel_free(ptr)


class Cancel:
    """Ends the waits of the claims it is given (``cancel=`` of `Transport.claim`,
    `claim_many` and their async forms): once `fire()` is called, a claim waiting with it
    raises `WaitInterruptedError` having claimed nothing (one that had claimed in the same
    instant returns its leases), and a claim given it later raises at once. Firing is final
    and may be done from any thread, or from a signal handler, any number of times. One
    Cancel may serve many calls, on any transports, at once or one after another; it holds
    nothing to free."""

    __slots__ = ("_fired", "_calls", "_reason")

    def __init__(self) -> None:
        self._fired = False
        self._calls: Set[_CallCancel] = set()
        self._reason = BY_CANCEL

    @classmethod
    def _for_caller(cls) -> "Cancel":
        """The Cancel a caller fires when it gives up on its call (BY_CALLER)."""
        cancel = cls()
        cancel._reason = BY_CALLER
        return cancel

    def fire(self) -> None:
        """Ends the waits of the calls given this Cancel, now and from now on."""
        # _fired first, then the calls linked so far; _link adds first, then reads _fired:
        # whatever the interleaving, every linked call is fired (firing twice does nothing).
        self._fired = True
        for call in list(self._calls):
            call.fire(self._reason)

    @property
    def fired(self) -> bool:
        """True once `fire()` was called."""
        return self._fired

    def _link(self, call: _CallCancel) -> None:
        self._calls.add(call)
        if self._fired:
            call.fire(self._reason)

    def _unlink(self, call: _CallCancel) -> None:
        self._calls.discard(call)

    def __repr__(self) -> str:
        return f"<harel_transport.Cancel{' fired' if self._fired else ''}>"


def cancels_of(cancel: Any) -> Tuple[Cancel, ...]:
    if cancel is None:
        return ()
    if not isinstance(cancel, Cancel):
        kind = type(cancel).__name__
        raise ArgumentError(f"cancel must be a harel_transport.Cancel or None, got {kind}")
    return (cancel,)


def on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Handoff(threading.Thread):
    """A call run on a thread of its own, for a main thread that must stay able to run
    signal handlers (CPython runs them on the main thread, between bytecodes: never during
    a C call)."""

    def __init__(self, fn: Callable[..., Any], args: Tuple[Any, ...]) -> None:
        super().__init__(name="harel_transport wait", daemon=True)
        self._fn, self._args = fn, args
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.result = self._fn(*self._args)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            self.error = e


def run_interruptibly(fn: Callable[..., Any], args: Tuple[Any, ...], call: _CallCancel,
                      give_back: Callable[[Any], None]) -> Any:
    """``fn(*args)`` on a helper thread, the main thread waiting for it in `join`, which a
    signal interrupts: its handler runs (and may fire a Cancel), and if it raises
    (KeyboardInterrupt), the call's cancel is fired, the call waited for (it returns
    promptly), what it claimed given back with `give_back`, and the exception re-raised."""
    job = _Handoff(fn, args)
    job.start()
    try:
        job.join()
    except BaseException:
        call.fire(BY_CALLER)
        while job.is_alive():
            try:
                job.join()
            except BaseException:  # noqa: BLE001 - the first one is re-raised below
                pass
        if job.error is None:
            give_back(job.result)
        raise
    if job.error is not None:
        raise job.error
    return job.result
