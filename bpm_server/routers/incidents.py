"""``/incident`` and ``/history/incident``: incidents as Camunda 7 shows them. A failed
external task's incident is ``failedExternalTask``, a failed handler task's ``failedJob``;
bpm's other incidents keep bpm's kind as their type (docs/http-api.md)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from fastapi import APIRouter, Request, Response

from bpm.api import Engine, FoundIncident, IncidentQuery, IncidentState
from bpm_server.dates import format_date
from bpm_server.incident_models import HistoricIncidentDto, IncidentDto
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.query_params import Kind, QuerySpec, both
from bpm_server.routing import Operator, Reader, no_content, runtime_of

router = APIRouter(tags=["Incident"])

_FILTERS: dict[str, Kind] = {
    "incidentId": Kind.IDS,
    "incidentType": Kind.TEXT,
    "incidentMessage": Kind.TEXT,
    "incidentMessageLike": Kind.TEXT,
    "processDefinitionId": Kind.IDS,
    "processDefinitionKey": Kind.TEXT,
    "processDefinitionKeyIn": Kind.TEXTS,
    "processInstanceId": Kind.IDS,
    "executionId": Kind.IDS,
    "activityId": Kind.TEXT,
    "failedActivityId": Kind.TEXT,
    "causeIncidentId": Kind.IDS,
    "rootCauseIncidentId": Kind.IDS,
    "configuration": Kind.IDS,
}
_SORTS = {
    "incidentId": "id",
    "incidentMessage": "message",
    "incidentType": "type",
    "executionId": "token_id",
    "activityId": "node_id",
    "processInstanceId": "instance_id",
    "processDefinitionId": "definition_id",
    "causeIncidentId": "id",
    "rootCauseIncidentId": "id",
    "configuration": "task_id",
}
_REFUSED = {
    "tenantIdIn": "bpm has no tenants",
    "jobDefinitionIdIn": "bpm has no job definitions",
    "annotation": "bpm keeps no incident annotations",
}
SPEC = QuerySpec(
    "incident",
    {**_FILTERS, "incidentTimestampBefore": Kind.DATE, "incidentTimestampAfter": Kind.DATE},
    {**_SORTS, "incidentTimestamp": "created"},
    _REFUSED,
)
HISTORY_SPEC = QuerySpec(
    "history/incident",
    {
        **_FILTERS,
        "createTimeBefore": Kind.DATE,
        "createTimeAfter": Kind.DATE,
        "endTimeBefore": Kind.DATE,
        "endTimeAfter": Kind.DATE,
        "open": Kind.BOOL,
        "resolved": Kind.BOOL,
        "deleted": Kind.BOOL,
    },
    {**_SORTS, "createTime": "created", "endTime": "resolved"},
    _REFUSED,
)


def incident_query(f: Mapping[str, Any], *, history: bool = False) -> IncidentQuery:
    ids = [*(f.get("incidentId") or [])] if "incidentId" in f else None
    for same in ("causeIncidentId", "rootCauseIncidentId"):  # every incident is its own cause
        if same in f:
            ids = [i for i in f[same] if ids is None or i in ids]
    keys = both(f, "processDefinitionKey", "processDefinitionKeyIn", single=True)
    nodes = {f[n] for n in ("activityId", "failedActivityId") if n in f}
    open_, resolved = f.get("open"), f.get("resolved")
    return IncidentQuery(
        open_only=not history,
        incident_ids=ids,
        types=[f["incidentType"]] if "incidentType" in f else None,
        instance_ids=f.get("processInstanceId"),
        definition_ids=f.get("processDefinitionId"),
        process_keys=keys,
        node_ids=list(nodes) if len(nodes) == 1 else ([] if nodes else None),
        token_ids=f.get("executionId"),
        task_ids=f.get("configuration"),
        message=f.get("incidentMessage"),
        message_like=f.get("incidentMessageLike"),
        created_before=f.get("incidentTimestampBefore", f.get("createTimeBefore")),
        created_after=f.get("incidentTimestampAfter", f.get("createTimeAfter")),
        resolved_before=f.get("endTimeBefore"),
        resolved_after=f.get("endTimeAfter"),
        resolved=True if resolved else (False if open_ else None),
        # bpm deletes no incident: an instance's cancellation resolves its incidents.
        none=bool(f.get("deleted")) or bool(open_ and resolved),
    )


INCIDENTS: ListResource[IncidentQuery, FoundIncident] = ListResource(
    SPEC,
    incident_query,
    Engine.find_incidents,
    Engine.count_incidents,
    lambda request, i: IncidentDto(**_common(i)),
    IncidentDto,
)
add_list_routes(router, "/incident", INCIDENTS, post=False)


@router.get("/incident/{incident_id}", response_model=IncidentDto)
def get_incident(incident_id: str, request: Request, caller: Reader) -> IncidentDto:
    return IncidentDto(**_common(runtime_of(request).engine.incident(incident_id)))


@router.delete("/incident/{incident_id}", status_code=204, response_class=Response)
def resolve_incident(incident_id: str, request: Request, caller: Operator) -> Response:
    """Resolves any open incident (Camunda: only custom ones), as ``bpm resolve``: the token
    stays where it failed; ``PUT /job/{id}/retries`` runs it again instead."""
    runtime = runtime_of(request)
    found = runtime.engine.incident(incident_id)
    runtime.run(lambda: runtime.engine.resolve(found.incident.id, "resolved over the API"))
    return no_content()


HISTORIC: ListResource[IncidentQuery, FoundIncident] = ListResource(
    HISTORY_SPEC,
    partial(incident_query, history=True),
    Engine.find_incidents,
    Engine.count_incidents,
    lambda request, i: _historic(i),
    HistoricIncidentDto,
)
add_list_routes(router, "/history/incident", HISTORIC, post=False)


def _common(found: FoundIncident) -> dict[str, Any]:
    i = found.incident
    return {
        "id": str(i.id),
        "process_definition_id": str(found.definition_id),
        "process_instance_id": str(i.instance_id),
        "execution_id": None if i.token_id is None else str(i.token_id),
        "incident_timestamp": format_date(i.created_at),
        "incident_type": found.type,
        "activity_id": i.node_id,
        "failed_activity_id": i.node_id,
        "cause_incident_id": str(i.id),
        "root_cause_incident_id": str(i.id),
        "configuration": None if i.task_id is None else str(i.task_id),
        "incident_message": i.message,
    }


def _historic(found: FoundIncident) -> HistoricIncidentDto:
    i = found.incident
    resolved = i.state == IncidentState.RESOLVED
    return HistoricIncidentDto(
        **_common(found),
        process_definition_key=found.process_key,
        root_process_instance_id=str(i.instance_id),
        create_time=format_date(i.created_at),
        end_time=format_date(i.resolved_at),
        history_configuration=None if i.task_id is None else str(i.task_id),
        open=not resolved,
        deleted=False,
        resolved=resolved,
    )
