"""The schedule of timer start events: one row per timer start event of each key's latest
definition, with when it fires next. The timer scan reads the due ones; the transaction that
fires one locks its row and moves it on under its version, so two scanners never fire one due
time twice."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from sqlalchemy import Connection, func, select

from bpm.store.schema import definition_start_timers as t


@dataclass(frozen=True)
class StartTimer:
    definition_id: UUID
    node_id: str
    fire_at: datetime
    armed_at: datetime
    fired: int
    version: int


_COLS = (t.c.definition_id, t.c.node_id, t.c.fire_at, t.c.armed_at, t.c.fired, t.c.version)


def arm(
    conn: Connection, definition_id: UUID, node_id: str, fire_at: datetime, now: datetime
) -> None:
    conn.execute(
        t.insert(),
        {
            "definition_id": definition_id,
            "node_id": node_id,
            "fire_at": fire_at,
            "armed_at": now,
            "fired": 0,
            "version": 0,
        },
    )


def disarm(conn: Connection, definition_ids: list[UUID]) -> None:
    """The schedule of these definitions ends (a newer version replaced them, or they go)."""
    if definition_ids:
        conn.execute(t.delete().where(t.c.definition_id.in_(definition_ids)))


def due(conn: Connection, now: datetime, limit: int) -> list[StartTimer]:
    stmt = select(*_COLS).where(t.c.fire_at <= now).order_by(t.c.fire_at).limit(limit)
    return [StartTimer(*row) for row in conn.execute(stmt)]


def lock(conn: Connection, timer: StartTimer) -> StartTimer | None:
    """The row as it is now, locked; None when another scanner holds it."""
    stmt = (
        select(*_COLS)
        .where(t.c.definition_id == timer.definition_id, t.c.node_id == timer.node_id)
        .with_for_update(skip_locked=True)
    )
    row = conn.execute(stmt).first()
    return StartTimer(*row) if row is not None else None


def move_on(conn: Connection, timer: StartTimer, fire_at: datetime | None) -> bool:
    """The tick fired: the next one, or (``fire_at`` None) the timer is done; under its
    version."""
    where = (
        t.c.definition_id == timer.definition_id,
        t.c.node_id == timer.node_id,
        t.c.version == timer.version,
    )
    if fire_at is None:
        return conn.execute(t.delete().where(*where)).rowcount == 1
    stmt = (
        t.update()
        .where(*where)
        .values(fire_at=fire_at, fired=timer.fired + 1, version=timer.version + 1)
    )
    return conn.execute(stmt).rowcount == 1


def next_due(conn: Connection) -> datetime | None:
    return conn.execute(select(func.min(t.c.fire_at))).scalar()


def of_definition(conn: Connection, definition_id: UUID) -> list[StartTimer]:
    stmt = select(*_COLS).where(t.c.definition_id == definition_id).order_by(t.c.node_id)
    return [StartTimer(*row) for row in conn.execute(stmt)]


def all_armed(conn: Connection) -> list[StartTimer]:
    stmt = select(*_COLS).order_by(t.c.fire_at)
    return [StartTimer(*row) for row in conn.execute(stmt)]
