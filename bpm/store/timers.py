"""Timer rows: a token's wait for a point in time (intermediate timer events and boundary
timers). A timer fires once: SCHEDULED -> FIRED (or CANCELLED) under its version."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import Connection, bindparam, exists, func, select

from bpm.states import TimerState
from bpm.store import instances
from bpm.store.rows import TimerRow, from_row
from bpm.store.schema import timers as t

_COLS = (
    t.c.id,
    t.c.token_id,
    t.c.instance_id,
    t.c.node_id,
    t.c.fire_at,
    t.c.state,
    t.c.version,
    t.c.created_at,
)
_BY_ID = select(*_COLS).where(t.c.id == bindparam("id"))
_OF_TOKEN = select(*_COLS).where(
    t.c.token_id == bindparam("token_id"), t.c.state == TimerState.SCHEDULED
)
# The instance row first, in the same statement (see ``instances.locked_first``).
_OWNER = select(t.c.instance_id).where(t.c.id == bindparam("id")).scalar_subquery()
_LOCK = _BY_ID.where(exists(select(instances.locked_first(_OWNER).c.id))).with_for_update(
    skip_locked=True
)
_OF_TOKEN_LOCKING = _OF_TOKEN.where(
    exists(select(instances.locked_first(bindparam("instance_id")).c.id))
)
_FINISH = (
    t.update()
    .where(
        t.c.id == bindparam("b_id"),
        t.c.version == bindparam("b_version"),
        t.c.state == TimerState.SCHEDULED,
    )
    .values(state=bindparam("state"), version=t.c.version + 1)
)


def insert(conn: Connection, rows: list[TimerRow]) -> None:
    if rows:
        conn.execute(t.insert(), [{c.name: getattr(r, c.name) for c in _COLS} for r in rows])


def get(conn: Connection, timer_id: UUID) -> TimerRow | None:
    row = conn.execute(_BY_ID, {"id": timer_id}).first()
    return from_row(TimerRow, row) if row else None


def lock(conn: Connection, timer_id: UUID) -> TimerRow | None:
    """The timer row locked for this transaction, or None if another holds it; on PostgreSQL
    its instance's row is locked first, by the same statement (that one is waited for)."""
    if conn.dialect.name == "postgresql":
        row = conn.execute(_LOCK, {"id": timer_id}).first()
    else:  # SQLite's writers take turns at the database
        row = conn.execute(_BY_ID, {"id": timer_id}).first()
    return from_row(TimerRow, row) if row else None


def finish(conn: Connection, timer: TimerRow, state: str) -> bool:
    """SCHEDULED -> ``state``; False when it was fired or cancelled in the meantime."""
    done = conn.execute(_FINISH, {"b_id": timer.id, "b_version": timer.version, "state": state})
    return done.rowcount == 1


def scheduled_of_token(
    conn: Connection, token_id: UUID, *, lock_instance: UUID | None = None
) -> list[TimerRow]:
    """The token's SCHEDULED timers; with ``lock_instance`` (PostgreSQL), the statement
    locks that instance's row first, for a caller about to change them."""
    params = {"token_id": token_id, "instance_id": lock_instance}
    locking = lock_instance is not None and conn.dialect.name == "postgresql"
    rows = conn.execute(_OF_TOKEN_LOCKING if locking else _OF_TOKEN, params)
    return [from_row(TimerRow, row) for row in rows]


def of_instance(conn: Connection, instance_id: UUID) -> list[TimerRow]:
    stmt = select(*_COLS).where(t.c.instance_id == instance_id).order_by(t.c.fire_at)
    return [from_row(TimerRow, row) for row in conn.execute(stmt)]


def claim_due(conn: Connection, now: datetime, limit: int) -> list[TimerRow]:
    """Due timers, oldest first, skipping rows another scanner holds (served by the partial
    index on SCHEDULED timers). Firing re-checks each one under its version."""
    stmt = (
        select(*_COLS)
        .where(t.c.state == TimerState.SCHEDULED, t.c.fire_at <= now)
        .order_by(t.c.fire_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [from_row(TimerRow, row) for row in conn.execute(stmt)]


def next_due(conn: Connection) -> datetime | None:
    """When the earliest SCHEDULED timer is due (embedded mode sleeps until then)."""
    return conn.execute(
        select(func.min(t.c.fire_at)).where(t.c.state == TimerState.SCHEDULED)
    ).scalar()
