"""W3C Trace Context (https://www.w3.org/TR/trace-context/) through the library's helpers,
the one implementation every face calls: `format_traceparent`, `parse_traceparent` and
`tracestate_valid` (docs/abi.md, "Trace context"). Nothing here parses a traceparent
itself; the OpenTelemetry face (`_tracing`) reads and writes message headers with these."""

from __future__ import annotations

from ctypes import byref, c_bool, c_uint8, c_void_p, create_string_buffer
from typing import Any, NamedTuple, Optional

from . import _native
from ._args import _describe
from ._errors import ArgumentError, error_for_status

__all__ = ["TraceParent", "format_traceparent", "parse_traceparent", "tracestate_valid", "TRACEPARENT_LEN"]

#: The length of a version-00 traceparent value (HAREL_TRACEPARENT_LEN).
TRACEPARENT_LEN = _native.TRACEPARENT_LEN


class TraceParent(NamedTuple):
    """A valid traceparent, read (`parse_traceparent`): its ids and flags."""

    #: 16 bytes.
    trace_id: bytes
    #: 8 bytes: the span of the sender (the spec's parent-id).
    span_id: bytes
    #: trace-flags; bit 0 (0x01) is "sampled".
    flags: int


def _check(lib: Any, status: int, err: c_void_p) -> None:
    """Raises the exception of a negative status, with the call's message (freed here)."""
    if status >= 0:
        return
    try:
        message = lib.harel_error_message(err) if err else None
        text = message.decode("utf-8", "replace") if message else lib.harel_status_name(status).decode()
    finally:
        lib.harel_error_free(err)
    raise error_for_status(status, text)


def _id(name: str, value: Any, size: int) -> Any:
    if not isinstance(value, (bytes, bytearray, memoryview)) or len(value) != size:
        raise ArgumentError(f"{name} must be {size} bytes, got {_describe(value)}")
    return (c_uint8 * size).from_buffer_copy(bytes(value))


def format_traceparent(trace_id: bytes, span_id: bytes, flags: int = 1) -> str:
    """The W3C ``traceparent`` value of a trace id (16 bytes), a span id (8 bytes) and
    trace-flags (0..255; 0x01 is "sampled"): ``"00-<32 hex>-<16 hex>-<2 hex>"``, lower-case,
    55 characters (``harel_traceparent_format``). `ArgumentError` for an id all zero bytes."""
    t = _id("trace_id", trace_id, 16)
    s = _id("span_id", span_id, 8)
    if isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags <= 255:
        raise ArgumentError(f"flags must be an int 0..255, got {_describe(flags)}")
    lib = _native.lib()
    out = create_string_buffer(TRACEPARENT_LEN + 1)
    err = c_void_p()
    _check(lib, lib.harel_traceparent_format(t, s, flags, out, byref(err)), err)
    return out.value.decode("ascii")


def parse_traceparent(value: str) -> Optional[TraceParent]:
    """Reads a ``traceparent`` value as a receiver must (``harel_traceparent_parse``): its
    ids and flags, or None when it is not valid (to be ignored: never an error). Version
    00 exactly as written, or a higher version's first 55 characters; spaces and tabs
    around it are ignored. A str holding a NUL is not valid."""
    if not isinstance(value, str):
        raise ArgumentError(f"value must be a str, got {_describe(value)}")
    if "\0" in value:
        return None
    return _parse(value.encode("utf-8", "surrogateescape"))


def _parse(value: bytes) -> Optional[TraceParent]:
    lib = _native.lib()
    trace_id = (c_uint8 * 16)()
    span_id = (c_uint8 * 8)()
    flags = c_uint8()
    valid = c_bool()
    err = c_void_p()
    _check(lib, lib.harel_traceparent_parse(value, trace_id, span_id, byref(flags), byref(valid), byref(err)), err)
    if not valid.value:
        return None
    return TraceParent(bytes(trace_id), bytes(span_id), flags.value)


def tracestate_valid(value: str) -> bool:
    """Whether `value` is a valid W3C ``tracestate`` (``harel_tracestate_valid``): at most 32
    ``key=value`` members, each key once ("" is valid: an empty tracestate). A worker ignores
    one that is not, whole. A str holding a NUL is not valid."""
    if not isinstance(value, str):
        raise ArgumentError(f"value must be a str, got {_describe(value)}")
    if "\0" in value:
        return False
    return _tracestate_valid(value.encode("utf-8", "surrogateescape"))


def _tracestate_valid(value: bytes) -> bool:
    lib = _native.lib()
    valid = c_bool()
    err = c_void_p()
    _check(lib, lib.harel_tracestate_valid(value, byref(valid), byref(err)), err)
    return valid.value

