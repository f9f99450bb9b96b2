"""Beans: Python objects a model's expressions call by name, as Camunda 7 calls Spring beans.

``${orderService.isValid(order)}`` calls ``isValid`` (or ``is_valid``) of the object
registered as ``orderService``; ``delegateExpression="${mailer}"`` calls its ``execute``
(a task) or ``notify`` (a listener) with the execution. A bean is user code: it runs only
where the expression runs as a task of its own, outside any transaction, with retries and
incidents like a handler, and ``bpm start`` refuses an instance whose beans are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from bpm.errors import ConfigError

T = TypeVar("T")


class BeanRegistry:
    """Beans by name. Most programs use the module-level ``beans``."""

    def __init__(self) -> None:
        self._beans: dict[str, Any] = {}

    def register(self, name: str, obj: Any, *, replace: bool = False) -> None:
        existing = self._beans.get(name)
        if existing is not None and existing is not obj and not replace:
            raise ConfigError(
                f"bean {name!r} is already registered ({existing!r:.80}); "
                f"pass replace=True to override it"
            )
        self._beans[name] = obj

    def get(self, name: str) -> Any | None:
        return self._beans.get(name)

    def names(self) -> list[str]:
        return sorted(self._beans)

    def __contains__(self, name: object) -> bool:
        return name in self._beans


beans = BeanRegistry()


def bean(
    name: str, *, target: BeanRegistry | None = None, replace: bool = False
) -> Callable[[T], T]:
    """Register the decorated class (an instance is made, with no arguments) or object as
    the bean called ``name``.

    >>> @bean("orderService")
    ... class OrderService:
    ...     def isValid(self, order: dict[str, object]) -> bool:
    ...         return bool(order.get("items"))
    """

    def decorate(obj: T) -> T:
        instance = obj() if isinstance(obj, type) else obj
        (target or beans).register(name, instance, replace=replace)
        return obj

    return decorate
