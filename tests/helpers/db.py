"""Reading rows straight from the tables, to check what the engine left behind."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Table, func, select

from bpm.store import Database, compensation, incidents, instances, tasks, tokens
from bpm.store.rows import IncidentRow, InstanceRow, RecordRow, TaskRow, TokenRow
from bpm.store.schema import (
    engine_events,
    process_definitions,
    process_instances,
    task_events,
    token_events,
)

LIVE_TOKEN_STATES = ("ACTIVE", "WAITING")


def instance(db: Database, iid: UUID) -> InstanceRow:
    with db.transaction() as conn:
        row = instances.get(conn, iid)
    assert row is not None, f"instance {iid} does not exist"
    return row


def state(db: Database, iid: UUID) -> str:
    return instance(db, iid).state


def tokens_of(db: Database, iid: UUID) -> list[TokenRow]:
    with db.transaction() as conn:
        return tokens.of_instance(conn, iid)


def compensation_records(db: Database, iid: UUID) -> list[RecordRow]:
    with db.transaction() as conn:
        return compensation.of_instance(conn, iid)


def token(db: Database, token_id: UUID) -> TokenRow:
    with db.transaction() as conn:
        row = tokens.get(conn, token_id)
    assert row is not None
    return row


def tasks_of(db: Database, iid: UUID, node_id: str | None = None) -> list[TaskRow]:
    with db.transaction() as conn:
        rows = tasks.of_instance(conn, iid)
    return [t for t in rows if node_id is None or t.node_id == node_id]


def task(db: Database, task_id: UUID) -> TaskRow:
    with db.transaction() as conn:
        row = tasks.get(conn, task_id)
    assert row is not None
    return row


def only_task(db: Database, iid: UUID, node_id: str) -> TaskRow:
    rows = tasks_of(db, iid, node_id)
    assert len(rows) == 1, f"expected one task at {node_id!r}, found {len(rows)}"
    return rows[0]


def incidents_of(db: Database, iid: UUID, *, only_open: bool = False) -> list[IncidentRow]:
    with db.transaction() as conn:
        return incidents.of_instance(conn, iid, only_open=only_open)


def _events(db: Database, table: Table, iid: UUID | None, **where: Any) -> list[dict[str, Any]]:
    stmt = select(table).order_by(table.c.id)
    if iid is not None:
        stmt = stmt.where(table.c.instance_id == iid)
    for name, value in where.items():
        stmt = stmt.where(table.c[name] == value)
    with db.transaction() as conn:
        return [dict(row._mapping) for row in conn.execute(stmt)]


def token_events_of(db: Database, iid: UUID, **where: Any) -> list[dict[str, Any]]:
    return _events(db, token_events, iid, **where)


def task_events_of(db: Database, iid: UUID, **where: Any) -> list[dict[str, Any]]:
    return _events(db, task_events, iid, **where)


def engine_events_of(db: Database, iid: UUID | None, **where: Any) -> list[dict[str, Any]]:
    return _events(db, engine_events, iid, **where)


def engine_event_types(db: Database, iid: UUID, *, with_variables: bool = False) -> list[str]:
    """Engine event types in order; ``VariablesChanged`` rows only when asked for."""
    return [
        e["type"]
        for e in engine_events_of(db, iid)
        if with_variables or e["type"] != "VariablesChanged"
    ]


def count_rows(db: Database, table: Table) -> int:
    with db.transaction() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def count_definitions(db: Database) -> int:
    return count_rows(db, process_definitions)


def count_instances(db: Database) -> int:
    return count_rows(db, process_instances)


def history_size(db: Database) -> int:
    return sum(count_rows(db, t) for t in (token_events, task_events, engine_events))


def live_tokens(db: Database, iid: UUID) -> list[TokenRow]:
    return [t for t in tokens_of(db, iid) if t.state in LIVE_TOKEN_STATES]
