"""Read-only queries across instances and their history (what happened,
where, to which instances). Every filter is served by an index on the instances table; history
rows are then read per instance through (instance_id, id)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict
from uuid import UUID

from sqlalchemy import Connection, exists, select

from bpm.states import IncidentState
from bpm.store import history
from bpm.store.instances import _COLS as instances_COLS
from bpm.store.rows import EventRow, InstanceRow, from_row
from bpm.store.schema import incidents as incident_table
from bpm.store.schema import process_definitions as definition_table
from bpm.store.schema import process_instances as t

_COLS = instances_COLS


@dataclass(frozen=True)
class InstanceFilter:
    """Which instances: every field that is set must match."""

    key: str | None = None
    version: int | None = None
    business_key: str | None = None
    state: str | None = None
    #: Instances alive at some point in [since, until]: started before ``until`` and not
    #: ended before ``since``.
    since: datetime | None = None
    until: datetime | None = None
    with_open_incidents: bool = False
    instance_id: UUID | None = None


class InstanceFields(TypedDict, total=False):
    """``InstanceFilter``'s fields as keyword arguments (the facade's filters)."""

    key: str | None
    version: int | None
    business_key: str | None
    state: str | None
    since: datetime | None
    until: datetime | None
    with_open_incidents: bool


def find_instances(conn: Connection, f: InstanceFilter, limit: int) -> list[InstanceRow]:
    """Newest first."""
    stmt = select(*_COLS).order_by(t.c.started_at.desc()).limit(limit)
    if f.instance_id is not None:
        stmt = stmt.where(t.c.id == f.instance_id)
    if f.key is not None:
        stmt = stmt.where(t.c.process_key == f.key)
    if f.version is not None:
        versions = select(definition_table.c.id).where(definition_table.c.version == f.version)
        if f.key is not None:
            versions = versions.where(definition_table.c.key == f.key)
        stmt = stmt.where(t.c.process_def_id.in_(versions))
    if f.business_key is not None:
        stmt = stmt.where(t.c.business_key == f.business_key)
    if f.state is not None:
        stmt = stmt.where(t.c.state == f.state)
    if f.until is not None:
        stmt = stmt.where(t.c.started_at <= f.until)
    if f.since is not None:
        stmt = stmt.where((t.c.ended_at.is_(None)) | (t.c.ended_at >= f.since))
    if f.with_open_incidents:
        stmt = stmt.where(
            exists().where(
                incident_table.c.instance_id == t.c.id, incident_table.c.state == IncidentState.OPEN
            )
        )
    return [from_row(InstanceRow, row) for row in conn.execute(stmt)]


def history_of(
    conn: Connection,
    instance_ids: Sequence[UUID],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    types: Sequence[str] = (),
    limit: int = 1000,
) -> list[EventRow]:
    """The instances' history rows in write order, within the time range and of the types."""
    out = [
        e
        for e in history.of_instances(conn, list(instance_ids))
        if (since is None or e.at >= since)
        and (until is None or e.at <= until)
        and (not types or e.type in types)
    ]
    return out[:limit]


def summary(row: InstanceRow) -> dict[str, Any]:
    return {
        "id": str(row.id),
        "key": row.process_key,
        "business_key": row.business_key,
        "state": row.state,
        "started_at": row.started_at.isoformat(),
        "ended_at": row.ended_at.isoformat() if row.ended_at else None,
        "definition_id": str(row.process_def_id),
    }
