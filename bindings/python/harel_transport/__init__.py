"""harel-transport: a durable, group-ordered message queue stored in libSQL.

The Python face of libharel_transport (its C ABI, through ctypes):

- `Transport` / `AsyncTransport`: the native API (publish, publish_many, publish_with and
  publish_many_with (idempotency keys, delays, unique keys, expiry, a `Retry` policy of the
  message's own; the queue's is the open option ``retry=``), claim, ack,
  ack_and_claim, nack, dead_letter, redrive, purge_dead, purge_group, purge, release,
  pause and resume (a group, a routing key, the queue), set_limit and remove_limit (a
  routing key's concurrency and rate), stats, groups, peek, dead_letters, archive (the
  acked messages kept with ``archive_retention=``), pauses, limits, close), sync and
  async, and the worker loop (claims that wait, with a `Cancel`; claim_many, ack_many,
  ack_and_claim_many; extend and keep_alive; interrupt), and
  `transaction()`: the application's statements and its publishes in one transaction
  (`Transaction`, `AsyncTransaction`); `open_shards`: one queue sharded over several
  databases (`shard_count`, and `shard_of`, which needs none); message headers on every
  publish (`headers=`, `Message.headers`) and every lease, peeked message, dead letter and
  archived message (`.headers`); OpenTelemetry spans with ``tracer_provider=``, the trace
  context carried in the headers (`format_traceparent`, `parse_traceparent`,
  `tracestate_valid`: the library's W3C Trace Context helpers);
- `harel_transport.harel`: transports for harel 0.9's workers (`SqliteTransport`,
  `AsyncSqliteTransport`, harel's own signatures, `Lease` and `Event`);
- one exception class per status of the ABI, all under `HarelError`.

See the README for the semantics, the harel drop-in and the one hazard (another SQLite
library in this process on the same file).
"""

from ._aio import AsyncTransport
from ._errors import (
    STATUS_NAMES,
    ArgumentError,
    BusyError,
    ConnectError,
    DatabaseError,
    HarelError,
    LeaseLostError,
    LibraryLoadError,
    PanicError,
    TransportClosedError,
    UnknownStatusError,
    WaitInterruptedError,
    error_for_status,
)
from ._inspect import (
    GROUP_STATES,
    MAX_PAGE,
    PAUSE_KINDS,
    Archived,
    DeadLetter,
    GroupInfo,
    LimitInfo,
    MessageInfo,
    Page,
    Pause,
    PauseKind,
    PriorityStats,
    Stats,
)
from ._keepalive import AsyncKeepAlive, KeepAlive
from ._library import library_path, schema_sql, schema_upgrade_sql, shard_of, status_name, version
from ._metrics import Histogram, Latency, Metrics
from ._sql import SqlParam, SqlValue
from ._transaction import AsyncTransaction, Transaction
from ._trace_context import TRACEPARENT_LEN, TraceParent, format_traceparent, parse_traceparent, tracestate_valid
from ._transport import Transport
from ._values import (
    DEFAULT_VISIBILITY,
    MAX_ATTEMPTS_MAX,
    MAX_CLAIM,
    MAX_DELAY,
    MAX_HEADER_NAME_LEN,
    MAX_HEADERS,
    MAX_HEADERS_BYTES,
    MAX_KEY_LEN,
    MAX_LIMIT,
    MAX_PREFIX_LEN,
    MAX_PRIORITY,
    MAX_RETRY_FACTOR,
    MAX_SHARDS,
    MIN_RETRY_BASE,
    AckAndClaimResult,
    Debounce,
    Header,
    Headers,
    Jitter,
    Lease,
    Message,
    Published,
    Retry,
    UniqueMode,
)
from ._version import __version__
from ._waiting import Cancel

__all__ = [
    "__version__",
    "Transport",
    "AsyncTransport",
    "Transaction",
    "AsyncTransaction",
    "SqlParam",
    "SqlValue",
    "Lease",
    "Message",
    "Published",
    "UniqueMode",
    "Debounce",
    "Retry",
    "Jitter",
    "AckAndClaimResult",
    "Header",
    "Headers",
    "Cancel",
    "KeepAlive",
    "AsyncKeepAlive",
    "Stats",
    "Metrics",
    "Latency",
    "Histogram",
    "PriorityStats",
    "GroupInfo",
    "MessageInfo",
    "DeadLetter",
    "Archived",
    "Page",
    "Pause",
    "PauseKind",
    "LimitInfo",
    "GROUP_STATES",
    "PAUSE_KINDS",
    "MAX_PAGE",
    "MAX_CLAIM",
    "MAX_ATTEMPTS_MAX",
    "DEFAULT_VISIBILITY",
    "MAX_PRIORITY",
    "MAX_PREFIX_LEN",
    "MAX_KEY_LEN",
    "MAX_DELAY",
    "MIN_RETRY_BASE",
    "MAX_RETRY_FACTOR",
    "MAX_SHARDS",
    "MAX_LIMIT",
    "MAX_HEADERS",
    "MAX_HEADERS_BYTES",
    "MAX_HEADER_NAME_LEN",
    "TRACEPARENT_LEN",
    "TraceParent",
    "format_traceparent",
    "parse_traceparent",
    "tracestate_valid",
    "version",
    "library_path",
    "schema_sql",
    "schema_upgrade_sql",
    "shard_of",
    "status_name",
    "STATUS_NAMES",
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
]
