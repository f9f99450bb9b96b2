"""Deployment rows and the files they hold (byte for byte, with a SHA-256 of each)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, func, select

from bpm.store import message_starts, signals
from bpm.store.ids import new_named_id
from bpm.store.paging import Page, like, ordered
from bpm.store.schema import decision_definitions as decisions_t
from bpm.store.schema import deployment_resources as r
from bpm.store.schema import deployments as t
from bpm.store.schema import process_definitions as processes_t
from bpm.store.schema import process_instances as instances_t


@dataclass(frozen=True, slots=True)
class DeploymentRow:
    id: UUID
    name: str | None
    source: str | None
    deployment_time: datetime


@dataclass(frozen=True, slots=True)
class ResourceRow:
    id: UUID
    deployment_id: UUID
    name: str
    checksum: str


@dataclass(frozen=True)
class DeploymentQuery:
    """Which deployments: every field that is set must match (``*_like``: SQL LIKE)."""

    id: UUID | None = None
    name: str | None = None
    name_like: str | None = None
    source: str | None = None
    after: datetime | None = None
    before: datetime | None = None


_COLS = (t.c.id, t.c.name, t.c.source, t.c.deployment_time)
_RESOURCE_COLS = (r.c.id, r.c.deployment_id, r.c.name, r.c.checksum)
#: sortBy values and their columns (Camunda's names).
SORTS = {"id": t.c.id, "name": t.c.name, "deploymentTime": t.c.deployment_time}


def insert(
    conn: Connection, *, name: str | None, source: str | None, now: datetime
) -> DeploymentRow:
    # Milliseconds, as the API writes it: a time read from an answer names this one exactly.
    when = now.replace(microsecond=now.microsecond // 1000 * 1000)
    row = DeploymentRow(new_named_id(), name, source, when)
    conn.execute(
        t.insert(), {"id": row.id, "name": name, "source": source, "deployment_time": when}
    )
    return row


def add_resource(
    conn: Connection, deployment_id: UUID, name: str, content: bytes, checksum: str
) -> ResourceRow:
    row = ResourceRow(new_named_id(), deployment_id, name, checksum)
    conn.execute(
        r.insert(),
        {
            "id": row.id,
            "deployment_id": deployment_id,
            "name": name,
            "content": content,
            "checksum": checksum,
        },
    )
    return row


def get(conn: Connection, deployment_id: UUID) -> DeploymentRow | None:
    row = conn.execute(select(*_COLS).where(t.c.id == deployment_id)).first()
    return DeploymentRow(*row) if row else None


def get_many(conn: Connection, ids: Sequence[UUID]) -> list[DeploymentRow]:
    if not ids:
        return []
    return [DeploymentRow(*row) for row in conn.execute(select(*_COLS).where(t.c.id.in_(ids)))]


def _where(stmt: Any, f: DeploymentQuery) -> Any:
    if f.id is not None:
        stmt = stmt.where(t.c.id == f.id)
    if f.name is not None:
        stmt = stmt.where(t.c.name == f.name)
    if f.name_like is not None:
        stmt = stmt.where(like(t.c.name, f.name_like))
    if f.source is not None:
        stmt = stmt.where(t.c.source == f.source)
    if f.after is not None:
        stmt = stmt.where(t.c.deployment_time > f.after)
    if f.before is not None:
        stmt = stmt.where(t.c.deployment_time < f.before)
    return stmt


def find(conn: Connection, f: DeploymentQuery, page: Page) -> list[DeploymentRow]:
    """Oldest first unless ``page`` orders them (then by id)."""
    stmt = ordered(_where(select(*_COLS), f), page, SORTS, (t.c.deployment_time, t.c.id))
    return [DeploymentRow(*row) for row in conn.execute(stmt)]


def count(conn: Connection, f: DeploymentQuery) -> int:
    return int(conn.execute(_where(select(func.count()).select_from(t), f)).scalar_one())


def resources_of(conn: Connection, deployment_id: UUID) -> list[ResourceRow]:
    stmt = select(*_RESOURCE_COLS).where(r.c.deployment_id == deployment_id).order_by(r.c.name)
    return [ResourceRow(*row) for row in conn.execute(stmt)]


def content(conn: Connection, deployment_id: UUID, resource_id: UUID) -> bytes | None:
    stmt = select(r.c.content).where(r.c.deployment_id == deployment_id, r.c.id == resource_id)
    found = conn.execute(stmt).scalar_one_or_none()
    return None if found is None else bytes(found)


def newest_with(conn: Connection, name: str, checksum: str) -> UUID | None:
    """The newest deployment that holds a file of this name with this content."""
    stmt = (
        select(t.c.id)
        .join_from(r, t, t.c.id == r.c.deployment_id)
        .where(r.c.name == name, r.c.checksum == checksum)
        .order_by(t.c.deployment_time.desc())
        .limit(1)
    )
    found = conn.execute(stmt).scalar_one_or_none()
    return None if found is None else UUID(str(found))


def latest_checksum(conn: Connection, name: str) -> str | None:
    """The content hash of the newest deployed file of this name."""
    stmt = (
        select(r.c.checksum)
        .join_from(r, t, t.c.id == r.c.deployment_id)
        .where(r.c.name == name)
        .order_by(t.c.deployment_time.desc())
        .limit(1)
    )
    found = conn.execute(stmt).scalar_one_or_none()
    return None if found is None else str(found)


def definition_ids(conn: Connection, deployment_id: UUID) -> tuple[list[UUID], list[UUID]]:
    """The process and the decision definitions deployed with it."""
    processes = conn.execute(
        select(processes_t.c.id).where(processes_t.c.deployment_id == deployment_id)
    ).scalars()
    decisions = conn.execute(
        select(decisions_t.c.id).where(decisions_t.c.deployment_id == deployment_id)
    ).scalars()
    return [UUID(str(i)) for i in processes], [UUID(str(i)) for i in decisions]


def lock_definitions(conn: Connection, deployment_id: UUID) -> list[UUID]:
    """Lock the deployment's process definitions (a start that would reference one waits,
    or is waited for) and return their ids."""
    stmt = select(processes_t.c.id).where(processes_t.c.deployment_id == deployment_id)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return [UUID(str(i)) for i in conn.execute(stmt).scalars()]


def instances_of(conn: Connection, definition_ids: Sequence[UUID]) -> int:
    """How many instances (live or ended) the definitions have."""
    if not definition_ids:
        return 0
    stmt = select(func.count()).where(instances_t.c.process_def_id.in_(list(definition_ids)))
    return int(conn.execute(stmt).scalar_one())


def delete(conn: Connection, deployment_id: UUID) -> None:
    """The deployment, its files and its definitions (no instance may name them)."""
    ids = select(processes_t.c.id).where(processes_t.c.deployment_id == deployment_id)
    found = list(conn.execute(ids).scalars())
    message_starts.forget(conn, found)
    signals.forget(conn, found)
    conn.execute(processes_t.delete().where(processes_t.c.deployment_id == deployment_id))
    conn.execute(decisions_t.delete().where(decisions_t.c.deployment_id == deployment_id))
    conn.execute(r.delete().where(r.c.deployment_id == deployment_id))
    conn.execute(t.delete().where(t.c.id == deployment_id))
