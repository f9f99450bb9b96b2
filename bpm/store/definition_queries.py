"""Searches over process definitions (the API's ``GET /process-definition``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, func, select

from bpm.store.definitions import _COLS
from bpm.store.paging import Page, like, ordered
from bpm.store.rows import DefinitionRow, from_row
from bpm.store.schema import process_definitions as t


@dataclass(frozen=True)
class DefinitionQuery:
    """Which definitions: every field that is set must match (``*_like``: SQL LIKE)."""

    ids: Sequence[UUID] | None = None
    key: str | None = None
    keys: Sequence[str] | None = None
    key_like: str | None = None
    name: str | None = None
    name_like: str | None = None
    version: int | None = None
    latest_only: bool = False
    deployment_id: UUID | None = None
    version_tag: str | None = None
    version_tag_like: str | None = None
    resource: str | None = None


#: sortBy values and their columns (Camunda's names).
SORTS = {
    "id": t.c.id,
    "key": t.c.key,
    "name": t.c.name,
    "version": t.c.version,
    "deploymentId": t.c.deployment_id,
    "deployTime": t.c.created_at,
    "versionTag": t.c.version_tag,
}


def _where(stmt: Any, f: DefinitionQuery) -> Any:
    if f.ids is not None:
        stmt = stmt.where(t.c.id.in_(list(f.ids)))
    if f.key is not None:
        stmt = stmt.where(t.c.key == f.key)
    if f.keys is not None:
        stmt = stmt.where(t.c.key.in_(list(f.keys)))
    if f.key_like is not None:
        stmt = stmt.where(like(t.c.key, f.key_like))
    if f.name is not None:
        stmt = stmt.where(t.c.name == f.name)
    if f.name_like is not None:
        stmt = stmt.where(like(t.c.name, f.name_like))
    if f.version is not None:
        stmt = stmt.where(t.c.version == f.version)
    if f.deployment_id is not None:
        stmt = stmt.where(t.c.deployment_id == f.deployment_id)
    if f.version_tag is not None:
        stmt = stmt.where(t.c.version_tag == f.version_tag)
    if f.version_tag_like is not None:
        stmt = stmt.where(like(t.c.version_tag, f.version_tag_like))
    if f.resource is not None:
        stmt = stmt.where(t.c.resource == f.resource)
    if f.latest_only:
        newest = select(func.max(_n.c.version)).where(_n.c.key == t.c.key).scalar_subquery()
        stmt = stmt.where(t.c.version == newest)
    return stmt


_n = t.alias("newest")


def find(conn: Connection, f: DefinitionQuery, page: Page) -> list[DefinitionRow]:
    """In ``page``'s order, then by key and version."""
    stmt = ordered(_where(select(*_COLS), f), page, SORTS, (t.c.key, t.c.version))
    return [from_row(DefinitionRow, row) for row in conn.execute(stmt)]


def count(conn: Connection, f: DefinitionQuery) -> int:
    return int(conn.execute(_where(select(func.count()).select_from(t), f)).scalar_one())
