"""Append-only history: written in the transaction of the change it records (spec 2.4).

Rows are buffered per transaction and written just before commit with ids that follow the
order they were recorded in, across all three tables, so a trace reads cause before effect.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, func, literal, select, text, union_all

from bpm.store.rows import EventRow
from bpm.store.schema import HISTORY_BLOCK, engine_events, task_events, token_events

_TABLES = {"token": token_events, "task": task_events, "engine": engine_events}


class HistoryBuffer:
    """Collects the history rows of one transaction, in the order the engine wrote them."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, dict[str, Any]]] = []

    def token(self, *, instance_id: UUID, token_id: UUID, at: datetime, type: str,
              node_id: str | None, from_state: str | None, to_state: str | None,
              actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.rows.append(("token", {
            "instance_id": instance_id, "token_id": token_id, "at": at, "type": type,
            "node_id": node_id, "from_state": from_state, "to_state": to_state, "actor": actor,
            "data": data}))

    def task(self, *, instance_id: UUID, task_id: UUID, token_id: UUID, at: datetime, type: str,
             node_id: str | None, from_state: str | None, to_state: str | None,
             actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.rows.append(("task", {
            "instance_id": instance_id, "task_id": task_id, "token_id": token_id, "at": at,
            "type": type, "node_id": node_id, "from_state": from_state, "to_state": to_state,
            "actor": actor, "data": data}))

    def engine(self, *, instance_id: UUID | None, at: datetime, type: str,
               node_id: str | None = None, token_id: UUID | None = None,
               from_state: str | None = None, to_state: str | None = None,
               actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.rows.append(("engine", {
            "instance_id": instance_id, "token_id": token_id, "at": at, "type": type,
            "node_id": node_id, "from_state": from_state, "to_state": to_state, "actor": actor,
            "data": data}))

    def flush(self, conn: Connection) -> None:
        """Write the rows with ids that follow the order they were recorded in.

        PostgreSQL: one ``nextval`` reserves a block of ``HISTORY_BLOCK`` ids (the sequence
        steps by that much), and a single statement inserts into all three tables. SQLite holds
        its write lock for the whole transaction, so the next free id is simply read.
        """
        if not self.rows:
            return
        if conn.dialect.name == "postgresql" and len(self.rows) <= HISTORY_BLOCK:
            self._flush_block(conn)
        else:
            self._flush_explicit(conn, _next_ids(conn, len(self.rows)))
        self.rows.clear()

    def _flush_block(self, conn: Connection) -> None:
        from psycopg.types.json import Jsonb  # PostgreSQL only; embedded SQLite needs no psycopg

        conn.exec_driver_sql(_BLOCK_INSERT, self.params(Jsonb))

    def params(self, jsonb: Any) -> dict[str, list[Any]]:
        """The rows as one array per table and column, numbered ``k`` in recorded order."""
        params: dict[str, list[Any]] = {}
        for name in _TABLES:
            for column in (*_COMMON, *_EXTRA[name]):
                params[f"{name}_{column}"] = []
        for k, (name, row) in enumerate(self.rows):
            params[f"{name}_k"].append(k)
            for column in (*_COMMON[1:], *_EXTRA[name]):
                value = row[column]
                params[f"{name}_{column}"].append(
                    jsonb(value) if column == "data" and value is not None else value)
        return params

    def _flush_explicit(self, conn: Connection, ids: list[int]) -> None:
        by_table: dict[str, list[dict[str, Any]]] = {}
        for row_id, (name, row) in zip(ids, self.rows, strict=True):
            by_table.setdefault(name, []).append({**row, "id": row_id})
        for name, rows in by_table.items():
            conn.execute(_TABLES[name].insert(), rows)

    def __len__(self) -> int:
        return len(self.rows)


_COMMON = ("k", "instance_id", "at", "type", "node_id", "from_state", "to_state", "actor", "data")
_TYPES = {"k": "int", "instance_id": "uuid", "at": "timestamptz", "data": "jsonb",
          "token_id": "uuid", "task_id": "uuid"}
_EXTRA = {"token": ("token_id",), "task": ("task_id", "token_id"), "engine": ("token_id",)}


def _block_insert() -> str:
    """One fixed statement (so the server prepares it once) for all three tables.

    One ``nextval`` reserves the block; each table's rows come in as arrays, one per column,
    numbered ``k`` in the order they were recorded.
    """
    parts = ["WITH base AS (SELECT nextval('bpm_history_seq') AS b)"]
    inserts = []
    for name, table in _TABLES.items():
        columns = [c for c in (*_COMMON, *_EXTRA[name]) if c != "k"]
        arrays = ", ".join(f"%({name}_{c})s::{_TYPES.get(c, 'text')}[]"
                           for c in ("k", *columns))
        inserts.append(
            f"INSERT INTO {table.name} (id, {', '.join(columns)}) "
            f"SELECT base.b + u.k, {', '.join('u.' + c for c in columns)} "
            f"FROM base, unnest({arrays}) AS u(k, {', '.join(columns)})")
    parts += [f", h_{i} AS ({sql})" for i, sql in enumerate(inserts[:-1])]
    return " ".join(parts) + " " + inserts[-1]


_BLOCK_INSERT = _block_insert()


def _next_ids(conn: Connection, count: int) -> list[int]:
    """Increasing ids for ``count`` rows (a large transaction, or SQLite)."""
    if conn.dialect.name == "postgresql":
        bases = conn.execute(text(
            "SELECT nextval('bpm_history_seq') FROM generate_series(1, :n) ORDER BY 1"),
            {"n": (count + HISTORY_BLOCK - 1) // HISTORY_BLOCK}).scalars().all()
        return [b + k for b in bases for k in range(HISTORY_BLOCK)][:count]
    top = conn.execute(select(func.max(union_all(
        *(select(func.max(t.c.id).label("m")) for t in _TABLES.values())).subquery().c.m)))
    start = (top.scalar() or 0) + 1
    return list(range(start, start + count))


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
    # All three tables share one increasing numbering: the id is the order of writing.
    rows = conn.execute(select(stmt).order_by(stmt.c.id))
    return [_event(row) for row in rows]


def _event(row: Any) -> EventRow:
    task_id = row.task_id
    if task_id is not None and not isinstance(task_id, UUID):
        task_id = UUID(str(task_id))
    return EventRow(row.id, row.tbl, row.instance_id, row.at, row.type, row.node_id,
                    row.from_state, row.to_state, row.token_id, task_id, row.actor, row.data)
