"""Append-only history: written in the transaction of the change it records.

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

TABLES = {"token": token_events, "task": task_events, "engine": engine_events}


class HistoryBuffer:
    """Collects the history rows of one transaction, in the order the engine wrote them."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, dict[str, Any]]] = []

    def token(
        self,
        *,
        instance_id: UUID,
        token_id: UUID,
        at: datetime,
        type: str,
        node_id: str | None,
        from_state: str | None,
        to_state: str | None,
        actor: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.rows.append(
            (
                "token",
                {
                    "instance_id": instance_id,
                    "token_id": token_id,
                    "at": at,
                    "type": type,
                    "node_id": node_id,
                    "from_state": from_state,
                    "to_state": to_state,
                    "actor": actor,
                    "data": data,
                },
            )
        )

    def task(
        self,
        *,
        instance_id: UUID,
        task_id: UUID,
        token_id: UUID,
        at: datetime,
        type: str,
        node_id: str | None,
        from_state: str | None,
        to_state: str | None,
        actor: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.rows.append(
            (
                "task",
                {
                    "instance_id": instance_id,
                    "task_id": task_id,
                    "token_id": token_id,
                    "at": at,
                    "type": type,
                    "node_id": node_id,
                    "from_state": from_state,
                    "to_state": to_state,
                    "actor": actor,
                    "data": data,
                },
            )
        )

    def engine(
        self,
        *,
        instance_id: UUID | None,
        at: datetime,
        type: str,
        node_id: str | None = None,
        token_id: UUID | None = None,
        from_state: str | None = None,
        to_state: str | None = None,
        actor: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Returns the row, for a writer that fills in a value only the write learns."""
        row = {
            "instance_id": instance_id,
            "token_id": token_id,
            "at": at,
            "type": type,
            "node_id": node_id,
            "from_state": from_state,
            "to_state": to_state,
            "actor": actor,
            "data": data,
        }
        self.rows.append(("engine", row))
        return row

    def flush(self, conn: Connection) -> None:
        """Write the rows with ids that follow the order they were recorded in.

        The engine's usual path is ``WriteBatch``, which reserves the ids in the same statement
        on PostgreSQL; this path serves SQLite and unusually large transactions.
        """
        if not self.rows:
            return
        self._flush_explicit(conn, _next_ids(conn, len(self.rows)))
        self.rows.clear()

    def _flush_explicit(self, conn: Connection, ids: list[int]) -> None:
        by_table: dict[str, list[dict[str, Any]]] = {}
        for row_id, (name, row) in zip(ids, self.rows, strict=True):
            by_table.setdefault(name, []).append({**row, "id": row_id})
        for name, rows in by_table.items():
            conn.execute(TABLES[name].insert(), rows)

    def __len__(self) -> int:
        return len(self.rows)


#: The columns every history table has, and those only some have (``k`` numbers the rows of
#: one transaction in recorded order; it becomes the offset in the transaction's id block).
COMMON_COLUMNS = (
    "k",
    "instance_id",
    "at",
    "type",
    "node_id",
    "from_state",
    "to_state",
    "actor",
    "data",
    "cause",
)
EXTRA_COLUMNS = {"token": ("token_id",), "task": ("task_id", "token_id"), "engine": ("token_id",)}


def _next_ids(conn: Connection, count: int) -> list[int]:
    """Increasing ids for ``count`` rows (a large transaction, or SQLite)."""
    if conn.dialect.name == "postgresql":
        bases = (
            conn.execute(
                text("SELECT nextval('bpm_history_seq') FROM generate_series(1, :n) ORDER BY 1"),
                {"n": (count + HISTORY_BLOCK - 1) // HISTORY_BLOCK},
            )
            .scalars()
            .all()
        )
        return [b + k for b in bases for k in range(HISTORY_BLOCK)][:count]
    top = conn.execute(
        select(
            func.max(
                union_all(*(select(func.max(t.c.id).label("m")) for t in TABLES.values()))
                .subquery()
                .c.m
            )
        )
    )
    start = (top.scalar() or 0) + 1
    return list(range(start, start + count))


def of_instance(conn: Connection, instance_id: UUID) -> list[EventRow]:
    """Every history row of an instance, in the order it was written."""
    return of_instances(conn, [instance_id])


def of_instances(conn: Connection, instance_ids: list[UUID]) -> list[EventRow]:
    """Every history row of these instances, in the order it was written (one query)."""
    if not instance_ids:
        return []
    parts = []
    for name, table in TABLES.items():
        parts.append(
            select(
                table.c.id,
                literal(name).label("tbl"),
                table.c.instance_id,
                table.c.at,
                table.c.type,
                table.c.node_id,
                table.c.from_state,
                table.c.to_state,
                table.c.token_id,
                (table.c.task_id if name == "task" else literal(None)).label("task_id"),
                table.c.actor,
                table.c.data,
                table.c.cause,
            ).where(table.c.instance_id.in_(instance_ids))
        )
    stmt = union_all(*parts).subquery()
    # All three tables share one increasing numbering: the id is the order of writing.
    rows = conn.execute(select(stmt).order_by(stmt.c.id))
    return [_event(row) for row in rows]


def _event(row: Any) -> EventRow:
    task_id = row.task_id
    if task_id is not None and not isinstance(task_id, UUID):
        task_id = UUID(str(task_id))
    return EventRow(
        row.id,
        row.tbl,
        row.instance_id,
        row.at,
        row.type,
        row.node_id,
        row.from_state,
        row.to_state,
        row.token_id,
        task_id,
        row.actor,
        row.data,
        row.cause,
    )


def last_engine_event(
    conn: Connection, instance_id: UUID, kind: str
) -> tuple[str | None, dict[str, Any] | None] | None:
    """The node and data of the instance's latest engine event of type ``kind`` (one row,
    through the instance's history index), or None when it has none."""
    t = engine_events
    stmt = (
        select(t.c.node_id, t.c.data)
        .where(t.c.instance_id == instance_id, t.c.type == kind)
        .order_by(t.c.id.desc())
        .limit(1)
    )
    row = conn.execute(stmt).first()
    return (row.node_id, row.data) if row is not None else None


def engine_events_of(
    conn: Connection, instance_id: UUID, kinds: tuple[str, ...]
) -> list[tuple[str, str | None, dict[str, Any] | None]]:
    """The type, node and data of the instance's engine events of the given types, in the
    order they were written (through the instance's history index)."""
    t = engine_events
    stmt = (
        select(t.c.type, t.c.node_id, t.c.data)
        .where(t.c.instance_id == instance_id, t.c.type.in_(kinds))
        .order_by(t.c.id)
    )
    return [(row.type, row.node_id, row.data) for row in conn.execute(stmt)]
