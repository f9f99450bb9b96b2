"""Paging and ordering of the API's lists: Camunda's ``firstResult``/``maxResults`` and
``sortBy``/``sortOrder``, applied to a statement by column names its query module allows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select

from bpm.errors import InvalidRequest


@dataclass(frozen=True)
class Page:
    """Rows ``offset`` to ``offset + limit`` in ``order`` (a name and whether descending,
    most significant first); the query module adds its own tie-breaker after them."""

    offset: int = 0
    limit: int = 1000
    order: Sequence[tuple[str, bool]] = field(default_factory=tuple)


def ordered(
    stmt: Select[Any],
    page: Page,
    columns: Mapping[str, ColumnElement[Any]],
    tie: Sequence[ColumnElement[Any]],
) -> Select[Any]:
    """``stmt`` ordered by ``page.order`` (each name one of ``columns``), then ``tie``, and
    paged. A name the query cannot order by is refused, naming the ones it can."""
    keys: list[Any] = []
    for name, descending in page.order:
        column = columns.get(name)
        if column is None:
            raise InvalidRequest(
                f"cannot sort by {name!r}; sortBy is one of {', '.join(sorted(columns))}"
            )
        keys.append(column.desc() if descending else column.asc())
    return stmt.order_by(*keys, *tie).offset(page.offset).limit(page.limit)


def like(column: ColumnElement[Any], pattern: str) -> ColumnElement[bool]:
    """Camunda's ``...Like`` filters: ``%`` and ``_`` are wildcards, a backslash escapes the
    next character. A pattern ending in a lone backslash would be an SQL error; that last
    backslash then stands for itself."""
    trailing = len(pattern) - len(pattern.rstrip("\\"))
    if trailing % 2:
        pattern += "\\"
    return column.like(pattern, escape="\\")
