"""Saved task queries (Camunda's filters): made, changed and deleted by people, and read by
the task lists that run them. A filter only stores its query; running it is a task query
like any other, so a filter never sees more than its caller may."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.errors import InvalidRequest, NotFound
from bpm.limits import NAME_MAX, check_text
from bpm.store import filters
from bpm.store.filters import FilterQuery, FilterRow
from bpm.store.paging import Page

#: The one kind of resource a filter queries (Camunda's filters are of tasks only).
TASK = "Task"


def _checked(
    resource_type: str, name: str, query: Any, properties: Any
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    if resource_type != TASK:
        raise InvalidRequest(f"resourceType {resource_type!r}: a filter queries tasks ('Task')")
    check_text(name, "the filter's name", NAME_MAX)
    if not name.strip():
        raise InvalidRequest("a filter needs a name")
    if not isinstance(query, Mapping):
        raise InvalidRequest("a filter's query is a JSON object of task query properties")
    if properties is not None and not isinstance(properties, Mapping):
        raise InvalidRequest("a filter's properties are a JSON object")
    return dict(query), None if properties is None else dict(properties)


def create(
    core: EngineCore,
    resource_type: str,
    name: str,
    owner: str | None,
    query: Mapping[str, Any],
    properties: Mapping[str, Any] | None,
) -> FilterRow:
    q, props = _checked(resource_type, name, query, properties)
    check_text(owner, "the filter's owner", NAME_MAX)
    with core.db.transaction() as conn:
        return filters.insert(conn, resource_type, name, owner, q, props, core.clock.now())


def change(
    core: EngineCore,
    filter_id: UUID,
    name: str,
    owner: str | None,
    query: Mapping[str, Any],
    properties: Mapping[str, Any] | None,
) -> None:
    q, props = _checked(TASK, name, query, properties)
    check_text(owner, "the filter's owner", NAME_MAX)
    with core.db.transaction() as conn:
        if not filters.change(conn, filter_id, name, owner, q, props):
            raise NotFound(f"filter with id {filter_id} does not exist")


def delete(core: EngineCore, filter_id: UUID) -> None:
    with core.db.transaction() as conn:
        if not filters.remove(conn, filter_id):
            raise NotFound(f"filter with id {filter_id} does not exist")


def get(core: EngineCore, filter_id: UUID) -> FilterRow:
    with core.db.transaction() as conn:
        row = filters.get(conn, filter_id)
    if row is None:
        raise NotFound(f"filter with id {filter_id} does not exist")
    return row


def find(core: EngineCore, q: FilterQuery, page: Page) -> list[FilterRow]:
    with core.db.transaction() as conn:
        return filters.find(conn, q, page)


def count(core: EngineCore, q: FilterQuery) -> int:
    with core.db.transaction() as conn:
        return filters.count(conn, q)
