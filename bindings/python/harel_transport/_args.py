"""Arguments: what ctypes would silently change is refused here, as ArgumentError (a NUL
would cut a C string short, an int past int32 would wrap into range, True would be 1).
Ranges (priority 0..4, visibility > 0, ...) are the library's to check."""

from __future__ import annotations

import os
from collections.abc import Mapping
from ctypes import c_char_p, c_int64
from typing import Any, List, NamedTuple, Optional, Tuple

from . import _native
from ._errors import ArgumentError
from ._inspect import GROUP_STATES, MAX_PAGE
from ._values import (
    MAX_ATTEMPTS_MAX,
    MAX_CLAIM,
    MAX_DELAY,
    MAX_LIMIT,
    MAX_PRIORITY,
    MAX_RETRY_FACTOR,
    MAX_SHARDS,
    MIN_RETRY_BASE,
    Retry,
)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT32_MAX = 2**32 - 1
_SIZE_MAX = 2**64 - 1


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


#: A message's headers, checked and encoded: (name, value) pairs of bytes, in order.
EncodedHeaders = List[Tuple[bytes, bytes]]


def _headers(name: str, value: Any) -> Optional[EncodedHeaders]:
    """A message's headers (a sequence of (name, value) pairs of str; None: none), each
    string as `_text` takes it: what ctypes would change (a NUL, which would cut the C
    string short; a lone surrogate; not a str) is refused here, naming the pair
    (``headers[2].value``). The rules (how many pairs, how many bytes, which bytes a name
    may hold) are the library's, which names the pair the same way."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, bytearray)):
        raise ArgumentError(f"{name} must be a sequence of (name, value) pairs of str, got {_describe(value)}")
    if isinstance(value, Mapping):
        raise ArgumentError(
            f"{name} must be a sequence of (name, value) pairs of str (ordered; a name may repeat), "
            f"got {type(value).__name__}; pass list(headers.items())"
        )
    try:
        items = list(value)
    except TypeError:
        raise ArgumentError(f"{name} must be a sequence of (name, value) pairs of str, got {_describe(value)}") from None
    encoded: EncodedHeaders = []
    for i, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ArgumentError(f"{name}[{i}] must be a (name, value) pair of str, got {_describe(pair)}")
        encoded.append((_text(f"{name}[{i}].name", pair[0]), _text(f"{name}[{i}].value", pair[1])))
    return encoded


def _header_array(headers: Optional[EncodedHeaders]) -> Tuple[Any, int]:
    """(a const harel_header * array or None, its length) of encoded headers. The array
    keeps the bytes it points to alive (ctypes holds them in its `_objects`)."""
    if not headers:
        return None, 0
    array = (_native.HarelHeader * len(headers))()
    for i, (n, v) in enumerate(headers):
        array[i].name = n
        array[i].value = v
    return array, len(headers)


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


def _not_before(name: str, value: Any) -> float:
    """A publish's not_before for C, where a negative value means none: None is -1. A
    negative instant given is refused here, as the library's Rust face refuses it, rather
    than quietly read as none; NaN, inf and the ten-year bound are the library's."""
    if value is None:
        return -1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(
            f"{name} must be epoch seconds (int or float) or None, got {_describe(value)}"
            + ("; pass dt.timestamp()" if hasattr(value, "timestamp") else "")
        )
    seconds = _seconds(name, value)
    if seconds < 0:
        raise ArgumentError(f"{name} is {seconds}; it must be finite epoch seconds >= 0 (None: none)")
    return seconds


def _ttl(name: str, value: Any) -> float:
    """A publish's ttl for C, where 0 means never: None is 0. A 0 given (or -0.0) is refused
    here with the library's words, as its Rust face refuses it, rather than quietly read as
    never; NaN, inf, a negative ttl and the ten-year bound are the library's."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(
            f"{name} must be a number of seconds (int or float) or None, got {_describe(value)}"
            + ("; pass td.total_seconds()" if hasattr(value, "total_seconds") else "")
        )
    seconds = _seconds(name, value)
    if seconds == 0:
        raise ArgumentError(
            f"{name} is {value!r}; it must be a finite number of seconds > 0, at most {MAX_DELAY} (ten years); "
            "None: never"
        )
    return seconds


def _expires_at(name: str, value: Any) -> float:
    """A publish's expires_at for C, where 0 means never: None is 0. Epoch 0 given is
    refused here (it is never after now), rather than quietly read as never; NaN, inf, a
    negative instant and one not after now or the message's due time are the library's."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(
            f"{name} must be epoch seconds (int or float) or None, got {_describe(value)}"
            + ("; pass dt.timestamp()" if hasattr(value, "timestamp") else "")
        )
    seconds = _seconds(name, value)
    if seconds == 0:
        raise ArgumentError(f"{name} is {value!r}: not after now; it must be epoch seconds after now (None: never)")
    return seconds


#: A policy's three numbers for C, where 0 means "none" (base) or "the default" (factor:
#: 2; cap: an hour, or base): what each must be, in the library's words.
_RETRY_RANGES = {
    "base": f"it must be finite seconds, {MIN_RETRY_BASE}..{MAX_DELAY} (ten years)",
    "factor": f"it must be finite, 1..{MAX_RETRY_FACTOR:g}",
    "cap": f"it must be finite seconds, from base ({{base}}) to {MAX_DELAY} (ten years)",
}


def _retry(name: str, value: Any) -> Tuple[float, float, float, int]:
    """A retry policy (a `Retry`) for C: (base, factor, cap, jitter); None is base 0, which
    C reads as none (the queue's policy at a publish, no policy at the open). `name` names
    it in errors (``"retry"``, ``"messages[3].retry"``). What only this binding knows is
    checked here: a `Retry` (not a tuple or a dict), its numbers' types, `jitter`'s names,
    and a 0 (or -0.0) given as base, factor or cap, which C would read as none, 2 or an
    hour: refused with the library's words, as its Rust face refuses it. NaN, inf and the
    ranges are the library's."""
    if value is None:
        return 0.0, 0.0, 0.0, 0
    if not isinstance(value, Retry):
        raise ArgumentError(
            f"{name} must be a Retry(base, factor=2.0, cap=None, jitter='full') or None, got {_describe(value)}"
        )
    numbers = []
    for field in ("base", "factor", "cap"):
        given = getattr(value, field)
        if field == "cap" and given is None:
            numbers.append(0.0)  # C's default: an hour, or the base if longer
            continue
        if isinstance(given, bool) or not isinstance(given, (int, float)):
            raise ArgumentError(
                f"{name}.{field} must be a number (int or float), got {_describe(given)}"
                + ("; pass td.total_seconds()" if hasattr(given, "total_seconds") else "")
            )
        try:
            number = float(given)
        except OverflowError:
            raise ArgumentError(f"{name}.{field} is too large: {given}") from None
        if number == 0:
            says = _RETRY_RANGES[field].format(base=value.base)
            raise ArgumentError(f"{name}.{field} is {given!r}; {says}")
        numbers.append(number)
    jitter = value.jitter
    if not isinstance(jitter, str) or jitter not in _native.JITTERS:
        raise ArgumentError(f"{name}.jitter must be 'full', 'equal' or 'none', got {_describe(jitter)}")
    return numbers[0], numbers[1], numbers[2], _native.JITTERS[jitter]


def _delivery(
    at: str,
    key: Any,
    delay: Any,
    not_before: Any,
    unique_key: Any,
    unique_mode: Any,
    debounce: Any,
    ttl: Any = None,
    expires_at: Any = None,
    retry: Any = None,
) -> "_native.HarelDelivery":
    """A message's delivery options as a harel_delivery; `at` prefixes the names in errors
    (``"messages[3]."``, or ``""``). What only this binding knows is checked here: the types
    (as everywhere), `unique_mode`'s names, `debounce` given exactly with the mode
    "debounce" (otherwise the library would ignore it, or debounce by zero seconds), a
    ttl or expires_at of 0 (which C reads as never), and a retry policy's types, jitter
    and zeros (`_retry`). The values (an empty key, both keys, NaN, ranges, max_delay below
    delay, an expiry not after now or the due time, a policy's ranges) are the library's."""
    k = _optional_text(f"{at}key", key)
    d = _seconds(f"{at}delay", delay)
    nb = _not_before(f"{at}not_before", not_before)
    u = _optional_text(f"{at}unique_key", unique_key)
    if not isinstance(unique_mode, str) or unique_mode not in _native.UNIQUE_MODES:
        raise ArgumentError(f"{at}unique_mode must be 'keep', 'replace' or 'debounce', got {_describe(unique_mode)}")
    if debounce is None:
        if unique_mode == "debounce":
            raise ArgumentError(f"{at}unique_mode is 'debounce', which needs debounce=(delay, max_delay), in seconds")
        pair = (0.0, 0.0)
    elif unique_mode != "debounce":
        raise ArgumentError(
            f"{at}debounce is given with unique_mode {unique_mode!r}, which would ignore it; "
            "pass unique_mode='debounce'"
        )
    elif not isinstance(debounce, (tuple, list)) or len(debounce) != 2:
        raise ArgumentError(f"{at}debounce must be a (delay, max_delay) pair of seconds, got {_describe(debounce)}")
    else:
        pair = (_seconds(f"{at}debounce delay", debounce[0]), _seconds(f"{at}debounce max_delay", debounce[1]))
    ttl_c = _ttl(f"{at}ttl", ttl)
    expires_c = _expires_at(f"{at}expires_at", expires_at)
    base, factor, cap, jitter = _retry(f"{at}retry", retry)
    return _native.delivery(
        key=k, delay=d, not_before=nb, unique_key=u, unique_mode=_native.UNIQUE_MODES[unique_mode],
        debounce_delay=pair[0], debounce_max_delay=pair[1], ttl=ttl_c, expires_at=expires_c,
        retry_base=base, retry_factor=factor, retry_cap=cap, retry_jitter=jitter,
    )


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


def _page(cursor: Any, limit: Any) -> Tuple[Optional[bytes], int]:
    """A listing's (cursor, limit), for groups, peek, dead_letters and archive."""
    return _optional_text("cursor", cursor), _limit(limit)


def _max(value: Any) -> int:
    """A batch's max, for a size_t: what ctypes would wrap is ours to refuse; the range
    1..MAX_CLAIM is the library's."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"max must be an int, got {_describe(value)}")
    if not 0 <= value <= _SIZE_MAX:
        raise ArgumentError(f"max is {value}; it must be 1..{MAX_CLAIM}")
    return value


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
    *others, last = (repr(s) for s in GROUP_STATES)
    raise ArgumentError(f"state must be None, {', '.join(others)} or {last}, got {_describe(state)}")


def _pause_target(what: str, group_id: Any, routing_key: Any) -> Tuple[int, Optional[bytes]]:
    """(kind, name) of a pause or resume, for the ABI: a group (`group_id`), a routing key
    (`routing_key`), or the queue (neither: NULL). Both given is refused here (`what`,
    "pause" or "resume", says whose); each is a str as `_text` takes it. An empty one is
    the library's to refuse."""
    if group_id is not None and routing_key is not None:
        raise ArgumentError(
            f"group_id and routing_key are both given: a {what} names one (a group, or every group "
            "of a routing key), or neither (the whole queue)"
        )
    if group_id is not None:
        return _native.PAUSE_GROUP, _text("group_id", group_id)
    if routing_key is not None:
        return _native.PAUSE_ROUTING_KEY, _text("routing_key", routing_key)
    return _native.PAUSE_QUEUE, None


#: What a limit's rate and burst must be, in the library's words.
_LIMIT_RANGES = {"rate": "> 0", "burst": ">= 1"}


def _limit_number(name: str, value: Any) -> float:
    """A limit's rate or burst, for a double: an int or a float (not a bool); an int too
    large for a double is refused with the library's words. NaN, inf and the range are
    the library's."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(f"{name} must be a number (int or float), got {_describe(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ArgumentError(
            f"{name} is {value}; it must be a finite number {_LIMIT_RANGES[name]}, at most {MAX_LIMIT}"
        ) from None


def _limit_values(concurrency: Any, rate: Any, burst: Any) -> Tuple[int, float, float]:
    """(concurrency, rate, burst) of a set_limit, for C, where 0 means none: None is 0 (a
    rate limit's rate and burst are given together, or neither). What C would read as
    none, or ctypes would change, is refused here with the library's words, as its Rust
    face refuses it: a concurrency of 0 (below 1, past a uint32), a rate of 0 (and so
    burst 0 with it); rate without burst, burst without rate; the types. Neither limit,
    the ranges, NaN and inf are the library's."""
    c = 0
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            raise ArgumentError(f"concurrency must be an int or None, got {_describe(concurrency)}")
        if not 1 <= concurrency <= _UINT32_MAX:
            raise ArgumentError(f"concurrency is {concurrency}; it must be 1..{MAX_LIMIT} (None: no concurrency limit)")
        c = concurrency
    if rate is None and burst is None:
        return c, 0.0, 0.0
    if rate is None or burst is None:
        given, missing = ("rate", "burst") if burst is None else ("burst", "rate")
        raise ArgumentError(
            f"{given} is given without {missing}: a rate limit takes both (rate tokens a second, "
            "at most burst of them kept)"
        )
    r, b = _limit_number("rate", rate), _limit_number("burst", burst)
    if r == 0:  # 0 and -0.0: with burst 0, C would read no rate limit
        raise ArgumentError(
            f"rate is 0; it must be a finite number > 0, at most {MAX_LIMIT} (None, with burst: no rate limit)"
        )
    return c, r, b


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be a bool, got {_describe(value)}")
    return value


def _path(value: Any, name: str = "path") -> bytes:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            value = os.fsdecode(value)
    return _text(name, value)


def _databases(value: Any) -> List[bytes]:
    """The databases of a sharded open, each as `_path` takes it. The list's length (0, past
    256), an empty or a repeated element, and whether the list matches the databases' records
    are the library's to check."""
    if isinstance(value, (str, bytes, bytearray, os.PathLike)):
        raise ArgumentError(
            f"databases must be a sequence of paths (str), got {_describe(value)}; "
            "Transport(path) opens one database"
        )
    try:
        items = list(value)
    except TypeError:
        raise ArgumentError(f"databases must be a sequence of paths (str), got {_describe(value)}") from None
    return [_path(d, f"databases[{i}]") for i, d in enumerate(items)]


def _texts(name: str, value: Any) -> List[bytes]:
    """A list of C strings (`sync_urls`), each as `_text` takes it; how many, and whether
    they repeat, are the library's to check."""
    if isinstance(value, (str, bytes, bytearray)):
        raise ArgumentError(f"{name} must be a sequence of str, got {_describe(value)}")
    try:
        items = list(value)
    except TypeError:
        raise ArgumentError(f"{name} must be a sequence of str, got {_describe(value)}") from None
    return [_text(f"{name}[{i}]", v) for i, v in enumerate(items)]


def _shards(value: Any) -> int:
    """A number of shards, for a size_t: what ctypes would wrap is ours to refuse; the range
    1..256 is the library's."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"shards must be an int, got {_describe(value)}")
    if not 0 <= value <= _SIZE_MAX:
        raise ArgumentError(f"shards is {value}; it must be 1..{MAX_SHARDS}")
    return value


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


class ClaimArgs(NamedTuple):
    """The arguments every claim takes (worker_id, visibility, min_priority, routing_keys),
    checked and converted in one place for every claiming call, sync, async and harel's."""

    worker_id: bytes
    visibility: float
    min_priority: int
    routing_keys: Any  # a const char** array or None
    n_routing_keys: int
    keys: List[bytes]  # what routing_keys points to: a wait's filter

    @classmethod
    def read(cls, worker_id: Any, visibility: Any, min_priority: Any, routing_keys: Any) -> "ClaimArgs":
        """Checked in this order, so the first bad argument is the one named."""
        return cls(
            _text("worker_id", worker_id),
            _seconds("visibility", visibility),
            _int32("min_priority", min_priority),
            *_routing_keys(routing_keys),
        )

    @property
    def c(self) -> Tuple[bytes, float, int, Any, int]:
        """The arguments in the order of every C claim: worker_id, visibility, min_priority,
        routing_keys, n_routing_keys."""
        return self.worker_id, self.visibility, self.min_priority, self.routing_keys, self.n_routing_keys
