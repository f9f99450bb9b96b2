"""In-process handlers: Python functions registered by name that service tasks call.

A handler runs outside any database transaction. It may run more than once for
one task (a crash after its side effect, before the commit), so it gets a stable
``idempotency_key`` to deduplicate its side effects with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from bpm.errors import ConfigError


@dataclass(frozen=True)
class HandlerContext:
    """What a handler gets to see. ``variables`` is a copy: changing it changes nothing."""

    variables: dict[str, Any]
    idempotency_key: str
    attempt: int
    instance_id: UUID
    business_key: str | None
    process_key: str
    node_id: str
    task_id: UUID
    #: The task's configuration from the model (Camunda's ``camunda:field``): text as
    #: written, expressions evaluated over the variables just before this run.
    fields: dict[str, Any] = field(default_factory=dict)
    #: For a listener: the event it runs at (``start``, ``end``, ``create``, ...); None for
    #: a task's own handler.
    event: str | None = None


#: Variables to set (a dict, or None for none); with the task's ``resultVariable``, any JSON
#: value, stored whole under that name.
HandlerResult = Mapping[str, Any] | list[Any] | str | int | float | bool | None
HandlerFn = Callable[[HandlerContext], HandlerResult]


class HandlerRegistry:
    """Handlers by name. Most programs use the module-level ``registry``."""

    def __init__(self) -> None:
        self._handlers: dict[str, HandlerFn] = {}

    def register(self, name: str, fn: HandlerFn, *, replace: bool = False) -> None:
        existing = self._handlers.get(name)
        if existing is not None and existing is not fn and not replace:
            raise ConfigError(
                f"handler {name!r} is already registered by {_describe(existing)}; "
                f"pass replace=True to override it"
            )
        self._handlers[name] = fn

    def get(self, name: str) -> HandlerFn | None:
        return self._handlers.get(name)

    def names(self) -> list[str]:
        return sorted(self._handlers)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers


registry = HandlerRegistry()


def handler(
    name: str, *, target: HandlerRegistry | None = None, replace: bool = False
) -> Callable[[HandlerFn], HandlerFn]:
    """Register the decorated function as the handler called ``name``.

    >>> @handler("reserve_stock")
    ... def reserve(ctx: HandlerContext) -> dict[str, object]:
    ...     return {"reserved": True}
    """

    def decorate(fn: HandlerFn) -> HandlerFn:
        (target or registry).register(name, fn, replace=replace)
        return fn

    return decorate


def _describe(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
