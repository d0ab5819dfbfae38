"""Publishing: `publish` and `publish_many`.

A publish may be written by another caller's thread: publishes that meet in the library
share one commit, made by whichever of them leads it (group commit), and the clock is
read there. So a clock failure is not this thread's to report as the cause, and these
calls neither clear nor read the clock's exception (``clock=False``)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Tuple, Union

from .. import _native
from .._args import _describe, _event, _int32, _optional_text, _text
from .._errors import ArgumentError
from .._handle import _Handle
from .._values import EventType, Message


class PublishMethods(_Handle):
    """publish, publish_many."""

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

    def publish_many(self, messages: Iterable[Union[Message, Tuple[Any, ...]]]) -> None:
        """Appends `messages` in order, in one transaction: all of them or none, with one
        commit. Each is a `Message` or a tuple ``(group_id, event[, priority[,
        routing_key]])``; errors name the element (``messages[3].event_json``)."""
        if isinstance(messages, (str, bytes)):
            raise ArgumentError("messages must be an iterable of Message, not a single str")
        try:
            items = list(messages)
        except TypeError:
            raise ArgumentError(f"messages must be an iterable of Message, got {_describe(messages)}") from None
        array = (_native.HarelMessage * len(items))() if items else None
        for i, m in enumerate(items):
            name = f"messages[{i}]"
            if isinstance(m, Message):
                group_id, event, priority, routing_key = m.group_id, m.event, m.priority, m.routing_key
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
        self._call("publish_many", self._lib.harel_transport_publish_many, array, len(items), clock=False)
