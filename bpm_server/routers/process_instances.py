"""``/process-instance``: live instances, their variables and activity instances, and
cancelling them (docs/http-api.md lists the differences from Camunda 7)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from bpm.api import (
    ActivityNode,
    Engine,
    IncidentQuery,
    InstanceRow,
    InvalidRequest,
    LiveInstanceQuery,
    NotFound,
    Page,
)
from bpm_server.instance_filters import SPEC, live_filter
from bpm_server.instance_models import (
    ActivityInstanceDto,
    ActivityInstanceIncidentDto,
    PatchVariablesDto,
    ProcessInstanceDto,
    TransitionInstanceDto,
    row_dto,
)
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.models import VariableValueDto, wire
from bpm_server.query_params import only_params
from bpm_server.routing import Operator, Reader, no_content
from bpm_server.runtime import base_of, runtime_of
from bpm_server.variables import decode_value, decode_variables, encode_value, encode_variables

router = APIRouter(prefix="/process-instance", tags=["Process Instance"])

#: Camunda's activity types where bpm's node types are named otherwise.
ACTIVITY_TYPES = {
    "timerEvent": "intermediateTimer",
    "messageEvent": "intermediateMessageCatch",
    "compensationThrow": "intermediateCompensationThrowEvent",
    "endEvent": "noneEndEvent",
}


INSTANCES: ListResource[LiveInstanceQuery, InstanceRow] = ListResource(
    SPEC,
    live_filter,
    Engine.find_live_instances,
    Engine.count_live_instances,
    lambda request, row: row_dto(base_of(request), row),
    ProcessInstanceDto,
)
add_list_routes(router, "", INSTANCES)


@router.get("/{instance_id}", response_model=ProcessInstanceDto)
def get_instance(instance_id: str, request: Request, caller: Reader) -> ProcessInstanceDto:
    """404 once the instance has ended, as in Camunda (its history stays)."""
    return row_dto(base_of(request), runtime_of(request).engine.live_instance(instance_id))


@router.delete("/{instance_id}", status_code=204, response_class=Response)
def delete_instance(
    instance_id: str,
    request: Request,
    caller: Operator,
    fail_if_not_exists: Annotated[bool, Query(alias="failIfNotExists")] = True,
    skip_custom_listeners: Annotated[bool, Query(alias="skipCustomListeners")] = False,
    skip_io_mappings: Annotated[bool, Query(alias="skipIoMappings")] = False,
    skip_subprocesses: Annotated[bool, Query(alias="skipSubprocesses")] = False,
) -> Response:
    """Cancel it: the process's ``end`` listeners run unless ``skipCustomListeners``; bpm
    runs no output mappings on a cancel and has no called subprocesses to skip."""
    only_params(
        request,
        {
            "failIfNotExists",
            "skipCustomListeners",
            "skipIoMappings",
            "skipSubprocesses",
        },
    )
    runtime = runtime_of(request)
    try:
        runtime.engine.live_instance(instance_id)
    except NotFound:
        if fail_if_not_exists:
            raise
        return no_content()
    runtime.run(
        lambda: runtime.engine.cancel(
            instance_id, "deleted through the REST API", skip_listeners=skip_custom_listeners
        )
    )
    return no_content()


@router.get("/{instance_id}/variables", response_model=dict[str, dict[str, Any]])
def get_variables(
    instance_id: str,
    request: Request,
    caller: Reader,
    deserialize_values: Annotated[bool, Query(alias="deserializeValues")] = True,
) -> dict[str, dict[str, Any]]:
    """The instance's own variables (a scope's locals are not among them)."""
    return encode_variables(runtime_of(request).engine.live_variables(instance_id))


@router.post("/{instance_id}/variables", status_code=204, response_class=Response)
def patch_variables(
    instance_id: str, body: PatchVariablesDto, request: Request, caller: Operator
) -> Response:
    """Set ``modifications``, remove ``deletions``: one transaction, with history rows. A
    change may make a conditional event fire: ``run`` runs the steps it made due."""
    values = decode_variables(wire(body.modifications))
    runtime = runtime_of(request)
    runtime.run(lambda: runtime.engine.set_variables(instance_id, values, body.deletions or []))
    return no_content()


@router.get("/{instance_id}/variables/{name}", response_model=dict[str, Any])
def get_variable(
    instance_id: str,
    name: str,
    request: Request,
    caller: Reader,
    deserialize_value: Annotated[bool, Query(alias="deserializeValue")] = True,
) -> dict[str, Any]:
    values = runtime_of(request).engine.live_variables(instance_id)
    if name not in values:
        raise NotFound(f"process instance variable with name {name} does not exist")
    return encode_value(values[name])


@router.get("/{instance_id}/variables/{name}/data", response_class=Response)
def get_variable_data(instance_id: str, name: str, request: Request, caller: Reader) -> Response:
    """A binary variable's bytes (Bytes, File). bpm variables are JSON values, never binary,
    so a variable that exists is a 400 naming its type, as Camunda answers for a variable
    that is not binary; one that does not exist is a 404."""
    values = runtime_of(request).engine.live_variables(instance_id)
    if name not in values:
        raise NotFound(f"process instance variable with name {name} does not exist")
    kind = encode_value(values[name])["type"]
    raise InvalidRequest(
        f"Value of variable {name} of process instance {instance_id} is not a binary value:"
        f" it is a {kind} (bpm variables are JSON values; read it with"
        f" GET /process-instance/{instance_id}/variables/{name})"
    )


@router.put("/{instance_id}/variables/{name}", status_code=204, response_class=Response)
def put_variable(
    instance_id: str, name: str, body: VariableValueDto, request: Request, caller: Operator
) -> Response:
    value = decode_value(name, body.value, body.type, body.value_info or {})
    runtime = runtime_of(request)
    runtime.run(lambda: runtime.engine.set_variables(instance_id, {name: value}))
    return no_content()


@router.delete("/{instance_id}/variables/{name}", status_code=204, response_class=Response)
def delete_variable(instance_id: str, name: str, request: Request, caller: Operator) -> Response:
    runtime = runtime_of(request)
    runtime.run(lambda: runtime.engine.set_variables(instance_id, None, [name]))
    return no_content()


@router.get("/{instance_id}/activity-instances", response_model=ActivityInstanceDto)
def activity_instances(instance_id: str, request: Request, caller: Reader) -> ActivityInstanceDto:
    """The root is the instance (activityId: the definition's id); each live token at an
    activity is an activity instance (``activityId:tokenId``), a token on its way between
    wait states a transition instance, a subprocess holds the tokens inside it. An instance
    carries the open incidents of its token (``incidentIds``, ``incidents``)."""
    engine = runtime_of(request).engine
    tree = engine.activity_tree(instance_id)
    inst = tree.instance
    iid, did = str(inst.id), str(inst.process_def_id)
    name = engine.process_definition(inst.process_def_id).name
    incidents: dict[UUID, list[str]] = {}
    query = IncidentQuery(instance_ids=[inst.id])
    for found in engine.find_incidents(query, Page(limit=MAX_INCIDENTS)):
        if found.incident.token_id is not None:
            incidents.setdefault(found.incident.token_id, []).append(str(found.incident.id))
    acts, moves = _children(tree.children, iid, iid, did, incidents)
    return ActivityInstanceDto(
        id=iid,
        parent_activity_instance_id=None,
        activity_id=did,
        activity_type="processDefinition",
        activity_name=name,
        name=name,
        process_instance_id=iid,
        process_definition_id=did,
        child_activity_instances=acts,
        child_transition_instances=moves,
        execution_ids=[iid],
    )


#: The most open incidents one activity-instance tree shows.
MAX_INCIDENTS = 1000


def _children(
    nodes: list[ActivityNode],
    parent: str,
    iid: str,
    did: str,
    incidents: dict[UUID, list[str]],
) -> tuple[list[ActivityInstanceDto], list[TransitionInstanceDto]]:
    acts: list[ActivityInstanceDto] = []
    moves: list[TransitionInstanceDto] = []
    for node in nodes:
        aid = f"{node.node_id}:{node.token_id}"
        kind = ACTIVITY_TYPES.get(node.node_type, node.node_type)
        ids = incidents.get(node.token_id, [])
        # an incident belongs to the activity instance its token is
        mine = [ActivityInstanceIncidentDto(id=i, parent_activity_instance_id=aid) for i in ids]
        if node.transition:
            moves.append(
                TransitionInstanceDto(
                    id=aid,
                    parent_activity_instance_id=parent,
                    process_instance_id=iid,
                    process_definition_id=did,
                    activity_id=node.node_id,
                    activity_name=node.node_name,
                    activity_type=kind,
                    execution_id=str(node.token_id),
                    target_activity_id=node.node_id,
                    incident_ids=ids,
                    incidents=mine,
                )
            )
            continue
        inner_acts, inner_moves = _children(node.children, aid, iid, did, incidents)
        acts.append(
            ActivityInstanceDto(
                id=aid,
                parent_activity_instance_id=parent,
                activity_id=node.node_id,
                activity_type=kind,
                activity_name=node.node_name,
                name=node.node_name,
                process_instance_id=iid,
                process_definition_id=did,
                child_activity_instances=inner_acts,
                child_transition_instances=inner_moves,
                execution_ids=[str(node.token_id)],
                incident_ids=ids,
                incidents=mine,
            )
        )
    return acts, moves
