"""One row per variable, so parallel branches writing different names never clobber each other."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from bpm.store.db import pg_sql, raw_all
from bpm.store.schema import variables as t

_ALL = select(t.c.name, t.c.value).where(t.c.instance_id == bindparam("id"))
_ALL_PG = pg_sql(_ALL)
_SOME = select(t.c.name, t.c.value).where(
    t.c.instance_id == bindparam("id"), t.c.name.in_(bindparam("names", expanding=True))
)


def _upsert(dialect: str) -> Any:
    ins = postgresql.insert(t) if dialect == "postgresql" else sqlite.insert(t)
    return ins.on_conflict_do_update(
        index_elements=[t.c.instance_id, t.c.name],
        set_={
            "value": ins.excluded.value,
            "version": t.c.version + 1,
            "updated_at": ins.excluded.updated_at,
        },
    )


_UPSERTS = {"postgresql": _upsert("postgresql"), "sqlite": _upsert("sqlite")}


def load(conn: Connection, instance_id: UUID, names: list[str] | None = None) -> dict[str, Any]:
    if names is None and conn.dialect.name == "postgresql":  # read by most steps' decisions
        return {name: value for name, value in raw_all(conn, _ALL_PG, {"id": instance_id})}
    if names is None:
        rows = conn.execute(_ALL, {"id": instance_id})
    else:
        rows = conn.execute(_SOME, {"id": instance_id, "names": names})
    return {name: value for name, value in rows}


def load_many(
    conn: Connection, instance_ids: list[UUID], names: list[str] | None = None
) -> dict[UUID, dict[str, Any]]:
    """The variables of several instances in one query (fetch-and-lock on SQLite; on
    PostgreSQL its locking statement returns them)."""
    out: dict[UUID, dict[str, Any]] = {iid: {} for iid in instance_ids}
    if not instance_ids:
        return out
    stmt = select(t.c.instance_id, t.c.name, t.c.value).where(t.c.instance_id.in_(instance_ids))
    if names is not None:
        stmt = stmt.where(t.c.name.in_(names))
    for iid, name, value in conn.execute(stmt):
        out[iid][name] = value
    return out


def write(conn: Connection, instance_id: UUID, values: Mapping[str, Any], now: datetime) -> None:
    if not values:
        return
    stmt = _UPSERTS[conn.dialect.name]
    conn.execute(
        stmt,
        [
            {
                "instance_id": instance_id,
                "name": name,
                "value": value,
                "version": 1,
                "updated_at": now,
            }
            for name, value in values.items()
        ],
    )


def delete(conn: Connection, instance_id: UUID, names: list[str]) -> list[str]:
    """Remove these variables; returns the names that existed."""
    if not names:
        return []
    stmt = t.delete().where(t.c.instance_id == instance_id, t.c.name.in_(names)).returning(t.c.name)
    return sorted(str(n) for n in conn.execute(stmt).scalars())
