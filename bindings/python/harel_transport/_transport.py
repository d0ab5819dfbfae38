"""`Transport`, the native API's one class: the handle (`_handle`) with the method
groups of `_methods`, one module each, as better-sqlite3 builds its Database from
lib/methods/."""

from __future__ import annotations

from typing import Any, Sequence, cast

from ._handle import _ShardList
from ._methods.admin import AdminMethods
from ._methods.claim import ClaimMethods
from ._methods.finish import FinishMethods
from ._methods.looks import LookMethods
from ._methods.metrics import MetricsMethods
from ._methods.publish import PublishMethods
from ._methods.shards import ShardMethods
from ._methods.transactions import TransactionMethods
from ._values import PathType

__all__ = ["Transport"]


class Transport(
    PublishMethods, ClaimMethods, FinishMethods, LookMethods, AdminMethods, TransactionMethods, ShardMethods,
    MetricsMethods,
):
    """An open queue: a local libSQL file (WAL), ``":memory:"``, a libSQL server
    (``libsql://``, ``http://``, ``https://``), or an embedded replica (a path and
    `sync_url`).

    ``Transport(path, **options)`` opens it (so does ``Transport.open``); every option is
    keyword-only and optional (None: the library's default):

    - `prefix` (str): table names start with it (default ``"harel"``).
    - `create_schema` (bool): create and upgrade the tables at open (default on).
    - `sync_url`, `auth_token` (str), `sync_interval` (seconds): a libSQL server.
    - `sync_urls` (a sequence of str): `open_shards` only: its paths are embedded
      replicas, ``sync_urls[i]`` the primary of shard i (as many URLs as paths).
    - `busy_timeout` (seconds): how long a write waits for the lock (default 5).
    - `synchronous_full` (bool): a sync (fdatasync) at every commit but a claim's (default;
      a lease dies with its worker anyway) or at checkpoints only (NORMAL).
    - `max_attempts` (int, 0..2**32-1): how many times a message may be claimed; the claim
      that would hand it out once more moves it to the dead letters instead (default 0:
      no limit).
    - `key_retention` (seconds, > 0, at most ten years): how long an idempotency key of
      `publish_with` is remembered (default 86400, a day).
    - `archive_retention` (seconds, > 0, at most ten years): keep each message this
      transport acks in the archive (`archive`) that long after its ack: its seq, group,
      event, headers, claims, the acking worker, and when it was published, claimed and
      acked (default: off, an ack deletes and nothing is archived).
    - `retry` (a `Retry`): the queue's retry policy, applied by this transport's claims:
      a message whose claim ends in a nack with delay 0, or in a lease that lapses, waits
      that claim's backoff before its next delivery; a message published with a policy
      of its own (``publish_with(..., retry=...)``) follows that one (default: none, a
      nack of 0 frees the message at once). README, "Retries".
    - `clock` (callable returning epoch seconds): where "now" comes from (default: the
      system clock, read by the library).
    - `tracer_provider` (an OpenTelemetry TracerProvider, or True: the global one; None,
      the default: off): every publish makes a PRODUCER span and writes its context into
      the message's ``traceparent``/``tracestate`` headers; every lease handed out gets a
      CONSUMER span, linked to the producer's, that its ack, nack or dead_letter ends
      (README, "Tracing"). Needs ``opentelemetry-api`` (the extra
      ``harel-transport[opentelemetry]``); without it the package works, untraced.
    - `trace_as_parent` (bool, default False): a lease's span is a child of the
      producer's context instead of a new root linked to it.

    ``Transport.open_shards(databases, **options)`` opens one queue sharded over several
    databases (see `open_shards`).

    One transport may be used from several threads at once; its calls run one at a time
    in the library, except that publishes arriving while another commits share its
    commit. `close()` waits for the calls in progress, and rolls back its transactions
    still open (`transaction()`). Use it as a context manager to close it."""

    @classmethod
    def open(cls, path: PathType, **options: Any) -> "Transport":
        """The same as ``Transport(path, **options)``."""
        return cls(path, **options)

    @classmethod
    def open_shards(cls, databases: Sequence[PathType], **options: Any) -> "Transport":
        """Opens one queue sharded over `databases` (1..MAX_SHARDS (256) files or server
        URLs, each as ``Transport(path)`` takes it, or paths of embedded replicas with
        `sync_urls` naming each one's primary), in their shard order, with the options of
        ``Transport(path, **options)`` for each. The transport
        is an ordinary one: a group lives on the shard `shard_of` names (publishes, acks,
        nacks go there), claims serve the shards in turn (the serving order holds within a
        shard), waits cover all of them, stats and listings add them up (`GroupInfo.shard`,
        `DeadLetter.shard`), and `publish_many` is one transaction per shard.

        The first open of empty databases makes them a set (each records the queue, its
        index and the number of shards); every later open must pass the same list in the
        same order. `ArgumentError` (the library's message, naming "databases[i] (...)"): an
        empty list or one past 256, an element empty or repeated, a list that does not match
        the databases' records (one missing, one extra, the order changed, another queue's
        database, a non-empty database of no set). On a sharded queue, `transaction()` is
        refused at its first call, and `redrive`/`purge_dead` by `seqs` (a seq is one
        shard's); by `all` or `group_id` they work. Opening one member of a set alone with
        ``Transport(path)`` is refused."""
        return cls(cast(PathType, _ShardList(databases)), **options)

    def __enter__(self) -> "Transport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        where = repr(self._path) if self._shards is None else f"shards={list(self._shards)!r}"
        return f"<harel_transport.Transport {where}{' closed' if self._closed else ''}>"
