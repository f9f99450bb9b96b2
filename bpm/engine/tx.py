"""What one engine transaction carries, and the signals a step returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, Job
from bpm.store import Connection
from bpm.store.history import HistoryBuffer


class Stale(Exception):
    """The row moved on since the job was sent: roll back and end as a logged no-op."""


class Conflict(Exception):
    """A version check failed inside a decision; the whole transaction is retried."""


@dataclass(frozen=True)
class NextToken:
    """Go on advancing this token in the same job (synchronous continuation)."""

    token_id: UUID
    version: int


@dataclass(frozen=True)
class RunTask:
    """A handler task was created: run it now if this process can, else send it."""

    task_id: UUID


Next = NextToken | RunTask | None


@dataclass
class Tx:
    """One transaction: its connection, its ``now``, its history and its after-commit jobs."""

    conn: Connection
    now: datetime
    actor: str
    history: HistoryBuffer = field(default_factory=HistoryBuffer)
    jobs: list[Job] = field(default_factory=list)

    def advance_later(self, token_id: UUID, version: int) -> None:
        self.jobs.append(Job(ADVANCE_TOKEN, {"token_id": str(token_id),
                                             "expected_version": version}))

    def run_handler_later(self, task_id: UUID, not_before: datetime | None = None) -> None:
        self.jobs.append(Job(RUN_HANDLER, {"task_id": str(task_id)}, not_before))
