"""What every list endpoint shares: ``firstResult``/``maxResults``, ``sortBy``/``sortOrder``,
comma-separated lists, and refusing the query parameters bpm cannot honour.

A Camunda filter bpm does not have must not be ignored (the answer would be wrong without
saying so), so a list endpoint names the parameters it reads and refuses any other with 400.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

from fastapi import Request

from bpm.errors import InvalidRequest
from bpm_server.models import INT_MAX

#: The most rows one list answers (Camunda has no bound; bpm keeps answers small).
MAX_RESULTS = 1000
PAGING = frozenset({"firstResult", "maxResults"})
SORTING = frozenset({"sortBy", "sortOrder"})


def only_params(request: Request, accepted: Collection[str]) -> None:
    """Refuse a query parameter the endpoint does not read, naming it; one whose value
    filters nothing (empty, ``false``) is let through whatever its name, as tools such as
    Camunda's Tasklist send them with every query."""
    params = request.query_params
    unknown = sorted(
        name
        for name in set(params) - set(accepted)
        if any(value not in ("", "false") for value in params.getlist(name))
    )
    if unknown:
        raise InvalidRequest(
            f"query parameter {', '.join(unknown)} is not supported by bpm"
            f" (this endpoint reads {', '.join(sorted(accepted))})"
        )


def sorting(
    sort_by: str | None, sort_order: str | None, columns: Mapping[str, str | None]
) -> tuple[str | None, bool]:
    """The store's sort name for Camunda's ``sortBy`` (``columns``: Camunda name -> bpm
    name, None for one bpm cannot sort by), and whether it is descending."""
    if sort_by is None and sort_order is None:
        return None, False
    if sort_by is None or sort_order is None:
        raise InvalidRequest(
            "Only a single sorting parameter specified. sortBy and sortOrder required"
        )
    if sort_order not in ("asc", "desc"):
        raise InvalidRequest(f"sortOrder {sort_order!r}: use asc or desc")
    if sort_by not in columns:
        raise InvalidRequest(f"sortBy {sort_by!r}: use one of {', '.join(sorted(columns))}")
    name = columns[sort_by]
    if name is None:
        raise InvalidRequest(f"sortBy {sort_by!r}: bpm has no such property to sort by")
    return name, sort_order == "desc"


def split(text: str | None) -> list[str] | None:
    """A comma-separated list parameter (``keysIn=a,b``); None when absent."""
    if text is None:
        return None
    return [part for part in (p.strip() for p in text.split(",")) if part]


def uuids(texts: Collection[str]) -> list[UUID]:
    """The ids among ``texts`` that are bpm ids (an id that is not one names nothing)."""
    out = []
    for text in texts:
        found = maybe_uuid(text)
        if found is not None:
            out.append(found)
    return out


def maybe_uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


def window(first_result: int | None, max_results: int | None) -> tuple[int, int]:
    """(limit, offset) for ``firstResult``/``maxResults``."""
    first = first_result or 0
    most = MAX_RESULTS if max_results is None else max_results
    if first < 0 or most < 0:
        raise InvalidRequest("firstResult and maxResults must not be negative")
    if first > INT_MAX:
        raise InvalidRequest(f"firstResult {first}: at most {INT_MAX}")
    if most > MAX_RESULTS:
        raise InvalidRequest(f"maxResults {most}: bpm answers at most {MAX_RESULTS} rows")
    return most, first


#: Filters that read as booleans; every other declared filter is a text.
_BOOLEANS = frozenset(
    {
        "active",
        "suspended",
        "withIncident",
        "latestVersion",
        "variableNamesIgnoreCase",
        "variableValuesIgnoreCase",
        "cascade",
        "skipCustomListeners",
        "skipIoMappings",
    }
)


def declare(names: Collection[str]) -> dict[str, Any]:
    """``openapi_extra`` for an endpoint that reads its filters from ``request.query_params``
    by hand: each one declared, so clients generated from the document and the fuzz test
    know them."""
    return {
        "parameters": [
            {
                "name": name,
                "in": "query",
                "required": False,
                "schema": {"type": "boolean" if name in _BOOLEANS else "string"},
            }
            for name in sorted(names)
        ]
    }
