"""``/process-definition/statistics`` and ``/process-definition/{id}/statistics``: how many
instances of each definition run and which incidents are open, and where one definition's
tokens are at work, as Camunda's Cockpit reads them (docs/http-api.md)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request

from bpm.api import IncidentCount, InvalidRequest
from bpm_server.definition_models import ProcessDefinitionDto, definition_dto
from bpm_server.models import Dto
from bpm_server.routers.process_definitions import definition_by_id, definition_by_key
from bpm_server.routing import Reader, runtime_of

router = APIRouter(prefix="/process-definition", tags=["Process Definition"])


class IncidentStatisticsDto(Dto):
    incident_type: str
    incident_count: int


class ActivityStatisticsDto(Dto):
    id: str
    instances: int
    failed_jobs: int
    incidents: list[IncidentStatisticsDto]


class DefinitionStatisticsDto(ActivityStatisticsDto):
    definition: ProcessDefinitionDto


FailedJobs = Annotated[bool, Query(alias="failedJobs")]
Incidents = Annotated[bool, Query(alias="incidents")]
RootIncidents = Annotated[bool, Query(alias="rootIncidents")]
ForType = Annotated[str | None, Query(alias="incidentsForType")]


def _incidents(
    counts: tuple[IncidentCount, ...], incidents: bool, root: bool, for_type: str | None
) -> list[IncidentStatisticsDto]:
    """Camunda's three ways to ask, one at a time; every bpm incident is its own root."""
    if sum((incidents, root, for_type is not None)) > 1:
        raise InvalidRequest(
            "Only one of the query parameter incidents, rootIncidents or incidentsForType"
            " can be set."
        )
    if not (incidents or root or for_type is not None):
        return []
    return [
        IncidentStatisticsDto(incident_type=c.type, incident_count=c.count)
        for c in counts
        if for_type is None or c.type == for_type
    ]


@router.get("/statistics", response_model=list[DefinitionStatisticsDto])
def definition_statistics(
    request: Request,
    caller: Reader,
    failed_jobs: FailedJobs = False,
    incidents: Incidents = False,
    root_incidents: RootIncidents = False,
    incidents_for_type: ForType = None,
) -> list[DefinitionStatisticsDto]:
    """Every deployed definition, with zeros where nothing runs."""
    found = runtime_of(request).engine.definition_statistics()
    return [
        DefinitionStatisticsDto(
            id=str(s.definition.id),
            instances=s.instances.running,
            failed_jobs=s.failed_jobs if failed_jobs else 0,
            incidents=_incidents(s.incidents, incidents, root_incidents, incidents_for_type),
            definition=definition_dto(s.definition),
        )
        for s in found
    ]


@router.get("/key/{key}/statistics", response_model=list[ActivityStatisticsDto])
def activity_statistics_by_key(
    key: str,
    request: Request,
    caller: Reader,
    failed_jobs: FailedJobs = False,
    incidents: Incidents = False,
    incidents_for_type: ForType = None,
) -> list[ActivityStatisticsDto]:
    """Of the latest version of ``key``."""
    row = definition_by_key(request, key)
    return _activities(request, row.id, failed_jobs, incidents, incidents_for_type)


@router.get("/{definition_id}/statistics", response_model=list[ActivityStatisticsDto])
def activity_statistics(
    definition_id: str,
    request: Request,
    caller: Reader,
    failed_jobs: FailedJobs = False,
    incidents: Incidents = False,
    incidents_for_type: ForType = None,
) -> list[ActivityStatisticsDto]:
    """The activities with tokens at work or open incidents (by bpm's id or Camunda's
    ``key:version:uuid``)."""
    row = definition_by_id(request, definition_id)
    return _activities(request, row.id, failed_jobs, incidents, incidents_for_type)


def _activities(
    request: Request,
    definition_id: UUID,
    failed_jobs: bool,
    incidents: bool,
    incidents_for_type: str | None,
) -> list[ActivityStatisticsDto]:
    found = runtime_of(request).engine.node_statistics(definition_id)
    return [
        ActivityStatisticsDto(
            id=s.node_id,
            instances=s.instances,
            failed_jobs=s.failed_jobs if failed_jobs else 0,
            incidents=_incidents(s.incidents, incidents, False, incidents_for_type),
        )
        for s in found
    ]
