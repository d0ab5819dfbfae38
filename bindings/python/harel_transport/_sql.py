"""SQL values across the boundary, for a transaction's own statements: parameters into C
as an array of ``harel_value`` (`_params`), rows out of C as tuples (`copy_rows`).

What ctypes would change silently is refused here, as ArgumentError (an int past int64
would wrap, a NUL would cut a text short); a float that is not finite is the library's to
refuse. A text coming back is read with its length (it may hold a NUL) and decoded with
``surrogateescape``, as a lease's group id is.
"""

from __future__ import annotations

from collections.abc import Mapping
from ctypes import Structure, c_char_p, c_double, c_int32, c_int64, c_size_t, string_at
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _native
from ._args import _describe, _text
from ._errors import ArgumentError, PanicError

#: A parameter of `Transaction.execute` and `Transaction.query`: NULL, an INTEGER (a bool
#: is 0 or 1), a REAL, a TEXT or a BLOB.
SqlParam = Union[None, bool, int, float, str, bytes, bytearray, memoryview]
#: A column of a row `Transaction.query` returns.
SqlValue = Union[None, int, float, str, bytes]
Params = Sequence[SqlParam]
Row = Tuple[SqlValue, ...]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _ValueArg(Structure):
    """struct harel_value as a parameter: text and blob point into bytes objects (kept by
    the array's ctypes references for as long as the array lives), a blob with its size."""

    _fields_ = [
        ("type", c_int32),
        ("integer", c_int64),
        ("real", c_double),
        ("text", c_char_p),
        ("blob", c_char_p),
        ("size", c_size_t),
    ]


def _params(params: Any) -> Tuple[Optional[Any], int]:
    """(a const harel_value * array or None, its length) of `params`, the values of
    ``?1``, ``?2``, ... in order; errors name the element (``params[2]``)."""
    if isinstance(params, (str, bytes, bytearray, memoryview)):
        raise ArgumentError(f"params must be a sequence of SQL values, not a single {type(params).__name__}")
    if isinstance(params, Mapping):
        raise ArgumentError("params must be a sequence of SQL values (?1, ?2, ...): named parameters are not taken")
    try:
        values = list(params)
    except TypeError:
        raise ArgumentError(f"params must be a sequence of SQL values, got {_describe(params)}") from None
    if not values:
        return None, 0
    array = (_ValueArg * len(values))()
    for i, value in enumerate(values):
        name = f"params[{i}]"
        arg = array[i]
        if value is None:
            arg.type = _native.VALUE_NULL
        elif isinstance(value, int):  # a bool too: 0 or 1, as SQLite stores it
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise ArgumentError(f"{name} is {value}: an INTEGER must fit in int64")
            arg.type, arg.integer = _native.VALUE_INTEGER, int(value)
        elif isinstance(value, float):
            arg.type, arg.real = _native.VALUE_REAL, value
        elif isinstance(value, str):
            arg.type, arg.text = _native.VALUE_TEXT, _text(name, value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            arg.type, arg.blob, arg.size = _native.VALUE_BLOB, data, len(data)
        else:
            raise ArgumentError(f"{name} must be None, bool, int, float, str or bytes, got {_describe(value)}")
    return array, len(values)


def copy_rows(rows: "_native.HarelRows") -> List[Row]:
    """The rows of a harel_rows, copied out of C (the caller frees it)."""
    n_columns = rows.n_columns
    values = rows.values
    return [
        tuple(_value(values[r * n_columns + c]) for c in range(n_columns)) for r in range(rows.n_rows)
    ]


def _value(v: "_native.HarelValue") -> SqlValue:
    kind = v.type
    if kind == _native.VALUE_NULL:
        return None
    if kind == _native.VALUE_INTEGER:
        return v.integer
    if kind == _native.VALUE_REAL:
        return v.real
    if kind == _native.VALUE_TEXT:
        return string_at(v.text, v.size).decode("utf-8", "surrogateescape") if v.size else ""
    if kind == _native.VALUE_BLOB:
        return string_at(v.blob, v.size) if v.size else b""
    raise PanicError(f"query: a column of the library's rows has the type {kind}, which is no harel_value_type")
