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
        """Keep the rows; entries whose lock has run out by this task's lock time go first,
        then the oldest beyond ``LIMIT`` (tasks reported elsewhere, or never)."""
        with self._lock:
            self._rows[task.id] = (task, token)
            self._rows.move_to_end(task.id)
            locked_at = task.updated_at
            while self._rows:
                oldest, (held, _) = next(iter(self._rows.items()))
                expired = held.lock_expire_at is not None and held.lock_expire_at < locked_at
                if not expired and len(self._rows) <= LIMIT:
                    break
                del self._rows[oldest]

    def take(self, task_id: UUID, worker_id: str) -> tuple[TaskRow, TokenRow] | None:
        """The rows for ``task_id`` if ``worker_id`` locked it, forgotten as they are handed
        out (one report per lock); another caller leaves them for the owner."""
        with self._lock:
            found = self._rows.get(task_id)
            if found is None or found[0].lock_owner != worker_id:
                return None
            del self._rows[task_id]
            return found

    def forget(self, task_id: UUID) -> None:
        with self._lock:
            self._rows.pop(task_id, None)
