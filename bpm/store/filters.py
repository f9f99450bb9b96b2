"""Saved task queries (Camunda's filters): kept as their owners wrote them, read by id or
listed by name and owner."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, and_, delete, func, select, update

from bpm.store.ids import new_id
from bpm.store.paging import Page, like, ordered
from bpm.store.schema import filters as t


@dataclass(frozen=True)
class FilterRow:
    id: UUID
    resource_type: str
    name: str
    owner: str | None
    #: Camunda's task query, as JSON (its property names).
    query: dict[str, Any]
    properties: dict[str, Any] | None
    created_at: datetime


@dataclass(frozen=True)
class FilterQuery:
    ids: Sequence[UUID] | None = None
    resource_type: str | None = None
    name: str | None = None
    name_like: str | None = None
    owner: str | None = None


_COLS = (
    t.c.id, t.c.resource_type, t.c.name, t.c.owner, t.c.query, t.c.properties, t.c.created_at
)  # fmt: skip
SORTS = {
    "id": t.c.id,
    "name": t.c.name,
    "owner": t.c.owner,
    "resource_type": t.c.resource_type,
    "created": t.c.created_at,
}


def insert(
    conn: Connection,
    resource_type: str,
    name: str,
    owner: str | None,
    query: dict[str, Any],
    properties: dict[str, Any] | None,
    now: datetime,
) -> FilterRow:
    row = FilterRow(new_id(), resource_type, name, owner, query, properties, now)
    conn.execute(t.insert(), dict(zip([c.name for c in _COLS], vars(row).values(), strict=True)))
    return row


def change(
    conn: Connection,
    filter_id: UUID,
    name: str,
    owner: str | None,
    query: dict[str, Any],
    properties: dict[str, Any] | None,
) -> bool:
    values = {"name": name, "owner": owner, "query": query, "properties": properties}
    return bool(conn.execute(update(t).where(t.c.id == filter_id).values(**values)).rowcount)


def remove(conn: Connection, filter_id: UUID) -> bool:
    return bool(conn.execute(delete(t).where(t.c.id == filter_id)).rowcount)


def get(conn: Connection, filter_id: UUID) -> FilterRow | None:
    row = conn.execute(select(*_COLS).where(t.c.id == filter_id)).first()
    return None if row is None else FilterRow(*row)


def find(conn: Connection, q: FilterQuery, page: Page) -> list[FilterRow]:
    stmt = ordered(_where(select(*_COLS), q), page, SORTS, (t.c.name, t.c.id))
    return [FilterRow(*r) for r in conn.execute(stmt)]


def count(conn: Connection, q: FilterQuery) -> int:
    return int(conn.execute(_where(select(func.count()).select_from(t), q)).scalar_one())


def _where(stmt: Any, q: FilterQuery) -> Any:
    conds: list[Any] = []
    if q.ids is not None:
        conds.append(t.c.id.in_(list(q.ids)))
    for column, wanted in ((t.c.resource_type, q.resource_type), (t.c.name, q.name)):
        if wanted is not None:
            conds.append(column == wanted)
    if q.owner is not None:
        conds.append(t.c.owner == q.owner)
    if q.name_like is not None:
        conds.append(like(t.c.name, q.name_like))
    return stmt.where(and_(*conds)) if conds else stmt
