"""What one engine transaction carries, and the signals a step returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, Job
from bpm.store import Connection, tokens
from bpm.store.history import HistoryBuffer
from bpm.store.rows import TaskRow, TokenRow


class Stale(Exception):
    """The row moved on since the job was sent: roll back and end as a logged no-op."""


class Conflict(Exception):
    """A version check failed inside a decision; the whole transaction is retried."""


@dataclass(frozen=True)
class NextToken:
    """Go on advancing this token in the same job (synchronous continuation).

    ``row`` is set when the token was moved by the current transaction: the transaction may
    then go on with it without re-reading (it holds the row's newest version).
    """

    token_id: UUID
    version: int
    row: TokenRow | None = None


@dataclass(frozen=True)
class RunTask:
    """A handler task was created: run it now if this process can, else send it.

    ``locked`` is set when the creating transaction already locked the task for this runner
    (the attempt counts from there), with the variables the handler gets in ``values``.
    """

    task_id: UUID
    locked: TaskRow | None = None
    values: dict[str, Any] | None = None
    token: TokenRow | None = None


Next = NextToken | RunTask | None


@dataclass
class Tx:
    """One transaction: its connection, its ``now``, its history and its after-commit jobs."""

    conn: Connection
    now: datetime
    actor: str
    history: HistoryBuffer = field(default_factory=HistoryBuffer)
    jobs: list[Job] = field(default_factory=list)
    #: Whether this process runs a handler itself right after commit (then the task is
    #: created already locked by ``actor``, saving a transaction per step).
    runs_inline: Callable[[str], bool] = field(default=lambda _name: False)

    #: Token rows moved by this transaction, not yet written: id -> (version it was read at,
    #: newest row).
    staged: dict[UUID, tuple[int, TokenRow]] = field(default_factory=dict)

    def stage_token(self, before: TokenRow, after: TokenRow) -> None:
        held = self.staged.get(before.id)
        if held is not None and held[1].version != before.version:
            raise Conflict(f"token {before.id} was moved twice from version {before.version}")
        self.staged[before.id] = ((held[0] if held else before.version), after)

    def flush(self) -> None:
        """Write staged token rows (version-checked), then the history rows."""
        self.flush_tokens()
        self.history.flush(self.conn)

    def flush_tokens(self) -> None:
        """Write staged token rows now; call before reading tokens this transaction moved."""
        for token_id, (expected, row) in self.staged.items():
            if not tokens.move(self.conn, expected, row):
                raise Conflict(f"token {token_id} changed since version {expected}")
        self.staged.clear()

    def advance_later(self, token_id: UUID, version: int) -> None:
        self.jobs.append(Job(ADVANCE_TOKEN, {"token_id": str(token_id),
                                             "expected_version": version}))

    def run_handler_later(self, task_id: UUID, not_before: datetime | None = None) -> None:
        self.jobs.append(Job(RUN_HANDLER, {"task_id": str(task_id)}, not_before))
