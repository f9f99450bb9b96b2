"""The read side of ``/external-task``: list, count, one task and its error details, for
operators and dashboards (the worker side, fetch and reports, is ``external_tasks``)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse

from bpm.engine.operations.external_views import ExternalTaskView
from bpm.errors import InvalidRequest
from bpm_server.auth import Permission, Principal, require
from bpm_server.dates import format_date
from bpm_server.external_task_models import ExternalTaskDto, ExternalTaskQueryDto
from bpm_server.models import INT_MAX, CountDto
from bpm_server.runtime import ServerRuntime

router = APIRouter(prefix="/external-task", tags=["External Task"])
Reader = Annotated[Principal, Depends(require(Permission.READ))]


def _runtime(request: Request) -> ServerRuntime:
    runtime: ServerRuntime = request.app.state.runtime
    return runtime


def _query(
    topic_name: Annotated[str | None, Query(alias="topicName")] = None,
    worker_id: Annotated[str | None, Query(alias="workerId")] = None,
    locked: bool = False,
    not_locked: Annotated[bool, Query(alias="notLocked")] = False,
    with_retries_left: Annotated[bool, Query(alias="withRetriesLeft")] = False,
    no_retries_left: Annotated[bool, Query(alias="noRetriesLeft")] = False,
    process_instance_id: Annotated[str | None, Query(alias="processInstanceId")] = None,
    external_task_id: Annotated[str | None, Query(alias="externalTaskId")] = None,
) -> ExternalTaskQueryDto:
    """The filters of ``GET /external-task`` and ``GET /external-task/count``."""
    return ExternalTaskQueryDto(
        topic_name=topic_name,
        worker_id=worker_id,
        locked=locked,
        not_locked=not_locked,
        with_retries_left=with_retries_left,
        no_retries_left=no_retries_left,
        process_instance_id=process_instance_id,
        external_task_id=external_task_id,
    )


QueryParams = Annotated[ExternalTaskQueryDto, Depends(_query)]


@router.get("", response_model=list[ExternalTaskDto])
def list_tasks(
    request: Request,
    caller: Reader,
    query: QueryParams,
    first_result: Annotated[int, Query(alias="firstResult", ge=0, le=INT_MAX)] = 0,
    max_results: Annotated[int, Query(alias="maxResults", ge=0, le=1000)] = 1000,
) -> list[ExternalTaskDto]:
    match = _match(query)
    if match is None:
        return []
    engine = _runtime(request).engine
    views = engine.external_tasks(limit=max_results, offset=first_result, **match)
    return [ExternalTaskDto(**_common(v)) for v in views]


@router.get("/count", response_model=CountDto)
def count_tasks(request: Request, caller: Reader, query: QueryParams) -> CountDto:
    """How many tasks ``GET /external-task`` lists with the same filters, unpaged."""
    return _count(request, query)


@router.post("/count", response_model=CountDto)
def query_count(
    request: Request, caller: Reader, body: ExternalTaskQueryDto | None = None
) -> CountDto:
    """The filters as a JSON body; one bpm does not have is refused by name."""
    query = body or ExternalTaskQueryDto()
    unread = sorted(
        name
        for name, value in (query.model_extra or {}).items()
        if value not in (None, False, "", [], {})  # filters nothing: accepted by any name
    )
    if unread:
        raise InvalidRequest(
            f"query property {', '.join(unread)} is not supported by bpm (it filters by"
            " topicName, workerId, locked, notLocked, withRetriesLeft, noRetriesLeft,"
            " processInstanceId and externalTaskId)"
        )
    return _count(request, query)


def _count(request: Request, query: ExternalTaskQueryDto) -> CountDto:
    match = _match(query)
    engine = _runtime(request).engine
    return CountDto(count=0 if match is None else engine.external_task_count(**match))


def _match(q: ExternalTaskQueryDto) -> dict[str, Any] | None:
    """The engine's filter for ``q``; None when no task can match (an id that is not one).
    A flag and its opposite both set filter nothing, as each is read alone."""
    match: dict[str, Any] = {}
    if q.topic_name is not None:
        match["topic"] = q.topic_name
    if q.worker_id is not None:
        match["worker_id"] = q.worker_id
    if q.locked or q.not_locked:
        match["locked"] = bool(q.locked)
    if q.with_retries_left or q.no_retries_left:
        match["with_retries_left"] = bool(q.with_retries_left)
    try:
        if q.process_instance_id is not None:
            match["instance_id"] = _uuid(q.process_instance_id)
        if q.external_task_id is not None:
            match["task_ids"] = [_uuid(q.external_task_id)]
    except ValueError:
        return None
    return match


@router.get("/{task_id}", response_model=ExternalTaskDto)
def get_task(task_id: str, request: Request, caller: Reader) -> ExternalTaskDto:
    return ExternalTaskDto(**_common(_runtime(request).engine.external_task(task_id)))


@router.get("/{task_id}/errorDetails", response_class=PlainTextResponse)
def error_details(task_id: str, request: Request, caller: Reader) -> PlainTextResponse:
    """The ``errorDetails`` of the task's last failure as plain text; empty before one."""
    view = _runtime(request).engine.external_task(task_id)
    return PlainTextResponse(view.error_details or "")


def _uuid(text: str) -> UUID:
    return UUID(text)


def _common(v: ExternalTaskView) -> dict[str, Any]:
    return {
        "id": str(v.id),
        "topic_name": v.topic,
        "worker_id": v.worker_id,
        "lock_expiration_time": format_date(v.lock_expire_at),
        "create_time": format_date(v.created_at),
        "retries": v.retries,
        "error_message": v.error_message,
        "process_instance_id": str(v.instance_id),
        "execution_id": str(v.token_id),
        "activity_id": v.node_id,
        "activity_instance_id": f"{v.node_id}:{v.token_id}",
        "process_definition_id": str(v.definition_id),
        "process_definition_key": v.process_key,
        "priority": v.priority,
        "business_key": v.business_key,
        "suspended": False,
    }
