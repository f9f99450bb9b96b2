"""What a fetch told this process about the tasks it locked, for their complete.

A worker that fetched a task completes it through the same engine moments later; the task and
its token as the fetch returned them let the complete skip reading them again, so a complete
that moves the token to its next wait is a single statement. Nothing here is trusted: the write
checks both versions, and a miss is retried once from a fresh read (see ``external.complete``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from uuid import UUID

from bpm.store.rows import TaskRow, TokenRow

#: Enough for every task a busy worker holds; the oldest are dropped beyond it.
LIMIT = 10_000


class HeldTasks:
    """Task id -> (task, token) as of the fetch that locked it; shared by a worker's threads."""

    def __init__(self) -> None:
        self._rows: OrderedDict[UUID, tuple[TaskRow, TokenRow]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, task: TaskRow, token: TokenRow) -> None:
        with self._lock:
            self._rows[task.id] = (task, token)
            while len(self._rows) > LIMIT:
                self._rows.popitem(last=False)

    def take(self, task_id: UUID) -> tuple[TaskRow, TokenRow] | None:
        """The rows for ``task_id``, forgotten as they are handed out (one report per lock)."""
        with self._lock:
            return self._rows.pop(task_id, None)

    def forget(self, task_id: UUID) -> None:
        with self._lock:
            self._rows.pop(task_id, None)
