"""Why the engine is doing what it does, written into every history row it leads to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: What the engine is doing on behalf of whom: set by each entry point (job, API call, scan,
#: operator action) and written into every history row of the transactions it leads to.
_CAUSE: ContextVar[str | None] = ContextVar("bpm_cause", default=None)
#: Who asked for it, when a person did (an operator on the cockpit): the actor of the history
#: rows of the transactions it leads to, instead of the engine's worker id.
_ACTOR: ContextVar[str | None] = ContextVar("bpm_actor", default=None)


@contextmanager
def because(cause: str) -> Iterator[None]:
    """Mark the transactions made inside with ``cause``; an outer cause wins (a job that goes
    on through API-level steps stays that job)."""
    if _CAUSE.get() is not None:
        yield
        return
    token = _CAUSE.set(cause)
    try:
        yield
    finally:
        _CAUSE.reset(token)


def current_cause() -> str | None:
    return _CAUSE.get()


@contextmanager
def acting_as(actor: str) -> Iterator[None]:
    """Write ``actor`` as the actor of the history rows of the transactions made inside."""
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def current_actor() -> str | None:
    return _ACTOR.get()
