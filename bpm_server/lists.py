"""One way to serve a list resource as Camunda serves it: ``GET <path>`` with the filters as
query parameters, ``POST <path>`` with them as a JSON body, and ``GET``/``POST
<path>/count`` for how many match, all read by the resource's ``QuerySpec`` and answered by
its facade pair ``find_<x>(query, page)`` / ``count_<x>(query)``.

A resource's filters become the engine's query in one function (``to_query``); when they can
match nothing (an id that is no bpm id, ``active=false`` where nothing is ever suspended) it
answers None, and the list is empty and the count 0 without asking the database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi import APIRouter, Depends, Request

from bpm.api import Engine, Page
from bpm_server.auth import Permission, require
from bpm_server.models import CountDto
from bpm_server.query_params import QuerySpec, from_body, from_query, openapi
from bpm_server.routing import QueryBody, runtime_of

Q = TypeVar("Q")
R = TypeVar("R")


@dataclass(frozen=True)
class ListResource(Generic[Q, R]):
    """How a resource's lists are read and answered."""

    spec: QuerySpec
    to_query: Callable[[Mapping[str, Any]], Q | None]
    find: Callable[[Engine, Q, Page], Sequence[R]]
    count: Callable[[Engine, Q], int]
    #: One found row as the answer's item (the request gives the links' base).
    dto: Callable[[Request, R], Any]
    #: The answer item's model, for the OpenAPI document and the answer's validation.
    model: type[Any]


def found(
    resource: ListResource[Q, R], request: Request, filters: Mapping[str, Any], page: Page
) -> list[Any]:
    query = resource.to_query(filters)
    if query is None:
        return []
    rows = resource.find(runtime_of(request).engine, query, page)
    return [resource.dto(request, row) for row in rows]


def counted(resource: ListResource[Q, R], request: Request, filters: Mapping[str, Any]) -> int:
    query = resource.to_query(filters)
    return 0 if query is None else resource.count(runtime_of(request).engine, query)


def add_list_routes(
    router: APIRouter,
    path: str,
    resource: ListResource[Q, R],
    *,
    permission: Permission = Permission.READ,
    get: bool = True,
    post: bool = True,
) -> None:
    """``GET``/``POST`` ``path`` and ``path/count`` (``get``: False when the router answers
    ``GET path`` itself, as ``/task`` does for HAL; ``post``: False where Camunda has no
    ``POST`` query). Each checks ``permission`` first."""
    spec, name = resource.spec, resource.spec.resource.replace(" ", "_").replace("-", "_")
    caller = [Depends(require(permission))]

    def list_get(request: Request) -> list[Any]:
        filters, page = from_query(spec, request.query_params)
        return found(resource, request, filters, page)

    def list_post(request: Request, body: QueryBody = None) -> list[Any]:
        filters, page = from_body(spec, body, request.query_params)
        return found(resource, request, filters, page)

    def count_get(request: Request) -> CountDto:
        filters, _ = from_query(spec, request.query_params, paged=False)
        return CountDto(count=counted(resource, request, filters))

    def count_post(request: Request, body: QueryBody = None) -> CountDto:
        filters, _ = from_body(spec, body, request.query_params)
        return CountDto(count=counted(resource, request, filters))

    items = list[resource.model]  # type: ignore[name-defined]
    routes: list[tuple[str, str, Callable[..., Any], Any, dict[str, Any]]] = []
    if get:
        routes.append((path, "GET", list_get, items, openapi(spec)))
    routes.append((f"{path}/count", "GET", count_get, CountDto, openapi(spec, paged=False)))
    if post:
        routes.append((path, "POST", list_post, items, openapi(spec, body=True)))
        extra = openapi(spec, body=True, paged=False)
        routes.append((f"{path}/count", "POST", count_post, CountDto, extra))
    for route_path, method, endpoint, model, extra in routes:
        kind = "count" if route_path.endswith("/count") else "list"
        router.add_api_route(
            route_path,
            endpoint,
            methods=[method],
            response_model=model,
            openapi_extra=extra,
            dependencies=caller,
            name=f"{kind}_{name}_{method.lower()}",
        )
