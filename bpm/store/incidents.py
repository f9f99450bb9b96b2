"""Incidents: what an operator must look at (a failed token, a gateway with no way out)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import Connection, bindparam, select

from bpm.states import IncidentState
from bpm.store.ids import new_id
from bpm.store.rows import IncidentRow, from_row
from bpm.store.schema import incidents as t

_COLS = (
    t.c.id,
    t.c.instance_id,
    t.c.token_id,
    t.c.task_id,
    t.c.node_id,
    t.c.kind,
    t.c.message,
    t.c.details,
    t.c.state,
    t.c.version,
    t.c.created_at,
    t.c.resolved_at,
)
_RESOLVE = (
    t.update()
    .where(
        t.c.id == bindparam("b_id"),
        t.c.version == bindparam("b_version"),
        t.c.state == IncidentState.OPEN,
    )
    .values(state=IncidentState.RESOLVED, version=t.c.version + 1, resolved_at=bindparam("now"))
)


def open_incident(
    conn: Connection,
    *,
    instance_id: UUID,
    token_id: UUID | None,
    task_id: UUID | None,
    node_id: str | None,
    kind: str,
    message: str,
    details: str | None,
    now: datetime,
) -> IncidentRow:
    row = IncidentRow(
        new_id(),
        instance_id,
        token_id,
        task_id,
        node_id,
        kind,
        message,
        details,
        IncidentState.OPEN,
        0,
        now,
        None,
    )
    conn.execute(t.insert(), {c.name: getattr(row, c.name) for c in _COLS})
    return row


def of_instance(
    conn: Connection, instance_id: UUID, *, only_open: bool = False
) -> list[IncidentRow]:
    stmt = select(*_COLS).where(t.c.instance_id == instance_id).order_by(t.c.created_at)
    if only_open:
        stmt = stmt.where(t.c.state == IncidentState.OPEN)
    return [from_row(IncidentRow, row) for row in conn.execute(stmt)]


def open_of_token(conn: Connection, token_id: UUID) -> list[IncidentRow]:
    stmt = select(*_COLS).where(t.c.token_id == token_id, t.c.state == IncidentState.OPEN)
    return [from_row(IncidentRow, row) for row in conn.execute(stmt)]


def all_open(conn: Connection, limit: int = 100) -> list[IncidentRow]:
    stmt = (
        select(*_COLS).where(t.c.state == IncidentState.OPEN).order_by(t.c.created_at).limit(limit)
    )
    return [from_row(IncidentRow, row) for row in conn.execute(stmt)]


def resolve(conn: Connection, incident: IncidentRow, now: datetime) -> bool:
    result = conn.execute(
        _RESOLVE, {"b_id": incident.id, "b_version": incident.version, "now": now}
    )
    return result.rowcount == 1


def get(conn: Connection, incident_id: UUID) -> IncidentRow | None:
    row = conn.execute(select(*_COLS).where(t.c.id == incident_id)).first()
    return from_row(IncidentRow, row) if row else None
