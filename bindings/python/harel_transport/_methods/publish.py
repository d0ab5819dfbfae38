"""Publishing: `publish` and `publish_many`; `publish_with` and `publish_many_with`, the same
with delivery options (an idempotency key, a delay or a due instant, a unique key and its
mode, an expiry, a retry policy: a harel_delivery) and each message's outcome
(`Published`). Each takes a message's headers (`headers=`, or `Message.headers`), and on a
transport that traces (`_tracing`) makes a PRODUCER span whose context it writes into them.

A plain publish may be written by another caller's thread: publishes that meet in the
library share one commit, made by whichever of them leads it (group commit), and the clock
is read there. So a clock failure is not this thread's to report as the cause, and
`publish` and `publish_many` neither clear nor read the clock's exception
(``clock=False``). `publish_with` and `publish_many_with` are each their own transaction,
on the calling thread, so they do; so does `publish_many` with headers (the library has no
group-committed publish_many with headers: it is `publish_many_with`'s call, its own
transaction)."""

from __future__ import annotations

from ctypes import POINTER, byref, c_int, c_int64, pointer
from typing import Any, Callable, Iterable, List, Optional, Tuple, TypeVar, Union

from .. import _native
from .._args import (
    EncodedHeaders,
    _delivery,
    _describe,
    _event,
    _header_array,
    _headers,
    _int32,
    _optional_text,
    _text,
)
from .._errors import ArgumentError
from .._handle import _Handle
from .._tracing import Producer
from .._values import Debounce, EventType, Headers, Message, Published, Retry, UniqueMode, published_of

T = TypeVar("T")

MessageLike = Union[Message, Tuple[Any, ...]]


def _has_delivery(m: Message) -> bool:
    """Whether `m` carries a delivery option, which `publish_many` would drop."""
    plain_delay = isinstance(m.delay, (int, float)) and not isinstance(m.delay, bool) and m.delay == 0
    return (
        m.key is not None or m.not_before is not None or not plain_delay or m.unique_key is not None
        or m.unique_mode != "keep" or m.debounce is not None or m.ttl is not None or m.expires_at is not None
        or m.retry is not None
    )


def _items(messages: Any) -> List[Any]:
    if isinstance(messages, (str, bytes)):
        raise ArgumentError("messages must be an iterable of Message, not a single str")
    try:
        return list(messages)
    except TypeError:
        raise ArgumentError(f"messages must be an iterable of Message, got {_describe(messages)}") from None


class _Batch:
    """A batch checked and converted for C: the harel_message array (None when empty),
    with `delivery` the array of pointers to each message's harel_delivery (NULL for a tuple,
    which has none; None when the batch is empty or for `publish_many`), each message's
    encoded headers (None: none), and its group id (for a span)."""

    __slots__ = ("array", "delivery", "headers", "groups", "_keep")

    def __init__(self, array: Any, delivery: Any, headers: List[Optional[EncodedHeaders]], groups: List[str]) -> None:
        self.array = array
        self.delivery = delivery
        self.headers = headers
        self.groups = groups
        self._keep: List[Any] = []

    def header_arrays(self) -> Any:
        """The harel_headers array of the messages' headers (None when no message has any),
        keeping the harel_header arrays it points to alive in its `_objects`."""
        if not any(h for h in self.headers):
            return None
        lists = (_native.HarelHeaders * len(self.headers))()
        for i, h in enumerate(self.headers):
            items, n = _header_array(h)
            if n:
                self._keep.append(items)
                lists[i].items = items
                lists[i].n = n
        return lists


def _batch(items: List[Any], delivery: bool) -> _Batch:
    """`items` converted for C (`_Batch`); what ctypes would change is refused, naming the
    element."""
    n = len(items)
    headers: List[Optional[EncodedHeaders]] = []
    groups: List[str] = []
    array = (_native.HarelMessage * n)() if n else None
    deliveries = (POINTER(_native.HarelDelivery) * n)() if delivery and n else None
    options: List[Any] = []  # what `deliveries` points to, kept by the batch
    for i, m in enumerate(items):
        name = f"messages[{i}]"
        pairs: Any = None
        if isinstance(m, Message):
            group_id, event, priority, routing_key, pairs = m.group_id, m.event, m.priority, m.routing_key, m.headers
            if not delivery and _has_delivery(m):
                raise ArgumentError(
                    f"{name} has a key, delay, not_before, unique_key, unique_mode, debounce, ttl, expires_at or "
                    "retry, which publish_many would drop; use publish_many_with"
                )
        elif isinstance(m, tuple) and 2 <= len(m) <= 4:
            group_id, event = m[0], m[1]
            priority = m[2] if len(m) > 2 else 0
            routing_key = m[3] if len(m) > 3 else None
        else:
            raise ArgumentError(
                f"{name} must be a Message or a tuple (group_id, event[, priority[, routing_key]]), "
                f"got {_describe(m)}"
            )
        element = array[i]  # type: ignore[index]
        element.group_id = _text(f"{name}.group_id", group_id)
        element.event_json = _event(f"{name}.event_json", event)
        element.priority = _int32(f"{name}.priority", priority)
        element.routing_key = _optional_text(f"{name}.routing_key", routing_key)
        headers.append(_headers(f"{name}.headers", pairs))
        groups.append(group_id)
        if delivery and isinstance(m, Message):  # a tuple carries no delivery option: NULL
            options.append(
                _delivery(
                    f"{name}.", m.key, m.delay, m.not_before, m.unique_key, m.unique_mode, m.debounce, m.ttl,
                    m.expires_at, m.retry,
                )
            )
            deliveries[i] = pointer(options[-1])  # type: ignore[index]
    batch = _Batch(array, deliveries, headers, groups)
    batch._keep.extend(options)
    return batch


class PublishMethods(_Handle):
    """publish, publish_many, publish_with, publish_many_with."""

    def _traced(self, producer: Optional[Producer], publish: Callable[[], T], seq: Callable[[T], Optional[int]]) -> T:
        """``publish()``, ending `producer`'s span (None: untraced) after it: with the
        message's seq (``seq(result)``, when known), or with an error status."""
        if producer is None:
            return publish()
        try:
            result = publish()
        except BaseException as e:
            producer.failed(e)
            raise
        producer.ok(seq(result))
        return result

    def publish(
        self,
        group_id: str,
        event: EventType,
        *,
        priority: int = 0,
        routing_key: Optional[str] = None,
        headers: Optional[Headers] = None,
    ) -> None:
        """Appends `event` (JSON text: a str, or UTF-8 bytes) to the FIFO of `group_id`.
        The first publish into a group fixes its `priority` (0..4) and `routing_key`.

        `headers`: (name, value) pairs stored beside the message and handed back, in order
        and byte for byte, with its leases (`Lease.headers`), by `peek` and with its dead
        letter (a name 1..128 bytes of visible ASCII without '=', a value without NUL; at
        most 64 pairs and 16 KiB in all; names may repeat). harel's own workers never see
        them. A header the library refuses raises `ArgumentError` naming it, nothing
        written."""
        g = _text("group_id", group_id)
        e = _event("event_json", event)
        p = _int32("priority", priority)
        k = _optional_text("routing_key", routing_key)
        h = _headers("headers", headers)
        lib = self._lib
        tracing = self._tracing
        producer = None if tracing is None else tracing.producer([group_id])
        if producer is not None:
            h = producer.inject(h)

        def call() -> None:
            if h is None:
                self._call("publish", lib.harel_transport_publish, g, e, p, k, clock=False)
            else:
                array, n = _header_array(h)
                self._call("publish", lib.harel_transport_publish_headers, g, e, p, k, array, n, clock=False)

        self._traced(producer, call, lambda _: None)

    def publish_many(self, messages: Iterable[MessageLike]) -> None:
        """Appends `messages` in order, in one transaction: all of them or none, with one
        commit. Each is a `Message` (without delivery options: see `publish_many_with`; with
        its `headers`, if any) or a tuple ``(group_id, event[, priority[, routing_key]])``;
        errors name the element (``messages[3].event_json``, ``messages[3].headers[0].name``)."""
        items = _items(messages)
        batch = _batch(items, delivery=False)
        producer = self._producer(batch)
        lib = self._lib
        n = len(items)

        def call() -> None:
            lists = batch.header_arrays()
            if lists is None:
                self._call("publish_many", lib.harel_transport_publish_many, batch.array, n, clock=False)
            else:
                self._call(
                    "publish_many", lib.harel_transport_publish_many_with_headers, batch.array, n, lists,
                    None, None, None, None, None,
                )

        self._traced(producer, call, lambda _: None)

    def _producer(self, batch: _Batch) -> Optional[Producer]:
        """A batch's one span (None: untraced, or an empty batch), its context written into
        every message's headers."""
        tracing = self._tracing
        if tracing is None or not batch.groups:
            return None
        producer = tracing.producer(batch.groups, len(batch.groups))
        batch.headers = [producer.inject(h) for h in batch.headers]
        return producer

    def publish_with(
        self,
        group_id: str,
        event: EventType,
        *,
        priority: int = 0,
        routing_key: Optional[str] = None,
        key: Optional[str] = None,
        delay: float = 0.0,
        not_before: Optional[float] = None,
        headers: Optional[Headers] = None,
        unique_key: Optional[str] = None,
        unique_mode: UniqueMode = "keep",
        debounce: Optional[Debounce] = None,
        ttl: Optional[float] = None,
        expires_at: Optional[float] = None,
        retry: Optional[Retry] = None,
    ) -> Published:
        """`publish` with delivery options, returning ``Published(seq, duplicate, replaced)``:

        - `key`: an idempotency key (1..256 bytes of UTF-8). A key seen within the queue's
          `key_retention` (default a day) stores nothing: `duplicate` is True and `seq` the
          first message's (also after it was acked). The key and the message are committed
          together, so a publish that raised `ConnectError` is safe to retry with it.
        - `delay` (seconds, 0..ten years) and `not_before` (epoch seconds by the
          transport's clock, at most ten years ahead; None: none): the message is not
          delivered before the later of now + delay and not_before. It keeps its place in
          its group's FIFO: the group's later messages wait behind it.
        - `headers`: as for `publish` (a duplicate stores nothing, its headers neither).
        - `unique_key` (1..256 bytes of UTF-8; not with `key`): while a message of the queue
          with it is pending (ready, delayed, leased or parked: not yet acked, dead-lettered
          or purged), a publish with it stores nothing new, and `seq` is the pending
          message's. What it does then is `unique_mode`'s: ``"keep"`` (the default) leaves
          the pending message as it is (`duplicate` True); ``"replace"`` gives it this
          event and these headers, in its place in its group's FIFO (its group, priority and
          routing key stay; `duplicate` and `replaced` True), unless a worker holds its
          lease, which is never replaced (then `duplicate` only); ``"debounce"`` replaces as
          "replace" does and makes it due ``debounce=(delay, max_delay)``'s `delay` seconds
          from now, never later than `max_delay` after its first publish (a new message with
          the key is due `delay` from now). The key is freed when its message is acked,
          dead-lettered or purged (a redriven dead letter has none).
        - `ttl` (seconds from the publish, > 0, at most ten years) and `expires_at` (epoch
          seconds by the transport's clock; None: never; with both, the earlier): a message
          no worker has by then expires. A later claim moves it to the dead letters with the
          reason ``"expired"`` (free, delayed, parked or its lease lapsed; never one a
          worker holds under a live lease), its group going on behind it, and it frees its
          unique key; `stats().expired` counts them. The expiry must be after now and after
          the message is due (`delay`, `not_before`): otherwise `ArgumentError`.
        - `retry` (a `Retry`): the message's own retry policy, in place of the queue's
          (the open option `retry`; None: the queue's): after a claim of it that ends in a
          nack with delay 0, or in a lease that lapses, it waits that claim's backoff
          (`peek`'s `MessageInfo.retry_delay`) before its next delivery. Its values are
          checked here (`ArgumentError` naming the field: ``retry.base is 0; ...``).

        Its own transaction: it shares no commit with other threads' publishes."""
        g = _text("group_id", group_id)
        e = _event("event_json", event)
        p = _int32("priority", priority)
        r = _optional_text("routing_key", routing_key)
        options = _delivery("", key, delay, not_before, unique_key, unique_mode, debounce, ttl, expires_at, retry)
        h = _headers("headers", headers)
        lib = self._lib
        tracing = self._tracing
        producer = None if tracing is None else tracing.producer([group_id])
        if producer is not None:
            h = producer.inject(h)

        def call() -> Published:
            seq = c_int64()
            outcome = c_int()
            array, n = _header_array(h)
            self._call(
                "publish_with", lib.harel_transport_publish_delivery, g, e, p, r, array, n, byref(options),
                byref(seq), byref(outcome),
            )
            return published_of(seq.value, outcome.value)

        return self._traced(producer, call, lambda published: published.seq)

    def publish_many_with(self, messages: Iterable[MessageLike]) -> List[Published]:
        """`publish_many` with each `Message`'s delivery options (`key`, `delay`,
        `not_before`, `unique_key`, `unique_mode`, `debounce`, `ttl`, `expires_at`, `retry`,
        as `publish_with` takes them; a tuple has none) and headers, returning each message's
        `Published`, in order. One transaction: every message stored, found a duplicate or
        replaced, or nothing written. A key met earlier in the batch makes the later message a duplicate of the
        earlier one; a unique key met earlier finds the earlier message pending."""
        items = _items(messages)
        batch = _batch(items, delivery=True)
        producer = self._producer(batch)
        lib = self._lib
        n = len(items)

        def call() -> List[Published]:
            seqs = (c_int64 * n)() if n else None
            outcomes = (c_int * n)() if n else None
            self._call(
                "publish_many_with", lib.harel_transport_publish_many_delivery, batch.array, n,
                batch.header_arrays(), batch.delivery, seqs, outcomes,
            )
            return [published_of(seqs[i], outcomes[i]) for i in range(n)]  # type: ignore[index]

        return self._traced(producer, call, lambda _: None)
