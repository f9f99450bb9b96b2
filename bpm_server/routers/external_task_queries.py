"""The read side of ``/external-task``: list, count, one task and its error details, for
operators and dashboards (the worker side, fetch and reports, is ``external_tasks``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from bpm.api import Engine, ExternalTaskQuery, ExternalTaskView
from bpm_server.dates import format_date
from bpm_server.external_task_models import ExternalTaskDto
from bpm_server.ids import maybe_uuid
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.query_params import Kind, QuerySpec
from bpm_server.routing import Reader, runtime_of

router = APIRouter(prefix="/external-task", tags=["External Task"])


def task_query(f: Mapping[str, Any]) -> ExternalTaskQuery | None:
    """The engine's query; None when no task can match (an id that is not one). A flag and
    its opposite both set filter nothing, as each is read alone."""
    locked, not_locked = f.get("locked"), f.get("notLocked")
    left, none_left = f.get("withRetriesLeft"), f.get("noRetriesLeft")
    instance, task = f.get("processInstanceId"), f.get("externalTaskId")
    instance_id = None if instance is None else maybe_uuid(instance)
    task_id = None if task is None else maybe_uuid(task)
    if (instance is not None and instance_id is None) or (task is not None and task_id is None):
        return None
    return ExternalTaskQuery(
        topic=f.get("topicName"),
        worker_id=f.get("workerId"),
        locked=bool(locked) if locked or not_locked else None,
        with_retries_left=bool(left) if left or none_left else None,
        instance_id=instance_id,
        task_ids=None if task_id is None else [task_id],
    )


TASKS: ListResource[ExternalTaskQuery, ExternalTaskView] = ListResource(
    QuerySpec(
        "external task",
        {
            "topicName": Kind.TEXT,
            "workerId": Kind.TEXT,
            "locked": Kind.BOOL,
            "notLocked": Kind.BOOL,
            "withRetriesLeft": Kind.BOOL,
            "noRetriesLeft": Kind.BOOL,
            "processInstanceId": Kind.TEXT,
            "externalTaskId": Kind.TEXT,
        },
        {"id": "id", "createTime": "createTime", "taskPriority": "priority", "tenantId": None},
        {"tenantIdIn": "bpm has no tenants", "suspended": "bpm suspends no external task"},
    ),
    task_query,
    Engine.find_external_tasks,
    Engine.count_external_tasks,
    lambda request, view: ExternalTaskDto(**_common(view)),
    ExternalTaskDto,
)
add_list_routes(router, "", TASKS)


@router.get("/{task_id}", response_model=ExternalTaskDto)
def get_task(task_id: str, request: Request, caller: Reader) -> ExternalTaskDto:
    return ExternalTaskDto(**_common(runtime_of(request).engine.external_task(task_id)))


@router.get("/{task_id}/errorDetails", response_class=PlainTextResponse)
def error_details(task_id: str, request: Request, caller: Reader) -> PlainTextResponse:
    """The ``errorDetails`` of the task's last failure as plain text; empty before one."""
    view = runtime_of(request).engine.external_task(task_id)
    return PlainTextResponse(view.error_details or "")


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
