"""A lease across the boundary: into C as the `harel_lease` the calls that finish one
read (`_lease_arg`, `_lease_args` for a batch), out of C as a `Lease` (`_copy_lease`;
the caller frees what C handed out at once), and a batch ack's outcomes. Both ways the
group id goes with its length: one stored by another writer may hold NUL bytes."""

from __future__ import annotations

from ctypes import POINTER, Structure, addressof, c_char_p, c_double, c_int64, c_size_t, c_void_p, string_at
from typing import Any, List, Optional, Tuple

from . import _native
from ._args import _describe, _text
from ._errors import ArgumentError, ConnectError, HarelError, LeaseLostError, error_for_status
from ._inspect import copy_headers
from ._values import MAX_CLAIM, Lease


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
        # The headers, at the end since 0.4.0: the finishing calls do not read them (NULL, 0).
        ("headers", POINTER(_native.HarelHeader)),
        ("n_headers", c_size_t),
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


def _outcomes(leases: List[Lease], outcomes: Any) -> List[Optional[HarelError]]:
    """A batch ack's outcomes: None (acked), a LeaseLostError naming the lease, or on a
    sharded queue the error of the lease's shard's transaction (a BusyError, ...: not
    acked, still held)."""
    return [
        None if status == _native.OK else _not_acked(i, lease, status)
        for i, (lease, status) in enumerate(zip(leases, outcomes))
    ]


def _not_acked(i: int, lease: Lease, status: int) -> HarelError:
    what = f"leases[{i}]: message {lease.seq} of group {lease.group_id!r}"
    if status == ConnectError.STATUS:
        return error_for_status(
            status,
            f"{what} may not have been acked: its shard was unreachable or its answer was lost (ack it again: "
            "a LeaseLostError then says it was)",
        )
    if status != LeaseLostError.STATUS:
        return error_for_status(status, f"{what} was not acked: its shard's transaction failed (it is still held)")
    return LeaseLostError(
        f"{what} is no longer leased to {lease.worker_id!r} (acked or nacked already, or it lapsed and "
        "another worker claimed it); nothing of it changed"
    )


def _leases_out(m: int) -> Any:
    """The array a batch claim writes its leases into: `m` elements, or MAX_CLAIM for a
    larger `m` (which the library refuses before writing any), at least one (the library
    refuses 0; the array must have an address)."""
    return (POINTER(_native.HarelLease) * max(1, min(m, MAX_CLAIM)))()


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
        headers=copy_headers(c.headers, c.n_headers),
    )
