"""The bodies of the process-instance endpoints and of a start (Camunda 7's
ProcessInstanceDto, ProcessInstanceWithVariablesDto, StartProcessInstanceDto,
PatchVariablesDto, ActivityInstanceDto, ...)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bpm.api import InstanceRow
from bpm_server.definition_models import LinkDto
from bpm_server.models import Dto, Name, VariableMap, WithoutNullVariables


class StartDto(Dto):
    variables: VariableMap | None = None
    business_key: Name | None = None
    case_instance_id: str | None = None
    start_instructions: list[dict[str, Any]] | None = None
    skip_custom_listeners: bool | None = None
    skip_io_mappings: bool | None = None
    with_variables_in_return: bool | None = None


class ProcessInstanceDto(Dto):
    links: list[LinkDto]
    id: str
    definition_id: str
    definition_key: str
    business_key: str | None
    case_instance_id: str | None = None
    ended: bool
    suspended: bool = False
    tenant_id: str | None = None


class ProcessInstanceWithVariablesDto(ProcessInstanceDto, WithoutNullVariables):
    """A start's answer; ``variables`` only with ``withVariablesInReturn``."""


class PatchVariablesDto(Dto):
    modifications: VariableMap | None = None
    deletions: list[str] | None = None


class ActivityInstanceIncidentDto(Dto):
    """An open incident of an activity instance, and the activity instance it belongs to."""

    id: str
    parent_activity_instance_id: str


class TransitionInstanceDto(Dto):
    id: str
    parent_activity_instance_id: str
    process_instance_id: str
    process_definition_id: str
    activity_id: str
    activity_name: str | None
    activity_type: str
    execution_id: str
    target_activity_id: str
    incident_ids: list[str] = Field(default_factory=list)
    incidents: list[ActivityInstanceIncidentDto] = Field(default_factory=list)


class ActivityInstanceDto(Dto):
    id: str
    parent_activity_instance_id: str | None
    activity_id: str
    activity_type: str
    activity_name: str | None
    name: str | None
    process_instance_id: str
    process_definition_id: str
    child_activity_instances: list[ActivityInstanceDto]
    child_transition_instances: list[TransitionInstanceDto]
    execution_ids: list[str]
    incident_ids: list[str] = Field(default_factory=list)
    incidents: list[ActivityInstanceIncidentDto] = Field(default_factory=list)


def instance_dto(
    base: str,
    instance_id: str,
    definition_id: str,
    key: str,
    business_key: str | None,
    ended: bool = False,
) -> dict[str, Any]:
    href = f"{base}/process-instance/{instance_id}"
    return {
        "links": [LinkDto(method="GET", href=href, rel="self")],
        "id": instance_id,
        "definition_id": definition_id,
        "definition_key": key,
        "business_key": business_key,
        "ended": ended,
    }


def row_dto(base: str, row: InstanceRow) -> ProcessInstanceDto:
    """A live instance's row (ended: false, it is live)."""
    return ProcessInstanceDto(
        **instance_dto(
            base, str(row.id), str(row.process_def_id), row.process_key, row.business_key
        )
    )
