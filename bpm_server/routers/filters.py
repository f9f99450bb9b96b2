"""``/filter``: saved task queries (Camunda's filters), as Camunda's Tasklist makes and runs
them: create, change, delete, list, and run one (``/{id}/list``, ``/{id}/count``) as a
``POST /task`` query whose body adds to the filter's (docs/http-api.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Query, Request, Response

from bpm.api import Engine, FilterQuery, FilterRow, Forbidden, InvalidRequest, Page, Role
from bpm_server.auth import Principal
from bpm_server.ids import maybe_uuid
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import CountDto, Dto
from bpm_server.query_params import Kind, QuerySpec, from_body
from bpm_server.routers.tasks import SPEC as TASK_SPEC
from bpm_server.routers.tasks import task_dto, task_query
from bpm_server.routing import QueryBody, Reader, TaskWorker, no_content, runtime_of
from bpm_server.task_models import TaskDto

router = APIRouter(prefix="/filter", tags=["Filter"])

#: The expressions Camunda's Tasklist writes into its default filters, read as the caller.
CURRENT_USER = "${currentUser()}"
CURRENT_GROUPS = "${currentUserGroups()}"


class FilterDto(Dto):
    id: str
    resource_type: str
    name: str
    owner: str | None
    query: dict[str, Any]
    properties: dict[str, Any]
    item_count: int | None = None


class NewFilterDto(Dto):
    resource_type: str = "Task"
    name: str | None = None
    owner: str | None = None
    query: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None


def filter_query(f: Mapping[str, Any]) -> FilterQuery | None:
    ids = None
    if "filterId" in f:
        found = maybe_uuid(f["filterId"])
        if found is None:
            return None
        ids = [found]
    return FilterQuery(
        ids=ids,
        resource_type=f.get("resourceType"),
        name=f.get("name"),
        name_like=f.get("nameLike"),
        owner=f.get("owner"),
    )


def filter_dto(row: FilterRow, count: int | None = None) -> FilterDto:
    return FilterDto(
        id=str(row.id),
        resource_type=row.resource_type,
        name=row.name,
        owner=row.owner,
        query=row.query,
        properties=row.properties or {},
        item_count=count,
    )


FILTERS: ListResource[FilterQuery, FilterRow] = ListResource(
    QuerySpec(
        "filter",
        {
            "filterId": Kind.TEXT,
            "resourceType": Kind.TEXT,
            "name": Kind.TEXT,
            "nameLike": Kind.TEXT,
            "owner": Kind.TEXT,
            # Counting each filter's tasks is not done in a list: ask /filter/{id}/count.
            "itemCount": Kind.BOOL,
        },
        {
            "filterId": "id",
            "firstResult": "id",
            "resourceType": "resource_type",
            "name": "name",
            "owner": "owner",
        },
    ),
    filter_query,
    Engine.find_filters,
    Engine.count_filters,
    lambda request, row: filter_dto(row),
    FilterDto,
)
add_list_routes(router, "", FILTERS, post=False)


@router.post("/create", response_model=FilterDto)
def create(body: NewFilterDto, request: Request, caller: TaskWorker) -> FilterDto:
    if body.name is None or body.query is None:
        raise InvalidRequest("a filter needs a name and a query")
    engine = runtime_of(request).engine
    made = engine.create_filter(
        body.name,
        body.query,
        owner=body.owner,
        properties=body.properties,
        resource_type=body.resource_type,
    )
    return filter_dto(made)


@router.get("/{filter_id}", response_model=FilterDto)
def get_filter(
    filter_id: str,
    request: Request,
    caller: Reader,
    item_count: bool = Query(False, alias="itemCount"),
) -> FilterDto:
    row = runtime_of(request).engine.filter(filter_id)
    return filter_dto(row, _count(request, row, None, caller) if item_count else None)


@router.put("/{filter_id}", status_code=204, response_class=Response)
def change(filter_id: str, body: NewFilterDto, request: Request, caller: TaskWorker) -> Response:
    engine = runtime_of(request).engine
    _check_owner(engine.filter(filter_id), caller)
    if body.name is None or body.query is None:
        raise InvalidRequest("a filter needs a name and a query")
    engine.change_filter(
        filter_id, body.name, body.query, owner=body.owner, properties=body.properties
    )
    return no_content()


@router.delete("/{filter_id}", status_code=204, response_class=Response)
def delete(filter_id: str, request: Request, caller: TaskWorker) -> Response:
    engine = runtime_of(request).engine
    _check_owner(engine.filter(filter_id), caller)
    engine.delete_filter(filter_id)
    return no_content()


def _check_owner(row: FilterRow, caller: Principal) -> None:
    """A filter is changed by its owner or an operator (one without an owner, by anyone
    who may work on tasks)."""
    mine = row.owner in (caller.name, caller.user_id)
    if row.owner is not None and not mine and caller.role != Role.OPERATOR:
        raise Forbidden(f"{caller.name} may not change filter {row.id}, which {row.owner} owns")


@router.get("/{filter_id}/list", response_model=list[TaskDto])
def run_get(filter_id: str, request: Request, caller: Reader) -> list[TaskDto]:
    return _run(request, filter_id, None, caller)


@router.post("/{filter_id}/list", response_model=list[TaskDto])
def run_post(
    filter_id: str, request: Request, caller: Reader, body: QueryBody = None
) -> list[TaskDto]:
    return _run(request, filter_id, body, caller)


@router.get("/{filter_id}/singleResult", response_model=TaskDto | None)
def single_get(filter_id: str, request: Request, caller: Reader) -> TaskDto | None:
    return _single(_run(request, filter_id, None, caller, most=2))


@router.post("/{filter_id}/singleResult", response_model=TaskDto | None)
def single_post(
    filter_id: str, request: Request, caller: Reader, body: QueryBody = None
) -> TaskDto | None:
    return _single(_run(request, filter_id, body, caller, most=2))


def _single(found: list[TaskDto]) -> TaskDto | None:
    """The one task the filter finds, null for none; more than one is refused, as Camunda
    refuses a single result of many."""
    if len(found) > 1:
        raise InvalidRequest("the filter finds more than one task; ask /list for them")
    return found[0] if found else None


@router.get("/{filter_id}/count", response_model=CountDto)
def count_get(filter_id: str, request: Request, caller: Reader) -> CountDto:
    row = runtime_of(request).engine.filter(filter_id)
    return CountDto(count=_count(request, row, None, caller))


@router.post("/{filter_id}/count", response_model=CountDto)
def count_post(
    filter_id: str, request: Request, caller: Reader, body: QueryBody = None
) -> CountDto:
    row = runtime_of(request).engine.filter(filter_id)
    return CountDto(count=_count(request, row, body, caller))


def _run(
    request: Request,
    filter_id: str,
    extra: Mapping[str, Any] | None,
    caller: Principal,
    *,
    most: int | None = None,
) -> list[TaskDto]:
    engine = runtime_of(request).engine
    filters, page = _task_filters(request, engine.filter(filter_id), extra, caller)
    if most is not None:
        page = Page(0, most, page.order)
    query = task_query(filters)
    return [task_dto(v) for v in engine.find_user_tasks(query, page)]


def _count(
    request: Request, row: FilterRow, extra: Mapping[str, Any] | None, caller: Principal
) -> int:
    filters, _ = _task_filters(request, row, extra, caller)
    return runtime_of(request).engine.count_user_tasks(task_query(filters))


def _task_filters(
    request: Request, row: FilterRow, extra: Mapping[str, Any] | None, caller: Principal
) -> tuple[dict[str, Any], Any]:
    """The filter's query with the request's added (a property in both: the request's), its
    ``currentUser()``/``currentUserGroups()`` read as the caller, as ``POST /task`` reads it."""
    merged = {**row.query, **(extra or {})}
    resolved = {name: _resolved(name, value, caller) for name, value in merged.items()}
    return from_body(TASK_SPEC, resolved, request.query_params)


def _resolved(name: str, value: Any, caller: Principal) -> Any:
    if value == CURRENT_USER:
        return caller.user_id
    if value == CURRENT_GROUPS:
        return sorted(caller.groups)
    if isinstance(value, str) and value.startswith(("${", "#{")):
        raise InvalidRequest(
            f"filter property {name}: bpm reads only {CURRENT_USER} and {CURRENT_GROUPS}"
            f" in a filter, not {value}"
        )
    return value
