"""``/variable-instance``: the variables of running and failed instances, as Camunda's
runtime variable query lists them (its history twin is ``/history/variable-instance``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter

from bpm.api import Engine, FoundVariable, VariableQuery
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import Dto
from bpm_server.query_params import Kind, QuerySpec
from bpm_server.variables import encode_value

router = APIRouter(prefix="/variable-instance", tags=["Variable Instance"])

#: bpm keeps instance variables here (a scope's local variables live with its token and are
#: read through the instance's activity tree), so an instance's variables carry the instance
#: id as their execution and activity instance.
SPEC = QuerySpec(
    "variable-instance",
    {
        "variableName": Kind.TEXT,
        "variableNameLike": Kind.TEXT,
        "processInstanceIdIn": Kind.IDS,
        "executionIdIn": Kind.IDS,
        "activityInstanceIdIn": Kind.IDS,
        # Values are JSON: there is nothing to deserialize, so it changes nothing.
        "deserializeValues": Kind.BOOL,
    },
    {"variableName": "name", "instanceId": "instance_id"},
    {
        "variableValues": "not supported yet: filter instances by variables",
        "variableNamesIgnoreCase": "bpm compares variable names exactly",
        "variableValuesIgnoreCase": "bpm compares variable values exactly",
        "taskIdIn": "bpm keeps no task variables",
        "batchIdIn": "bpm has no batches",
        "caseInstanceIdIn": "bpm has no CMMN cases",
        "caseExecutionIdIn": "bpm has no CMMN cases",
        "tenantIdIn": "bpm has no tenants",
    },
)


class VariableInstanceDto(Dto):
    id: str
    name: str
    type: str
    value: Any
    value_info: dict[str, Any]
    process_definition_id: str
    process_instance_id: str
    execution_id: str
    activity_instance_id: str
    case_instance_id: str | None = None
    case_execution_id: str | None = None
    task_id: str | None = None
    batch_id: str | None = None
    error_message: str | None = None
    tenant_id: str | None = None


def variable_query(f: Mapping[str, Any]) -> VariableQuery | None:
    """Execution and activity instance ids name the instance (see ``SPEC``); each given
    list must hold it."""
    given = [
        f[n] for n in ("processInstanceIdIn", "executionIdIn", "activityInstanceIdIn") if n in f
    ]
    ids = None if not given else [i for i in given[0] if all(i in g for g in given[1:])]
    if ids == []:
        return None
    return VariableQuery(
        instance_ids=ids,
        names=[f["variableName"]] if "variableName" in f else None,
        name_like=f.get("variableNameLike"),
    )


def variable_dto(v: FoundVariable) -> VariableInstanceDto:
    typed = encode_value(v.value)
    instance = str(v.instance_id)
    return VariableInstanceDto(
        # The same id as the variable's history: the same variable of the same instance.
        id=str(uuid.uuid5(v.instance_id, v.name)),
        name=v.name,
        type=typed["type"],
        value=typed["value"],
        value_info=typed["valueInfo"],
        process_definition_id=str(v.definition_id),
        process_instance_id=instance,
        execution_id=instance,
        activity_instance_id=instance,
    )


VARIABLES: ListResource[VariableQuery, FoundVariable] = ListResource(
    SPEC,
    variable_query,
    Engine.find_variables,
    Engine.count_variables,
    lambda request, v: variable_dto(v),
    VariableInstanceDto,
)
add_list_routes(router, "", VARIABLES)
