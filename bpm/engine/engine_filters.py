"""The facade's saved task queries (Camunda's filters), as
``bpm.engine.operations.saved_filters`` keeps them (``Engine`` inherits them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.ids import as_id
from bpm.engine.operations import saved_filters
from bpm.store.filters import FilterQuery, FilterRow
from bpm.store.paging import Page

#: The first rows of a list (``Page``'s default limit).
FIRST = Page()


class FilterCalls:
    core: EngineCore

    def create_filter(
        self,
        name: str,
        query: Mapping[str, Any],
        *,
        owner: str | None = None,
        properties: Mapping[str, Any] | None = None,
        resource_type: str = saved_filters.TASK,
    ) -> FilterRow:
        """A saved task query (``query``: Camunda's task query properties)."""
        return saved_filters.create(self.core, resource_type, name, owner, query, properties)

    def change_filter(
        self,
        filter_id: UUID | str,
        name: str,
        query: Mapping[str, Any],
        *,
        owner: str | None = None,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        fid = as_id(filter_id, "filter")
        saved_filters.change(self.core, fid, name, owner, query, properties)

    def delete_filter(self, filter_id: UUID | str) -> None:
        saved_filters.delete(self.core, as_id(filter_id, "filter"))

    def filter(self, filter_id: UUID | str) -> FilterRow:
        return saved_filters.get(self.core, as_id(filter_id, "filter"))

    def find_filters(self, query: FilterQuery, page: Page = FIRST) -> list[FilterRow]:
        return saved_filters.find(self.core, query, page)

    def count_filters(self, query: FilterQuery) -> int:
        return saved_filters.count(self.core, query)
