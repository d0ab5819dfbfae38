"""The handle under every method of `Transport`: opening it with the options, the
discipline of a call, and closing it.

A call holds the handle (`_enter`, `_leave`), so that `close` waits for it. Every call
that can fail hands the C function its own ``harel_error *`` (``err = c_void_p()``,
passed as ``byref(err)``); on a negative status the message is read, the error freed,
and the matching exception raised (`_raise`).
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from ctypes import byref, c_char_p, c_void_p
from typing import Any, List, Optional, Sequence, Tuple

from . import _native
from ._args import _databases, _describe, _flag, _path, _retry, _seconds, _text, _texts, _uint32
from ._errors import ArgumentError, PanicError, TransportClosedError, error_for_status
from ._tracing import Tracing, open_tracing
from ._values import Clock, PathType, Retry
from ._waiting import BY_CLOSE, _CallCancel


def _raise(lib: Any, status: int, err: c_void_p, clock: Optional["_ClockCell"] = None) -> None:
    """Reads and frees the call's error; raises the exception for `status` (< 0)."""
    try:
        message = lib.harel_error_message(err) if err else None
        text = message.decode("utf-8", "replace") if message else lib.harel_status_name(status).decode()
    finally:
        lib.harel_error_free(err)
    cause = clock.take() if clock is not None else None
    if cause is not None and status == _native.ERR_ARGUMENT:
        if not isinstance(cause, Exception):  # KeyboardInterrupt, SystemExit: not ours to wrap
            raise cause
        raise ArgumentError(f"the clock failed ({type(cause).__name__}: {cause}): {text}") from cause
    raise error_for_status(status, text)


class _ClockCell:
    """A Python clock as the library's C clock: a ctypes callback (run on the thread that
    makes the call, with the GIL taken by ctypes). An exception in the clock, or a value
    that is not a number, makes it return NaN, which the library refuses with
    HAREL_ERR_ARGUMENT; the exception is kept (per thread) and becomes that error's cause."""

    def __init__(self, clock: Clock) -> None:
        self._local = threading.local()

        def c_clock(_ctx: Any) -> float:
            try:
                now = clock()
                if isinstance(now, bool) or not isinstance(now, (int, float)):
                    raise TypeError(f"the clock returned {_describe(now)}; it must return epoch seconds")
                return float(now)
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                self._local.exc = e
                return math.nan

        # Kept here, and the cell kept by its Transport for the handle's life: the library
        # calls it until close.
        self.callback = _native.CLOCK(c_clock)

    def take(self) -> Optional[BaseException]:
        exc = getattr(self._local, "exc", None)
        self._local.exc = None
        return exc


class _ShardList:
    """The databases `Transport.open_shards` opens, checked and encoded: what it passes as
    the `path` of the constructor, so that a sharded open takes the constructor's options
    (and a subclass's constructor) exactly as an ordinary open does."""

    def __init__(self, databases: Sequence[PathType]) -> None:
        self.encoded = _databases(databases)


class _Handle:
    """An open queue: `Transport` is this and the method groups of `_methods`."""

    def __init__(
        self,
        path: PathType,
        *,
        prefix: Optional[str] = None,
        create_schema: Optional[bool] = None,
        sync_url: Optional[str] = None,
        sync_urls: Optional[Sequence[str]] = None,
        auth_token: Optional[str] = None,
        sync_interval: Optional[float] = None,
        busy_timeout: Optional[float] = None,
        synchronous_full: Optional[bool] = None,
        max_attempts: Optional[int] = None,
        key_retention: Optional[float] = None,
        archive_retention: Optional[float] = None,
        retry: Optional[Retry] = None,
        clock: Optional[Clock] = None,
        tracer_provider: Any = None,
        trace_as_parent: bool = False,
    ) -> None:
        self._handle: Optional[int] = None  # set last: __del__ of a failed open has nothing to close
        self._closed = True
        #: OpenTelemetry (`_tracing`): None unless opened with a tracer_provider. Checked
        #: before the queue is opened.
        self._tracing: Optional[Tracing] = open_tracing(
            tracer_provider, trace_as_parent, "harel" if prefix is None else prefix
        )
        lib = _native.lib()
        self._lib = lib
        # A `_ShardList` (Transport.open_shards): harel_transport_open_shards.
        shards: Optional[List[bytes]] = path.encoded if isinstance(path, _ShardList) else None
        database = _path(path) if shards is None else b""
        setters: List[Tuple[Any, Tuple[Any, ...]]] = []
        if prefix is not None:
            setters.append((lib.harel_options_set_prefix, (_text("prefix", prefix),)))
        if create_schema is not None:
            setters.append((lib.harel_options_set_create_schema, (_flag("create_schema", create_schema),)))
        if sync_url is not None:
            setters.append((lib.harel_options_set_sync_url, (_text("sync_url", sync_url),)))
        if sync_urls is not None:
            urls = _texts("sync_urls", sync_urls)
            setters.append((lib.harel_options_set_sync_urls, ((c_char_p * len(urls))(*urls), len(urls))))
        if auth_token is not None:
            setters.append((lib.harel_options_set_auth_token, (_text("auth_token", auth_token),)))
        if sync_interval is not None:
            setters.append((lib.harel_options_set_sync_interval, (_seconds("sync_interval", sync_interval),)))
        if busy_timeout is not None:
            setters.append((lib.harel_options_set_busy_timeout, (_seconds("busy_timeout", busy_timeout),)))
        if synchronous_full is not None:
            setters.append((lib.harel_options_set_synchronous_full, (_flag("synchronous_full", synchronous_full),)))
        if max_attempts is not None:
            setters.append((lib.harel_options_set_max_attempts, (_uint32("max_attempts", max_attempts, "0: no limit"),)))
        if key_retention is not None:
            setters.append((lib.harel_options_set_key_retention, (_seconds("key_retention", key_retention),)))
        if archive_retention is not None:
            setters.append((lib.harel_options_set_archive, (_seconds("archive_retention", archive_retention),)))
        if retry is not None:
            setters.append((lib.harel_options_set_retry, _retry("retry", retry)))
        if clock is not None and not callable(clock):
            raise ArgumentError(f"clock must be a callable returning epoch seconds, got {_describe(clock)}")
        self._clock: Optional[_ClockCell] = _ClockCell(clock) if clock is not None else None

        options = lib.harel_options_new()
        if not options:
            raise PanicError("harel_options_new failed")
        try:
            for setter, values in setters:
                err = c_void_p()
                status = setter(options, *values, byref(err))
                if status < 0:
                    _raise(lib, status, err)
            if self._clock is not None:
                err = c_void_p()
                status = lib.harel_options_set_clock(options, self._clock.callback, None, byref(err))
                if status < 0:
                    _raise(lib, status, err)
            handle = c_void_p()
            err = c_void_p()
            if shards is None:
                status = lib.harel_transport_open(database, options, byref(handle), byref(err))
            else:
                array = (c_char_p * len(shards))(*shards)
                status = lib.harel_transport_open_shards(array, len(shards), options, byref(handle), byref(err))
            if status < 0:
                _raise(lib, status, err)
        finally:
            lib.harel_options_free(options)
        #: The databases of `open_shards`, in shard order; None for an ordinary open.
        self._shards: Optional[Tuple[str, ...]] = None
        if shards is not None:
            self._shards = tuple(os.fsdecode(d) for d in shards)
            database = shards[0]
        self._path = os.fsdecode(database)
        self._state = threading.Condition(threading.Lock())
        self._in_flight = 0
        self._waits: set = set()  # the _CallCancel of each call that may wait, for close
        # The async waits of the AsyncTransports over this handle (_watching.AsyncWaits),
        # which interrupt and close end, and whose watches close frees.
        self._async_waits: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._handle = handle.value
        self._closed = False

    # -- state ----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The path (or URL) the transport was opened with; of a sharded queue
        (`open_shards`), its first database."""
        return self._path

    @property
    def closed(self) -> bool:
        """True once `close()` was called."""
        return self._closed

    def _enter(self, what: str, call: Optional[_CallCancel] = None) -> int:
        with self._state:
            if self._closed:
                raise TransportClosedError(f"{what}: the transport is closed")
            self._in_flight += 1
            if call is not None:
                self._waits.add(call)
            return self._handle  # type: ignore[return-value]

    def _leave(self, call: Optional[_CallCancel] = None) -> None:
        with self._state:
            self._in_flight -= 1
            if call is not None:
                self._waits.discard(call)
            if self._in_flight == 0 and self._closed:  # only close waits for it
                self._state.notify_all()

    def _call(self, what: str, fn: Any, *args: Any, clock: bool = True) -> None:
        """Calls ``fn(handle, *args, &err)`` holding the handle; raises on a negative
        status. `clock` as for `_call_on`."""
        handle = self._enter(what)
        try:
            self._call_on(handle, fn, *args, clock=clock)
        finally:
            self._leave()

    def _call_on(self, handle: int, fn: Any, *args: Any, clock: bool = True) -> int:
        """`_call` on a handle the caller holds; returns the status (>= 0). The clock runs
        on the calling thread, so what it raised is read back as the error's cause; `clock`
        False for a call whose clock may run on another caller's thread (a publish: see
        `_methods.publish`)."""
        cell = self._clock if clock else None
        if cell is not None:
            cell.take()  # clear what an earlier call on this thread left
        err = c_void_p()
        status = fn(handle, *args, byref(err))
        if status < 0:
            _raise(self._lib, status, err, cell)
        return status

    def _call_out(self, what: str, fn: Any, free: Any, out: Any, copy: Any, *args: Any) -> Any:
        """Calls ``fn(handle, *args, &out, &err)`` as `_call`, copies ``out`` with `copy`,
        and frees it with `free` whatever happens: a look's or the metrics' result."""
        try:
            self._call(what, fn, *args, byref(out))
            return copy(out.contents)
        finally:
            free(out)  # NULL (after an error) does nothing

    def close(self) -> None:
        """Closes the transport once the calls in progress (on other threads) have
        returned, ending the waits of waiting claims first (they raise
        `WaitInterruptedError`, having claimed nothing); its transactions still open are
        rolled back (their calls then raise `TransportClosedError`, but `rollback`).
        Later calls raise `TransportClosedError`. Closing again does nothing."""
        state = getattr(self, "_state", None)
        if state is None:
            return
        with state:
            if self._closed:
                return
            self._closed = True
            # Each waiting call's own cancel, rather than harel_transport_interrupt: a call
            # not yet in its wait then returns as soon as it gets there.
            for call in self._waits:
                call.fire(BY_CLOSE)
            hooks = list(self._async_waits)
            for hook in hooks:
                hook.closing()
            while self._in_flight:
                state.wait()
            handle, self._handle = self._handle, None
        self._lib.harel_transport_close(handle)
        for hook in hooks:
            hook.closed_handle()

    def __del__(self) -> None:
        # Only reached when no call holds the transport (each call holds a reference).
        try:
            if getattr(self, "_handle", None) is not None and not self._closed:
                self._closed = True
                self._lib.harel_transport_close(self._handle)
                self._handle = None
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
