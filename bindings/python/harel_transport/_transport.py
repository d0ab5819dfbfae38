"""The native API: `Transport`, `Lease`, `Message`, and the module functions.

Every call that can fail hands the C function its own ``harel_error *`` (``err =
c_void_p()``, passed as ``byref(err)``); on a negative status the message is read, the
error freed, and the matching exception raised (see `_errors`). Leases are copied out of
C with their lengths (a group id or event stored by another writer may hold NUL bytes) and
freed at once; ack and nack hand C a `harel_lease` filled here, with ``group_id_len``.
"""

from __future__ import annotations

import json
import math
import os
import threading
from ctypes import (
    POINTER,
    Structure,
    byref,
    c_bool,
    c_char_p,
    c_double,
    c_int64,
    c_size_t,
    c_uint64,
    c_void_p,
    string_at,
)
from ctypes import addressof, c_int32
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _native
from ._keepalive import KeepAlive, period
from ._waiting import BY_CALLER, BY_CLOSE, Cancel, _CallCancel, cancels_of, on_main_thread, run_interruptibly
from ._inspect import (
    GROUP_STATES,
    MAX_PAGE,
    DeadLetter,
    GroupInfo,
    MessageInfo,
    Page,
    Stats,
    copy_dead_page,
    copy_group_page,
    copy_message_page,
    copy_stats,
)
from ._errors import (
    ArgumentError,
    LeaseLostError,
    PanicError,
    TransportClosedError,
    WaitInterruptedError,
    error_for_status,
)

__all__ = [
    "Transport",
    "Lease",
    "Message",
    "AckAndClaimResult",
    "DEFAULT_VISIBILITY",
    "MAX_CLAIM",
    "MAX_PRIORITY",
    "MAX_PREFIX_LEN",
    "MAX_ATTEMPTS_MAX",
    "version",
    "library_path",
    "schema_sql",
    "schema_upgrade_sql",
    "status_name",
]

#: The visibility a claim uses when none is given, in seconds (as the Node binding's).
DEFAULT_VISIBILITY = 30.0
#: Priorities are 0..MAX_PRIORITY (HAREL_MAX_PRIORITY).
MAX_PRIORITY = 4
#: A table prefix is at most this many characters (HAREL_MAX_PREFIX_LEN).
MAX_PREFIX_LEN = 30

#: The most leases one `claim_many` or `ack_and_claim_many` hands out (HAREL_MAX_CLAIM).
MAX_CLAIM = _native.MAX_CLAIM

#: The largest `max_attempts` (a uint32_t in C); 0 is "no limit".
MAX_ATTEMPTS_MAX = 2**32 - 1

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SIZE_MAX = 2**64 - 1

Clock = Callable[[], float]
PathType = Union[str, "os.PathLike[str]"]
EventType = Union[str, bytes, bytearray, memoryview]


# ---------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class Lease:
    """A claimed message, copied out of the library.

    `group_id` and `event` are decoded from UTF-8 with ``surrogateescape``, so bytes that
    another writer stored (NUL bytes included, even invalid UTF-8) come back whole, and an
    ack re-encodes the group id to exactly the bytes the library handed out."""

    #: The message's seq: its FIFO position and the lease's handle.
    seq: int
    #: The group the message belongs to.
    group_id: str
    #: The event: the JSON text, byte for byte as published.
    event: str
    #: Who holds the lease.
    worker_id: str
    #: Epoch seconds the lease runs to.
    lock_expiry: float
    #: How many times the message has been claimed, this claim included (1 on its first).
    #: A `Lease` built by hand may leave it 0: ack, nack and dead_letter do not read it.
    attempts: int = 0

    def json(self) -> Any:
        """The event parsed (`json.loads`)."""
        return json.loads(self.event)

    @property
    def event_bytes(self) -> bytes:
        """The event's bytes as stored."""
        return self.event.encode("utf-8", "surrogateescape")


class AckAndClaimResult(NamedTuple):
    """What `Transport.ack_and_claim_many` returns: ``leases, acked = ...``."""

    #: The new leases, at most `max`; empty when nothing was deliverable.
    leases: List[Lease]
    #: One element per lease given, in order: None (acked) or the `LeaseLostError` of a
    #: lease that was lost (nothing of it changed).
    acked: List[Optional[LeaseLostError]]


@dataclass(frozen=True)
class Message:
    """One message for `Transport.publish_many`: what `publish` takes."""

    group_id: str
    event: EventType
    priority: int = 0
    routing_key: Optional[str] = None


# ---------------------------------------------------------------------------------------
# Arguments: what ctypes would silently change is refused here, as ArgumentError (a NUL
# would cut a C string short, an int past int32 would wrap into range, True would be 1).
# Ranges (priority 0..4, visibility > 0, ...) are the library's to check.


def _describe(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "..."
        return f"the str {shown!r}"
    return f"{type(value).__name__} {value!r}" if isinstance(value, (int, float, bytes)) else type(value).__name__


def _text(name: str, value: Any) -> bytes:
    """A NUL-terminated C string's bytes: a str without NUL, encoded as UTF-8."""
    if not isinstance(value, str):
        raise ArgumentError(f"{name} must be a str, got {_describe(value)}")
    i = value.find("\0")
    if i >= 0:
        raise ArgumentError(
            f"{name} holds a NUL character (at index {i}), which a C string cannot carry; "
            "it would be cut short there"
        )
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ArgumentError(f"{name} is not valid Unicode (a lone surrogate at index {e.start})") from None


def _optional_text(name: str, value: Any) -> Optional[bytes]:
    return None if value is None else _text(name, value)


def _event(name: str, value: Any) -> bytes:
    """The event's JSON text: a str, or bytes of UTF-8. The library checks it is JSON."""
    if isinstance(value, str):
        return _text(name, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        i = data.find(b"\0")
        if i >= 0:
            raise ArgumentError(f"{name} holds a NUL byte (at byte {i}), which a C string cannot carry")
        return data
    raise ArgumentError(
        f"{name} must be JSON text (str or bytes), got {_describe(value)}; "
        "serialize it first, e.g. json.dumps(value)"
    )


def _int32(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{name} must be an int, got {_describe(value)}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ArgumentError(f"{name} must be 0..{MAX_PRIORITY}, got {value}")
    return value


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(f"{name} must be a number of seconds (int or float), got {_describe(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ArgumentError(f"{name} is too large: {value}") from None


def _uint32(name: str, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{name} must be an int, got {_describe(value)}")
    if not 0 <= value <= MAX_ATTEMPTS_MAX:
        raise ArgumentError(f"{name} must be 0..{MAX_ATTEMPTS_MAX} ({what}), got {value}")
    return value


def _limit(value: Any) -> int:
    """A listing's page size, for a size_t: a negative int or one past size_t is ours to
    refuse (ctypes would wrap it); 0 and past MAX_PAGE are the library's."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"limit must be an int, got {_describe(value)}")
    if not 0 <= value <= _SIZE_MAX:
        raise ArgumentError(f"limit is {value}; it must be 1..{MAX_PAGE}")
    return value


def _max(value: Any) -> int:
    """A batch's max, for a size_t: what ctypes would wrap is ours to refuse; the range
    1..MAX_CLAIM is the library's."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"max must be an int, got {_describe(value)}")
    if not 0 <= value <= _SIZE_MAX:
        raise ArgumentError(f"max is {value}; it must be 1..{MAX_CLAIM}")
    return value


def _leases_out(m: int) -> Any:
    """The array a batch claim writes its leases into: `m` elements, or MAX_CLAIM for a
    larger `m` (which the library refuses before writing any), at least one (the library
    refuses 0; the array must have an address)."""
    return (POINTER(_native.HarelLease) * max(1, min(m, MAX_CLAIM)))()


def _seqs(value: Any) -> Tuple[Any, int]:
    """(a const int64_t* array, its length) of dead letters' seqs."""
    if isinstance(value, (str, bytes, bytearray)) or isinstance(value, int):
        raise ArgumentError(f"seqs must be a sequence of int, got {_describe(value)}")
    try:
        seqs = list(value)
    except TypeError:
        raise ArgumentError(f"seqs must be a sequence of int, got {_describe(value)}") from None
    if not seqs:
        raise ArgumentError("seqs is empty: name at least one dead letter")
    for i, seq in enumerate(seqs):
        if isinstance(seq, bool) or not isinstance(seq, int) or not _INT64_MIN <= seq <= _INT64_MAX:
            raise ArgumentError(f"seqs[{i}] must be an int64, got {_describe(seq)}")
    return (c_int64 * len(seqs))(*seqs), len(seqs)


def _dead_selection(all: Any, group_id: Any, seqs: Any) -> Tuple[bool, Optional[bytes], Any, int]:
    """(all, group_id, seqs, n_seqs) for redrive and purge_dead: exactly one selection."""
    given = (
        ("all", all is not False and all is not None),
        ("group_id", group_id is not None),
        ("seqs", seqs is not None),
    )
    chosen = [name for name, yes in given if yes]
    if len(chosen) != 1:
        said = f"got {' and '.join(chosen)}" if chosen else "got none"
        raise ArgumentError(f"say which dead letters: exactly one of all=True, group_id or seqs ({said})")
    if chosen == ["all"]:
        if all is not True:
            raise ArgumentError(f"all must be True or False, got {_describe(all)}")
        return True, None, None, 0
    if chosen == ["group_id"]:
        return False, _text("group_id", group_id), None, 0
    array, n = _seqs(seqs)
    return False, None, array, n


def _group_state(state: Any) -> int:
    """groups()'s state filter, as the ABI's int32: -1 for any, else harel_group_state."""
    if state is None:
        return -1
    if isinstance(state, str) and state in GROUP_STATES:
        return GROUP_STATES.index(state)
    raise ArgumentError(f"state must be None, 'ready', 'leased' or 'parked', got {_describe(state)}")


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be a bool, got {_describe(value)}")
    return value


def _path(value: Any) -> bytes:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            value = os.fsdecode(value)
    return _text("path", value)


def _routing_keys(value: Any) -> Tuple[Any, int, List[bytes]]:
    """(a const char** array or None, its length, the bytes it points to)."""
    if value is None:
        return None, 0, []
    if isinstance(value, (str, bytes)):
        raise ArgumentError(f"routing_keys must be a sequence of str, not a single {type(value).__name__}")
    try:
        keys = list(value)
    except TypeError:
        raise ArgumentError(f"routing_keys must be a sequence of str, got {_describe(value)}") from None
    encoded = [_text(f"routing_keys[{i}]", k) for i, k in enumerate(keys)]
    if not encoded:
        return None, 0, encoded
    return (c_char_p * len(encoded))(*encoded), len(encoded), encoded


class _LeaseArg(Structure):
    """struct harel_lease as ack, nack and ack_and_claim read it (seq, group_id with
    group_id_len, worker_id). group_id points into a bytes object (which ends in a NUL
    beyond its length), so a group id holding NUL bytes reaches C whole."""

    _fields_ = [
        ("seq", c_int64),
        ("group_id", c_char_p),
        ("group_id_len", c_size_t),
        ("event", c_void_p),
        ("event_len", c_size_t),
        ("worker_id", c_char_p),
        ("lock_expiry", c_double),
        ("attempts", c_int64),
    ]


def _lease_arg(lease: Any, name: str = "lease") -> _LeaseArg:
    if not isinstance(lease, Lease):
        raise ArgumentError(f"{name} must be a Lease from claim(), got {_describe(lease)}")
    seq = lease.seq
    if isinstance(seq, bool) or not isinstance(seq, int) or not -(2**63) <= seq < 2**63:
        raise ArgumentError(f"{name}.seq must be an int64, got {_describe(seq)}")
    if not isinstance(lease.group_id, str):
        raise ArgumentError(f"{name}.group_id must be a str, got {_describe(lease.group_id)}")
    try:
        group = lease.group_id.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise ArgumentError(f"{name}.group_id is not valid Unicode (a lone surrogate at index {e.start})") from None
    if not group:  # C would take it for a lease whose group_id_len was never set
        raise ArgumentError(f"{name}.group_id is empty")
    arg = _LeaseArg()
    arg.seq = seq
    arg.group_id = group
    arg.group_id_len = len(group)
    arg.worker_id = _text(f"{name}.worker_id", lease.worker_id)
    return arg


def _lease_args(leases: Any) -> Tuple[List[Lease], List[_LeaseArg], Any]:
    """(the leases, their _LeaseArgs, a const harel_lease *const * array of them) for the
    batch acks; errors name the element (``leases[2]``)."""
    if isinstance(leases, (Lease, str, bytes)):
        raise ArgumentError(f"leases must be an iterable of Lease, not a single {type(leases).__name__}")
    try:
        items = list(leases)
    except TypeError:
        raise ArgumentError(f"leases must be an iterable of Lease, got {_describe(leases)}") from None
    args = [_lease_arg(lease, f"leases[{i}]") for i, lease in enumerate(items)]
    array = (c_void_p * len(args))(*[addressof(a) for a in args]) if args else None
    return items, args, array


def _outcomes(leases: List[Lease], outcomes: Any) -> List[Optional[LeaseLostError]]:
    """A batch ack's outcomes, each HAREL_OK or HAREL_ERR_LEASE_LOST (the ABI's only two):
    None (acked) or a LeaseLostError naming the lease."""
    return [
        None if status == _native.OK else LeaseLostError(
            f"leases[{i}]: message {lease.seq} of group {lease.group_id!r} is no longer leased to "
            f"{lease.worker_id!r} (acked or nacked already, or it lapsed and another worker claimed it); "
            "nothing of it changed"
        )
        for i, (lease, status) in enumerate(zip(leases, outcomes))
    ]


def _leases_in(result: Any) -> List[Lease]:
    """The leases a claiming call returned (a Lease or None, a list, an AckAndClaimResult)."""
    if result is None:
        return []
    if isinstance(result, Lease):
        return [result]
    if isinstance(result, AckAndClaimResult):
        return result.leases
    return list(result)


def _copy_lease(ptr: Any) -> Lease:
    """The Lease a claim handed out (ptr non-NULL); the caller frees ptr."""
    c = ptr.contents
    return Lease(
        seq=c.seq,
        group_id=string_at(c.group_id, c.group_id_len).decode("utf-8", "surrogateescape"),
        event=string_at(c.event, c.event_len).decode("utf-8", "surrogateescape"),
        worker_id=(c.worker_id or b"").decode("utf-8", "surrogateescape"),
        lock_expiry=c.lock_expiry,
        attempts=c.attempts,
    )


# ---------------------------------------------------------------------------------------
# Errors


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
        self.clock = clock
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


# ---------------------------------------------------------------------------------------
# The transport


class Transport:
    """An open queue: a local libSQL file (WAL), ``":memory:"``, a libSQL server
    (``libsql://``, ``http://``, ``https://``), or an embedded replica (a path and
    `sync_url`).

    ``Transport(path, **options)`` opens it (so does ``Transport.open``); every option is
    keyword-only and optional (None: the library's default):

    - `prefix` (str): table names start with it (default ``"harel"``).
    - `create_schema` (bool): create and upgrade the tables at open (default on).
    - `sync_url`, `auth_token` (str), `sync_interval` (seconds): a libSQL server.
    - `busy_timeout` (seconds): how long a write waits for the lock (default 5).
    - `synchronous_full` (bool): a sync (fdatasync) at every commit (default) or not (NORMAL).
    - `max_attempts` (int, 0..2**32-1): how many times a message may be claimed; the claim
      that would hand it out once more moves it to the dead letters instead (default 0:
      no limit).
    - `clock` (callable returning epoch seconds): where "now" comes from (default: the
      system clock, read by the library).

    One transport may be used from several threads at once; its calls run one at a time
    in the library, except that publishes arriving while another commits share its
    commit. `close()` waits for the calls in progress. Use it as a context manager to
    close it."""

    def __init__(
        self,
        path: PathType,
        *,
        prefix: Optional[str] = None,
        create_schema: Optional[bool] = None,
        sync_url: Optional[str] = None,
        auth_token: Optional[str] = None,
        sync_interval: Optional[float] = None,
        busy_timeout: Optional[float] = None,
        synchronous_full: Optional[bool] = None,
        max_attempts: Optional[int] = None,
        clock: Optional[Clock] = None,
    ) -> None:
        self._handle: Optional[int] = None  # set last: __del__ of a failed open has nothing to close
        self._closed = True
        lib = _native.lib()
        self._lib = lib
        database = _path(path)
        setters: List[Tuple[Any, Any]] = []
        if prefix is not None:
            setters.append((lib.harel_options_set_prefix, _text("prefix", prefix)))
        if create_schema is not None:
            setters.append((lib.harel_options_set_create_schema, _flag("create_schema", create_schema)))
        if sync_url is not None:
            setters.append((lib.harel_options_set_sync_url, _text("sync_url", sync_url)))
        if auth_token is not None:
            setters.append((lib.harel_options_set_auth_token, _text("auth_token", auth_token)))
        if sync_interval is not None:
            setters.append((lib.harel_options_set_sync_interval, _seconds("sync_interval", sync_interval)))
        if busy_timeout is not None:
            setters.append((lib.harel_options_set_busy_timeout, _seconds("busy_timeout", busy_timeout)))
        if synchronous_full is not None:
            setters.append((lib.harel_options_set_synchronous_full, _flag("synchronous_full", synchronous_full)))
        if max_attempts is not None:
            setters.append((lib.harel_options_set_max_attempts, _uint32("max_attempts", max_attempts, "0: no limit")))
        if clock is not None and not callable(clock):
            raise ArgumentError(f"clock must be a callable returning epoch seconds, got {_describe(clock)}")
        self._clock: Optional[_ClockCell] = _ClockCell(clock) if clock is not None else None

        options = lib.harel_options_new()
        if not options:
            raise PanicError("harel_options_new failed")
        try:
            for setter, value in setters:
                err = c_void_p()
                status = setter(options, value, byref(err))
                if status < 0:
                    _raise(lib, status, err)
            if self._clock is not None:
                err = c_void_p()
                status = lib.harel_options_set_clock(options, self._clock.callback, None, byref(err))
                if status < 0:
                    _raise(lib, status, err)
            handle = c_void_p()
            err = c_void_p()
            status = lib.harel_transport_open(database, options, byref(handle), byref(err))
            if status < 0:
                _raise(lib, status, err)
        finally:
            lib.harel_options_free(options)
        self._path = os.fsdecode(database)
        self._state = threading.Condition(threading.Lock())
        self._in_flight = 0
        self._waits: set = set()  # the _CallCancel of each call that may wait, for close
        self._handle = handle.value
        self._closed = False

    @classmethod
    def open(cls, path: PathType, **options: Any) -> "Transport":
        """The same as ``Transport(path, **options)``."""
        return cls(path, **options)

    # -- state ----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The path (or URL) the transport was opened with."""
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
            if self._in_flight == 0:
                self._state.notify_all()

    def close(self) -> None:
        """Closes the transport once the calls in progress (on other threads) have
        returned, ending the waits of waiting claims first (they raise
        `WaitInterruptedError`, having claimed nothing); later calls raise
        `TransportClosedError`. Closing again does nothing."""
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
            while self._in_flight:
                state.wait()
            handle, self._handle = self._handle, None
        self._lib.harel_transport_close(handle)

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # Only reached when no call holds the transport (each call holds a reference).
        try:
            if getattr(self, "_handle", None) is not None and not self._closed:
                self._closed = True
                self._lib.harel_transport_close(self._handle)
                self._handle = None
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"<harel_transport.Transport {self._path!r}{' closed' if self._closed else ''}>"

    # -- operations -------------------------------------------------------------------

    def publish(
        self, group_id: str, event: EventType, *, priority: int = 0, routing_key: Optional[str] = None
    ) -> None:
        """Appends `event` (JSON text: a str, or UTF-8 bytes) to the FIFO of `group_id`.
        The first publish into a group fixes its `priority` (0..4) and `routing_key`."""
        g = _text("group_id", group_id)
        e = _event("event_json", event)
        p = _int32("priority", priority)
        k = _optional_text("routing_key", routing_key)
        handle = self._enter("publish")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_publish(handle, g, e, p, k, byref(err))
        finally:
            self._leave()
        if status < 0:
            _raise(self._lib, status, err)

    def publish_many(self, messages: Iterable[Union[Message, Tuple[Any, ...]]]) -> None:
        """Appends `messages` in order, in one transaction: all of them or none, with one
        commit. Each is a `Message` or a tuple ``(group_id, event[, priority[,
        routing_key]])``; errors name the element (``messages[3].event_json``)."""
        if isinstance(messages, (str, bytes)):
            raise ArgumentError("messages must be an iterable of Message, not a single str")
        try:
            items = list(messages)
        except TypeError:
            raise ArgumentError(f"messages must be an iterable of Message, got {_describe(messages)}") from None
        array = (_native.HarelMessage * len(items))() if items else None
        for i, m in enumerate(items):
            name = f"messages[{i}]"
            if isinstance(m, Message):
                group_id, event, priority, routing_key = m.group_id, m.event, m.priority, m.routing_key
            elif isinstance(m, tuple) and 2 <= len(m) <= 4:
                group_id, event = m[0], m[1]
                priority = m[2] if len(m) > 2 else 0
                routing_key = m[3] if len(m) > 3 else None
            else:
                raise ArgumentError(
                    f"{name} must be a Message or a tuple (group_id, event[, priority[, routing_key]]), "
                    f"got {_describe(m)}"
                )
            element = array[i]  # type: ignore[index]
            element.group_id = _text(f"{name}.group_id", group_id)
            element.event_json = _event(f"{name}.event_json", event)
            element.priority = _int32(f"{name}.priority", priority)
            element.routing_key = _optional_text(f"{name}.routing_key", routing_key)
        handle = self._enter("publish_many")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_publish_many(handle, array, len(items), byref(err))
        finally:
            self._leave()
        if status < 0:
            _raise(self._lib, status, err)

    def claim(
        self,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        wait: float = 0.0,
        cancel: Optional[Cancel] = None,
    ) -> Optional[Lease]:
        """Leases the next deliverable message to `worker_id` for `visibility` seconds,
        among groups of priority >= `min_priority` and, when `routing_keys` is given, a
        routing key among them; None when nothing is deliverable.

        `wait` (seconds, finite, >= 0; 0: look once) waits that long for something
        deliverable, returning as soon as a lease is had: a commit by any transport of
        this process on the queue wakes it at once, another process's commit within a few
        ms, a lease's or park's end at that instant. It holds no lock while it waits, and
        the transport's other calls go ahead. `cancel` (a `Cancel`), `interrupt()` and
        `close()` end the wait early: `WaitInterruptedError`, nothing claimed."""
        return self._claim(worker_id, visibility, min_priority, routing_keys, wait, cancels_of(cancel))

    def _claim(self, worker_id: Any, visibility: Any, min_priority: Any, routing_keys: Any, wait: Any,
               cancels: Tuple[Cancel, ...]) -> Optional[Lease]:
        w = _text("worker_id", worker_id)
        v = _seconds("visibility", visibility)
        p = _int32("min_priority", min_priority)
        keys, n, _keep = _routing_keys(routing_keys)
        seconds = _seconds("wait", wait)
        lib = self._lib

        def call(handle: int, seconds: float, cancel: Optional[int]) -> Optional[Lease]:
            out = POINTER(_native.HarelLease)()
            if self._clock is not None:
                self._clock.take()  # clear what an earlier call on this thread left
            err = c_void_p()
            if seconds == 0 and cancel is None:  # no wait to end: the plain claim
                status = lib.harel_transport_claim(handle, w, v, p, keys, n, byref(out), byref(err))
            else:
                status = lib.harel_transport_claim_wait(handle, w, v, p, keys, n, seconds, cancel, byref(out), byref(err))
            return self._claimed(status, out, err)

        return self._waiting("claim", seconds, cancels, call)

    def claim_many(
        self,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        max: int,
        wait: float = 0.0,
        cancel: Optional[Cancel] = None,
    ) -> List[Lease]:
        """Leases up to `max` messages (1..MAX_CLAIM) to `worker_id` in one transaction,
        each the head of a different group, in the order `claim` would hand them out one
        after another; an empty list when nothing is deliverable (within `wait`). `wait`
        and `cancel` as for `claim`. Each lease is finished on its own (`ack`, `nack`) or
        with the others (`ack_many`, `ack_and_claim_many`)."""
        return self._claim_many(worker_id, visibility, min_priority, routing_keys, max, wait, cancels_of(cancel))

    def _claim_many(self, worker_id: Any, visibility: Any, min_priority: Any, routing_keys: Any, max: Any,
                    wait: Any, cancels: Tuple[Cancel, ...]) -> List[Lease]:
        w = _text("worker_id", worker_id)
        v = _seconds("visibility", visibility)
        p = _int32("min_priority", min_priority)
        keys, n, _keep = _routing_keys(routing_keys)
        m = _max(max)
        seconds = _seconds("wait", wait)
        lib = self._lib

        def call(handle: int, seconds: float, cancel: Optional[int]) -> List[Lease]:
            out = _leases_out(m)
            got = c_size_t()
            if self._clock is not None:
                self._clock.take()
            err = c_void_p()
            status = lib.harel_transport_claim_many(
                handle, w, v, p, keys, n, m, seconds, cancel, out, byref(got), byref(err)
            )
            return self._claimed_many(status, out, got.value, err)

        return self._waiting("claim_many", seconds, cancels, call)

    def _waiting(self, what: str, seconds: float, cancels: Tuple[Cancel, ...],
                 call: Callable[[int, float, Optional[int]], Any]) -> Any:
        """Runs ``call(handle, seconds, cancel)``, a claim that may wait `seconds`, with a
        harel_cancel of its own fired by `cancels` and by close (none when nothing can end
        its wait). On the main thread a call that waits runs on a helper thread, so that
        signal handlers (Ctrl-C) run meanwhile; if one raises, the wait is ended, what it
        claimed given back and the exception re-raised. A wait that close ended gives back
        what it claimed in that instant (nothing could finish it) and raises."""
        if seconds == 0 and not cancels:
            handle = self._enter(what)
            try:
                return call(handle, seconds, None)
            finally:
                self._leave()
        wait = _CallCancel(self._lib)
        # close ends waits; a call that does not wait it lets finish, as any other call.
        closes = wait if seconds != 0 else None
        try:
            handle = self._enter(what, closes)
            try:
                for cancel in cancels:
                    cancel._link(wait)
                try:
                    if 0 < seconds < math.inf and on_main_thread():  # (any other value: the library's to refuse)
                        # A look first, here: a claim that finds work at once costs no thread.
                        result = call(handle, 0.0, wait.ptr)
                        if not _leases_in(result):
                            result = run_interruptibly(
                                call, (handle, seconds, wait.ptr), wait, lambda r: self._give_back(handle, r)
                            )
                    else:
                        result = call(handle, seconds, wait.ptr)
                except WaitInterruptedError:
                    if wait.reason == BY_CLOSE:
                        raise WaitInterruptedError(
                            f"{what}: the transport was closed while the claim waited; nothing was claimed"
                        ) from None
                    raise
                finally:
                    for cancel in cancels:
                        cancel._unlink(wait)
                if wait.reason in (BY_CLOSE, BY_CALLER) and _leases_in(result):
                    # Claimed in the instant the wait was ended, for a caller that cannot
                    # finish it (closed) or has gone (a cancelled task).
                    self._give_back(handle, result)
                    why = "the transport was closed" if wait.reason == BY_CLOSE else "its caller gave up"
                    raise WaitInterruptedError(
                        f"{what}: {why} while the claim waited; what it claimed in that instant was given back"
                    )
                return result
            finally:
                self._leave(closes)
        finally:
            wait.free()

    def _give_back(self, handle: int, result: Any) -> None:
        """Nacks (delay 0) the leases of a claim whose caller gave up, on the handle the
        call still holds. Best effort: a lease that could not be nacked lapses at the end
        of its visibility, as any lease whose worker went away."""
        lib = self._lib
        for lease in _leases_in(result):
            err = c_void_p()
            lib.harel_transport_nack(handle, byref(_lease_arg(lease)), 0.0, byref(err))
            lib.harel_error_free(err)

    def ack_and_claim(
        self,
        lease: Lease,
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
    ) -> Optional[Lease]:
        """Acks `lease` and claims the next message for `worker_id` in one transaction (one
        commit instead of two). None: acked, nothing deliverable. If the ack fails
        (`LeaseLostError`, ...), nothing is claimed."""
        arg = _lease_arg(lease)
        w = _text("worker_id", worker_id)
        v = _seconds("visibility", visibility)
        p = _int32("min_priority", min_priority)
        keys, n, _keep = _routing_keys(routing_keys)
        out = POINTER(_native.HarelLease)()
        if self._clock is not None:
            self._clock.take()
        handle = self._enter("ack_and_claim")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_ack_and_claim(handle, byref(arg), w, v, p, keys, n, byref(out), byref(err))
        finally:
            self._leave()
        return self._claimed(status, out, err)

    def _claimed(self, status: int, out: Any, err: c_void_p) -> Optional[Lease]:
        lib = self._lib
        if status < 0:
            lib.harel_lease_free(out)
            _raise(lib, status, err, self._clock)
        if not out:  # HAREL_EMPTY
            return None
        try:
            return _copy_lease(out)
        finally:
            lib.harel_lease_free(out)

    def _claimed_many(self, status: int, out: Any, n: int, err: c_void_p) -> List[Lease]:
        """Copies out and frees the `n` leases a batch claim wrote into `out` (none on
        HAREL_EMPTY and on error)."""
        lib = self._lib
        try:
            if status < 0:
                _raise(lib, status, err, self._clock)
            return [_copy_lease(out[i]) for i in range(n)]
        finally:
            for i in range(n):
                lib.harel_lease_free(out[i])

    def ack_many(self, leases: Iterable[Lease]) -> List[Optional[LeaseLostError]]:
        """Acks `leases` in one transaction (one commit), in order. Returns one element per
        lease: None when it was acked, or the `LeaseLostError` of a lease that was lost
        (acked or nacked already, or it lapsed and another worker claimed it; nothing of
        it changed) while the others were acked all the same. An exception is the whole
        call's, and then nothing was acked: `ArgumentError` for a lease that is not one
        (naming it, ``leases[2]``), `BusyError`, `DatabaseError`, `ConnectError`."""
        items, _args, array = _lease_args(leases)
        outcomes = (c_int32 * len(items))()
        if self._clock is not None:
            self._clock.take()
        handle = self._enter("ack_many")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_ack_many(handle, array, len(items), outcomes, byref(err))
        finally:
            self._leave()
        if status < 0:
            _raise(self._lib, status, err, self._clock)
        return _outcomes(items, outcomes)

    def ack_and_claim_many(
        self,
        leases: Iterable[Lease],
        worker_id: str,
        visibility: float = DEFAULT_VISIBILITY,
        min_priority: int = 0,
        routing_keys: Optional[Sequence[str]] = None,
        *,
        max: int,
    ) -> AckAndClaimResult:
        """`ack_many(leases)` and then `claim_many(worker_id, ..., max=max)` without
        waiting, in one transaction: a batch worker's loop with one commit per batch.
        Returns ``(leases, acked)`` (an `AckAndClaimResult`): the new leases (empty when
        nothing is deliverable), and `ack_many`'s outcomes (a lost lease does not stop the
        claim). On an exception nothing was acked or claimed."""
        items, _args, array = _lease_args(leases)
        w = _text("worker_id", worker_id)
        v = _seconds("visibility", visibility)
        p = _int32("min_priority", min_priority)
        keys, n, _keep = _routing_keys(routing_keys)
        m = _max(max)
        outcomes = (c_int32 * len(items))()
        out = _leases_out(m)
        got = c_size_t()
        if self._clock is not None:
            self._clock.take()
        handle = self._enter("ack_and_claim_many")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_ack_and_claim_many(
                handle, array, len(items), outcomes, w, v, p, keys, n, m, out, byref(got), byref(err)
            )
        finally:
            self._leave()
        claimed = self._claimed_many(status, out, got.value, err)
        return AckAndClaimResult(claimed, _outcomes(items, outcomes))

    def extend(self, lease: Lease, visibility: float) -> Lease:
        """Makes `lease` run to now + `visibility` seconds, so a handler that runs longer
        than its visibility keeps its message (`keep_alive` does it periodically).
        Returns the lease with its new `lock_expiry` (a new `Lease`: leases are frozen;
        the one given still acks and nacks as well). A lease that lapsed but that no other
        worker claimed since is still this worker's, and is extended. `LeaseLostError`
        when it was acked or nacked already, or lapsed and another worker claimed it
        (nothing changed)."""
        arg = _lease_arg(lease)
        v = _seconds("visibility", visibility)
        self._call("extend", self._lib.harel_transport_extend, byref(arg), v)
        return replace(lease, lock_expiry=arg.lock_expiry)

    def keep_alive(self, lease: Lease, visibility: float = DEFAULT_VISIBILITY, *,
                   every: Optional[float] = None) -> KeepAlive:
        """Extends `lease` to now + `visibility` every `every` seconds (by default a third
        of `visibility`) on a thread of its own, from now until `stop()` or the end of its
        ``with`` block; see `KeepAlive`::

            with transport.keep_alive(lease, 30) as alive:
                handle(lease)
            if alive.error is None:
                transport.ack(alive.lease)
        """
        _lease_arg(lease)
        v = _seconds("visibility", visibility)
        beat = period(v, every)
        if self._closed:  # not only at the first beat
            raise TransportClosedError("keep_alive: the transport is closed")
        return KeepAlive(self, lease, v, beat)

    def interrupt(self) -> None:
        """Ends every claim waiting on this transport now (`claim` and `claim_many` with a
        wait): each raises `WaitInterruptedError`, having claimed nothing. Claims that
        start later wait as usual. From any thread; on a closed transport nothing."""
        try:
            handle = self._enter("interrupt")
        except TransportClosedError:
            return
        try:
            self._lib.harel_transport_interrupt(handle)
        finally:
            self._leave()

    def ack(self, lease: Lease) -> None:
        """Finishes `lease`: deletes its message. `LeaseLostError` if the message is gone or
        held by another worker (nothing changed)."""
        arg = _lease_arg(lease)
        if self._clock is not None:
            self._clock.take()
        handle = self._enter("ack")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_ack(handle, byref(arg), byref(err))
        finally:
            self._leave()
        if status < 0:
            _raise(self._lib, status, err, self._clock)

    def nack(self, lease: Lease, delay: float = 0.0) -> None:
        """Gives `lease` back: claimable at once (`delay` 0) or parked, its group blocked,
        for `delay` seconds. `LeaseLostError` as for `ack`."""
        arg = _lease_arg(lease)
        d = _seconds("delay", delay)
        if self._clock is not None:
            self._clock.take()
        handle = self._enter("nack")
        try:
            err = c_void_p()
            status = self._lib.harel_transport_nack(handle, byref(arg), d, byref(err))
        finally:
            self._leave()
        if status < 0:
            _raise(self._lib, status, err, self._clock)

    # -- dead letters and administration ----------------------------------------------

    def _call(self, what: str, fn: Any, *args: Any) -> None:
        """Calls ``fn(handle, *args, &err)``; raises on a negative status."""
        if self._clock is not None:
            self._clock.take()  # clear what an earlier call on this thread left
        handle = self._enter(what)
        try:
            err = c_void_p()
            status = fn(handle, *args, byref(err))
        finally:
            self._leave()
        if status < 0:
            _raise(self._lib, status, err, self._clock)

    def dead_letter(self, lease: Lease, reason: str) -> None:
        """Moves the leased message to the dead letters with `reason` (not empty), for a
        worker that knows it will never succeed; its group goes on with its next message
        at once. The lease is over, as after `ack`; `LeaseLostError` as for `ack`."""
        arg = _lease_arg(lease)
        r = _text("reason", reason)
        self._call("dead_letter", self._lib.harel_transport_dead_letter, byref(arg), r)

    def redrive(
        self, *, all: bool = False, group_id: Optional[str] = None, seqs: Optional[Iterable[int]] = None
    ) -> int:
        """Moves dead letters back into their groups as the newest messages, in the order
        they had, claimed 0 times (a group they bring back gets its old priority and
        routing key); returns how many moved. Say which with exactly one of ``all=True``,
        `group_id` (that group's) or `seqs` (`DeadLetter.seq` values; unknown ones are
        passed over); otherwise `ArgumentError`."""
        a, g, array, n = _dead_selection(all, group_id, seqs)
        moved = c_uint64()
        self._call("redrive", self._lib.harel_transport_redrive, a, g, array, n, byref(moved))
        return moved.value

    def purge_dead(
        self, *, all: bool = False, group_id: Optional[str] = None, seqs: Optional[Iterable[int]] = None
    ) -> int:
        """Deletes dead letters, chosen as for `redrive` (exactly one of ``all=True``,
        `group_id`, `seqs`); returns how many."""
        a, g, array, n = _dead_selection(all, group_id, seqs)
        purged = c_uint64()
        self._call("purge_dead", self._lib.harel_transport_purge_dead, a, g, array, n, byref(purged))
        return purged.value

    def purge_group(self, group_id: str) -> int:
        """Deletes `group_id`'s messages and the group (a lease on one of them is lost);
        returns how many messages. An unknown group: 0."""
        g = _text("group_id", group_id)
        purged = c_uint64()
        self._call("purge_group", self._lib.harel_transport_purge_group, g, byref(purged))
        return purged.value

    def purge(self) -> int:
        """Deletes every message and group (the dead letters stay); returns how many
        messages."""
        purged = c_uint64()
        self._call("purge", self._lib.harel_transport_purge, byref(purged))
        return purged.value

    def release(self, group_id: str) -> bool:
        """Ends the lease or park on `group_id`'s head now, so a stuck group is served at
        once (its holder's ack or nack then raises `LeaseLostError`); False when nothing
        was held (an unknown group included)."""
        g = _text("group_id", group_id)
        released = c_bool()
        self._call("release", self._lib.harel_transport_release, g, byref(released))
        return released.value

    # -- a look inside -----------------------------------------------------------------

    def _look(self, what: str, fn: Any, free: Any, out: Any, copy: Any, *args: Any) -> Any:
        """Calls ``fn(handle, *args, &out, &err)``, copies ``out`` with `copy`, and frees
        it with `free` whatever happens."""
        try:
            self._call(what, fn, *args, byref(out))
            return copy(out.contents)
        finally:
            free(out)  # NULL (after an error) does nothing

    def stats(self) -> Stats:
        """Exact counts of the queue now: messages, groups ready, leased and parked, dead
        letters, the oldest ready message's age, the next release, and the same per
        priority level. One read: it takes no write lock and holds up no claim."""
        out = POINTER(_native.HarelStats)()
        lib = self._lib
        return self._look("stats", lib.harel_transport_stats, lib.harel_stats_free, out, copy_stats)

    def groups(
        self, state: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[GroupInfo]:
        """A page of groups in group id order, claiming nothing: every group (`state`
        None) or only those ``"ready"``, ``"leased"`` or ``"parked"``. `cursor`: None for
        the first page, else the `Page.next` of the page before; `limit`: 1..10000."""
        s = _group_state(state)
        c = _optional_text("cursor", cursor)
        n = _limit(limit)
        out = POINTER(_native.HarelGroupPage)()
        lib = self._lib
        return self._look(
            "groups", lib.harel_transport_groups, lib.harel_group_page_free, out, copy_group_page, s, c, n
        )

    def peek(self, group_id: str, cursor: Optional[str] = None, limit: int = 100) -> Page[MessageInfo]:
        """A page of `group_id`'s messages, oldest first, claiming nothing (an unknown
        group: an empty page). `cursor` and `limit` as for `groups`."""
        g = _text("group_id", group_id)
        c = _optional_text("cursor", cursor)
        n = _limit(limit)
        out = POINTER(_native.HarelMessagePage)()
        lib = self._lib
        return self._look(
            "peek", lib.harel_transport_peek, lib.harel_message_page_free, out, copy_message_page, g, c, n
        )

    def dead_letters(
        self, group_id: Optional[str] = None, cursor: Optional[str] = None, limit: int = 100
    ) -> Page[DeadLetter]:
        """A page of dead letters in the order they had in the queue: `group_id`'s only, or
        every group's (None). `cursor` and `limit` as for `groups`."""
        g = _optional_text("group_id", group_id)
        c = _optional_text("cursor", cursor)
        n = _limit(limit)
        out = POINTER(_native.HarelDeadPage)()
        lib = self._lib
        return self._look(
            "dead_letters", lib.harel_transport_dead_letters, lib.harel_dead_page_free, out, copy_dead_page, g, c, n
        )


# ---------------------------------------------------------------------------------------
# Module functions


def version() -> str:
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _native.lib().harel_version().decode()


def library_path() -> str:
    """The file of the loaded libharel_transport."""
    return _native.lib().path


def status_name(status: int) -> str:
    """The C name of a status ("HAREL_ERR_BUSY"); "HAREL_UNKNOWN" for any other value."""
    return _native.lib().harel_status_name(_int32("status", status)).decode()


def _schema(fn_name: str, prefix: str) -> str:
    lib = _native.lib()
    p = _text("prefix", prefix)
    out = c_void_p()
    err = c_void_p()
    status = getattr(lib, fn_name)(p, byref(out), byref(err))
    if status < 0:
        _raise(lib, status, err)
    try:
        return string_at(out).decode("utf-8")
    finally:
        lib.harel_string_free(out)


def schema_sql(prefix: str = "harel") -> str:
    """The idempotent CREATE statements of a fresh schema under `prefix`, one per line,
    for a migration tool that owns the schema (open with ``create_schema=False``)."""
    return _schema("harel_schema_sql", prefix)


def schema_upgrade_sql(prefix: str = "harel") -> str:
    """The statements that upgrade a harel 0.9 groups table (adds ``routing_key``); not
    idempotent: run them once."""
    return _schema("harel_schema_upgrade_sql", prefix)

