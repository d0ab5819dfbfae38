"""The C library: finding it, loading it with ctypes, and its functions' prototypes.

The only module that knows the C types. Calls through `ctypes.CDLL` release the GIL for
the duration of the C call, so calls made from several threads (or from the executor of
`AsyncTransport`) run in the library at once, as the ABI allows (docs/abi.md, "Threads").

Where the library is looked for, in order (README, "Finding the library"):

1. the copy inside the package, ``harel_transport/_lib/libharel_transport.so.1`` (the
   wheel carries it);
2. ``HAREL_TRANSPORT_LIB``, a path to a ``libharel_transport.so``;
3. the system's ``libharel_transport.so.1`` (ABI 1), found by the dynamic loader.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any, List, Optional, Tuple

from ._errors import LibraryLoadError
from ._version import __version__

#: The ABI this package is written for: the soname's number (docs/abi.md, "Versioning").
ABI_VERSION = 1
SONAME = f"libharel_transport.so.{ABI_VERSION}"

#: harel_status values the package branches on.
OK = 0
EMPTY = 1
ERR_ARGUMENT = -1

#: HAREL_MAX_CLAIM: the most leases one claim_many or ack_and_claim_many hands out.
MAX_CLAIM = 1000

#: MAX_SHARDS: the most databases one queue is sharded over.
MAX_SHARDS = 256

#: MAX_LIMIT: the most of a limit's numbers (a concurrency, a rate, a burst).
MAX_LIMIT = 1_000_000

#: enum harel_value_type: the type of a harel_value.
VALUE_NULL = 0
VALUE_INTEGER = 1
VALUE_REAL = 2
VALUE_TEXT = 3
VALUE_BLOB = 4


#: HAREL_TRACEPARENT_LEN: a version-00 traceparent's length, in characters.
TRACEPARENT_LEN = 55


class HarelHeader(Structure):
    """struct harel_header: a name and a value, NUL-terminated (neither may hold a NUL)."""

    _fields_ = [
        ("name", c_char_p),
        ("value", c_char_p),
    ]


class HarelHeaders(Structure):
    """struct harel_headers: `n` pairs at `items` (NULL when `n` is 0)."""

    _fields_ = [
        ("items", POINTER(HarelHeader)),
        ("n", c_size_t),
    ]


class HarelLease(Structure):
    """struct harel_lease. The group id and event are read with their lengths (they may
    hold NUL bytes), so they are raw pointers here."""

    _fields_ = [
        ("seq", c_int64),
        ("group_id", c_void_p),
        ("group_id_len", c_size_t),
        ("event", c_void_p),
        ("event_len", c_size_t),
        ("worker_id", c_char_p),
        ("lock_expiry", c_double),
        ("attempts", c_int64),
        # Added at the end after 0.4.0: the headers it was published with.
        ("headers", POINTER(HarelHeader)),
        ("n_headers", c_size_t),
    ]


# The looks (harel_transport_stats and the pages). Strings with a length beside them may
# hold NUL bytes: raw pointers, read with their lengths; the others are NUL-terminated
# (c_char_p: ctypes copies them into bytes, None for NULL). Numbers the ABI may not have
# are -1 there (every such number is >= 0 otherwise).


class HarelPriorityStats(Structure):
    """struct harel_priority_stats."""

    _fields_ = [
        ("priority", c_int32),
        ("groups", c_uint64),
        ("ready", c_uint64),
        ("leased", c_uint64),
        ("parked", c_uint64),
    ]


class HarelStats(Structure):
    """struct harel_stats."""

    _fields_ = [
        ("now", c_double),
        ("messages", c_uint64),
        ("groups", c_uint64),
        ("ready", c_uint64),
        ("leased", c_uint64),
        ("parked", c_uint64),
        ("dead", c_uint64),
        ("oldest_ready_age", c_double),
        ("next_release_at", c_double),
        ("by_priority", POINTER(HarelPriorityStats)),
        ("n_priorities", c_size_t),
        ("oldest_ready_seq", c_int64),
        # Added at the end after 0.4.0 (delayed delivery).
        ("delayed", c_uint64),
        ("next_due_at", c_double),
        # Added at the end after 0.4.0 (pause and resume): groups a pause names.
        ("paused", c_uint64),
        # n_priorities counts: paused_by_priority[i] is how many of by_priority[i]'s groups
        # are paused (an array of its own: harel_priority_stats keeps its size).
        ("paused_by_priority", POINTER(c_uint64)),
        # Added at the end after 0.4.0 (expiry): of `dead`, the messages that expired undelivered.
        ("expired", c_uint64),
        # Added at the end after 0.4.0 (limits, retries): groups a limit holds, and groups whose
        # lapsed lease waits its retry policy's backoff; neither is in `ready` any more.
        ("held", c_uint64),
        ("retrying", c_uint64),
    ]


LATENCY_BUCKETS = 16  # HAREL_LATENCY_BUCKETS


class HarelHistogram(Structure):
    """struct harel_histogram."""

    _fields_ = [("buckets", c_uint64 * LATENCY_BUCKETS), ("count", c_uint64), ("sum", c_double)]


class HarelMetrics(Structure):
    """struct harel_metrics."""

    _fields_ = [
        (name, c_uint64)
        for name in (
            "published", "claimed", "acked", "nacked", "parked", "dead_lettered", "dead_lettered_by_claim",
            "lost_leases", "busy_retries",
        )
    ] + [("bounds", c_double * LATENCY_BUCKETS)] + [
        (name, HarelHistogram)
        for name in ("publish", "claim", "claim_wait", "ack", "ack_and_claim", "nack", "extend", "dead_letter")
    ] + [
        # Added at the end after 0.4.0 (limits): groups a claim passed over and held because
        # their routing key had no room, each time one is held.
        ("limit_holds", c_uint64),
    ]


class HarelGroupInfo(Structure):
    """struct harel_group_info; `state` is an enum harel_group_state (an int)."""

    _fields_ = [
        ("group_id", c_void_p),
        ("group_id_len", c_size_t),
        ("state", c_int32),
        ("depth", c_uint64),
        ("head_seq", c_int64),
        ("head_age", c_double),
        ("holder", c_char_p),
        ("lock_expiry", c_double),
        ("priority", c_int32),
        ("routing_key", c_char_p),
        ("head_attempts", c_int64),
    ]


class HarelGroupPage(Structure):
    """struct harel_group_page."""

    _fields_ = [
        ("groups", POINTER(HarelGroupInfo)),
        ("n_groups", c_size_t),
        ("next_cursor", c_char_p),
        # Added at the end with the sharded queues: n_groups shard indexes (all 0 unless sharded).
        ("shards", POINTER(c_size_t)),
    ]


class HarelMessageInfo(Structure):
    """struct harel_message_info."""

    _fields_ = [
        ("seq", c_int64),
        ("event", c_void_p),
        ("event_len", c_size_t),
        ("attempts", c_int64),
        ("locked_by", c_char_p),
        ("lock_expiry", c_double),
        ("published_at", c_double),
    ]


class HarelMessagePage(Structure):
    """struct harel_message_page."""

    _fields_ = [
        ("messages", POINTER(HarelMessageInfo)),
        ("n_messages", c_size_t),
        ("next_cursor", c_char_p),
        # Added at the end after 0.4.0: n_messages header lists, headers[i] messages[i]'s.
        ("headers", POINTER(HarelHeaders)),
        # Added at the end (retries): n_messages backoffs, retry_delays[i] messages[i]'s
        # last claim drew, seconds; -1: none.
        ("retry_delays", POINTER(c_double)),
    ]


class HarelDeadLetter(Structure):
    """struct harel_dead_letter."""

    _fields_ = [
        ("seq", c_int64),
        ("group_id", c_void_p),
        ("group_id_len", c_size_t),
        ("event", c_void_p),
        ("event_len", c_size_t),
        ("attempts", c_int64),
        ("last_worker", c_char_p),
        ("reason", c_char_p),
        ("dead_at", c_double),
    ]


class HarelDeadPage(Structure):
    """struct harel_dead_page."""

    _fields_ = [
        ("letters", POINTER(HarelDeadLetter)),
        ("n_letters", c_size_t),
        ("next_cursor", c_char_p),
        # Added at the end with the sharded queues: n_letters shard indexes (all 0 unless sharded).
        ("shards", POINTER(c_size_t)),
        # Added at the end after 0.4.0: n_letters header lists, headers[i] letters[i]'s.
        ("headers", POINTER(HarelHeaders)),
    ]


class HarelArchived(Structure):
    """struct harel_archived: one acked message of the archive. Its headers are inline (a
    harel_headers); `shard` is its own (0 unless the queue is sharded)."""

    _fields_ = [
        ("seq", c_int64),
        ("group_id", c_void_p),
        ("group_id_len", c_size_t),
        ("event", c_void_p),
        ("event_len", c_size_t),
        ("headers", HarelHeaders),
        ("attempts", c_int64),
        ("worker_id", c_char_p),
        ("published_at", c_double),
        ("claimed_at", c_double),
        ("acked_at", c_double),
        ("shard", c_size_t),
    ]


class HarelArchivePage(Structure):
    """struct harel_archive_page."""

    _fields_ = [
        ("messages", POINTER(HarelArchived)),
        ("n_messages", c_size_t),
        ("next_cursor", c_char_p),
    ]


class HarelPause(Structure):
    """struct harel_pause: `kind` an enum harel_pause_kind (an int); the name (the group id
    or routing key, "" for the queue) is read with its length, as a group id is."""

    _fields_ = [
        ("kind", c_int32),
        ("name", c_void_p),
        ("name_len", c_size_t),
        ("paused_at", c_double),
    ]


class HarelPauseList(Structure):
    """struct harel_pause_list: `n_pauses` pauses at `pauses`."""

    _fields_ = [
        ("pauses", POINTER(HarelPause)),
        ("n_pauses", c_size_t),
    ]


#: enum harel_pause_kind (`_inspect.PAUSE_KINDS` names them in this order).
PAUSE_QUEUE = 0
PAUSE_GROUP = 1
PAUSE_ROUTING_KEY = 2


class HarelLimitInfo(Structure):
    """struct harel_limit_info: one limit and its use now. The routing key is read with its
    length, as a group id is; the ABI's none: a `concurrency` of 0, a `rate` and `burst` of
    0 (both), `tokens` of -1."""

    _fields_ = [
        ("routing_key", c_void_p),
        ("routing_key_len", c_size_t),
        ("concurrency", c_uint32),
        ("rate", c_double),
        ("burst", c_double),
        ("in_use", c_uint64),
        ("tokens", c_double),
        ("held", c_uint64),
    ]


class HarelLimitList(Structure):
    """struct harel_limit_list: `n_limits` limits at `limits`."""

    _fields_ = [
        ("limits", POINTER(HarelLimitInfo)),
        ("n_limits", c_size_t),
    ]


class HarelMessage(Structure):
    """struct harel_message, one element of publish_many's array."""

    _fields_ = [
        ("group_id", c_char_p),
        ("event_json", c_char_p),
        ("priority", c_int32),
        ("routing_key", c_char_p),
    ]


class HarelDelivery(Structure):
    """struct harel_delivery: a message's delivery options, in the header's order. `size`
    is set to ``sizeof(HarelDelivery)`` (`delivery`), which the library checks against its own."""

    _fields_ = [
        ("size", c_size_t),
        ("key", c_char_p),
        ("delay", c_double),
        ("not_before", c_double),
        ("unique_key", c_char_p),
        ("unique_mode", c_int32),  # enum harel_unique_mode
        ("debounce_delay", c_double),
        ("debounce_max_delay", c_double),
        # Added at the end (expiry): seconds from now, and epoch seconds; 0: never.
        ("ttl", c_double),
        ("expires_at", c_double),
        # Added at the end (retries): a policy of its own; retry_base 0: none (the queue's).
        # retry_factor 0 reads as 2 and retry_cap 0 as an hour (or the base), which the
        # package never sends: `_args._retry` refuses a 0 given.
        ("retry_base", c_double),
        ("retry_factor", c_double),
        ("retry_cap", c_double),
        ("retry_jitter", c_int32),  # enum harel_jitter
    ]


def delivery(**fields: Any) -> HarelDelivery:
    """A harel_delivery with its `size` set and `fields` (the rest zero and NULL). Its
    strings are bytes objects it keeps alive (ctypes holds them in its `_objects`)."""
    d = HarelDelivery(**fields)
    d.size = ctypes.sizeof(HarelDelivery)
    return d


#: enum harel_unique_mode, by the name a publish takes (`unique_mode`).
UNIQUE_MODES = {"keep": 0, "replace": 1, "debounce": 2}

#: enum harel_jitter, by the name a retry policy takes (`Retry.jitter`).
JITTERS = {"full": 0, "equal": 1, "none": 2}

#: HAREL_MIN_RETRY_BASE: a retry policy's shortest first backoff, seconds.
MIN_RETRY_BASE = 0.001
#: HAREL_MAX_RETRY_FACTOR: a retry policy's largest growth factor.
MAX_RETRY_FACTOR = 16.0

#: enum harel_published: what became of a publish (its `outcome`, or a commit's `duplicates`).
PUBLISHED_STORED = 0
PUBLISHED_DUPLICATE = 1
PUBLISHED_REPLACED = 2


class HarelValue(Structure):
    """struct harel_value, a column of a row harel_tx_query hands out. A text is read with
    its `size` (it may hold a NUL), so text and blob are raw pointers here; the parameters
    the package passes are `_sql._ValueArg`, the same layout."""

    _fields_ = [
        ("type", c_int32),
        ("integer", c_int64),
        ("real", c_double),
        ("text", c_void_p),
        ("blob", c_void_p),
        ("size", c_size_t),
    ]


class HarelRows(Structure):
    """struct harel_rows: n_rows * n_columns values, row by row."""

    _fields_ = [
        ("n_rows", c_size_t),
        ("n_columns", c_size_t),
        ("values", POINTER(HarelValue)),
    ]


#: double (*clock)(void *ctx)
CLOCK = CFUNCTYPE(c_double, c_void_p)

_status = c_int32  # enum harel_status: an int in C
_ERR = POINTER(c_void_p)  # harel_error **err
_LEASE_P = POINTER(HarelLease)
_STATS_P = POINTER(HarelStats)
_METRICS_P = POINTER(HarelMetrics)
_GROUP_PAGE_P = POINTER(HarelGroupPage)
_MESSAGE_PAGE_P = POINTER(HarelMessagePage)
_DEAD_PAGE_P = POINTER(HarelDeadPage)
_ARCHIVE_PAGE_P = POINTER(HarelArchivePage)
_PAUSE_LIST_P = POINTER(HarelPauseList)
_LIMIT_LIST_P = POINTER(HarelLimitList)
_LEASES_OUT = POINTER(_LEASE_P)  # harel_lease **leases_out: the caller's array
_STATUSES = POINTER(c_int32)  # enum harel_status *outcomes
_SEQS = POINTER(c_int64)  # const int64_t *seqs
_COUNT = POINTER(c_uint64)  # uint64_t *moved, *purged
_ROWS_P = POINTER(HarelRows)
_HEADERS = POINTER(HarelHeader)  # const harel_header *headers (with size_t n_headers)
_BYTES = POINTER(c_uint8)  # uint8_t *: a trace id (16 bytes), a span id (8)

# name: (restype, argtypes)
_PROTOTYPES = {
    "harel_version": (c_char_p, []),
    "harel_status_name": (c_char_p, [c_int32]),
    "harel_error_status": (_status, [c_void_p]),
    "harel_error_message": (c_char_p, [c_void_p]),
    "harel_error_free": (None, [c_void_p]),
    "harel_string_free": (None, [c_void_p]),
    "harel_options_new": (c_void_p, []),
    "harel_options_free": (None, [c_void_p]),
    "harel_options_set_prefix": (_status, [c_void_p, c_char_p, _ERR]),
    "harel_options_set_create_schema": (_status, [c_void_p, c_bool, _ERR]),
    "harel_options_set_sync_url": (_status, [c_void_p, c_char_p, _ERR]),
    # (options, urls, n_urls, err)
    "harel_options_set_sync_urls": (_status, [c_void_p, POINTER(c_char_p), c_size_t, _ERR]),
    "harel_options_set_auth_token": (_status, [c_void_p, c_char_p, _ERR]),
    "harel_options_set_sync_interval": (_status, [c_void_p, c_double, _ERR]),
    "harel_options_set_busy_timeout": (_status, [c_void_p, c_double, _ERR]),
    "harel_options_set_synchronous_full": (_status, [c_void_p, c_bool, _ERR]),
    "harel_options_set_max_attempts": (_status, [c_void_p, c_uint32, _ERR]),
    "harel_options_set_key_retention": (_status, [c_void_p, c_double, _ERR]),
    "harel_options_set_archive": (_status, [c_void_p, c_double, _ERR]),
    # (options, base (0: none), factor, cap, jitter (a harel_jitter), err)
    "harel_options_set_retry": (_status, [c_void_p, c_double, c_double, c_double, c_int32, _ERR]),
    "harel_options_set_clock": (_status, [c_void_p, CLOCK, c_void_p, _ERR]),
    "harel_transport_open": (_status, [c_char_p, c_void_p, POINTER(c_void_p), _ERR]),
    # A queue sharded over several databases. (databases, n_databases, options, out, err)
    "harel_transport_open_shards": (_status, [POINTER(c_char_p), c_size_t, c_void_p, POINTER(c_void_p), _ERR]),
    # (t, n, err)
    "harel_transport_shard_count": (_status, [c_void_p, POINTER(c_size_t), _ERR]),
    # (group_id, n_shards, shard, err): no transport
    "harel_shard_of": (_status, [c_char_p, c_size_t, POINTER(c_size_t), _ERR]),
    "harel_transport_publish": (_status, [c_void_p, c_char_p, c_char_p, c_int32, c_char_p, _ERR]),
    "harel_transport_publish_many": (_status, [c_void_p, POINTER(HarelMessage), c_size_t, _ERR]),
    # Publishing with headers: an array of harel_header (NULL when none) and its length.
    # (t, group_id, event_json, priority, routing_key, headers, n_headers, err)
    "harel_transport_publish_headers": (
        _status,
        [c_void_p, c_char_p, c_char_p, c_int32, c_char_p, _HEADERS, c_size_t, _ERR],
    ),
    # publish_many with headers (the delivery arrays NULL). (t, messages, n, headers, keys,
    # delays, not_before, seqs, duplicates, err); headers an array of harel_headers, each
    # array NULL or n long
    "harel_transport_publish_many_with_headers": (
        _status,
        [c_void_p, POINTER(HarelMessage), c_size_t, POINTER(HarelHeaders), POINTER(c_char_p), POINTER(c_double),
         POINTER(c_double), POINTER(c_int64), POINTER(c_int), _ERR],
    ),
    # Publishing with a harel_delivery (NULL: none): an idempotency key, a delay or due
    # instant, a unique key and its mode; the outcome a harel_published (an int).
    # (t, group_id, event_json, priority, routing_key, headers, n_headers, delivery, seq, outcome, err)
    "harel_transport_publish_delivery": (
        _status,
        [c_void_p, c_char_p, c_char_p, c_int32, c_char_p, _HEADERS, c_size_t, POINTER(HarelDelivery),
         POINTER(c_int64), POINTER(c_int), _ERR],
    ),
    # (t, messages, n, headers, deliveries, seqs, outcomes, err); headers an array of
    # harel_headers, deliveries an array of pointers (each NULL: none); each array NULL or n long
    "harel_transport_publish_many_delivery": (
        _status,
        [c_void_p, POINTER(HarelMessage), c_size_t, POINTER(HarelHeaders), POINTER(POINTER(HarelDelivery)),
         POINTER(c_int64), POINTER(c_int), _ERR],
    ),
    # W3C Trace Context, no transport. (trace_id[16], span_id[8], flags, out[56], err)
    "harel_traceparent_format": (_status, [_BYTES, _BYTES, c_uint8, c_char_p, _ERR]),
    # (value, trace_id[16], span_id[8], flags, valid, err)
    "harel_traceparent_parse": (_status, [c_char_p, _BYTES, _BYTES, POINTER(c_uint8), POINTER(c_bool), _ERR]),
    # (value, valid, err)
    "harel_tracestate_valid": (_status, [c_char_p, POINTER(c_bool), _ERR]),
    "harel_transport_claim": (
        _status,
        [c_void_p, c_char_p, c_double, c_int32, POINTER(c_char_p), c_size_t, POINTER(_LEASE_P), _ERR],
    ),
    # The lease ack, nack and ack_and_claim read is one the package fills (_LeaseArg, the
    # same layout, its group id a bytes object's buffer): passed as a void pointer.
    "harel_transport_ack": (_status, [c_void_p, c_void_p, _ERR]),
    "harel_transport_ack_and_claim": (
        _status,
        [c_void_p, c_void_p, c_char_p, c_double, c_int32, POINTER(c_char_p), c_size_t, POINTER(_LEASE_P), _ERR],
    ),
    "harel_transport_nack": (_status, [c_void_p, c_void_p, c_double, _ERR]),
    # The worker loop. A cancel is a harel_cancel * (c_void_p); the leases ack_many and
    # ack_and_claim_many read are an array of pointers to _LeaseArg (c_void_p elements);
    # extend writes lock_expiry into its _LeaseArg.
    # (t, worker_id, visibility, min_priority, routing_keys, n, wait, cancel, out, err)
    "harel_transport_claim_wait": (
        _status,
        [c_void_p, c_char_p, c_double, c_int32, POINTER(c_char_p), c_size_t, c_double, c_void_p, POINTER(_LEASE_P), _ERR],
    ),
    # (t, worker_id, visibility, min_priority, routing_keys, n, max, wait, cancel, leases_out, n_out, err)
    "harel_transport_claim_many": (
        _status,
        [c_void_p, c_char_p, c_double, c_int32, POINTER(c_char_p), c_size_t, c_size_t, c_double, c_void_p,
         _LEASES_OUT, POINTER(c_size_t), _ERR],
    ),
    # (t, leases, n_leases, outcomes, err)
    "harel_transport_ack_many": (_status, [c_void_p, POINTER(c_void_p), c_size_t, _STATUSES, _ERR]),
    # (t, leases, n_leases, outcomes, worker_id, visibility, min_priority, routing_keys, n, max, leases_out, n_out, err)
    "harel_transport_ack_and_claim_many": (
        _status,
        [c_void_p, POINTER(c_void_p), c_size_t, _STATUSES, c_char_p, c_double, c_int32, POINTER(c_char_p), c_size_t,
         c_size_t, _LEASES_OUT, POINTER(c_size_t), _ERR],
    ),
    "harel_transport_extend": (_status, [c_void_p, c_void_p, c_double, _ERR]),
    "harel_transport_interrupt": (None, [c_void_p]),
    "harel_cancel_new": (c_void_p, []),
    "harel_cancel_fire": (None, [c_void_p]),
    "harel_cancel_free": (None, [c_void_p]),
    # The readiness descriptor (a harel_watch *: c_void_p), which AsyncTransport's waits poll.
    # (t, min_priority, routing_keys, n_routing_keys, out, err)
    "harel_transport_watch": (_status, [c_void_p, c_int32, POINTER(c_char_p), c_size_t, POINTER(c_void_p), _ERR]),
    # (w, fd, err)
    "harel_watch_fd": (_status, [c_void_p, POINTER(c_int), _ERR]),
    # (t, w, err): HAREL_OK (claim now) or HAREL_EMPTY (the descriptor is clear)
    "harel_watch_rearm": (_status, [c_void_p, c_void_p, _ERR]),
    "harel_watch_free": (None, [c_void_p]),
    "harel_transport_dead_letter": (_status, [c_void_p, c_void_p, c_char_p, _ERR]),
    # (t, all, group_id, seqs, n_seqs, moved / purged, err)
    "harel_transport_redrive": (_status, [c_void_p, c_bool, c_char_p, _SEQS, c_size_t, _COUNT, _ERR]),
    "harel_transport_purge_dead": (_status, [c_void_p, c_bool, c_char_p, _SEQS, c_size_t, _COUNT, _ERR]),
    "harel_transport_purge_group": (_status, [c_void_p, c_char_p, _COUNT, _ERR]),
    "harel_transport_purge": (_status, [c_void_p, _COUNT, _ERR]),
    "harel_transport_release": (_status, [c_void_p, c_char_p, POINTER(c_bool), _ERR]),
    # (t, kind, name, paused / resumed, err): kind a harel_pause_kind, name NULL for the queue
    "harel_transport_pause": (_status, [c_void_p, c_int32, c_char_p, POINTER(c_bool), _ERR]),
    "harel_transport_resume": (_status, [c_void_p, c_int32, c_char_p, POINTER(c_bool), _ERR]),
    "harel_transport_pauses": (_status, [c_void_p, POINTER(_PAUSE_LIST_P), _ERR]),
    "harel_pause_list_free": (None, [_PAUSE_LIST_P]),
    # (t, routing_key, concurrency (0: none), rate, burst (both 0: none), err)
    "harel_transport_set_limit": (_status, [c_void_p, c_char_p, c_uint32, c_double, c_double, _ERR]),
    "harel_transport_remove_limit": (_status, [c_void_p, c_char_p, _ERR]),
    "harel_transport_limits": (_status, [c_void_p, POINTER(_LIMIT_LIST_P), _ERR]),
    "harel_limit_list_free": (None, [_LIMIT_LIST_P]),
    "harel_transport_stats": (_status, [c_void_p, POINTER(_STATS_P), _ERR]),
    "harel_stats_free": (None, [_STATS_P]),
    "harel_transport_metrics": (_status, [c_void_p, POINTER(_METRICS_P), _ERR]),
    "harel_metrics_free": (None, [_METRICS_P]),
    # (t, state, cursor, limit, out, err)
    "harel_transport_groups": (_status, [c_void_p, c_int32, c_char_p, c_size_t, POINTER(_GROUP_PAGE_P), _ERR]),
    "harel_group_page_free": (None, [_GROUP_PAGE_P]),
    # (t, group_id, cursor, limit, out, err)
    "harel_transport_peek": (_status, [c_void_p, c_char_p, c_char_p, c_size_t, POINTER(_MESSAGE_PAGE_P), _ERR]),
    "harel_message_page_free": (None, [_MESSAGE_PAGE_P]),
    "harel_transport_dead_letters": (_status, [c_void_p, c_char_p, c_char_p, c_size_t, POINTER(_DEAD_PAGE_P), _ERR]),
    "harel_dead_page_free": (None, [_DEAD_PAGE_P]),
    # (t, group_id, cursor, limit, out, err): group_id NULL for every group's
    "harel_transport_archive": (_status, [c_void_p, c_char_p, c_char_p, c_size_t, POINTER(_ARCHIVE_PAGE_P), _ERR]),
    "harel_archive_page_free": (None, [_ARCHIVE_PAGE_P]),
    "harel_transport_close": (None, [c_void_p]),
    "harel_lease_free": (None, [_LEASE_P]),
    # Publishing inside a transaction. A tx is a harel_tx * (c_void_p); the parameters of
    # execute and query are an array of _sql._ValueArg (c_void_p), as the leases of the acks.
    # (t, out, err)
    "harel_transport_begin": (_status, [c_void_p, POINTER(c_void_p), _ERR]),
    # (tx, sql, params, n_params, err)
    "harel_tx_execute": (_status, [c_void_p, c_char_p, c_void_p, c_size_t, _ERR]),
    # (tx, sql, params, n_params, out, err)
    "harel_tx_query": (_status, [c_void_p, c_char_p, c_void_p, c_size_t, POINTER(_ROWS_P), _ERR]),
    "harel_rows_free": (None, [_ROWS_P]),
    # (tx, group_id, event_json, priority, routing_key, headers, n_headers, delivery, err)
    "harel_tx_publish_delivery": (
        _status,
        [c_void_p, c_char_p, c_char_p, c_int32, c_char_p, _HEADERS, c_size_t, POINTER(HarelDelivery), _ERR],
    ),
    # (tx, seqs, duplicates, n, n_published, err); each array NULL or n long; a duplicate
    # is a harel_published
    "harel_tx_commit": (_status, [c_void_p, POINTER(c_int64), POINTER(c_int), c_size_t, POINTER(c_size_t), _ERR]),
    "harel_tx_free": (None, [c_void_p]),
    "harel_schema_sql": (_status, [c_char_p, POINTER(c_void_p), _ERR]),
    "harel_schema_upgrade_sql": (_status, [c_char_p, POINTER(c_void_p), _ERR]),
}


def bundled_path() -> str:
    """Where the wheel puts the library: inside the package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", SONAME)


def candidates() -> List[Tuple[str, str]]:
    """(what, path-or-name) to try, in order."""
    found = []
    bundled = bundled_path()
    if os.path.exists(bundled):
        found.append(("the package's copy", bundled))
    env = os.environ.get("HAREL_TRANSPORT_LIB")
    if env:
        found.append(("HAREL_TRANSPORT_LIB", env))
    found.append(("the system's", SONAME))
    return found


class Library:
    """The loaded library: its functions as attributes, and where it came from."""

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.cdll = cdll
        self.path = path
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(cdll, name)  # AttributeError: an older library without it
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)

    def __getattr__(self, name: str) -> Any:  # for type checkers: the functions are set above
        raise AttributeError(name)


_lib: Optional[Library] = None
_load_lock = threading.Lock()


def lib() -> Library:
    """The library, loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _load_lock:
        if _lib is None:
            _lib = _load()
    return _lib


def _load() -> Library:
    failures = []
    for what, where in candidates():
        try:
            cdll = ctypes.CDLL(where)
        except OSError as e:
            failures.append(f"{what} ({where}): {e}")
            continue
        try:
            library = Library(cdll, _path_of(cdll, where))
        except AttributeError as e:
            failures.append(
                f"{what} ({where}): {e} (a libharel_transport older than ABI {ABI_VERSION}, "
                f"or older than this package's {__version__}?)"
            )
            continue
        return library
    raise LibraryLoadError(
        "libharel_transport could not be loaded; tried: "
        + "; ".join(failures)
        + ". The wheel carries the library; a source checkout needs `make lib` and "
        "HAREL_TRANSPORT_LIB=<path to libharel_transport.so>, or an installed library"
    )


def _path_of(cdll: ctypes.CDLL, where: str) -> str:
    """The file the dynamic loader opened for `where` (for `library_path()`)."""
    if os.sep in where:
        return os.path.abspath(where)
    try:  # a soname: ask the loader through dladdr on one of its functions
        class DlInfo(Structure):
            _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p), ("dli_sname", c_char_p), ("dli_saddr", c_void_p)]

        libdl = ctypes.CDLL(None)
        dladdr = libdl.dladdr
        dladdr.argtypes = [c_void_p, POINTER(DlInfo)]
        dladdr.restype = ctypes.c_int
        info = DlInfo()
        addr = ctypes.cast(cdll.harel_version, c_void_p).value
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.fsdecode(info.dli_fname)
    except Exception:  # pragma: no cover - informational only
        pass
    return where
