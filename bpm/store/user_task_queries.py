"""Searches over open user tasks with the facts of their instances (the API's task lists).

Candidates are JSON lists on the task row; membership is tested in the database (``@>`` on
PostgreSQL, ``json_each`` on SQLite), so a filter never loads tasks it would drop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select, text

from bpm.states import TaskKind, TaskState
from bpm.store.paging import Page, like, ordered
from bpm.store.rows import TaskRow
from bpm.store.schema import external_tasks as t
from bpm.store.schema import process_instances as p
from bpm.store.tasks import _COLS


@dataclass(frozen=True)
class UserTaskQuery:
    """Which open user tasks: every field that is set must match. ``assigned`` False: only
    unassigned tasks; ``candidates_only_unassigned``: a candidate filter skips claimed tasks
    (Camunda's default, undone by its ``includeAssignedTasks``)."""

    task_ids: Sequence[UUID] | None = None
    assignee: str | None = None
    assignee_like: str | None = None
    assignees: Sequence[str] | None = None
    candidate_user: str | None = None
    candidate_groups: Sequence[str] | None = None
    candidates_only_unassigned: bool = True
    assigned: bool | None = None
    with_candidate_groups: bool | None = None
    with_candidate_users: bool | None = None
    instance_ids: Sequence[UUID] | None = None
    business_key: str | None = None
    business_key_like: str | None = None
    definition_ids: Sequence[UUID] | None = None
    process_keys: Sequence[str] | None = None
    node_ids: Sequence[str] | None = None
    node_like: str | None = None
    due_before: datetime | None = None
    due_after: datetime | None = None
    without_due_date: bool = False
    follow_up_before: datetime | None = None
    follow_up_after: datetime | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    priority: int | None = None
    min_priority: int | None = None
    max_priority: int | None = None
    #: The tasks' states: None, the open ones (READY); the task history asks for every state.
    states: Sequence[TaskState] | None = None
    #: Ended (completed or cancelled) between these times (a task's last update is its end).
    ended_before: datetime | None = None
    ended_after: datetime | None = None
    #: Nothing matches (a filter no bpm task can meet, e.g. Camunda's ``suspended``).
    none: bool = False


@dataclass(frozen=True)
class FoundUserTask:
    task: TaskRow
    definition_id: UUID
    process_key: str
    business_key: str | None


SORTS: dict[str, ColumnElement[Any]] = {
    "id": t.c.id,
    "created": t.c.created_at,
    "updated": t.c.updated_at,
    "due_date": t.c.due_date,
    "follow_up_date": t.c.follow_up_date,
    "priority": t.c.priority,
    "assignee": t.c.assignee,
    "instance_id": t.c.instance_id,
    "token_id": t.c.token_id,
    "node_id": t.c.node_id,
}


def find(conn: Connection, q: UserTaskQuery, page: Page) -> list[FoundUserTask]:
    stmt = select(*_COLS, p.c.process_def_id, p.c.process_key, p.c.business_key)
    stmt = ordered(_where(conn, stmt, q), page, SORTS, (t.c.created_at, t.c.id))
    n = len(_COLS)
    rows = conn.execute(stmt).all()
    return [FoundUserTask(TaskRow(*r[:n]), r[n], r[n + 1], r[n + 2]) for r in rows]


def count(conn: Connection, q: UserTaskQuery) -> int:
    found: int = conn.execute(_where(conn, select(func.count()), q)).scalar_one()
    return found


def _where(conn: Connection, stmt: Any, q: UserTaskQuery) -> Any:
    stmt = stmt.select_from(t).join(p, p.c.id == t.c.instance_id)
    states = [TaskState.READY] if q.states is None else list(q.states)
    stmt = stmt.where(t.c.kind == TaskKind.USER, t.c.state.in_(states))
    conds: list[Any] = []
    if q.none:
        conds.append(t.c.id.is_(None))
    if q.task_ids is not None:
        conds.append(t.c.id.in_(list(q.task_ids)))
    if q.assignee is not None:
        conds.append(t.c.assignee == q.assignee)
    if q.assignee_like is not None:
        conds.append(like(t.c.assignee, q.assignee_like))
    if q.assignees is not None:
        conds.append(t.c.assignee.in_(list(q.assignees)))
    if q.assigned is not None:
        conds.append(t.c.assignee.is_not(None) if q.assigned else t.c.assignee.is_(None))
    candidate = False
    if q.candidate_user is not None:
        conds.append(_holds(conn, "candidate_users", q.candidate_user, 0))
        candidate = True
    if q.candidate_groups is not None:
        groups = [_holds(conn, "candidate_groups", g, i) for i, g in enumerate(q.candidate_groups)]
        conds.append(or_(*groups) if groups else t.c.id.is_(None))
        candidate = True
    if candidate and q.candidates_only_unassigned:
        conds.append(t.c.assignee.is_(None))
    if q.with_candidate_groups is not None:
        conds.append(_has_any(conn, "candidate_groups", q.with_candidate_groups))
    if q.with_candidate_users is not None:
        conds.append(_has_any(conn, "candidate_users", q.with_candidate_users))
    if q.instance_ids is not None:
        conds.append(t.c.instance_id.in_(list(q.instance_ids)))
    if q.business_key is not None:
        conds.append(p.c.business_key == q.business_key)
    if q.business_key_like is not None:
        conds.append(like(p.c.business_key, q.business_key_like))
    if q.definition_ids is not None:
        conds.append(p.c.process_def_id.in_(list(q.definition_ids)))
    if q.process_keys is not None:
        conds.append(p.c.process_key.in_(list(q.process_keys)))
    if q.node_ids is not None:
        conds.append(t.c.node_id.in_(list(q.node_ids)))
    if q.node_like is not None:
        conds.append(like(t.c.node_id, q.node_like))
    conds += _dates(q)
    if q.priority is not None:
        conds.append(t.c.priority == q.priority)
    if q.min_priority is not None:
        conds.append(t.c.priority >= q.min_priority)
    if q.max_priority is not None:
        conds.append(t.c.priority <= q.max_priority)
    return stmt.where(and_(*conds)) if conds else stmt


def _dates(q: UserTaskQuery) -> list[Any]:
    conds: list[Any] = []
    for column, before, after in (
        (t.c.due_date, q.due_before, q.due_after),
        (t.c.follow_up_date, q.follow_up_before, q.follow_up_after),
        (t.c.created_at, q.created_before, q.created_after),
    ):
        if before is not None:
            conds.append(column < before)
        if after is not None:
            conds.append(column > after)
    if q.without_due_date:
        conds.append(t.c.due_date.is_(None))
    ended = t.c.state.in_([TaskState.DONE, TaskState.CANCELLED])
    if q.ended_before is not None:
        conds.append(ended & (t.c.updated_at < q.ended_before))
    if q.ended_after is not None:
        conds.append(ended & (t.c.updated_at > q.ended_after))
    return conds


def _holds(conn: Connection, column: str, name: str, n: int) -> Any:
    """``column`` (a JSON list of names) holds ``name`` (``n`` numbers the parameter)."""
    param = f"{column}_{n}"
    if conn.dialect.name == "postgresql":
        member = f"external_tasks.{column} @> CAST(:{param} AS jsonb)"
        return text(member).bindparams(**{param: json.dumps([name])})
    member = (
        f"EXISTS (SELECT 1 FROM json_each(external_tasks.{column}) "
        f"WHERE json_each.value = :{param})"
    )
    return text(member).bindparams(**{param: name})


def _has_any(conn: Connection, column: str, wanted: bool) -> Any:
    length = "jsonb_array_length" if conn.dialect.name == "postgresql" else "json_array_length"
    has = f"COALESCE({length}(external_tasks.{column}), 0) > 0"
    return text(has if wanted else f"NOT ({has})")
