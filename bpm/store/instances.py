"""Process instance rows."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import CTE, ColumnElement, Connection, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from bpm.errors import UnknownProcess
from bpm.store.db import pg_sql, raw_one
from bpm.store.rows import InstanceRow, from_row
from bpm.store.schema import process_instances as t

_COLS = (
    t.c.id,
    t.c.process_def_id,
    t.c.process_key,
    t.c.business_key,
    t.c.idempotency_key,
    t.c.state,
    t.c.version,
    t.c.started_at,
    t.c.updated_at,
    t.c.ended_at,
    t.c.super_instance_id,
    t.c.super_token_id,
    t.c.root_instance_id,
)
#: The columns of an ``InstanceRow``, in its field order.
COLUMNS = _COLS
_BY_ID = select(*_COLS).where(t.c.id == bindparam("id"))
_BY_ID_PG = pg_sql(_BY_ID)
_LOCKED_PG = pg_sql(_BY_ID.with_for_update(key_share=True))
_BY_IDEMPOTENCY = select(*_COLS).where(
    t.c.process_key == bindparam("key"), t.c.idempotency_key == bindparam("ikey")
)
_SET_STATE = (
    t.update()
    .where(t.c.id == bindparam("b_id"), t.c.version == bindparam("b_version"))
    .values(
        state=bindparam("state"),
        version=t.c.version + 1,
        updated_at=bindparam("now"),
        ended_at=bindparam("ended_at"),
    )
)


def get(conn: Connection, instance_id: UUID, *, for_update: bool = False) -> InstanceRow | None:
    # FOR NO KEY UPDATE: inserting rows that reference the instance (FOR KEY SHARE) goes on.
    if conn.dialect.name == "postgresql":  # read or locked by most decisions: the driver's
        found = raw_one(conn, _LOCKED_PG if for_update else _BY_ID_PG, {"id": instance_id})
        return InstanceRow(*found) if found is not None else None
    stmt = _BY_ID.with_for_update(key_share=True) if for_update else _BY_ID
    row = conn.execute(stmt, {"id": instance_id}).first()
    return from_row(InstanceRow, row) if row else None


def locked_first(instance_id: ColumnElement[Any]) -> CTE:
    """The instance row ``instance_id`` names, locked (FOR NO KEY UPDATE) by a CTE. A
    statement whose WHERE clause says ``exists(select(cte.c.id))`` takes this lock before
    any row of its own: PostgreSQL evaluates an uncorrelated EXISTS once, before its scan.
    So a statement that locks or changes a row of an instance can lock the instance first
    without a round trip of its own."""
    return select(t.c.id).where(t.c.id == instance_id).with_for_update(key_share=True).cte("inst")


def by_idempotency_key(conn: Connection, key: str, ikey: str) -> InstanceRow | None:
    row = conn.execute(_BY_IDEMPOTENCY, {"key": key, "ikey": ikey}).first()
    return from_row(InstanceRow, row) if row else None


def _insert_new(dialect: str) -> Any:
    ins = postgresql.insert(t) if dialect == "postgresql" else sqlite.insert(t)
    return ins.on_conflict_do_nothing(
        index_elements=[t.c.process_key, t.c.idempotency_key]
    ).returning(t.c.id)


_INSERTS = {"postgresql": _insert_new("postgresql"), "sqlite": _insert_new("sqlite")}


#: PostgreSQL's foreign_key_violation.
FOREIGN_KEY_SQLSTATE = "23503"
#: The name of the foreign key from an instance to its definition.
DEFINITION_FK = "fk_process_instances_process_def_id_process_definitions"


def insert(conn: Connection, row: InstanceRow) -> bool:
    """Insert; False when another start already took this idempotency key."""
    try:
        return _insert(conn, row)
    except IntegrityError as exc:
        if getattr(exc.orig, "sqlstate", None) != FOREIGN_KEY_SQLSTATE:
            raise
        # Its deployment was deleted after the start read the definition: the delete locks
        # the definition rows, so this insert waited for it and then found none.
        raise UnknownProcess(
            f"process definition {row.process_key!r} was deleted (with its deployment) while"
            " this start ran; nothing was started"
        ) from None


def _insert(conn: Connection, row: InstanceRow) -> bool:
    result = conn.execute(
        _INSERTS[conn.dialect.name],
        {
            "id": row.id,
            "process_def_id": row.process_def_id,
            "process_key": row.process_key,
            "business_key": row.business_key,
            "idempotency_key": row.idempotency_key,
            "state": row.state,
            "version": row.version,
            "started_at": row.started_at,
            "updated_at": row.updated_at,
            "ended_at": row.ended_at,
            **_called(row),
        },
    )
    return result.first() is not None


def _called(row: InstanceRow) -> dict[str, Any]:
    """The call columns, only for an instance a call activity started: every other insert
    keeps its statement (and its cached plan) as it was."""
    if row.super_instance_id is None:
        return {}
    return {
        "super_instance_id": row.super_instance_id,
        "super_token_id": row.super_token_id,
        "root_instance_id": row.root_instance_id,
    }


def called_by(conn: Connection, token_id: UUID) -> InstanceRow | None:
    """The latest instance the token's call activity started (a retried call starts a new
    one after the previous ended without completing)."""
    stmt = (
        select(*_COLS)
        .where(t.c.super_token_id == token_id)
        .order_by(t.c.started_at.desc(), t.c.id.desc())
        .limit(1)
    )
    row = conn.execute(stmt).first()
    return from_row(InstanceRow, row) if row else None


def called_from(conn: Connection, instance_id: UUID) -> list[InstanceRow]:
    """The instances the instance's call activities started, oldest first."""
    stmt = select(*_COLS).where(t.c.super_instance_id == instance_id).order_by(t.c.started_at)
    return [from_row(InstanceRow, row) for row in conn.execute(stmt)]


_TRANSITION_PG = """
UPDATE process_instances p
SET state = %(state)s, version = p.version + 1, updated_at = %(now)s, ended_at = %(ended_at)s
FROM (SELECT id, state FROM process_instances WHERE id = %(id)s FOR NO KEY UPDATE) old
WHERE p.id = old.id AND old.state = ANY(%(only_from)s) AND old.state <> %(state)s
RETURNING old.state
"""


def transition(
    conn: Connection,
    instance_id: UUID,
    state: str,
    now: datetime,
    ended_at: datetime | None,
    only_from: tuple[str, ...],
) -> str | None:
    """PostgreSQL: lock the row and change its state in one statement when it is in one of
    ``only_from``; returns the state it left, or None when it was not in one of them."""
    row = raw_one(
        conn,
        _TRANSITION_PG,
        {
            "id": instance_id,
            "state": state,
            "now": now,
            "ended_at": ended_at,
            "only_from": list(only_from),
        },
    )
    return str(row[0]) if row else None


def get_many(conn: Connection, instance_ids: list[UUID]) -> list[InstanceRow]:
    if not instance_ids:
        return []
    return [
        from_row(InstanceRow, row)
        for row in conn.execute(select(*_COLS).where(t.c.id.in_(instance_ids)))
    ]


def set_state(
    conn: Connection, row: InstanceRow, state: str, now: datetime, ended_at: datetime | None
) -> bool:
    """Guarded update; False when someone else changed the instance first."""
    result = conn.execute(
        _SET_STATE,
        {
            "b_id": row.id,
            "b_version": row.version,
            "state": state,
            "now": now,
            "ended_at": ended_at,
        },
    )
    return result.rowcount == 1


def search(
    conn: Connection,
    *,
    state: str | None = None,
    key: str | None = None,
    business_key: str | None = None,
    keys: Collection[str] | None = None,
    limit: int = 100,
) -> list[InstanceRow]:
    """Newest first. ``keys``: only instances of these process keys (none: any)."""
    stmt = select(*_COLS).order_by(t.c.started_at.desc()).limit(limit)
    if keys is not None:
        stmt = stmt.where(t.c.process_key.in_(list(keys)))
    if state:
        stmt = stmt.where(t.c.state == state)
    if key:
        stmt = stmt.where(t.c.process_key == key)
    if business_key:
        stmt = stmt.where(t.c.business_key == business_key)
    return [from_row(InstanceRow, row) for row in conn.execute(stmt)]


def ids_between(conn: Connection, low: UUID, high: UUID, limit: int) -> tuple[list[UUID], int]:
    """Up to ``limit`` instance ids from ``low`` to ``high`` in id order, and how many there
    are in all (counted only when the first read is full). Both databases order ids as their
    hex text, so an id prefix is such a range and the primary key answers it."""
    in_range = t.c.id.between(low, high)
    found = [
        UUID(str(i))
        for i in conn.execute(
            select(t.c.id).where(in_range).order_by(t.c.id).limit(limit)
        ).scalars()
    ]
    if len(found) < limit:
        return found, len(found)
    return found, int(conn.execute(select(func.count()).where(in_range)).scalar_one())
