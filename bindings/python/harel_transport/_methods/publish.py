"""Publishing: `publish` and `publish_many`; `publish_with` and `publish_many_with`, the same
with delivery options (an idempotency key, a delay or a due instant) and each message's
outcome (`Published`).

A plain publish may be written by another caller's thread: publishes that meet in the
library share one commit, made by whichever of them leads it (group commit), and the clock
is read there. So a clock failure is not this thread's to report as the cause, and
`publish` and `publish_many` neither clear nor read the clock's exception
(``clock=False``). `publish_with` and `publish_many_with` are each their own transaction,
on the calling thread, so they do."""

from __future__ import annotations

from ctypes import byref, c_char_p, c_double, c_int, c_int64
from typing import Any, Iterable, List, Optional, Tuple, Union

from .. import _native
from .._args import _describe, _event, _int32, _not_before, _optional_text, _seconds, _text
from .._errors import ArgumentError
from .._handle import _Handle
from .._values import EventType, Message, Published

MessageLike = Union[Message, Tuple[Any, ...]]


def _has_delivery(m: Message) -> bool:
    """Whether `m` carries a delivery option, which `publish_many` would drop."""
    plain_delay = isinstance(m.delay, (int, float)) and not isinstance(m.delay, bool) and m.delay == 0
    return m.key is not None or m.not_before is not None or not plain_delay


def _items(messages: Any) -> List[Any]:
    if isinstance(messages, (str, bytes)):
        raise ArgumentError("messages must be an iterable of Message, not a single str")
    try:
        return list(messages)
    except TypeError:
        raise ArgumentError(f"messages must be an iterable of Message, got {_describe(messages)}") from None


def _batch(items: List[Any], delivery: bool) -> Tuple[Any, Optional[Tuple[Any, Any, Any]]]:
    """The harel_message array of `items` (None when empty) and, with `delivery`, the
    arrays of their keys, delays and not_before (None when empty); what ctypes would
    change is refused, naming the element."""
    n = len(items)
    array = (_native.HarelMessage * n)() if n else None
    keys = (c_char_p * n)() if delivery and n else None
    delays = (c_double * n)() if delivery and n else None
    instants = (c_double * n)() if delivery and n else None
    for i, m in enumerate(items):
        name = f"messages[{i}]"
        if isinstance(m, Message):
            group_id, event, priority, routing_key = m.group_id, m.event, m.priority, m.routing_key
            if not delivery and _has_delivery(m):
                raise ArgumentError(
                    f"{name} has a key, delay or not_before, which publish_many would drop; "
                    "use publish_many_with"
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
        if delivery:
            if isinstance(m, Message):
                keys[i] = _optional_text(f"{name}.key", m.key)  # type: ignore[index]
                delays[i] = _seconds(f"{name}.delay", m.delay)  # type: ignore[index]
                instants[i] = _not_before(f"{name}.not_before", m.not_before)  # type: ignore[index]
            else:  # a tuple carries no delivery option
                instants[i] = -1.0  # type: ignore[index]
    return array, ((keys, delays, instants) if delivery else None)


class PublishMethods(_Handle):
    """publish, publish_many, publish_with, publish_many_with."""

    def publish(
        self, group_id: str, event: EventType, *, priority: int = 0, routing_key: Optional[str] = None
    ) -> None:
        """Appends `event` (JSON text: a str, or UTF-8 bytes) to the FIFO of `group_id`.
        The first publish into a group fixes its `priority` (0..4) and `routing_key`."""
        g = _text("group_id", group_id)
        e = _event("event_json", event)
        p = _int32("priority", priority)
        k = _optional_text("routing_key", routing_key)
        self._call("publish", self._lib.harel_transport_publish, g, e, p, k, clock=False)

    def publish_many(self, messages: Iterable[MessageLike]) -> None:
        """Appends `messages` in order, in one transaction: all of them or none, with one
        commit. Each is a `Message` (without delivery options: see `publish_many_with`) or
        a tuple ``(group_id, event[, priority[, routing_key]])``; errors name the element
        (``messages[3].event_json``)."""
        items = _items(messages)
        array, _ = _batch(items, delivery=False)
        self._call("publish_many", self._lib.harel_transport_publish_many, array, len(items), clock=False)

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
    ) -> Published:
        """`publish` with delivery options, returning ``Published(seq, duplicate)``:

        - `key`: an idempotency key (1..256 bytes of UTF-8). A key seen within the queue's
          `key_retention` (default a day) stores nothing: `duplicate` is True and `seq` the
          first message's (also after it was acked). The key and the message are committed
          together, so a publish that raised `ConnectError` is safe to retry with it.
        - `delay` (seconds, 0..ten years) and `not_before` (epoch seconds by the
          transport's clock, at most ten years ahead; None: none): the message is not
          delivered before the later of now + delay and not_before. It keeps its place in
          its group's FIFO: the group's later messages wait behind it.

        Its own transaction: it shares no commit with other threads' publishes."""
        g = _text("group_id", group_id)
        e = _event("event_json", event)
        p = _int32("priority", priority)
        r = _optional_text("routing_key", routing_key)
        k = _optional_text("key", key)
        d = _seconds("delay", delay)
        nb = _not_before("not_before", not_before)
        seq = c_int64()
        duplicate = c_int()
        self._call(
            "publish_with", self._lib.harel_transport_publish_with, g, e, p, r, k, d, nb, byref(seq), byref(duplicate)
        )
        return Published(seq.value, bool(duplicate.value))

    def publish_many_with(self, messages: Iterable[MessageLike]) -> List[Published]:
        """`publish_many` with each `Message`'s delivery options (`key`, `delay`,
        `not_before`, as `publish_with` takes them; a tuple has none), returning each
        message's `Published`, in order. One transaction: every message stored or found a
        duplicate, or nothing written. A key met earlier in the batch makes the later
        message a duplicate of the earlier one."""
        items = _items(messages)
        array, arrays = _batch(items, delivery=True)
        keys, delays, instants = arrays  # type: ignore[misc]
        n = len(items)
        seqs = (c_int64 * n)() if n else None
        duplicates = (c_int * n)() if n else None
        self._call(
            "publish_many_with",
            self._lib.harel_transport_publish_many_with,
            array,
            n,
            keys,
            delays,
            instants,
            seqs,
            duplicates,
        )
        return [Published(seqs[i], bool(duplicates[i])) for i in range(n)]  # type: ignore[index]
