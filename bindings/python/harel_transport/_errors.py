"""The exceptions: one class per status of the C ABI, all under `HarelError`.

Each carries the failed call's `status` (the `harel_status`, a negative int), its C name
(`code`, e.g. ``"HAREL_ERR_BUSY"``) and the library's message, which names the offending
parameter or the SQL error. Errors the package finds itself before calling C (a NUL in a
string, a str where an int belongs) have the same form, as `ArgumentError`.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "HarelError",
    "ArgumentError",
    "DatabaseError",
    "BusyError",
    "LeaseLostError",
    "ConnectError",
    "WaitInterruptedError",
    "PanicError",
    "UnknownStatusError",
    "TransportClosedError",
    "LibraryLoadError",
    "error_for_status",
    "STATUS_NAMES",
]

#: The statuses of the C ABI and their names (docs/abi.md, "Statuses").
STATUS_NAMES: Dict[int, str] = {
    0: "HAREL_OK",
    1: "HAREL_EMPTY",
    -1: "HAREL_ERR_ARGUMENT",
    -2: "HAREL_ERR_DATABASE",
    -3: "HAREL_ERR_BUSY",
    -4: "HAREL_ERR_LEASE_LOST",
    -5: "HAREL_ERR_CONNECT",
    -6: "HAREL_ERR_INTERRUPTED",
    -99: "HAREL_ERR_PANIC",
}


class HarelError(Exception):
    """A failed call: `status` (negative), `code` (its C name) and `message`."""

    #: The status this class stands for; `None` for `UnknownStatusError` (the status is
    #: the instance's) and `LibraryLoadError` (no call was made).
    STATUS: Optional[int] = None

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        if status is None:
            status = self.STATUS
        #: The failed call's harel_status (negative); None only for LibraryLoadError.
        self.status: Optional[int] = status
        #: The status's C name ("HAREL_ERR_BUSY"); "HAREL_UNKNOWN(n)" for a status not known here.
        self.code: str = self._code(status)
        #: The library's message (or the package's, for what it checks itself).
        self.message: str = message
        super().__init__(message)

    @staticmethod
    def _code(status: Optional[int]) -> str:
        return STATUS_NAMES.get(status, f"HAREL_UNKNOWN({status})") if status is not None else "HAREL_ERROR"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status})"

    def __reduce__(self):  # picklable (multiprocessing hands exceptions between processes)
        return (_rebuild, (type(self), self.message, self.status))


def _rebuild(cls: Type[HarelError], message: str, status: Optional[int]) -> HarelError:
    return cls(message, status)


class ArgumentError(HarelError, ValueError):
    """HAREL_ERR_ARGUMENT: a bad argument (NULL, a NUL byte, not UTF-8, out of range, the
    wrong type); nothing changed."""

    STATUS = -1


class TransportClosedError(ArgumentError):
    """The transport was closed before the call (status HAREL_ERR_ARGUMENT: nothing was done)."""


class DatabaseError(HarelError):
    """HAREL_ERR_DATABASE: I/O, not a database, a table missing, any other SQL error, and
    another SQLite library of this process on the same file (see the README, "The hazard")."""

    STATUS = -2


class BusyError(HarelError):
    """HAREL_ERR_BUSY: the write lock was not had within the busy timeout; nothing written."""

    STATUS = -3


class LeaseLostError(HarelError):
    """HAREL_ERR_LEASE_LOST: ack or nack of a message that is gone or held by another
    worker (acked already, or its lease lapsed and someone else claimed it); nothing changed."""

    STATUS = -4


class ConnectError(HarelError):
    """HAREL_ERR_CONNECT: a libSQL server could not be reached, refused the token, or
    stopped answering."""

    STATUS = -5


class WaitInterruptedError(HarelError):
    """HAREL_ERR_INTERRUPTED: a claim's wait was ended early, having claimed nothing: its
    `Cancel` fired, `Transport.interrupt()` was called, or the transport was closed (the
    message says which). Not Python's builtin `InterruptedError`, which is an OSError
    for EINTR."""

    STATUS = -6


class PanicError(HarelError):
    """HAREL_ERR_PANIC: a bug in the library, caught at its boundary; close the transport."""

    STATUS = -99


class UnknownStatusError(HarelError):
    """A negative status this package does not know (a newer library); `status` holds it."""


class LibraryLoadError(HarelError, OSError):
    """libharel_transport could not be loaded (code "HAREL_ERR_LOAD", status None); the
    message lists each file tried and why it failed."""

    @staticmethod
    def _code(status: Optional[int]) -> str:
        return "HAREL_ERR_LOAD"


_BY_STATUS: Dict[int, Type[HarelError]] = {
    cls.STATUS: cls  # type: ignore[misc]
    for cls in (ArgumentError, DatabaseError, BusyError, LeaseLostError, ConnectError, WaitInterruptedError, PanicError)
}


def error_for_status(status: int, message: str) -> HarelError:
    """The exception for a negative `status`, with the library's `message`."""
    cls = _BY_STATUS.get(status, UnknownStatusError)
    return cls(message, status)
