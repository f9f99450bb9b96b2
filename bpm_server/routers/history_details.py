"""``/history/task`` and ``/history/detail``: user tasks open and ended, and each change of
an instance's variables, in Camunda 7's history shapes (docs/http-api.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter

from bpm.api import (
    Engine,
    InvalidRequest,
    TaskState,
    UserTaskQuery,
    UserTaskView,
    VariableUpdate,
    VariableUpdateQuery,
)
from bpm_server.dates import format_date
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import Dto
from bpm_server.query_params import NO_TENANTS, Kind, QuerySpec, both
from bpm_server.variables import encode_value

router = APIRouter(prefix="/history", tags=["History"])

_CASES = "bpm has no CMMN cases"

TASK_SPEC = QuerySpec(
    "history/task",
    {
        "taskId": Kind.IDS,
        "processInstanceId": Kind.IDS,
        "processInstanceIdIn": Kind.IDS,
        "processInstanceBusinessKey": Kind.TEXT,
        "processInstanceBusinessKeyLike": Kind.TEXT,
        "processDefinitionId": Kind.IDS,
        "processDefinitionKey": Kind.TEXT,
        "taskDefinitionKey": Kind.TEXT,
        "taskDefinitionKeyIn": Kind.TEXTS,
        "taskAssignee": Kind.TEXT,
        "taskAssigneeLike": Kind.TEXT,
        "assigned": Kind.BOOL,
        "unassigned": Kind.BOOL,
        "finished": Kind.BOOL,
        "unfinished": Kind.BOOL,
        "taskPriority": Kind.INT,
        "startedBefore": Kind.DATE,
        "startedAfter": Kind.DATE,
        "finishedBefore": Kind.DATE,
        "finishedAfter": Kind.DATE,
        "taskDueDateBefore": Kind.DATE,
        "taskDueDateAfter": Kind.DATE,
        "withoutTaskDueDate": Kind.BOOL,
        "taskFollowUpDateBefore": Kind.DATE,
        "taskFollowUpDateAfter": Kind.DATE,
        "withCandidateGroups": Kind.BOOL,
        "withoutCandidateGroups": Kind.BOOL,
    },
    {
        "taskId": "id",
        "processInstanceId": "instance_id",
        "executionId": "token_id",
        "assignee": "assignee",
        "startTime": "created",
        "endTime": "updated",
        "dueDate": "due_date",
        "followUpDate": "follow_up_date",
        "priority": "priority",
        "taskDefinitionKey": "node_id",
        "duration": None,
        "taskName": None,
        "taskDescription": None,
        "owner": None,
        "deleteReason": None,
        "tenantId": None,
    },
    {
        **NO_TENANTS,
        "taskName": "names live in the definition, not on the task",
        "taskNameLike": "names live in the definition, not on the task",
        "taskOwner": "bpm has no task owners",
        "taskOwnerLike": "bpm has no task owners",
        "taskInvolvedUser": "bpm keeps no identity links besides assignee and candidates",
        "taskInvolvedGroup": "bpm keeps no identity links besides assignee and candidates",
        "taskHadCandidateUser": "bpm keeps the last candidates of a task only",
        "taskHadCandidateGroup": "bpm keeps the last candidates of a task only",
        "taskVariables": "variable filters are not supported yet",
        "processVariables": "variable filters are not supported yet",
        "processFinished": "not supported yet: filter /history/process-instance",
        "processUnfinished": "not supported yet: filter /history/process-instance",
        "caseInstanceId": _CASES,
        "caseDefinitionId": _CASES,
    },
)


class HistoricTaskInstanceDto(Dto):
    id: str
    process_definition_key: str
    process_definition_id: str
    process_instance_id: str
    execution_id: str
    activity_instance_id: str
    name: str | None
    description: str | None
    delete_reason: str | None
    owner: str | None = None
    assignee: str | None
    start_time: str | None
    end_time: str | None
    duration: int | None
    task_definition_key: str
    priority: int
    due: str | None
    parent_task_id: str | None = None
    follow_up: str | None
    case_definition_key: str | None = None
    case_definition_id: str | None = None
    case_instance_id: str | None = None
    case_execution_id: str | None = None
    tenant_id: str | None = None
    removal_time: str | None = None
    root_process_instance_id: str
    task_state: str


#: Camunda's delete reason and task state of an ended task.
_ENDED = {TaskState.DONE: ("completed", "Completed"), TaskState.CANCELLED: ("deleted", "Deleted")}


def task_query(f: Mapping[str, Any]) -> UserTaskQuery | None:
    assigned, unassigned = bool(f.get("assigned")), bool(f.get("unassigned"))
    finished, unfinished = bool(f.get("finished")), bool(f.get("unfinished"))
    if (assigned and unassigned) or (finished and unfinished):
        return None  # two flags that exclude each other
    states = None
    if finished:
        states = [TaskState.DONE, TaskState.CANCELLED]
    elif unfinished:
        states = [TaskState.READY]
    groups = bool(f.get("withCandidateGroups")), bool(f.get("withoutCandidateGroups"))
    return UserTaskQuery(
        task_ids=f.get("taskId"),
        assignee=f.get("taskAssignee"),
        assignee_like=f.get("taskAssigneeLike"),
        assigned=True if assigned else (False if unassigned else None),
        candidates_only_unassigned=False,
        with_candidate_groups=True if groups[0] else (False if groups[1] else None),
        instance_ids=both(f, "processInstanceId", "processInstanceIdIn"),
        business_key=f.get("processInstanceBusinessKey"),
        business_key_like=f.get("processInstanceBusinessKeyLike"),
        definition_ids=f.get("processDefinitionId"),
        process_keys=[f["processDefinitionKey"]] if "processDefinitionKey" in f else None,
        node_ids=both(f, "taskDefinitionKey", "taskDefinitionKeyIn", single=True),
        priority=f.get("taskPriority"),
        created_before=f.get("startedBefore"),
        created_after=f.get("startedAfter"),
        ended_before=f.get("finishedBefore"),
        ended_after=f.get("finishedAfter"),
        due_before=f.get("taskDueDateBefore"),
        due_after=f.get("taskDueDateAfter"),
        without_due_date=bool(f.get("withoutTaskDueDate")),
        follow_up_before=f.get("taskFollowUpDateBefore"),
        follow_up_after=f.get("taskFollowUpDateAfter"),
        states=states,
    )


def task_dto(v: UserTaskView) -> HistoricTaskInstanceDto:
    reason, state = _ENDED.get(v.state, (None, "Created" if v.assignee is None else "Assigned"))
    ended = v.ended_at
    return HistoricTaskInstanceDto(
        id=str(v.id),
        process_definition_key=v.process_key,
        process_definition_id=str(v.definition_id),
        process_instance_id=str(v.instance_id),
        execution_id=str(v.token_id),
        activity_instance_id=f"{v.node_id}:{v.token_id}",
        name=v.name,
        description=v.description,
        delete_reason=reason,
        assignee=v.assignee,
        start_time=format_date(v.created_at),
        end_time=format_date(ended),
        duration=None if ended is None else int((ended - v.created_at).total_seconds() * 1000),
        task_definition_key=v.node_id,
        priority=v.priority,
        due=format_date(v.due_date),
        follow_up=format_date(v.follow_up_date),
        root_process_instance_id=str(v.instance_id),
        task_state=state,
    )


TASKS: ListResource[UserTaskQuery, UserTaskView] = ListResource(
    TASK_SPEC,
    task_query,
    Engine.find_task_history,
    Engine.count_task_history,
    lambda request, v: task_dto(v),
    HistoricTaskInstanceDto,
)
add_list_routes(router, "/task", TASKS)

DETAIL_SPEC = QuerySpec(
    "history/detail",
    {
        "processInstanceId": Kind.IDS,
        "processInstanceIdIn": Kind.IDS,
        "variableName": Kind.TEXT,
        "variableUpdates": Kind.BOOL,
        "formFields": Kind.BOOL,
        "excludeTaskDetails": Kind.BOOL,
        "initial": Kind.BOOL,
        "occurredBefore": Kind.DATE,
        "occurredAfter": Kind.DATE,
        "deserializeValues": Kind.BOOL,
    },
    {
        "time": "time",
        "variableName": "name",
        "variableRevision": "revision",
        "processInstanceId": "instance_id",
        "occurrence": "time",
        "variableType": None,
        "formPropertyId": None,
        "tenantId": None,
    },
    {
        **NO_TENANTS,
        "executionId": "bpm records variable changes per instance",
        "taskId": "bpm records variable changes per instance",
        "activityInstanceId": "bpm records variable changes per instance",
        "variableInstanceId": "filter by processInstanceId and variableName",
        "variableTypeIn": "not supported yet",
        "userOperationId": "bpm has no user operation log",
        "caseInstanceId": _CASES,
        "caseExecutionId": _CASES,
    },
)


class HistoricVariableUpdateDto(Dto):
    id: str
    type: str = "variableUpdate"
    process_definition_key: str
    process_definition_id: str
    process_instance_id: str
    activity_instance_id: str
    execution_id: str
    case_definition_key: str | None = None
    case_definition_id: str | None = None
    case_instance_id: str | None = None
    case_execution_id: str | None = None
    task_id: str | None = None
    tenant_id: str | None = None
    user_operation_id: str | None = None
    time: str | None
    removal_time: str | None = None
    root_process_instance_id: str
    variable_name: str
    variable_instance_id: str
    variable_type: str
    value: Any
    value_info: dict[str, Any]
    initial: bool
    revision: int
    error_message: str | None = None


def detail_query(f: Mapping[str, Any]) -> VariableUpdateQuery | None:
    """Every detail bpm has is a variable update: asking for form fields only finds none."""
    ids = both(f, "processInstanceId", "processInstanceIdIn")
    if ids is None:
        raise InvalidRequest(
            "history/detail needs processInstanceId or processInstanceIdIn: bpm derives the"
            " variable updates from the instances' history"
        )
    if not ids or (f.get("formFields") and not f.get("variableUpdates")):
        return None
    return VariableUpdateQuery(
        instance_ids=ids,
        names=[f["variableName"]] if "variableName" in f else None,
        occurred_before=f.get("occurredBefore"),
        occurred_after=f.get("occurredAfter"),
        initial=True if f.get("initial") else None,
    )


def detail_dto(u: VariableUpdate) -> HistoricVariableUpdateDto:
    typed = encode_value(u.value)
    instance = str(u.instance_id)
    return HistoricVariableUpdateDto(
        id=u.id,
        process_definition_key=u.process_key,
        process_definition_id=str(u.definition_id),
        process_instance_id=instance,
        activity_instance_id=instance,
        execution_id=instance,
        time=format_date(u.at),
        root_process_instance_id=instance,
        variable_name=u.name,
        variable_instance_id=str(u.variable_id),
        variable_type="Null" if u.deleted else typed["type"],
        value=typed["value"],
        value_info=typed["valueInfo"],
        initial=u.revision == 1,
        revision=u.revision,
    )


DETAILS: ListResource[VariableUpdateQuery, VariableUpdate] = ListResource(
    DETAIL_SPEC,
    detail_query,
    Engine.find_variable_updates,
    Engine.count_variable_updates,
    lambda request, u: detail_dto(u),
    HistoricVariableUpdateDto,
)
add_list_routes(router, "/detail", DETAILS)
