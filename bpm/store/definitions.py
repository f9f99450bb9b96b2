"""Definition rows: immutable, versioned per key."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, bindparam, func, literal_column, select
from sqlalchemy.exc import IntegrityError

from bpm.store import versions
from bpm.store.db import pg_sql, raw_one
from bpm.store.ids import new_named_id
from bpm.store.rows import DefinitionRef, DefinitionRow, from_row
from bpm.store.schema import process_definitions as t

_COLS = (
    t.c.id,
    t.c.key,
    t.c.name,
    t.c.version,
    t.c.graph,
    t.c.checksum,
    t.c.created_at,
    t.c.history_ttl_seconds,
    t.c.deployment_id,
    t.c.resource,
    t.c.version_tag,
)
_LATEST = select(*_COLS).where(t.c.key == bindparam("key")).order_by(t.c.version.desc()).limit(1)
_BY_ID = select(*_COLS).where(t.c.id == bindparam("id"))
_REF = (t.c.id, t.c.key, t.c.version)
_LATEST_REF = select(*_REF).where(t.c.key == bindparam("key")).order_by(t.c.version.desc()).limit(1)
_LATEST_REF_PG = pg_sql(_LATEST_REF.limit(literal_column("1")))
_REF_BY_KEY_VERSION = select(*_REF).where(
    t.c.key == bindparam("key"), t.c.version == bindparam("version")
)
_NEWEST = select(t.c.key, func.max(t.c.version).label("version")).group_by(t.c.key).subquery()
_LATEST_OF_EACH = (
    select(*_COLS)
    .join(_NEWEST, (t.c.key == _NEWEST.c.key) & (t.c.version == _NEWEST.c.version))
    .order_by(t.c.key)
)
_BY_KEY_VERSION = select(*_COLS).where(
    t.c.key == bindparam("key"), t.c.version == bindparam("version")
)


class VersionTaken(Exception):
    """Another deploy of the same key won the race for this version number."""


def latest(conn: Connection, key: str) -> DefinitionRow | None:
    row = conn.execute(_LATEST, {"key": key}).first()
    return from_row(DefinitionRow, row) if row else None


def latest_ref(conn: Connection, key: str, version: int | None = None) -> DefinitionRef | None:
    """The latest definition of ``key`` (or its ``version``), without its graph."""
    if version is None and conn.dialect.name == "postgresql":
        row = raw_one(conn, _LATEST_REF_PG, {"key": key})  # every start's first statement
    elif version is None:
        row = conn.execute(_LATEST_REF, {"key": key}).first()
    else:
        row = conn.execute(_REF_BY_KEY_VERSION, {"key": key, "version": version}).first()
    return from_row(DefinitionRef, row) if row else None


def latest_of_each_key(conn: Connection) -> list[DefinitionRow]:
    """The latest version of every process key (conditional starts look at them all)."""
    return [from_row(DefinitionRow, row) for row in conn.execute(_LATEST_OF_EACH)]


def every(conn: Connection) -> list[DefinitionRow]:
    """Every deployed definition, by key and version."""
    stmt = select(*_COLS).order_by(t.c.key, t.c.version)
    return [from_row(DefinitionRow, row) for row in conn.execute(stmt)]


def by_id(conn: Connection, def_id: UUID) -> DefinitionRow | None:
    row = conn.execute(_BY_ID, {"id": def_id}).first()
    return from_row(DefinitionRow, row) if row else None


def by_key_version(conn: Connection, key: str, version: int) -> DefinitionRow | None:
    row = conn.execute(_BY_KEY_VERSION, {"key": key, "version": version}).first()
    return from_row(DefinitionRow, row) if row else None


def insert(
    conn: Connection,
    *,
    key: str,
    name: str,
    version: int,
    graph: dict[str, Any],
    source: str,
    source_format: str,
    checksum: str,
    now: datetime,
    history_ttl_seconds: int | None = None,
    deployment_id: UUID | None = None,
    resource: str | None = None,
) -> DefinitionRow:
    def_id = new_named_id()
    tag = graph.get("versionTag")
    version_tag = tag if isinstance(tag, str) else None
    try:
        with conn.begin_nested():
            conn.execute(
                t.insert(),
                {
                    "id": def_id,
                    "key": key,
                    "name": name,
                    "version": version,
                    "graph": graph,
                    "source": source,
                    "source_format": source_format,
                    "checksum": checksum,
                    "created_at": now,
                    "history_ttl_seconds": history_ttl_seconds,
                    "deployment_id": deployment_id,
                    "resource": resource,
                    "version_tag": version_tag,
                },
            )
    except IntegrityError as exc:
        raise VersionTaken(key, version) from exc
    return DefinitionRow(
        def_id,
        key,
        name,
        version,
        graph,
        checksum,
        now,
        history_ttl_seconds,
        deployment_id,
        resource,
        version_tag,
    )


def source(conn: Connection, def_id: UUID) -> tuple[str, str] | None:
    """The text a definition was deployed from, and its format (``bpmn`` or ``json``)."""
    row = conn.execute(select(t.c.source, t.c.source_format).where(t.c.id == def_id)).first()
    return (str(row[0]), str(row[1])) if row else None


def by_version_tag(conn: Connection, key: str, tag: str) -> DefinitionRow | None:
    """The newest version of ``key`` deployed with version tag ``tag``."""
    stmt = (
        select(*_COLS)
        .where(t.c.key == key, t.c.version_tag == tag)
        .order_by(t.c.version.desc())
        .limit(1)
    )
    row = conn.execute(stmt).first()
    return from_row(DefinitionRow, row) if row else None


def of_deployment_or_before(
    conn: Connection, key: str, deployment_id: UUID, deployed_at: datetime
) -> DefinitionRow | None:
    """Process ``key`` of that deployment, else the newest version deployed by then."""
    row = versions.of_deployment_or_before(conn, t, _COLS, key, deployment_id, deployed_at)
    return from_row(DefinitionRow, row) if row else None


def ids_of_key(conn: Connection, key: str) -> list[UUID]:
    """Every version of ``key``."""
    return list(conn.execute(select(t.c.id).where(t.c.key == key)).scalars())


def keys_of(conn: Connection, definition_ids: list[UUID]) -> set[str]:
    if not definition_ids:
        return set()
    return set(conn.execute(select(t.c.key).where(t.c.id.in_(definition_ids))).scalars())
