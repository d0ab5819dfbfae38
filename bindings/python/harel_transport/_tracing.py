"""OpenTelemetry: spans for publishes and leases, and the W3C trace context carried in a
message's headers (`traceparent`, `tracestate`), as every face of the library makes them.

Off unless a transport is opened with ``tracer_provider=`` (a TracerProvider, or True for
the global one): then `Transport._tracing` is a `Tracing`, and None otherwise, so a
transport without it pays one branch per call and writes no header. ``opentelemetry-api``
(the extra ``harel-transport[opentelemetry]``) is imported only by a transport that traces.

- Every publish makes a PRODUCER span ``publish <queue>`` (the queue: the transport's table
  prefix), a child of the current context, and writes its context into the message's
  headers: ``traceparent`` (formatted by the library, `_trace_context`) and ``tracestate``
  when the span has one, each replacing a header of that name the caller gave. A batch
  makes one span (``messaging.batch.message_count``), whose context every message carries.
  A transaction's publish starts its span; the commit ends it (error status if it failed;
  a rollback ends it with one too).
- Every lease handed out gets a CONSUMER span ``process <queue>``: a new root span linked
  to the producer's context read from its headers (parsed by the library; an invalid or
  absent one is no link, never an error), or with ``trace_as_parent=True`` a child of it.
  The span lives with the `Lease` (and the copies `extend` returns): ack ends it OK; nack
  adds an event ``nack`` (``messaging.harel.nack_delay``) and ends it with error status
  "nacked"; dead_letter adds ``dead_letter`` (``messaging.harel.dead_letter_reason``) and
  ends it with error status, the reason; extend adds ``extend``; a finishing call that finds
  the lease lost ends it with error status "lease lost".
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, TypeVar

from ._args import EncodedHeaders, _describe
from ._errors import ArgumentError, HarelError, LeaseLostError
from ._trace_context import _parse, _tracestate_valid, format_traceparent
from ._values import AckAndClaimResult, Lease
from ._version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from opentelemetry.trace import Span

__all__ = ["Tracing", "LeaseSpan", "lease_span", "open_tracing"]

T = TypeVar("T")

SYSTEM = "messaging.system"
OPERATION_TYPE = "messaging.operation.type"
OPERATION_NAME = "messaging.operation.name"
DESTINATION = "messaging.destination.name"
MESSAGE_ID = "messaging.message.id"
CONVERSATION_ID = "messaging.message.conversation_id"
BATCH_COUNT = "messaging.batch.message_count"
NACK_DELAY = "messaging.harel.nack_delay"
DEAD_LETTER_REASON = "messaging.harel.dead_letter_reason"

TRACEPARENT = b"traceparent"
TRACESTATE = b"tracestate"

#: The attribute name of the span a lease carries (not a field of `Lease`: never compared,
#: copied by `dataclasses.replace`, nor pickled).
_SPAN_ATTR = "_harel_span"

_MISSING_API = (
    "tracer_provider needs the OpenTelemetry API: pip install 'harel-transport[opentelemetry]' "
    "(or opentelemetry-api)"
)


def open_tracing(tracer_provider: Any, trace_as_parent: Any, queue: str) -> Optional["Tracing"]:
    """The options of an open: None (off) when `tracer_provider` is None."""
    if not isinstance(trace_as_parent, bool):
        raise ArgumentError(f"trace_as_parent must be a bool, got {_describe(trace_as_parent)}")
    if tracer_provider is None or tracer_provider is False:
        if trace_as_parent:
            raise ArgumentError("trace_as_parent=True needs tracer_provider (a TracerProvider, or True: the global one)")
        return None
    try:
        from opentelemetry import trace
    except ImportError as e:
        raise ArgumentError(f"{_MISSING_API} ({e})") from None
    if tracer_provider is True:
        tracer_provider = trace.get_tracer_provider()
    if not callable(getattr(tracer_provider, "get_tracer", None)):
        raise ArgumentError(
            f"tracer_provider must be an OpenTelemetry TracerProvider (or True: the global one, or None: off), "
            f"got {_describe(tracer_provider)}"
        )
    return Tracing(tracer_provider, queue, trace_as_parent)


class LeaseSpan:
    """The CONSUMER span of one lease, shared by the lease and the copies `extend` returns;
    ended once (later ends do nothing), from any thread."""

    __slots__ = ("span", "_api", "_lock", "_ended")

    def __init__(self, span: "Span", api: Any) -> None:
        self.span = span
        self._api = api
        self._lock = threading.Lock()
        self._ended = False

    @property
    def ended(self) -> bool:
        return self._ended

    def event(self, name: str, attributes: Optional[Dict[str, Any]] = None) -> None:
        with self._lock:
            if not self._ended:
                self.span.add_event(name, attributes or {})

    def end(self, error: Optional[str] = None, event: Optional[str] = None,
            attributes: Optional[Dict[str, Any]] = None) -> None:
        """Ends the span: OK, or with error status `error`; `event` (with `attributes`) added
        first."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            trace = self._api
            if event is not None:
                self.span.add_event(event, attributes or {})
            if error is None:
                self.span.set_status(trace.Status(trace.StatusCode.OK))
            else:
                self.span.set_status(trace.Status(trace.StatusCode.ERROR, error))
            self.span.end()

    def finished(self, exc: Optional[BaseException]) -> None:
        """After an ack (or the ack of ack_and_claim): OK when it went through (`exc` None),
        "lease lost" on `LeaseLostError`; any other error leaves the span open (the lease may
        still be this worker's: the call may be tried again)."""
        if exc is None:
            self.end()
        elif isinstance(exc, LeaseLostError):
            self.end("lease lost")

    def __reduce__(self) -> Any:  # a pickled or deep-copied lease carries no span
        return (_no_span, ())

    def __repr__(self) -> str:
        return f"<harel_transport LeaseSpan{' ended' if self._ended else ''}>"


def _no_span() -> None:
    return None


def lease_span(lease: Any) -> Optional[LeaseSpan]:
    """The span a lease handed out by a tracing transport carries; None for any other."""
    return getattr(lease, _SPAN_ATTR, None)


def keep_span(old: Any, new: T) -> T:
    """`new` (a copy of `old`: `extend`'s, or the harel drop-in's Lease of a native lease and
    back) carrying `old`'s span."""
    span = lease_span(old)
    if span is not None:
        object.__setattr__(new, _SPAN_ATTR, span)
    return new


def finish_lost(lease: Any, exc: BaseException) -> None:
    """A nack, dead_letter or extend that raised: `LeaseLostError` ends the lease's span
    ("lease lost"); any other error leaves it open."""
    if isinstance(exc, LeaseLostError):
        span = lease_span(lease)
        if span is not None:
            span.end("lease lost")


def finish_outcomes(leases: Sequence[Any], outcomes: Sequence[Optional[HarelError]]) -> None:
    """A batch ack's outcomes on the leases' spans: acked (None) ends OK, a lost lease
    "lease lost"; a lease of a shard whose transaction failed stays open."""
    for lease, outcome in zip(leases, outcomes):
        span = lease_span(lease)
        if span is not None:
            span.finished(outcome)


class Producer:
    """One publish's (or batch's) PRODUCER span, and the headers it writes."""

    __slots__ = ("span", "_tracing", "_ended")

    def __init__(self, tracing: "Tracing", span: "Span") -> None:
        self.span = span
        self._tracing = tracing
        self._ended = False

    def inject(self, headers: Optional[EncodedHeaders]) -> Optional[EncodedHeaders]:
        """`headers` with this span's context: ``traceparent`` (and ``tracestate`` when the span
        has a valid one) replacing the caller's header of that name, at the end. Unchanged
        when the span has no valid context (a no-op tracer's)."""
        sc = self.span.get_span_context()
        if not sc.is_valid:
            return headers
        # Version 00's flags: only "sampled" (bit 0); the spec asks that the others be 0.
        flags = int(sc.trace_flags) & 0x01
        value = format_traceparent(sc.trace_id.to_bytes(16, "big"), sc.span_id.to_bytes(8, "big"), flags)
        ours = [(TRACEPARENT, value.encode("ascii"))]
        state = sc.trace_state.to_header() if sc.trace_state else ""
        if state:
            encoded = state.encode("utf-8")
            if _tracestate_valid(encoded):
                ours.append((TRACESTATE, encoded))
        replaced = {name for name, _ in ours}
        return [pair for pair in (headers or []) if pair[0] not in replaced] + ours

    def ok(self, seq: Optional[int] = None) -> None:
        """The publish went through; `seq` the message's when known."""
        if self._ended:
            return
        self._ended = True
        if seq is not None:
            self.span.set_attribute(MESSAGE_ID, str(seq))
        self.span.end()

    def failed(self, exc: Optional[BaseException] = None, why: Optional[str] = None) -> None:
        if self._ended:
            return
        self._ended = True
        trace = self._tracing.api
        if exc is not None:
            self.span.record_exception(exc)
        self.span.set_status(trace.Status(trace.StatusCode.ERROR, why if why is not None else str(exc)))
        self.span.end()


class Tracing:
    """A transport's tracer, its queue's name and its choice of parent for the consumer
    spans."""

    def __init__(self, provider: Any, queue: str, as_parent: bool) -> None:
        from opentelemetry import context, trace

        self.api = trace
        self._empty = context.Context
        self.tracer = provider.get_tracer("harel_transport", __version__)
        self.queue = queue
        self.as_parent = as_parent
        self._publish = f"publish {queue}"
        self._process = f"process {queue}"

    # -- producing ---------------------------------------------------------------------

    def producer(self, groups: Sequence[str], batch: Optional[int] = None) -> Producer:
        """A PRODUCER span, child of the current context, for a publish into `groups` (one
        group: its conversation id); `batch`: a batch's message count."""
        attributes: Dict[str, Any] = {
            SYSTEM: "harel",
            OPERATION_TYPE: "send",
            OPERATION_NAME: "publish",
            DESTINATION: self.queue,
        }
        if groups and all(g == groups[0] for g in groups):
            attributes[CONVERSATION_ID] = groups[0]
        if batch is not None:
            attributes[BATCH_COUNT] = batch
        span = self.tracer.start_span(self._publish, kind=self.api.SpanKind.PRODUCER, attributes=attributes)
        return Producer(self, span)

    # -- consuming ---------------------------------------------------------------------

    def consumed(self, result: Any, batch: bool = False) -> Any:
        """`result` (a claim's: a Lease or None, a list of them, an AckAndClaimResult) with
        a CONSUMER span on each lease; `batch`: a batch claim, whose spans carry its size."""
        if result is None:
            return None
        if isinstance(result, Lease):
            self._consume(result, None)
        else:
            leases: List[Lease] = result.leases if isinstance(result, AckAndClaimResult) else result
            for lease in leases:
                self._consume(lease, len(leases) if batch else None)
        return result

    def _consume(self, lease: Lease, batch: Optional[int]) -> None:
        trace = self.api
        producer = self._extract(lease.headers)
        attributes: Dict[str, Any] = {
            SYSTEM: "harel",
            OPERATION_TYPE: "process",
            OPERATION_NAME: "process",
            DESTINATION: self.queue,
            MESSAGE_ID: str(lease.seq),
            CONVERSATION_ID: lease.group_id,
        }
        if batch is not None:
            attributes[BATCH_COUNT] = batch
        parent = self._empty()  # a root span, whatever the current context
        links = None
        if producer is not None:
            if self.as_parent:
                parent = trace.set_span_in_context(trace.NonRecordingSpan(producer), parent)
            else:
                links = [trace.Link(producer)]
        span = self.tracer.start_span(
            self._process, context=parent, kind=trace.SpanKind.CONSUMER, attributes=attributes, links=links
        )
        object.__setattr__(lease, _SPAN_ATTR, LeaseSpan(span, trace))

    def _extract(self, headers: Sequence[Any]) -> Any:
        """The producer's SpanContext from a lease's first ``traceparent`` header (and first
        ``tracestate``, when valid), read by the library; None when absent or invalid."""
        traceparent = tracestate = None
        for name, value in headers:
            if name == "traceparent" and traceparent is None:
                traceparent = value
            elif name == "tracestate" and tracestate is None:
                tracestate = value
        if traceparent is None:
            return None
        parsed = _parse(traceparent.encode("utf-8", "surrogateescape"))
        if parsed is None:
            return None
        trace = self.api
        state = trace.TraceState()
        if tracestate is not None and _tracestate_valid(tracestate.encode("utf-8", "surrogateescape")):
            state = trace.TraceState.from_header([tracestate])
        return trace.SpanContext(
            trace_id=int.from_bytes(parsed.trace_id, "big"),
            span_id=int.from_bytes(parsed.span_id, "big"),
            is_remote=True,
            trace_flags=trace.TraceFlags(parsed.flags),
            trace_state=state,
        )
