"""Camunda's list queries, read one way for ``GET`` (query parameters) and ``POST`` (a JSON
body): each resource names the filters it honours and their kinds, the sort keys it has and
the Camunda filters it refuses, with the reason.

A filter bpm cannot honour must never be ignored (the answer would be wrong data), so every
name a resource does not know is refused with 400, naming it, unless its value filters
nothing (null, false, an empty text or list): tools such as Camunda's Tasklist send
``"tenantIdIn": []`` or ``"variableNamesIgnoreCase": false`` with every query. ``firstResult`` and
``maxResults`` are query parameters for both methods, as in Camunda; without ``maxResults``
a list holds at most ``MAX_RESULTS`` rows (``/count`` tells how many match).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any
from uuid import UUID

from fastapi import Request

from bpm.api import InvalidRequest, Page
from bpm_server.dates import parse_date
from bpm_server.models import INT_MAX, nul_at

MAX_RESULTS = 1000
#: The tenant filters every Camunda list has: refused, naming why, where bpm lists by tenant.
NO_TENANTS = {"tenantIdIn": "bpm has no tenants", "withoutTenantId": "bpm has no tenants"}
_PAGING = ("firstResult", "maxResults")


class Kind(Enum):
    TEXT = "a string"
    TEXTS = "a list of strings"
    BOOL = "true or false"
    INT = "an integer"
    DATE = "a date"
    #: Ids: one, or a list (comma-separated in a query string). An id that is not a bpm id
    #: (a UUID) names nothing, so it is dropped: the filter then matches fewer rows.
    IDS = "a list of ids"
    #: Variable conditions: ``name_op_value`` texts, comma-separated, in a query string, or a
    #: list of {name, operator, value} in a body; the resource reads them (as given).
    CONDITIONS = "a list of {name, operator, value}"


@dataclass(frozen=True)
class QuerySpec:
    """``filters``: Camunda name -> kind; ``sorts``: Camunda ``sortBy`` -> the engine's sort
    name (None: a property bpm does not have); ``refused``: Camunda name -> why bpm cannot
    honour it."""

    resource: str
    filters: Mapping[str, Kind]
    sorts: Mapping[str, str | None]
    refused: Mapping[str, str] = field(default_factory=dict)


_SCHEMAS: dict[Kind, dict[str, Any]] = {
    Kind.TEXT: {"type": "string"},
    Kind.TEXTS: {"type": "array", "items": {"type": "string"}},
    Kind.BOOL: {"type": "boolean"},
    Kind.INT: {"type": "integer"},
    Kind.DATE: {"type": "string", "format": "date-time"},
    Kind.IDS: {"type": "array", "items": {"type": "string", "format": "uuid"}},
    Kind.CONDITIONS: {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "operator": {"type": "string"}, "value": {}},
            "required": ["name", "operator"],
        },
    },
}


_LISTS = (Kind.TEXTS, Kind.IDS, Kind.CONDITIONS)


def openapi(spec: QuerySpec, *, body: bool = False, paged: bool = True) -> dict[str, Any]:
    """The OpenAPI of a list endpoint read by hand (``openapi_extra``): its filters as query
    parameters, or as a request body's properties; ``paged``: with paging and sorting."""
    paging = [
        {"name": name, "in": "query", "required": False, "schema": {"type": "integer"}}
        for name in (_PAGING if paged else ())
    ]
    sort = {"type": "string", "enum": sorted(spec.sorts)}
    order = {"type": "string", "enum": ["asc", "desc"]}
    if not body:
        filters = [
            {
                "name": name,
                "in": "query",
                "required": False,
                "schema": {"type": "string"} if kind in _LISTS else _SCHEMAS[kind],
                "description": "comma-separated" if kind in _LISTS else "",
            }
            for name, kind in spec.filters.items()
        ]
        sorting = [
            {"name": "sortBy", "in": "query", "required": False, "schema": sort},
            {"name": "sortOrder", "in": "query", "required": False, "schema": order},
        ]
        return {"parameters": filters + (paging + sorting if paged else [])}
    properties = {name: _SCHEMAS[kind] for name, kind in spec.filters.items()}
    if paged:
        item = {"type": "object", "properties": {"sortBy": sort, "sortOrder": order}}
        properties["sorting"] = {"type": "array", "items": item}
    schema = {"type": "object", "properties": properties}
    return {
        "parameters": paging,
        "requestBody": {"content": {"application/json": {"schema": schema}}},
    }


def from_query(
    spec: QuerySpec, params: Mapping[str, str], *, paged: bool = True
) -> tuple[dict[str, Any], Page]:
    """A ``GET``'s filters (as Camunda names -> values) and its page (``paged``: False for
    a count, which ignores paging and sorting as Camunda's counts do)."""
    filters: dict[str, Any] = {}
    for name, raw in params.items():
        if name in _PAGING or name in ("sortBy", "sortOrder"):
            continue
        if name not in spec.filters and raw in ("", "false"):
            continue  # filters nothing
        kind = _kind(spec, name, paged)
        filters[name] = _from_text(name, raw, kind)
    order: list[tuple[str, str | None]] = []
    if "sortBy" in params or "sortOrder" in params:
        if "sortBy" not in params or "sortOrder" not in params:
            raise InvalidRequest(
                "Only a single sorting parameter specified. sortBy and sortOrder required"
            )
        order.append((params["sortBy"], params["sortOrder"]))
    return filters, _page(spec, params, order)


def from_body(spec: QuerySpec, body: Any, params: Mapping[str, str]) -> tuple[dict[str, Any], Page]:
    """A ``POST`` query's filters and its page (``sorting``: a list of {sortBy, sortOrder})."""
    if body is None:
        body = {}
    if not isinstance(body, Mapping):
        raise InvalidRequest(f"the {spec.resource} query must be a JSON object")
    where = nul_at(dict(body), "")
    if where is not None:
        raise InvalidRequest(
            f"{where}: a text may not contain the NUL character (\\u0000), which PostgreSQL"
            " cannot store"
        )
    filters: dict[str, Any] = {}
    order: list[tuple[str, str | None]] = []
    for name, value in body.items():
        if value is None:
            continue  # an explicit null reads as absent, as Camunda reads it
        if (
            name not in spec.filters
            and name != "sorting"
            and (value is False or value in ("", [], {}))
        ):
            continue  # filters nothing
        if name == "sorting":
            if not isinstance(value, list) or not all(isinstance(s, Mapping) for s in value):
                raise InvalidRequest("sorting must be a list of {sortBy, sortOrder}")
            order += [(str(s.get("sortBy")), s.get("sortOrder")) for s in value]
            continue
        filters[name] = _from_json(name, value, _kind(spec, name, True))
    return filters, _page(spec, params, order)


def both(f: Mapping[str, Any], one: str, many: str, *, single: bool = False) -> Any:
    """A filter Camunda takes as one value (``one``; ``single``: not a list) and as a list
    (``many``): given both, both must hold (their intersection); None when neither is."""
    first = f.get(one)
    if single and first is not None:
        first = [first]
    second = f.get(many)
    if first is None or second is None:
        return first if second is None else second
    return [x for x in first if x in second]


def _kind(spec: QuerySpec, name: str, paged: bool) -> Kind:
    kind = spec.filters.get(name)
    if kind is not None:
        return kind
    why = spec.refused.get(name)
    if why is not None:
        raise InvalidRequest(f"{spec.resource}: bpm cannot filter by {name}: {why}")
    raise InvalidRequest(_unknown(spec, name, paged))


def _unknown(spec: QuerySpec, name: str, paged: bool) -> str:
    reads = sorted(spec.filters) + (sorted((*_PAGING, "sortBy", "sortOrder")) if paged else [])
    return (
        f"{spec.resource}: {name!r} is not supported by bpm (this endpoint reads"
        f" {', '.join(reads)})"
    )


def _page(spec: QuerySpec, params: Mapping[str, str], order: list[tuple[str, str | None]]) -> Page:
    first = _int_param(params, "firstResult", 0)
    limit = _int_param(params, "maxResults", MAX_RESULTS)
    if limit > MAX_RESULTS:
        raise InvalidRequest(f"maxResults is at most {MAX_RESULTS}, got {limit}")
    sorts: list[tuple[str, bool]] = []
    for sort_by, sort_order in order:
        if sort_by not in spec.sorts:
            raise InvalidRequest(
                f"{spec.resource}: cannot sort by {sort_by!r}; sortBy is one of "
                f"{', '.join(sorted(spec.sorts))}"
            )
        if sort_order not in ("asc", "desc"):
            raise InvalidRequest(f"sortOrder must be asc or desc, got {sort_order!r}")
        sort = spec.sorts[sort_by]
        if sort is None:
            raise InvalidRequest(f"sortBy {sort_by!r}: bpm has no such property to sort by")
        sorts.append((sort, sort_order == "desc"))
    return Page(first, limit, tuple(sorts))


def _int_param(params: Mapping[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidRequest(f"{name} must be a whole number, got {raw!r}") from None
    if not 0 <= value <= INT_MAX:
        raise InvalidRequest(f"{name} must be from 0 to {INT_MAX}, got {value}")
    return value


def _from_text(name: str, raw: str, kind: Kind) -> Any:
    match kind:
        case Kind.TEXT | Kind.CONDITIONS:
            return raw
        case Kind.TEXTS:
            return [part for part in raw.split(",") if part]
        case Kind.IDS:
            return _ids(part for part in raw.split(",") if part)
        case Kind.BOOL:
            if raw.lower() not in ("true", "false"):
                raise InvalidRequest(f"{name} must be true or false, got {raw!r}")
            return raw.lower() == "true"
        case Kind.INT:
            try:
                return _java_int(name, int(raw))
            except ValueError:
                raise InvalidRequest(f"{name} must be an integer, got {raw!r}") from None
        case Kind.DATE:
            return _date(name, raw)


def _from_json(name: str, value: Any, kind: Kind) -> Any:
    match kind:
        case Kind.TEXT if isinstance(value, str):
            return value
        case Kind.TEXTS if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        case Kind.IDS if isinstance(value, str):
            return _ids([value])
        case Kind.IDS if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return _ids(value)
        case Kind.BOOL if isinstance(value, bool):
            return value
        case Kind.INT if isinstance(value, int) and not isinstance(value, bool):
            return _java_int(name, value)
        case Kind.DATE if isinstance(value, str):
            return _date(name, value)
        case Kind.CONDITIONS if isinstance(value, list) and all(_condition(v) for v in value):
            return list(value)
    raise InvalidRequest(f"{name} must be {kind.value}, got {value!r}")


def _condition(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("operator"), str)
        and set(value) <= {"name", "operator", "value"}
    )


def _java_int(name: str, value: int) -> int:
    """Camunda's ints are Java's: a larger one is a 400, not a database overflow."""
    if not -INT_MAX - 1 <= value <= INT_MAX:
        raise InvalidRequest(f"{name} must be a 32-bit integer, got {value}")
    return value


def _date(name: str, raw: str) -> Any:
    try:
        return parse_date(raw)
    except InvalidRequest as exc:
        raise InvalidRequest(f"{name}: {exc}") from None


def _ids(texts: Any) -> list[UUID]:
    out: list[UUID] = []
    for text in texts:
        try:
            out.append(UUID(text))
        except ValueError:
            continue
    return out


# --- the parameters of an endpoint that is not a list (a delete's flags, say) ---


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
