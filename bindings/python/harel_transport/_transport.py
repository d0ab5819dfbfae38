"""`Transport`, the native API's one class: the handle (`_handle`) with the method
groups of `_methods`, one module each, as better-sqlite3 builds its Database from
lib/methods/."""

from __future__ import annotations

from typing import Any

from ._methods.admin import AdminMethods
from ._methods.claim import ClaimMethods
from ._methods.finish import FinishMethods
from ._methods.looks import LookMethods
from ._methods.publish import PublishMethods
from ._methods.transaction import TransactionMethods
from ._values import PathType

__all__ = ["Transport"]


class Transport(PublishMethods, ClaimMethods, FinishMethods, LookMethods, AdminMethods, TransactionMethods):
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
    - `key_retention` (seconds, > 0, at most ten years): how long an idempotency key of
      `publish_with` is remembered (default 86400, a day).
    - `clock` (callable returning epoch seconds): where "now" comes from (default: the
      system clock, read by the library).

    One transport may be used from several threads at once; its calls run one at a time
    in the library, except that publishes arriving while another commits share its
    commit. `close()` waits for the calls in progress, and rolls back its transactions
    still open (`transaction()`). Use it as a context manager to close it."""

    @classmethod
    def open(cls, path: PathType, **options: Any) -> "Transport":
        """The same as ``Transport(path, **options)``."""
        return cls(path, **options)

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<harel_transport.Transport {self._path!r}{' closed' if self._closed else ''}>"
