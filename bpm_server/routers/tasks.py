"""``/task``: open user tasks, their forms and variables; claim, unclaim, complete and
submit a form (docs/http-api.md lists the differences from Camunda 7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Query, Request, Response

from bpm.api import Engine, Forbidden, InvalidRequest, UserTaskQuery, UserTaskView
from bpm_server import hal
from bpm_server.auth import Principal
from bpm_server.dates import format_date
from bpm_server.definition_models import definition_dto
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import wire
from bpm_server.query_params import Kind, QuerySpec, both, from_query, openapi
from bpm_server.routing import Reader, TaskWorker, no_content, runtime_of
from bpm_server.task_models import (
    CompleteTaskDto,
    FormDto,
    TaskDto,
    TaskLifecycle,
    UserIdDto,
    form_key,
    form_ref,
    typed_form_value,
)
from bpm_server.variables import decode_variables, encode_variables

router = APIRouter(prefix="/task", tags=["Task"])

_NAMES = "task names live in the definition, not on the task: filter by taskDefinitionKey"
SPEC = QuerySpec(
    "task",
    {
        "taskId": Kind.IDS,
        "taskIdIn": Kind.IDS,
        "assignee": Kind.TEXT,
        "assigneeLike": Kind.TEXT,
        "assigneeIn": Kind.TEXTS,
        "assigned": Kind.BOOL,
        "unassigned": Kind.BOOL,
        "candidateUser": Kind.TEXT,
        "candidateGroup": Kind.TEXT,
        "candidateGroups": Kind.TEXTS,
        "includeAssignedTasks": Kind.BOOL,
        "withCandidateGroups": Kind.BOOL,
        "withoutCandidateGroups": Kind.BOOL,
        "withCandidateUsers": Kind.BOOL,
        "withoutCandidateUsers": Kind.BOOL,
        "processInstanceId": Kind.IDS,
        "processInstanceIdIn": Kind.IDS,
        "processInstanceBusinessKey": Kind.TEXT,
        "processInstanceBusinessKeyLike": Kind.TEXT,
        "processDefinitionId": Kind.IDS,
        "processDefinitionKey": Kind.TEXT,
        "processDefinitionKeyIn": Kind.TEXTS,
        "taskDefinitionKey": Kind.TEXT,
        "taskDefinitionKeyIn": Kind.TEXTS,
        "taskDefinitionKeyLike": Kind.TEXT,
        "dueBefore": Kind.DATE,
        "dueAfter": Kind.DATE,
        "withoutDueDate": Kind.BOOL,
        "followUpBefore": Kind.DATE,
        "followUpAfter": Kind.DATE,
        "createdBefore": Kind.DATE,
        "createdAfter": Kind.DATE,
        "priority": Kind.INT,
        "minPriority": Kind.INT,
        "maxPriority": Kind.INT,
        "active": Kind.BOOL,
        "suspended": Kind.BOOL,
    },
    {
        "id": "id",
        "created": "created",
        "lastUpdated": "updated",
        "dueDate": "due_date",
        "followUpDate": "follow_up_date",
        "priority": "priority",
        "assignee": "assignee",
        "instanceId": "instance_id",
        "executionId": "token_id",
    },
    {
        "name": _NAMES,
        "nameLike": _NAMES,
        "nameNotEqual": _NAMES,
        "nameNotLike": _NAMES,
        "description": "descriptions live in the definition, not on the task",
        "descriptionLike": "descriptions live in the definition, not on the task",
        "owner": "bpm has no task owners",
        "delegationState": "bpm has no delegation",
        "involvedUser": "bpm keeps no identity links besides assignee and candidates",
        "candidateGroupLike": "candidate groups match by name only",
        "tenantIdIn": "bpm has no tenants",
        "withoutTenantId": "bpm has no tenants",
        "processVariables": "variable filters are not supported yet",
        "taskVariables": "variable filters are not supported yet",
        "caseInstanceVariables": "bpm has no CMMN cases",
        "caseInstanceId": "bpm has no CMMN cases",
        "caseDefinitionKey": "bpm has no CMMN cases",
        "orQueries": "or-queries are not supported yet",
        "executionId": "filter by processInstanceId (a token is not an execution)",
    },
)


def task_query(f: Mapping[str, Any]) -> UserTaskQuery:
    """Camunda's task filters as an engine query; a flag that is false filters nothing."""
    assigned = _flag(f, "assigned", "unassigned")
    return UserTaskQuery(
        task_ids=both(f, "taskId", "taskIdIn"),
        assignee=f.get("assignee"),
        assignee_like=f.get("assigneeLike"),
        assignees=f.get("assigneeIn"),
        candidate_user=f.get("candidateUser"),
        candidate_groups=both(f, "candidateGroup", "candidateGroups", single=True),
        candidates_only_unassigned=not f.get("includeAssignedTasks", False),
        assigned=None if assigned == "both" else assigned,
        with_candidate_groups=_flag(f, "withCandidateGroups", "withoutCandidateGroups"),
        with_candidate_users=_flag(f, "withCandidateUsers", "withoutCandidateUsers"),
        instance_ids=both(f, "processInstanceId", "processInstanceIdIn"),
        business_key=f.get("processInstanceBusinessKey"),
        business_key_like=f.get("processInstanceBusinessKeyLike"),
        definition_ids=f.get("processDefinitionId"),
        process_keys=both(f, "processDefinitionKey", "processDefinitionKeyIn", single=True),
        node_ids=both(f, "taskDefinitionKey", "taskDefinitionKeyIn", single=True),
        node_like=f.get("taskDefinitionKeyLike"),
        due_before=f.get("dueBefore"),
        due_after=f.get("dueAfter"),
        without_due_date=bool(f.get("withoutDueDate")),
        follow_up_before=f.get("followUpBefore"),
        follow_up_after=f.get("followUpAfter"),
        created_before=f.get("createdBefore"),
        created_after=f.get("createdAfter"),
        priority=f.get("priority"),
        min_priority=f.get("minPriority"),
        max_priority=f.get("maxPriority"),
        none=bool(f.get("suspended")) or assigned == "both",
    )


def _flag(f: Mapping[str, Any], yes: str, no: str) -> Any:
    """True when ``yes`` is set, False when ``no`` is, "both" when both are (nothing can
    match), None when neither."""
    has, has_not = bool(f.get(yes)), bool(f.get(no))
    if has and has_not:
        return "both"
    return True if has else (False if has_not else None)


@router.get("", response_model=list[TaskDto], openapi_extra=openapi(SPEC))
def list_tasks(request: Request, caller: Reader) -> list[TaskDto] | Response:
    """In HAL when ``Accept`` prefers ``application/hal+json`` (Camunda's Tasklist asks so):
    the page's tasks, their process definitions, and the count of every match."""
    filters, page = from_query(SPEC, request.query_params)
    engine = runtime_of(request).engine
    query = task_query(filters)
    found = engine.find_user_tasks(query, page)
    if not hal.prefers_hal(request):
        return [task_dto(v) for v in found]
    definitions = {v.definition_id: engine.process_definition(v.definition_id) for v in found}
    return hal.collection(
        "/task",
        engine.count_user_tasks(query),
        {
            "task": [_hal_task(v) for v in found],
            "processDefinition": [
                hal.resource(
                    definition_dto(row).model_dump(mode="json", by_alias=True),
                    {"self": f"/process-definition/{row.id}"},
                )
                for row in definitions.values()
            ],
        },
    )


def _hal_task(v: UserTaskView) -> dict[str, Any]:
    links = {
        "self": f"/task/{v.id}",
        "execution": f"/execution/{v.token_id}",
        "processDefinition": f"/process-definition/{v.definition_id}",
        "processInstance": f"/process-instance/{v.instance_id}",
        "identityLink": f"/task/{v.id}/identity-links",
    }
    if v.assignee is not None:
        links["assignee"] = f"/user/{v.assignee}"
    return hal.resource(task_dto(v).model_dump(mode="json", by_alias=True), links)


TASKS: ListResource[UserTaskQuery, UserTaskView] = ListResource(
    SPEC,
    task_query,
    Engine.find_user_tasks,
    Engine.count_user_tasks,
    lambda request, v: task_dto(v),
    TaskDto,
)
add_list_routes(router, "", TASKS, get=False)


@router.get("/{task_id}", response_model=TaskDto)
def get_task(task_id: str, request: Request, caller: Reader) -> TaskDto:
    return task_dto(runtime_of(request).engine.user_task(task_id))


@router.get("/{task_id}/form", response_model=FormDto)
def get_form(task_id: str, request: Request, caller: Reader) -> FormDto:
    view = runtime_of(request).engine.user_task(task_id)
    return FormDto(key=form_key(view.form), camunda_form_ref=form_ref(view.form))


@router.get("/{task_id}/form-variables")
def form_variables(
    task_id: str,
    request: Request,
    caller: Reader,
    variable_names: str | None = Query(None, alias="variableNames"),
    deserialize_values: bool = Query(True, alias="deserializeValues"),
) -> dict[str, dict[str, Any]]:
    """Typed by the form field's type (``long`` -> Long, ``boolean`` -> Boolean, ``date``
    -> Date, ``string`` and ``enum`` -> String), else by the value."""
    names = None if variable_names is None else [n for n in variable_names.split(",") if n]
    found = runtime_of(request).engine.user_task_form_values(task_id, names)
    return {v.name: typed_form_value(v.value, v.type) for v in found}


@router.get("/{task_id}/variables")
def task_variables(task_id: str, request: Request, caller: Reader) -> dict[str, dict[str, Any]]:
    return encode_variables(runtime_of(request).engine.user_task_variables(task_id))


@router.post("/{task_id}/claim", status_code=204, response_class=Response)
def claim(task_id: str, body: UserIdDto, request: Request, caller: TaskWorker) -> Response:
    """Someone else's claim is a 409 ``TaskAlreadyClaimedException`` (Camunda: 500)."""
    runtime = runtime_of(request)
    check_process(runtime.engine.user_task(task_id), caller)
    if not body.user_id:
        raise InvalidRequest("userId is required to claim a task")
    user = body.user_id
    runtime.run(lambda: runtime.engine.claim(task_id, user))
    return no_content()


@router.post("/{task_id}/unclaim", status_code=204, response_class=Response)
def unclaim(task_id: str, request: Request, caller: TaskWorker) -> Response:
    runtime = runtime_of(request)
    check_process(runtime.engine.user_task(task_id), caller)
    runtime.run(lambda: runtime.engine.unclaim(task_id))
    return no_content()


@router.post("/{task_id}/complete", response_model=None)
def complete(
    task_id: str, request: Request, caller: TaskWorker, body: CompleteTaskDto | None = None
) -> Response | dict[str, dict[str, Any]]:
    """The task's form is checked here too (bpm checks forms on every completion)."""
    return _complete(task_id, request, caller, body or CompleteTaskDto())


@router.post("/{task_id}/submit-form", response_model=None)
def submit_form(
    task_id: str, request: Request, caller: TaskWorker, body: CompleteTaskDto | None = None
) -> Response | dict[str, dict[str, Any]]:
    """A missing required field or a value of the wrong type is a 400 naming the field;
    nothing changes then."""
    return _complete(task_id, request, caller, body or CompleteTaskDto())


def _complete(
    task_id: str, request: Request, caller: Principal, body: CompleteTaskDto
) -> Response | dict[str, dict[str, Any]]:
    runtime = runtime_of(request)
    view = runtime.engine.user_task(task_id)
    check_process(view, caller)
    if body.with_variables_in_return:
        caller.check_variables_read("withVariablesInReturn")
    values = decode_variables(wire(body.variables))
    runtime.run(lambda: runtime.engine.complete_user_task(view.id, values))
    if not body.with_variables_in_return:
        return no_content()
    return encode_variables(runtime.engine.show(view.instance_id)["variables"])


def check_process(view: UserTaskView, caller: Principal) -> None:
    if caller.processes is not None and view.process_key not in caller.processes:
        # The task's process is not the caller's to see: the refusal names the task only.
        raise Forbidden(f"{caller.name} may not work on task {view.id}")


def task_dto(v: UserTaskView) -> TaskDto:
    return TaskDto(
        id=str(v.id),
        name=v.name,
        assignee=v.assignee,
        created=format_date(v.created_at),
        last_updated=format_date(v.updated_at),
        due=format_date(v.due_date),
        follow_up=format_date(v.follow_up_date),
        description=v.description,
        execution_id=str(v.token_id),
        priority=v.priority,
        process_definition_id=str(v.definition_id),
        process_instance_id=str(v.instance_id),
        task_definition_key=v.node_id,
        form_key=form_key(v.form),
        camunda_form_ref=form_ref(v.form),
        task_state=TaskLifecycle.UPDATED if v.updated_at > v.created_at else TaskLifecycle.CREATED,
    )
