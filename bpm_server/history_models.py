"""The bodies of ``/history/process-instance``, ``/history/activity-instance`` and
``/history/variable-instance`` (Camunda 7's historic instance, activity instance and variable
instance DTOs), and of ``/engine`` and ``/version``."""

from __future__ import annotations

from typing import Any

from bpm_server.models import Dto


class HistoricProcessInstanceDto(Dto):
    id: str
    business_key: str | None
    process_definition_id: str
    process_definition_key: str
    process_definition_name: str | None
    process_definition_version: int
    start_time: str | None
    end_time: str | None
    removal_time: str | None = None
    duration_in_millis: int | None
    start_user_id: str | None = None
    start_activity_id: str | None
    delete_reason: str | None = None
    root_process_instance_id: str
    super_process_instance_id: str | None = None
    super_case_instance_id: str | None = None
    case_instance_id: str | None = None
    tenant_id: str | None = None
    state: str
    restarted_process_instance_id: str | None = None


class HistoricActivityInstanceDto(Dto):
    id: str
    parent_activity_instance_id: str
    activity_id: str
    activity_name: str | None
    activity_type: str
    process_definition_key: str
    process_definition_id: str
    process_instance_id: str
    execution_id: str
    task_id: str | None
    called_process_instance_id: str | None = None
    called_case_instance_id: str | None = None
    assignee: str | None
    start_time: str | None
    end_time: str | None
    duration_in_millis: int | None
    canceled: bool
    complete_scope: bool
    tenant_id: str | None = None
    removal_time: str | None = None
    root_process_instance_id: str


class HistoricVariableInstanceDto(Dto):
    id: str
    name: str
    type: str
    value: Any
    value_info: dict[str, Any]
    process_definition_key: str
    process_definition_id: str
    process_instance_id: str
    execution_id: str
    activity_instance_id: str
    case_definition_key: str | None = None
    case_definition_id: str | None = None
    case_instance_id: str | None = None
    case_execution_id: str | None = None
    task_id: str | None = None
    tenant_id: str | None = None
    error_message: str | None = None
    state: str = "CREATED"
    create_time: str | None
    removal_time: str | None = None
    root_process_instance_id: str


class EngineDto(Dto):
    name: str


class VersionDto(Dto):
    version: str
