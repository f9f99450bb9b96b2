"""Searches over open external tasks, with the facts of their instances (the API's lists)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, and_, func, or_, select

from bpm.states import TaskKind, TaskState
from bpm.store.paging import Page, ordered
from bpm.store.rows import TaskRow
from bpm.store.schema import external_tasks as t
from bpm.store.schema import process_instances as p
from bpm.store.tasks import _COLS

OPEN = (TaskState.READY, TaskState.LOCKED, TaskState.FAILED)


@dataclass(frozen=True)
class FoundTask:
    task: TaskRow
    definition_id: UUID
    process_key: str
    business_key: str | None


@dataclass(frozen=True)
class ExternalTaskQuery:
    """Which open external tasks: every field that is set must match. ``locked``: held by an
    unexpired lock (False: not); ``with_retries_left``: fetchable again (False: failed with
    an incident)."""

    topic: str | None = None
    worker_id: str | None = None
    locked: bool | None = None
    with_retries_left: bool | None = None
    instance_id: UUID | None = None
    task_ids: Sequence[UUID] | None = None


#: Oldest first unless the page orders otherwise.
SORTS = {"id": t.c.id, "createTime": t.c.created_at, "priority": t.c.priority}


def find_external(
    conn: Connection, now: datetime, q: ExternalTaskQuery, page: Page
) -> list[FoundTask]:
    """Open external tasks, oldest first unless ``page`` orders them."""
    stmt: Any = select(*_COLS, p.c.process_def_id, p.c.process_key, p.c.business_key).join_from(
        t, p, p.c.id == t.c.instance_id
    )
    stmt = ordered(_matching(stmt, now, q), page, SORTS, (t.c.created_at, t.c.id))
    n = len(_COLS)
    return [FoundTask(TaskRow(*r[:n]), r[n], r[n + 1], r[n + 2]) for r in conn.execute(stmt).all()]


def count_external(conn: Connection, now: datetime, q: ExternalTaskQuery) -> int:
    """How many open external tasks ``find_external`` would list without a page."""
    stmt: Any = select(func.count()).select_from(t)
    stmt = _matching(stmt, now, q)
    return int(conn.execute(stmt).scalar_one())


def _matching(stmt: Any, now: datetime, q: ExternalTaskQuery) -> Any:
    topic, worker_id, locked = q.topic, q.worker_id, q.locked
    with_retries_left, instance_id, task_ids = q.with_retries_left, q.instance_id, q.task_ids
    stmt = stmt.where(t.c.kind == TaskKind.EXTERNAL, t.c.state.in_(OPEN))
    held = and_(t.c.state == TaskState.LOCKED, t.c.lock_expire_at > now)
    if topic is not None:
        stmt = stmt.where(t.c.topic == topic)
    if worker_id is not None:
        stmt = stmt.where(t.c.lock_owner == worker_id)
    if locked is not None:
        stmt = stmt.where(held if locked else or_(t.c.state != TaskState.LOCKED, ~held))
    if with_retries_left is not None:
        failed = t.c.state == TaskState.FAILED
        stmt = stmt.where(~failed if with_retries_left else failed)
    if instance_id is not None:
        stmt = stmt.where(t.c.instance_id == instance_id)
    if task_ids is not None:
        stmt = stmt.where(t.c.id.in_(list(task_ids)))
    return stmt
