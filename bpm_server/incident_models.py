"""The bodies of ``/incident``, ``/job`` and ``/history/incident`` (Camunda 7's IncidentDto,
JobDto, RetriesDto, HistoricIncidentDto)."""

from __future__ import annotations

from bpm_server.models import Count, Dto


class IncidentDto(Dto):
    id: str
    process_definition_id: str
    process_instance_id: str
    execution_id: str | None
    incident_timestamp: str | None
    incident_type: str
    activity_id: str | None
    failed_activity_id: str | None
    cause_incident_id: str
    root_cause_incident_id: str
    configuration: str | None
    tenant_id: str | None = None
    incident_message: str
    job_definition_id: str | None = None
    annotation: str | None = None


class HistoricIncidentDto(IncidentDto):
    process_definition_key: str
    root_process_instance_id: str
    create_time: str | None
    end_time: str | None
    removal_time: str | None = None
    history_configuration: str | None
    open: bool
    deleted: bool
    resolved: bool


class JobDto(Dto):
    id: str
    job_definition_id: str | None = None
    process_instance_id: str
    process_definition_id: str
    process_definition_key: str
    execution_id: str
    exception_message: str | None
    failed_activity_id: str | None
    retries: int
    due_date: str | None
    suspended: bool = False
    priority: int
    tenant_id: str | None = None
    create_time: str | None
    batch_id: str | None = None


class JobRetriesDto(Dto):
    retries: Count
