"""Searches over what Camunda calls jobs: open handler tasks (service tasks run by the
workers' registered handlers) and scheduled timers, as one list.

Both are read through one ``UNION ALL`` of the same columns, so filters, order and paging
apply to the whole list in the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, Integer, and_, case, func, literal, null, select

from bpm.states import TaskKind, TaskState, TimerState
from bpm.store.paging import Page, ordered
from bpm.store.schema import external_tasks as task_table
from bpm.store.schema import process_instances as p
from bpm.store.schema import timers as timer_table


class JobKind(StrEnum):
    TASK = "task"
    TIMER = "timer"


#: A timer fires once; it shows the one run it has left.
TIMER_RETRIES = 1


@dataclass(frozen=True)
class JobQuery:
    """Which jobs: every field that is set must match."""

    job_ids: Sequence[UUID] | None = None
    kinds: Sequence[JobKind] | None = None
    instance_ids: Sequence[UUID] | None = None
    token_ids: Sequence[UUID] | None = None
    definition_ids: Sequence[UUID] | None = None
    process_keys: Sequence[str] | None = None
    node_ids: Sequence[str] | None = None
    #: True: runs again (not failed); False: failed with an incident.
    with_retries_left: bool | None = None
    with_exception: bool = False
    exception_message: str | None = None
    due_before: datetime | None = None
    due_after: datetime | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    min_priority: int | None = None
    max_priority: int | None = None
    none: bool = False


@dataclass(frozen=True)
class FoundJob:
    id: UUID
    kind: JobKind
    instance_id: UUID
    token_id: UUID
    node_id: str
    definition_id: UUID
    process_key: str
    #: Runs left: 0 once failed with an incident (a lock spends one in advance: not shown).
    retries: int
    #: When it runs: a timer's fire time, a task's retry time (None: as soon as it can).
    due_at: datetime | None
    created_at: datetime
    error_message: str | None
    error_details: str | None
    priority: int
    state: str
    handler: str | None


_OPEN = (TaskState.READY, TaskState.LOCKED, TaskState.FAILED)
_RETRIES = case(
    (task_table.c.state == TaskState.FAILED, 0),
    (task_table.c.state == TaskState.LOCKED, task_table.c.retries + 1),
    else_=task_table.c.retries,
)
_TASKS = (
    select(
        task_table.c.id,
        literal(JobKind.TASK.value).label("kind"),
        task_table.c.instance_id,
        task_table.c.token_id,
        task_table.c.node_id,
        p.c.process_def_id.label("definition_id"),
        p.c.process_key,
        _RETRIES.label("retries"),
        task_table.c.retry_at.label("due_at"),
        task_table.c.created_at,
        task_table.c.error_message,
        task_table.c.error_details,
        task_table.c.priority,
        task_table.c.state,
        task_table.c.handler,
    )
    .join_from(task_table, p, p.c.id == task_table.c.instance_id)
    .where(task_table.c.kind == TaskKind.HANDLER, task_table.c.state.in_(_OPEN))
)
_TIMERS = (
    select(
        timer_table.c.id,
        literal(JobKind.TIMER.value).label("kind"),
        timer_table.c.instance_id,
        timer_table.c.token_id,
        timer_table.c.node_id,
        p.c.process_def_id.label("definition_id"),
        p.c.process_key,
        literal(TIMER_RETRIES, Integer).label("retries"),
        timer_table.c.fire_at.label("due_at"),
        timer_table.c.created_at,
        null().label("error_message"),
        null().label("error_details"),
        literal(0, Integer).label("priority"),
        timer_table.c.state,
        null().label("handler"),
    )
    .join_from(timer_table, p, p.c.id == timer_table.c.instance_id)
    .where(timer_table.c.state == TimerState.SCHEDULED)
)
JOBS = _TASKS.union_all(_TIMERS).subquery("jobs")

SORTS: dict[str, ColumnElement[Any]] = {
    "id": JOBS.c.id,
    "token_id": JOBS.c.token_id,
    "instance_id": JOBS.c.instance_id,
    "definition_id": JOBS.c.definition_id,
    "process_key": JOBS.c.process_key,
    "priority": JOBS.c.priority,
    "retries": JOBS.c.retries,
    "due_at": JOBS.c.due_at,
    "created": JOBS.c.created_at,
}


def find(conn: Connection, q: JobQuery, page: Page) -> list[FoundJob]:
    stmt = ordered(_where(select(*JOBS.c), q), page, SORTS, (JOBS.c.created_at, JOBS.c.id))
    rows = conn.execute(stmt).all()
    return [FoundJob(r[0], JobKind(r[1]), *r[2:]) for r in rows]


def count(conn: Connection, q: JobQuery) -> int:
    found: int = conn.execute(_where(select(func.count()).select_from(JOBS), q)).scalar_one()
    return found


def _where(stmt: Any, q: JobQuery) -> Any:
    conds: list[Any] = []
    if q.none:
        conds.append(JOBS.c.id.is_(None))
    for column, wanted in (
        (JOBS.c.id, q.job_ids),
        (JOBS.c.kind, None if q.kinds is None else [k.value for k in q.kinds]),
        (JOBS.c.instance_id, q.instance_ids),
        (JOBS.c.token_id, q.token_ids),
        (JOBS.c.definition_id, q.definition_ids),
        (JOBS.c.process_key, q.process_keys),
        (JOBS.c.node_id, q.node_ids),
    ):
        if wanted is not None:
            conds.append(column.in_(list(wanted)))
    if q.with_retries_left is not None:
        conds.append(JOBS.c.retries > 0 if q.with_retries_left else JOBS.c.retries == 0)
    if q.with_exception:
        conds.append(JOBS.c.error_message.is_not(None))
    if q.exception_message is not None:
        conds.append(JOBS.c.error_message == q.exception_message)
    for column, before, after in (
        (JOBS.c.due_at, q.due_before, q.due_after),
        (JOBS.c.created_at, q.created_before, q.created_after),
    ):
        if before is not None:
            conds.append(column < before)
        if after is not None:
            conds.append(column > after)
    if q.min_priority is not None:
        conds.append(JOBS.c.priority >= q.min_priority)
    if q.max_priority is not None:
        conds.append(JOBS.c.priority <= q.max_priority)
    return stmt.where(and_(*conds)) if conds else stmt
