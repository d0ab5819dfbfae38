"""The module functions, of the library rather than of a queue: `version`,
`library_path`, `status_name`, `schema_sql`, `schema_upgrade_sql`, `shard_of`."""

from __future__ import annotations

from ctypes import byref, c_size_t, c_void_p, string_at

from . import _native
from ._args import _int32, _shards, _text
from ._handle import _raise

__all__ = ["version", "library_path", "status_name", "schema_sql", "schema_upgrade_sql", "shard_of"]


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


def shard_of(group_id: str, shards: int) -> int:
    """The shard (0..shards-1) that holds `group_id` in a queue sharded over `shards`
    databases (`Transport.open_shards`): the library's FNV-1a 64 of the id's UTF-8 bytes,
    modulo `shards` (docs/queue.md, "Sharded queues"). Needs no transport. `ArgumentError`:
    an empty group id, `shards` not 1..MAX_SHARDS (256)."""
    lib = _native.lib()
    g = _text("group_id", group_id)
    n = _shards(shards)
    out = c_size_t()
    err = c_void_p()
    status = lib.harel_shard_of(g, n, byref(out), byref(err))
    if status < 0:
        _raise(lib, status, err)
    return out.value
