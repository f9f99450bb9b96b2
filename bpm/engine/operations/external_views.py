"""External tasks as an API lists them, and locking one task by id.

Only open tasks are listed (waiting, locked, or failed with an incident): a finished task is
history, as in Camunda, where it is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.tx import Tx
from bpm.engine.operations.external_reports import check_credential
from bpm.engine.semantics import task_moves
from bpm.errors import TaskLockError, TaskNotFound, TaskNotLocked, WrongWorker
from bpm.limits import NAME_MAX, check_text
from bpm.states import TaskEvent, TaskKind, TaskState
from bpm.store import task_queries, tasks
from bpm.store.paging import Page
from bpm.store.rows import TaskRow
from bpm.store.task_queries import ExternalTaskQuery


@dataclass(frozen=True)
class ExternalTaskView:
    id: UUID
    topic: str
    state: TaskState
    worker_id: str | None
    lock_expire_at: datetime | None
    created_at: datetime
    #: Attempts left as a worker last set them; None before any failure was reported.
    retries: int | None
    error_message: str | None
    error_details: str | None
    instance_id: UUID
    token_id: UUID
    node_id: str
    definition_id: UUID
    process_key: str
    business_key: str | None
    priority: int


def find(core: EngineCore, q: ExternalTaskQuery, page: Page) -> list[ExternalTaskView]:
    with core.db.transaction() as conn:
        rows = task_queries.find_external(conn, core.clock.now(), q, page)
        return [_view(r) for r in rows]


def count(core: EngineCore, q: ExternalTaskQuery) -> int:
    with core.db.transaction() as conn:
        return task_queries.count_external(conn, core.clock.now(), q)


def get(core: EngineCore, task_id: UUID) -> ExternalTaskView:
    found = find(core, ExternalTaskQuery(task_ids=[task_id]), Page(limit=1))
    if not found:
        raise TaskNotFound(f"External task with id {task_id} does not exist")
    return found[0]


def next_retry_due(core: EngineCore, topics: Sequence[str]) -> datetime | None:
    """When the first failed task of ``topics`` that waits out its retry timeout comes due
    (a long poll wakes then; no notification tells of it)."""
    with core.db.transaction() as conn:
        return tasks.next_retry_at(conn, list(topics), core.clock.now())


def lock(
    core: EngineCore,
    task_id: UUID,
    worker_id: str,
    duration: timedelta,
    credential: str | None = None,
    any_credential: bool = False,
) -> None:
    """Lock a waiting task for ``worker_id``, or renew the lock it already holds. A new lock
    is held for ``credential`` too (as ``fetch_and_lock``); a renewal must come from the
    lock's own credential unless ``any_credential`` (an operator's)."""
    if duration <= timedelta(0):
        raise TaskLockError("lockDuration must be positive")
    check_text(worker_id, "the worker id", NAME_MAX)

    def once() -> None:
        with core.transaction(worker_id) as tx:
            _lock_txn(tx, task_id, worker_id, duration, credential, any_credential)

    core.retrying(once)
    core.held.forget(task_id)


def _lock_txn(
    tx: Tx,
    task_id: UUID,
    worker_id: str,
    duration: timedelta,
    credential: str | None,
    any_credential: bool,
) -> None:
    task = tasks.get(tx.conn, task_id)
    if task is None or task.kind != TaskKind.EXTERNAL:
        raise TaskNotFound(f"External task with id {task_id} does not exist")
    if task.state == TaskState.LOCKED:
        check_credential(task, None if any_credential else credential)
        if task.lock_owner != worker_id:
            raise WrongWorker(f"task {task_id} is locked by {task.lock_owner!r}, not {worker_id!r}")
        expire = tx.now + duration
        task_moves.change(
            tx,
            task,
            state=TaskState.LOCKED,
            event=TaskEvent.LOCK_EXTENDED,
            data={"lock_expire_at": expire.isoformat()},
            keep_lock=True,
            lock_expire_at=expire,
            miss="conflict",
            message=f"task {task_id} changed",
        )
        return
    if task_moves.lock(tx, task_id, duration, TaskKind.EXTERNAL, credential) is None:
        raise TaskNotLocked(f"task {task_id} is {task.state} and cannot be locked now")


def _view(found: task_queries.FoundTask) -> ExternalTaskView:
    t: TaskRow = found.task
    has_failed = t.error_message is not None
    # A lock spends one attempt in advance; the worker's own count is the one before it.
    left = t.retries + 1 if t.state == TaskState.LOCKED else t.retries
    return ExternalTaskView(
        t.id,
        str(t.topic),
        TaskState(t.state),
        t.lock_owner,
        t.lock_expire_at,
        t.created_at,
        max(left, 0) if has_failed else None,
        t.error_message,
        t.error_details,
        t.instance_id,
        t.token_id,
        t.node_id,
        found.definition_id,
        found.process_key,
        found.business_key,
        t.priority,
    )
