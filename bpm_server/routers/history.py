"""``/history/process-instance``, ``/history/activity-instance`` and
``/history/variable-instance``: bpm's instances, their node visits (derived from the token
history) and their variables, in Camunda 7's history shapes (docs/http-api.md)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request

from bpm.api import (
    Engine,
    FoundVariable,
    InstanceHistory,
    InstanceHistoryQuery,
    InstanceState,
    InvalidRequest,
    VariableQuery,
    Visit,
    VisitQuery,
)
from bpm_server.dates import format_date
from bpm_server.history_models import (
    HistoricActivityInstanceDto,
    HistoricProcessInstanceDto,
    HistoricVariableInstanceDto,
)
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.query_params import NO_TENANTS, Kind, QuerySpec, both
from bpm_server.routing import Reader, runtime_of
from bpm_server.variables import encode_value

router = APIRouter(prefix="/history", tags=["History"])

#: bpm's instance states as Camunda's historic states. A FAILED instance (a token failed
#: with an incident) is ACTIVE in Camunda, which has no such state; a TERMINATED one was
#: ended by a global saga's compensation.
STATES: dict[InstanceState, str] = {
    InstanceState.RUNNING: "ACTIVE",
    InstanceState.FAILED: "ACTIVE",
    InstanceState.COMPLETED: "COMPLETED",
    InstanceState.CANCELLED: "EXTERNALLY_TERMINATED",
    InstanceState.TERMINATED: "INTERNALLY_TERMINATED",
}
_STATE_FLAGS = {
    "active": (InstanceState.RUNNING, InstanceState.FAILED),
    "completed": (InstanceState.COMPLETED,),
    "externallyTerminated": (InstanceState.CANCELLED,),
    "internallyTerminated": (InstanceState.TERMINATED,),
}

INSTANCE_SPEC = QuerySpec(
    "history/process-instance",
    {
        "processInstanceId": Kind.IDS,
        "processInstanceIds": Kind.IDS,
        "processInstanceBusinessKey": Kind.TEXT,
        "processInstanceBusinessKeyLike": Kind.TEXT,
        "processDefinitionId": Kind.IDS,
        "processDefinitionKey": Kind.TEXT,
        "processDefinitionKeyIn": Kind.TEXTS,
        "finished": Kind.BOOL,
        "unfinished": Kind.BOOL,
        "withIncidents": Kind.BOOL,
        "withRootIncidents": Kind.BOOL,
        "superProcessInstanceId": Kind.IDS,
        "subProcessInstanceId": Kind.IDS,
        "startedBefore": Kind.DATE,
        "startedAfter": Kind.DATE,
        "finishedBefore": Kind.DATE,
        "finishedAfter": Kind.DATE,
        **dict.fromkeys(_STATE_FLAGS, Kind.BOOL),
    },
    {
        "instanceId": "id",
        "definitionId": "definition_id",
        "definitionKey": "process_key",
        "definitionName": "definition_name",
        "definitionVersion": "definition_version",
        "businessKey": "business_key",
        "startTime": "started",
        "endTime": "ended",
        "duration": "duration",
    },
    {
        **NO_TENANTS,
        "incidentStatus": "not supported yet: use withIncidents",
        "startedBy": "bpm records no starting user on the instance",
        "caseInstanceId": "bpm has no CMMN cases",
        "variables": "variable filters are not supported yet",
        "activeActivityIdIn": "not supported yet",
        "executedActivityIdIn": "not supported yet",
        "processDefinitionName": "not supported yet: filter by processDefinitionKey",
    },
)
ACTIVITY_SPEC = QuerySpec(
    "history/activity-instance",
    {
        "processInstanceId": Kind.IDS,
        "activityInstanceId": Kind.TEXT,
        "activityId": Kind.TEXT,
        "activityType": Kind.TEXT,
        "executionId": Kind.IDS,
        "finished": Kind.BOOL,
        "unfinished": Kind.BOOL,
        "canceled": Kind.BOOL,
        "completeScope": Kind.BOOL,
        "startedBefore": Kind.DATE,
        "startedAfter": Kind.DATE,
        "finishedBefore": Kind.DATE,
        "finishedAfter": Kind.DATE,
    },
    {
        "activityInstanceId": "id",
        "instanceId": "id",
        "executionId": "token_id",
        "activityId": "node_id",
        "activityName": "name",
        "activityType": "type",
        "startTime": "started",
        "endTime": "ended",
        "duration": "duration",
        "occurrence": "started",
    },
    {
        **NO_TENANTS,
        "activityName": "not supported yet: filter by activityId",
        "taskAssignee": "not supported yet: use GET /task?assignee=",
        "processDefinitionId": "give processInstanceId: visits are read per instance",
    },
)
VARIABLE_SPEC = QuerySpec(
    "history/variable-instance",
    {
        "variableName": Kind.TEXT,
        "variableNameIn": Kind.TEXTS,
        "variableNameLike": Kind.TEXT,
        "processInstanceId": Kind.IDS,
        "processInstanceIdIn": Kind.IDS,
        "processDefinitionId": Kind.IDS,
        "processDefinitionKey": Kind.TEXT,
        # Values are JSON: there is nothing to deserialize, so it changes nothing.
        "deserializeValues": Kind.BOOL,
    },
    {"instanceId": "instance_id", "variableName": "name"},
    {
        **NO_TENANTS,
        "variableValue": "not supported yet",
        "variableTypeIn": "not supported yet",
        "includeDeleted": "bpm keeps the last value of each variable only",
        "executionIdIn": "bpm's variable history holds instance variables only",
        "taskIdIn": "bpm's variable history holds instance variables only",
        "activityInstanceIdIn": "bpm's variable history holds instance variables only",
        "caseInstanceId": "bpm has no CMMN cases",
    },
)


def instance_query(f: Mapping[str, Any]) -> InstanceHistoryQuery:
    wanted = [name for name in _STATE_FLAGS if f.get(name)]
    states = None
    if wanted:
        sets = [set(_STATE_FLAGS[name]) for name in wanted]
        states = [str(s) for s in set.intersection(*sets)]
    finished, unfinished = bool(f.get("finished")), bool(f.get("unfinished"))
    return InstanceHistoryQuery(
        instance_ids=both(f, "processInstanceId", "processInstanceIds"),
        business_key=f.get("processInstanceBusinessKey"),
        business_key_like=f.get("processInstanceBusinessKeyLike"),
        definition_ids=f.get("processDefinitionId"),
        process_keys=both(f, "processDefinitionKey", "processDefinitionKeyIn", single=True),
        states=states,
        finished=None if finished == unfinished else finished,
        started_before=f.get("startedBefore"),
        started_after=f.get("startedAfter"),
        finished_before=f.get("finishedBefore"),
        finished_after=f.get("finishedAfter"),
        with_incidents=bool(f.get("withIncidents") or f.get("withRootIncidents")),
        called_by=f.get("superProcessInstanceId"),
        calling=f.get("subProcessInstanceId"),
        none=finished and unfinished,
    )


INSTANCES: ListResource[InstanceHistoryQuery, InstanceHistory] = ListResource(
    INSTANCE_SPEC,
    instance_query,
    Engine.find_instance_history,
    Engine.count_instance_history,
    lambda request, h: instance_dto(h),
    HistoricProcessInstanceDto,
)
add_list_routes(router, "/process-instance", INSTANCES)


@router.get("/process-instance/{instance_id}", response_model=HistoricProcessInstanceDto)
def get_instance(instance_id: str, request: Request, caller: Reader) -> HistoricProcessInstanceDto:
    return instance_dto(runtime_of(request).engine.instance_history(instance_id))


def instance_dto(h: InstanceHistory) -> HistoricProcessInstanceDto:
    i = h.instance
    ended = i.ended_at
    duration = None if ended is None else int((ended - i.started_at).total_seconds() * 1000)
    return HistoricProcessInstanceDto(
        id=str(i.id),
        business_key=i.business_key,
        process_definition_id=str(i.process_def_id),
        process_definition_key=i.process_key,
        process_definition_name=h.definition_name,
        process_definition_version=h.definition_version,
        start_time=format_date(i.started_at),
        end_time=format_date(ended),
        duration_in_millis=duration,
        start_activity_id=h.start_node,
        root_process_instance_id=str(i.root_instance_id or i.id),
        super_process_instance_id=str(i.super_instance_id) if i.super_instance_id else None,
        state=STATES[InstanceState(i.state)],
    )


def visit_query(f: Mapping[str, Any]) -> VisitQuery:
    ids = f.get("processInstanceId")
    if ids is None or len(ids) > 1:
        raise InvalidRequest(
            "history/activity-instance needs one processInstanceId: bpm derives the visits "
            "from one instance's history"
        )
    finished, unfinished = bool(f.get("finished")), bool(f.get("unfinished"))
    return VisitQuery(
        instance_id=ids[0],
        node_ids=[f["activityId"]] if "activityId" in f else None,
        types=[f["activityType"]] if "activityType" in f else None,
        token_ids=f.get("executionId"),
        finished=None if finished == unfinished else finished,
        canceled=True if f.get("canceled") else None,
        complete_scope=True if f.get("completeScope") else None,
        started_before=f.get("startedBefore"),
        started_after=f.get("startedAfter"),
        finished_before=f.get("finishedBefore"),
        finished_after=f.get("finishedAfter"),
        visit_ids=[f["activityInstanceId"]] if "activityInstanceId" in f else None,
    )


def visit_query_or_none(f: Mapping[str, Any]) -> VisitQuery | None:
    """None for an id that is no instance's, or two flags that exclude each other."""
    if f.get("processInstanceId") == [] or (f.get("finished") and f.get("unfinished")):
        return None
    return visit_query(f)


VISITS: ListResource[VisitQuery, Visit] = ListResource(
    ACTIVITY_SPEC,
    visit_query_or_none,
    Engine.find_visits,
    Engine.count_visits,
    lambda request, v: visit_dto(v),
    HistoricActivityInstanceDto,
)
add_list_routes(router, "/activity-instance", VISITS)


def visit_dto(v: Visit) -> HistoricActivityInstanceDto:
    ended = v.ended_at
    duration = None if ended is None else int((ended - v.started_at).total_seconds() * 1000)
    return HistoricActivityInstanceDto(
        id=v.id,
        parent_activity_instance_id=str(v.instance_id),
        activity_id=v.node_id,
        activity_name=v.name,
        activity_type=v.type,
        process_definition_key=v.process_key,
        process_definition_id=str(v.definition_id),
        process_instance_id=str(v.instance_id),
        execution_id=str(v.token_id),
        task_id=None if v.task_id is None else str(v.task_id),
        assignee=v.assignee,
        start_time=format_date(v.started_at),
        end_time=format_date(ended),
        duration_in_millis=duration,
        canceled=v.canceled,
        complete_scope=v.complete_scope,
        root_process_instance_id=str(v.instance_id),
    )


def variable_query(f: Mapping[str, Any]) -> VariableQuery:
    return VariableQuery(
        instance_ids=both(f, "processInstanceId", "processInstanceIdIn"),
        names=both(f, "variableName", "variableNameIn", single=True),
        name_like=f.get("variableNameLike"),
        definition_ids=f.get("processDefinitionId"),
        process_keys=[f["processDefinitionKey"]] if "processDefinitionKey" in f else None,
    )


VARIABLES: ListResource[VariableQuery, FoundVariable] = ListResource(
    VARIABLE_SPEC,
    variable_query,
    Engine.find_variable_history,
    Engine.count_variable_history,
    lambda request, v: variable_dto(v),
    HistoricVariableInstanceDto,
)
add_list_routes(router, "/variable-instance", VARIABLES)


def variable_dto(v: FoundVariable) -> HistoricVariableInstanceDto:
    typed = encode_value(v.value)
    instance = str(v.instance_id)
    return HistoricVariableInstanceDto(
        # Stable: the same variable of the same instance has the same id in every answer.
        id=str(uuid.uuid5(v.instance_id, v.name)),
        name=v.name,
        type=typed["type"],
        value=typed["value"],
        value_info=typed["valueInfo"],
        process_definition_key=v.process_key,
        process_definition_id=str(v.definition_id),
        process_instance_id=instance,
        execution_id=instance,
        activity_instance_id=instance,
        create_time=format_date(v.updated_at),
        root_process_instance_id=instance,
    )
