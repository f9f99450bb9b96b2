"""Local variables: one row per (scope token, scope node, name)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, bindparam, delete, exists, select, text
from sqlalchemy.dialects import postgresql, sqlite

from bpm.store import instances
from bpm.store.db import pg_sql, raw_all, uuid_array
from bpm.store.json_rows import encode_rows
from bpm.store.schema import local_variables as t


@dataclass(frozen=True)
class LocalRow:
    scope_token_id: UUID
    scope_node_id: str
    name: str
    value: Any


def _upsert(dialect: str) -> Any:
    ins = postgresql.insert(t) if dialect == "postgresql" else sqlite.insert(t)
    return ins.on_conflict_do_update(
        index_elements=[t.c.scope_token_id, t.c.scope_node_id, t.c.name],
        set_={
            "value": ins.excluded.value,
            "version": t.c.version + 1,
            "updated_at": ins.excluded.updated_at,
        },
    )


_UPSERTS = {"postgresql": _upsert("postgresql"), "sqlite": _upsert("sqlite")}
_COLS = (t.c.scope_token_id, t.c.scope_node_id, t.c.name, t.c.value)
_END = (
    delete(t)
    .where(t.c.scope_token_id == bindparam("token_id"), t.c.scope_node_id == bindparam("node_id"))
    .returning(t.c.name)
)
# The instance row first, in the same statement (see ``instances.locked_first``).
_INSTANCE = instances.locked_first(bindparam("instance_id"))
_END_LOCKING = _END.where(exists(select(_INSTANCE.c.id))).add_cte(_INSTANCE)

# PostgreSQL: the statements a scope's entry and end send (a multi-instance iteration's, every
# step of its body), straight to the driver, as the store's other hot statements.
_END_LOCKING_PG = pg_sql(_END_LOCKING)
_OF_INSTANCE = select(*_COLS).where(t.c.instance_id == bindparam("id"))
_OF_INSTANCE_PG = pg_sql(_OF_INSTANCE)
_OF_TOKENS_PG = pg_sql(
    select(*_COLS).where(
        t.c.instance_id == bindparam("id"), text("scope_token_id = ANY(CAST(:ids AS uuid[]))")
    )
)
#: Rows as one JSON array (``json_rows``); a JSON null value reads back from the recordset as
#: SQL NULL, and is JSON's null.
_UPSERT_PG = (
    "INSERT INTO local_variables (instance_id,scope_token_id,scope_node_id,name,value,version,"
    "updated_at) SELECT u.instance_id,u.scope_token_id,u.scope_node_id,u.name,"
    "COALESCE(u.value,'null'),1,u.updated_at "
    "FROM jsonb_populate_recordset(NULL::local_variables, %(rows)s::jsonb) AS u "
    "ON CONFLICT (scope_token_id,scope_node_id,name) DO UPDATE SET value=excluded.value,"
    "version=local_variables.version+1,updated_at=excluded.updated_at RETURNING 1"
)


def of_instance(conn: Connection, instance_id: UUID) -> list[LocalRow]:
    if conn.dialect.name == "postgresql":
        return [LocalRow(*row) for row in raw_all(conn, _OF_INSTANCE_PG, {"id": instance_id})]
    return [LocalRow(*row) for row in conn.execute(_OF_INSTANCE, {"id": instance_id})]


def of_tokens(conn: Connection, instance_id: UUID, token_ids: list[UUID]) -> list[LocalRow]:
    """The local variables of the scopes these tokens own."""
    if conn.dialect.name == "postgresql":
        params = {"id": instance_id, "ids": uuid_array(token_ids)}
        return [LocalRow(*row) for row in raw_all(conn, _OF_TOKENS_PG, params)]
    stmt = select(*_COLS).where(t.c.instance_id == instance_id, t.c.scope_token_id.in_(token_ids))
    return [LocalRow(*row) for row in conn.execute(stmt)]


def of_instances(conn: Connection, instance_ids: list[UUID]) -> dict[UUID, list[LocalRow]]:
    out: dict[UUID, list[LocalRow]] = {iid: [] for iid in instance_ids}
    if instance_ids:
        stmt = select(t.c.instance_id, *_COLS).where(t.c.instance_id.in_(instance_ids))
        for iid, *row in conn.execute(stmt):
            out[iid].append(LocalRow(*row))
    return out


def write(
    conn: Connection,
    instance_id: UUID,
    token_id: UUID,
    node_id: str,
    values: Mapping[str, Any],
    now: datetime,
) -> None:
    write_scopes(conn, instance_id, {(token_id, node_id): values}, now)


def write_scopes(
    conn: Connection,
    instance_id: UUID,
    scopes: Mapping[tuple[UUID, str], Mapping[str, Any]],
    now: datetime,
) -> None:
    """``write`` for several scopes (token id, node id) in one statement."""
    params = [
        {
            "instance_id": instance_id,
            "scope_token_id": token_id,
            "scope_node_id": node_id,
            "name": name,
            "value": value,
            "version": 1,
            "updated_at": now,
        }
        for (token_id, node_id), values in scopes.items()
        for name, value in values.items()
    ]
    if not params:
        return
    if conn.dialect.name == "postgresql" and all(_finite(p["value"]) for p in params):
        raw_all(conn, _UPSERT_PG, {"rows": encode_rows(params)})
        return
    # A non-finite number goes the way it always went, for PostgreSQL to refuse (JSON has no
    # NaN or Infinity; the JSON rows would turn it into null).
    conn.execute(_UPSERTS[conn.dialect.name], params)


def end(conn: Connection, instance_id: UUID, token_id: UUID, node_id: str) -> list[str]:
    """Delete the scope's variables; returns their names. On PostgreSQL the statement locks
    the instance's row first."""
    params = {"instance_id": instance_id, "token_id": token_id, "node_id": node_id}
    if conn.dialect.name == "postgresql":
        return sorted(name for (name,) in raw_all(conn, _END_LOCKING_PG, params))
    return sorted(name for (name,) in conn.execute(_END, params))


def _finite(value: Any) -> bool:
    """Whether a JSON value holds no NaN or infinity, at any depth."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True
