"""Searches over incidents, open or all, with the facts of their instances and the kind of
task that failed (the API's incident lists and their history)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, and_, case, func, select

from bpm.states import IncidentState, TaskKind
from bpm.store.incidents import _COLS
from bpm.store.paging import Page, like, ordered
from bpm.store.rows import IncidentRow
from bpm.store.schema import external_tasks as task_table
from bpm.store.schema import incidents as t
from bpm.store.schema import process_instances as p

#: An incident of a failed external task, or of a failed handler task (Camunda's job).
FAILED_EXTERNAL_TASK = "failedExternalTask"
FAILED_JOB = "failedJob"

#: The type an API shows: the kind of task that failed, else bpm's own incident kind
#: (``no-path``, ``condition``, ``decision``, ``mapping``, ``timer``, ...).
TYPE: ColumnElement[str] = case(
    (task_table.c.kind == TaskKind.EXTERNAL, FAILED_EXTERNAL_TASK),
    (task_table.c.kind == TaskKind.HANDLER, FAILED_JOB),
    else_=t.c.kind,
)


@dataclass(frozen=True)
class IncidentQuery:
    """Which incidents: every field that is set must match."""

    open_only: bool = True
    incident_ids: Sequence[UUID] | None = None
    types: Sequence[str] | None = None
    instance_ids: Sequence[UUID] | None = None
    definition_ids: Sequence[UUID] | None = None
    process_keys: Sequence[str] | None = None
    node_ids: Sequence[str] | None = None
    token_ids: Sequence[UUID] | None = None
    #: The failed task's id (Camunda's ``configuration``: the job or external task id).
    task_ids: Sequence[UUID] | None = None
    message: str | None = None
    message_like: str | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    resolved_before: datetime | None = None
    resolved_after: datetime | None = None
    #: None: open and resolved; True: resolved only; False: open only.
    resolved: bool | None = None
    none: bool = False


@dataclass(frozen=True)
class FoundIncident:
    incident: IncidentRow
    type: str
    definition_id: UUID
    process_key: str


SORTS: dict[str, ColumnElement[Any]] = {
    "id": t.c.id,
    "created": t.c.created_at,
    "resolved": t.c.resolved_at,
    "type": TYPE,
    "instance_id": t.c.instance_id,
    "definition_id": p.c.process_def_id,
    "node_id": t.c.node_id,
    "token_id": t.c.token_id,
    "task_id": t.c.task_id,
    "message": t.c.message,
}


def find(conn: Connection, q: IncidentQuery, page: Page) -> list[FoundIncident]:
    stmt = select(*_COLS, TYPE, p.c.process_def_id, p.c.process_key)
    stmt = ordered(_where(stmt, q), page, SORTS, (t.c.created_at, t.c.id))
    n = len(_COLS)
    rows = conn.execute(stmt).all()
    return [FoundIncident(IncidentRow(*r[:n]), r[n], r[n + 1], r[n + 2]) for r in rows]


def count(conn: Connection, q: IncidentQuery) -> int:
    found: int = conn.execute(_where(select(func.count()), q)).scalar_one()
    return found


def _where(stmt: Any, q: IncidentQuery) -> Any:
    stmt = (
        stmt.select_from(t)
        .join(p, p.c.id == t.c.instance_id)
        .outerjoin(task_table, task_table.c.id == t.c.task_id)
    )
    conds: list[Any] = []
    if q.none:
        conds.append(t.c.id.is_(None))
    if q.open_only or q.resolved is False:
        conds.append(t.c.state == IncidentState.OPEN)
    if q.resolved:
        conds.append(t.c.state == IncidentState.RESOLVED)
    for column, wanted in (
        (t.c.id, q.incident_ids),
        (TYPE, q.types),
        (t.c.instance_id, q.instance_ids),
        (p.c.process_def_id, q.definition_ids),
        (p.c.process_key, q.process_keys),
        (t.c.node_id, q.node_ids),
        (t.c.token_id, q.token_ids),
        (t.c.task_id, q.task_ids),
    ):
        if wanted is not None:
            conds.append(column.in_(list(wanted)))
    if q.message is not None:
        conds.append(t.c.message == q.message)
    if q.message_like is not None:
        conds.append(like(t.c.message, q.message_like))
    for column, before, after in (
        (t.c.created_at, q.created_before, q.created_after),
        (t.c.resolved_at, q.resolved_before, q.resolved_after),
    ):
        if before is not None:
            conds.append(column < before)
        if after is not None:
            conds.append(column > after)
    return stmt.where(and_(*conds)) if conds else stmt
