"""Append-only history: written in the transaction of the change it records (spec 2.4).

Rows are buffered per transaction and written with one multi-row INSERT per table just before
commit, which keeps the per-step statement count low.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, literal, select, union_all

from bpm.store.rows import EventRow
from bpm.store.schema import engine_events, task_events, token_events

_TABLES = {"token": token_events, "task": task_events, "engine": engine_events}


class HistoryBuffer:
    """Collects the history rows of one transaction."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {"token": [], "task": [], "engine": []}

    def token(self, *, instance_id: UUID, token_id: UUID, at: datetime, type: str,
              node_id: str | None, from_state: str | None, to_state: str | None,
              actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.rows["token"].append({
            "instance_id": instance_id, "token_id": token_id, "at": at, "type": type,
            "node_id": node_id, "from_state": from_state, "to_state": to_state, "actor": actor,
            "data": data})

    def task(self, *, instance_id: UUID, task_id: UUID, token_id: UUID, at: datetime, type: str,
             node_id: str | None, from_state: str | None, to_state: str | None,
             actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.rows["task"].append({
            "instance_id": instance_id, "task_id": task_id, "token_id": token_id, "at": at,
            "type": type, "node_id": node_id, "from_state": from_state, "to_state": to_state,
            "actor": actor, "data": data})

    def engine(self, *, instance_id: UUID | None, at: datetime, type: str,
               node_id: str | None = None, token_id: UUID | None = None,
               from_state: str | None = None, to_state: str | None = None,
               actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.rows["engine"].append({
            "instance_id": instance_id, "token_id": token_id, "at": at, "type": type,
            "node_id": node_id, "from_state": from_state, "to_state": to_state, "actor": actor,
            "data": data})

    def flush(self, conn: Connection) -> None:
        if conn.dialect.name == "postgresql":
            self._flush_one_statement(conn)
        for name, rows in self.rows.items():
            if rows:
                conn.execute(_TABLES[name].insert(), rows)
                rows.clear()

    def _flush_one_statement(self, conn: Connection) -> None:
        """PostgreSQL: every table's rows in one INSERT with data-modifying CTEs.

        One round trip instead of up to three; history is on every step's path.
        """
        parts = [(name, rows) for name, rows in self.rows.items() if rows]
        if len(parts) < 2:
            return
        (last_name, last_rows), others = parts[-1], parts[:-1]
        stmt = _TABLES[last_name].insert().values(last_rows)
        for name, rows in others:
            stmt = stmt.add_cte(_TABLES[name].insert().values(rows).cte(f"h_{name}"))
        conn.execute(stmt)
        for _, rows in parts:
            rows.clear()

    def __len__(self) -> int:
        return sum(len(rows) for rows in self.rows.values())


def of_instance(conn: Connection, instance_id: UUID) -> list[EventRow]:
    """Every history row of an instance, in the order it was written."""
    parts = []
    for name, table in _TABLES.items():
        parts.append(select(
            table.c.id, literal(name).label("tbl"), table.c.instance_id, table.c.at,
            table.c.type, table.c.node_id, table.c.from_state, table.c.to_state,
            table.c.token_id,
            (table.c.task_id if name == "task" else literal(None)).label("task_id"),
            table.c.actor, table.c.data,
        ).where(table.c.instance_id == instance_id))
    stmt = union_all(*parts).subquery()
    # PostgreSQL numbers all three tables from one sequence: the id is the true order.
    order = ((stmt.c.id,) if conn.dialect.name == "postgresql" else (stmt.c.at, stmt.c.id))
    rows = conn.execute(select(stmt).order_by(*order))
    return [_event(row) for row in rows]


def _event(row: Any) -> EventRow:
    task_id = row.task_id
    if task_id is not None and not isinstance(task_id, UUID):
        task_id = UUID(str(task_id))
    return EventRow(row.id, row.tbl, row.instance_id, row.at, row.type, row.node_id,
                    row.from_state, row.to_state, row.token_id, task_id, row.actor, row.data)
