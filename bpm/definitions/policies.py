"""How an activity retries and how it is undone: part of the compiled graph (``model``
re-exports these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta


@dataclass(frozen=True)
class RetryPolicy:
    """How often a handler runs and how long to wait between runs (exponential backoff)."""

    max_attempts: int = 1
    backoff: timedelta = timedelta(seconds=1)
    factor: float = 2.0
    max_backoff: timedelta = timedelta(minutes=1)
    #: Fixed waits, one per failed run (the last one again when runs remain), as Camunda's
    #: retry cycles give them; when set, backoff and factor do not apply.
    delays: tuple[timedelta, ...] = ()

    def delay(self, attempt: int) -> timedelta:
        """Wait before the run after ``attempt`` (1-based) failed."""
        if self.delays:
            return self.delays[min(max(attempt - 1, 0), len(self.delays) - 1)]
        seconds = self.backoff.total_seconds() * (self.factor ** max(attempt - 1, 0))
        return min(timedelta(seconds=seconds), self.max_backoff)


@dataclass(frozen=True)
class Compensation:
    """How an activity is undone: an in-process handler, an external topic, or a handler
    activity drawn apart from the flow (BPMN's ``isForCompensation``)."""

    handler: str | None = None
    topic: str | None = None
    node: str | None = None
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy())

    def describe(self) -> str:
        if self.handler is not None:
            return f"handler:{self.handler}"
        if self.topic is not None:
            return f"topic:{self.topic}"
        return f"node:{self.node}"
