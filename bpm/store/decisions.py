"""Decision rows: immutable, versioned per key (a DMN decision's id)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.exc import IntegrityError

from bpm.store import versions
from bpm.store.ids import new_named_id
from bpm.store.rows import from_row
from bpm.store.schema import decision_definitions as t


@dataclass(frozen=True, slots=True)
class DecisionRow:
    id: UUID
    key: str
    name: str
    version: int
    version_tag: str | None
    checksum: str
    created_at: datetime
    deployment_id: UUID | None = None
    resource: str | None = None


_COLS = (
    t.c.id,
    t.c.key,
    t.c.name,
    t.c.version,
    t.c.version_tag,
    t.c.checksum,
    t.c.created_at,
    t.c.deployment_id,
    t.c.resource,
)
_LATEST = select(*_COLS).where(t.c.key == bindparam("key")).order_by(t.c.version.desc()).limit(1)
_BY_KEY_VERSION = select(*_COLS).where(
    t.c.key == bindparam("key"), t.c.version == bindparam("version")
)
_BY_KEY_TAG = (
    select(*_COLS)
    .where(t.c.key == bindparam("key"), t.c.version_tag == bindparam("tag"))
    .order_by(t.c.version.desc())
    .limit(1)
)
_SOURCE = select(t.c.source).where(t.c.id == bindparam("id"))


class DecisionVersionTaken(Exception):
    """Another deploy of the same decision key won the race for this version number."""


def latest(conn: Connection, key: str) -> DecisionRow | None:
    row = conn.execute(_LATEST, {"key": key}).first()
    return from_row(DecisionRow, row) if row else None


def by_key_version(conn: Connection, key: str, version: int) -> DecisionRow | None:
    row = conn.execute(_BY_KEY_VERSION, {"key": key, "version": version}).first()
    return from_row(DecisionRow, row) if row else None


def by_version_tag(conn: Connection, key: str, tag: str) -> DecisionRow | None:
    """The newest version of ``key`` deployed with version tag ``tag``."""
    row = conn.execute(_BY_KEY_TAG, {"key": key, "tag": tag}).first()
    return from_row(DecisionRow, row) if row else None


def source(conn: Connection, decision_id: UUID) -> str:
    return str(conn.execute(_SOURCE, {"id": decision_id}).scalar_one())


def insert(
    conn: Connection,
    *,
    key: str,
    name: str,
    version: int,
    version_tag: str | None,
    source_text: str,
    checksum: str,
    now: datetime,
    deployment_id: UUID | None = None,
    resource: str | None = None,
) -> DecisionRow:
    decision_id = new_named_id()
    try:
        with conn.begin_nested():
            conn.execute(
                t.insert(),
                {
                    "id": decision_id,
                    "key": key,
                    "name": name,
                    "version": version,
                    "version_tag": version_tag,
                    "source": source_text,
                    "checksum": checksum,
                    "created_at": now,
                    "deployment_id": deployment_id,
                    "resource": resource,
                },
            )
    except IntegrityError as exc:
        raise DecisionVersionTaken(key, version) from exc
    return DecisionRow(
        decision_id, key, name, version, version_tag, checksum, now, deployment_id, resource
    )


def of_deployment(conn: Connection, deployment_id: UUID) -> list[DecisionRow]:
    stmt = select(*_COLS).where(t.c.deployment_id == deployment_id).order_by(t.c.key)
    return [from_row(DecisionRow, row) for row in conn.execute(stmt)]


def of_deployment_or_before(
    conn: Connection, key: str, deployment_id: UUID, deployed_at: datetime
) -> DecisionRow | None:
    """Decision ``key`` of that deployment, else the newest version deployed by then."""
    row = versions.of_deployment_or_before(conn, t, _COLS, key, deployment_id, deployed_at)
    return from_row(DecisionRow, row) if row else None
