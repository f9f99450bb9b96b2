"""In-process listeners for engine events (``SagaStarted``, ``CompensationCompleted``, ...).

Engine events are history rows first; listeners get a copy after the transaction that wrote
them has committed, so a listener never sees an event that was rolled back, and a slow or
failing listener never holds a lock or undoes engine work. Delivery is at most once per
process that made the change: for a durable feed, read the history instead.

    @bpm.on("SagaStarted")
    def page_someone(event: dict) -> None:
        ...
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from bpm.states import EngineEvent

log = logging.getLogger("bpm.events")

#: The engine events of a saga; any engine event type may be listened to.
SAGA_EVENTS = (
    EngineEvent.TOKEN_FAILED,
    EngineEvent.SAGA_STARTED,
    EngineEvent.COMPENSATION_TOKEN_CREATED,
    EngineEvent.COMPENSATION_COMPLETED,
    EngineEvent.COMPENSATION_FAILED,
    EngineEvent.SAGA_COMPLETED,
)

Event = dict[str, Any]
Listener = Callable[[Event], None]


class EventListeners:
    """Listeners by engine event type ("*" for every type)."""

    def __init__(self) -> None:
        self._by_type: dict[str, list[Listener]] = {}
        self._lock = threading.Lock()

    def add(self, event_type: str, fn: Listener) -> None:
        with self._lock:
            self._by_type.setdefault(event_type, []).append(fn)

    def remove(self, event_type: str, fn: Listener) -> None:
        with self._lock:
            if fn in self._by_type.get(event_type, []):
                self._by_type[event_type].remove(fn)

    def wants(self, event_type: str) -> bool:
        return bool(self._by_type.get(event_type) or self._by_type.get("*"))

    def emit(self, events: Iterable[Event]) -> None:
        for event in events:
            for fn in [*self._by_type.get(event["type"], ()), *self._by_type.get("*", ())]:
                try:
                    fn(event)
                except Exception:  # a listener's bug must not fail the engine's work
                    log.exception("listener %r failed on %s", fn, event["type"])


listeners = EventListeners()


def on(
    event_type: str,
    *,
    target: EventListeners | None = None,
) -> Callable[[Listener], Listener]:
    """Call the decorated function with every committed engine event of ``event_type``."""

    def register(fn: Listener) -> Listener:
        (target or listeners).add(event_type, fn)
        return fn

    return register
