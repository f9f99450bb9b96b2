"""Searches over live process instances (the API's ``GET /process-instance``), by their own
facts, their definition, open incidents and variable values.

Variable conditions are PostgreSQL only (JSONB): equality compares JSON values exactly (the
string ``"5"`` is not the number 5); ``gt``/``gteq``/``lt``/``lteq`` compare numbers with
numbers and strings with strings; ``like`` matches strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Numeric, Text, cast, exists, func, literal_column, select

from bpm.states import LIVE_INSTANCE, IncidentState
from bpm.store.instances import _COLS
from bpm.store.paging import Page, like, ordered
from bpm.store.rows import InstanceRow, from_row
from bpm.store.schema import incidents as incident_t
from bpm.store.schema import process_instances as t
from bpm.store.schema import variables as v


class VariableOp(StrEnum):
    """Camunda's variable query operators."""

    EQ = "eq"
    NEQ = "neq"
    GT = "gt"
    GTEQ = "gteq"
    LT = "lt"
    LTEQ = "lteq"
    LIKE = "like"


@dataclass(frozen=True)
class VariableCondition:
    name: str
    op: VariableOp
    value: Any


@dataclass(frozen=True)
class LiveInstanceQuery:
    """Which live (running or failed) instances: every field that is set must match."""

    ids: Sequence[UUID] | None = None
    business_key: str | None = None
    business_key_like: str | None = None
    keys: Sequence[str] | None = None
    definition_ids: Sequence[UUID] | None = None
    with_incident: bool = False
    incident_ids: Sequence[UUID] | None = None
    #: The instances this one's call activities started (Camunda's ``superProcessInstance``).
    called_by: UUID | None = None
    #: The instance whose call activity started this one (``subProcessInstance``).
    calling: UUID | None = None
    #: Only instances no call activity started (``rootProcessInstances``).
    only_roots: bool = False
    variables: Sequence[VariableCondition] = ()


SORTS = {
    "instanceId": t.c.id,
    "definitionKey": t.c.process_key,
    "definitionId": t.c.process_def_id,
    "businessKey": t.c.business_key,
    "startTime": t.c.started_at,
}


def _condition(c: VariableCondition) -> Any:
    text = v.c.value.op("#>>", return_type=Text())(literal_column("'{}'"))
    kind = func.jsonb_typeof(v.c.value)
    match c.op:
        case VariableOp.EQ:
            test: Any = v.c.value == c.value
        case VariableOp.NEQ:
            test = v.c.value != c.value
        case VariableOp.LIKE:
            test = (kind == "string") & like(text, str(c.value))
        case _:
            number = isinstance(c.value, int | float) and not isinstance(c.value, bool)
            left = cast(text, Numeric) if number else text
            compared = {
                VariableOp.GT: left > c.value,
                VariableOp.GTEQ: left >= c.value,
                VariableOp.LT: left < c.value,
                VariableOp.LTEQ: left <= c.value,
            }[c.op]
            test = (kind == ("number" if number else "string")) & compared
    return exists().where(v.c.instance_id == t.c.id, v.c.name == c.name, test)


def _where(stmt: Any, f: LiveInstanceQuery) -> Any:
    stmt = stmt.where(t.c.state.in_(sorted(LIVE_INSTANCE)))
    if f.ids is not None:
        stmt = stmt.where(t.c.id.in_(list(f.ids)))
    if f.business_key is not None:
        stmt = stmt.where(t.c.business_key == f.business_key)
    if f.business_key_like is not None:
        stmt = stmt.where(like(t.c.business_key, f.business_key_like))
    if f.keys is not None:
        stmt = stmt.where(t.c.process_key.in_(list(f.keys)))
    if f.definition_ids is not None:
        stmt = stmt.where(t.c.process_def_id.in_(list(f.definition_ids)))
    if f.with_incident or f.incident_ids is not None:
        open_incident = exists().where(
            incident_t.c.instance_id == t.c.id, incident_t.c.state == IncidentState.OPEN
        )
        if f.incident_ids is not None:
            open_incident = open_incident.where(incident_t.c.id.in_(list(f.incident_ids)))
        stmt = stmt.where(open_incident)
    if f.called_by is not None:
        stmt = stmt.where(t.c.super_instance_id == f.called_by)
    if f.calling is not None:
        sub = t.alias("sub")
        stmt = stmt.where(
            t.c.id == select(sub.c.super_instance_id).where(sub.c.id == f.calling).scalar_subquery()
        )
    if f.only_roots:
        stmt = stmt.where(t.c.super_instance_id.is_(None))
    for c in f.variables:
        stmt = stmt.where(_condition(c))
    return stmt


def find(conn: Connection, f: LiveInstanceQuery, page: Page) -> list[InstanceRow]:
    """In ``page``'s order, then oldest first."""
    stmt = ordered(_where(select(*_COLS), f), page, SORTS, (t.c.started_at, t.c.id))
    return [from_row(InstanceRow, row) for row in conn.execute(stmt)]


def count(conn: Connection, f: LiveInstanceQuery) -> int:
    return int(conn.execute(_where(select(func.count()).select_from(t), f)).scalar_one())
