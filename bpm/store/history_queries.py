"""Searches over instances as history (running and ended, until retention deletes them) and
over the variables they hold, with their definitions' facts (the API's history lists)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, and_, exists, func, select

from bpm.states import LIVE_INSTANCE, IncidentState
from bpm.store.paging import Page, like, ordered
from bpm.store.queries import _COLS
from bpm.store.rows import InstanceRow
from bpm.store.schema import incidents as incident_table
from bpm.store.schema import process_definitions as d
from bpm.store.schema import process_instances as t
from bpm.store.schema import variables as v


@dataclass(frozen=True)
class InstanceHistoryQuery:
    """Which instances: every field that is set must match. ``with_incidents``: any
    incident, open or resolved; ``with_open_incidents``: an open one."""

    instance_ids: Sequence[UUID] | None = None
    business_key: str | None = None
    business_key_like: str | None = None
    definition_ids: Sequence[UUID] | None = None
    process_keys: Sequence[str] | None = None
    states: Sequence[str] | None = None
    finished: bool | None = None
    started_before: datetime | None = None
    started_after: datetime | None = None
    finished_before: datetime | None = None
    finished_after: datetime | None = None
    with_incidents: bool = False
    with_open_incidents: bool = False
    #: The instances these instances' call activities started (``superProcessInstanceId``).
    called_by: Sequence[UUID] | None = None
    #: The instances whose call activities started these (``subProcessInstanceId``).
    calling: Sequence[UUID] | None = None
    none: bool = False


@dataclass(frozen=True)
class FoundInstance:
    instance: InstanceRow
    definition_name: str
    definition_version: int


@dataclass(frozen=True)
class VariableQuery:
    instance_ids: Sequence[UUID] | None = None
    names: Sequence[str] | None = None
    name_like: str | None = None
    definition_ids: Sequence[UUID] | None = None
    process_keys: Sequence[str] | None = None
    #: Only the variables of running and failed instances (Camunda's runtime variables).
    live_only: bool = False
    none: bool = False


@dataclass(frozen=True)
class FoundVariable:
    instance_id: UUID
    name: str
    value: Any
    updated_at: datetime
    definition_id: UUID
    process_key: str


INSTANCE_SORTS: dict[str, ColumnElement[Any]] = {
    "id": t.c.id,
    "definition_id": t.c.process_def_id,
    "process_key": t.c.process_key,
    "definition_name": d.c.name,
    "definition_version": d.c.version,
    "business_key": t.c.business_key,
    "started": t.c.started_at,
    "ended": t.c.ended_at,
    "duration": t.c.ended_at - t.c.started_at,
}
VARIABLE_SORTS: dict[str, ColumnElement[Any]] = {
    "instance_id": v.c.instance_id,
    "name": v.c.name,
}


def find_instances(conn: Connection, q: InstanceHistoryQuery, page: Page) -> list[FoundInstance]:
    stmt = select(*_COLS, d.c.name, d.c.version)
    stmt = ordered(_instances(stmt, q), page, INSTANCE_SORTS, (t.c.started_at, t.c.id))
    n = len(_COLS)
    return [FoundInstance(InstanceRow(*r[:n]), r[n], r[n + 1]) for r in conn.execute(stmt).all()]


def count_instances(conn: Connection, q: InstanceHistoryQuery) -> int:
    found: int = conn.execute(_instances(select(func.count()), q)).scalar_one()
    return found


def _instances(stmt: Any, q: InstanceHistoryQuery) -> Any:
    stmt = stmt.select_from(t).join(d, d.c.id == t.c.process_def_id)
    conds: list[Any] = []
    if q.none:
        conds.append(t.c.id.is_(None))
    for column, wanted in (
        (t.c.id, q.instance_ids),
        (t.c.process_def_id, q.definition_ids),
        (t.c.process_key, q.process_keys),
        (t.c.state, q.states),
    ):
        if wanted is not None:
            conds.append(column.in_(list(wanted)))
    if q.business_key is not None:
        conds.append(t.c.business_key == q.business_key)
    if q.business_key_like is not None:
        conds.append(like(t.c.business_key, q.business_key_like))
    if q.finished is not None:
        conds.append(t.c.ended_at.is_not(None) if q.finished else t.c.ended_at.is_(None))
    for column, before, after in (
        (t.c.started_at, q.started_before, q.started_after),
        (t.c.ended_at, q.finished_before, q.finished_after),
    ):
        if before is not None:
            conds.append(column < before)
        if after is not None:
            conds.append(column > after)
    if q.called_by is not None:
        conds.append(t.c.super_instance_id.in_(list(q.called_by)))
    if q.calling is not None:
        sub = t.alias("sub")
        callers = select(sub.c.super_instance_id).where(sub.c.id.in_(list(q.calling)))
        conds.append(t.c.id.in_(callers))
    if q.with_incidents or q.with_open_incidents:
        has = exists().where(incident_table.c.instance_id == t.c.id)
        if q.with_open_incidents:
            has = has.where(incident_table.c.state == IncidentState.OPEN)
        conds.append(has)
    return stmt.where(and_(*conds)) if conds else stmt


def find_variables(conn: Connection, q: VariableQuery, page: Page) -> list[FoundVariable]:
    stmt = select(
        v.c.instance_id, v.c.name, v.c.value, v.c.updated_at, t.c.process_def_id, t.c.process_key
    )
    stmt = ordered(_variables(stmt, q), page, VARIABLE_SORTS, (v.c.instance_id, v.c.name))
    return [FoundVariable(*r) for r in conn.execute(stmt).all()]


def count_variables(conn: Connection, q: VariableQuery) -> int:
    found: int = conn.execute(_variables(select(func.count()), q)).scalar_one()
    return found


def _variables(stmt: Any, q: VariableQuery) -> Any:
    stmt = stmt.select_from(v).join(t, t.c.id == v.c.instance_id)
    conds: list[Any] = []
    if q.none:
        conds.append(v.c.name.is_(None))
    for column, wanted in (
        (v.c.instance_id, q.instance_ids),
        (v.c.name, q.names),
        (t.c.process_def_id, q.definition_ids),
        (t.c.process_key, q.process_keys),
    ):
        if wanted is not None:
            conds.append(column.in_(list(wanted)))
    if q.name_like is not None:
        conds.append(like(v.c.name, q.name_like))
    if q.live_only:
        conds.append(t.c.state.in_(sorted(LIVE_INSTANCE)))
    return stmt.where(and_(*conds)) if conds else stmt
