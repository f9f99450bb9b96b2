"""The bodies of the ``/task`` endpoints (Camunda 7's TaskDto, UserIdDto, CompleteTaskDto,
FormDto, CamundaFormRef)."""

from __future__ import annotations

from enum import StrEnum

from bpm_server.models import Dto, VariableMap


class TaskLifecycle(StrEnum):
    """A task's ``taskState``, as Camunda names it: an open task is ``Created`` until a
    change (a claim, a new due date) makes it ``Updated``."""

    CREATED = "Created"
    UPDATED = "Updated"


class CamundaFormRefDto(Dto):
    key: str
    binding: str | None = None
    version: int | None = None


class TaskDto(Dto):
    id: str
    name: str | None
    assignee: str | None
    owner: str | None = None
    created: str | None
    last_updated: str | None
    due: str | None
    follow_up: str | None
    delegation_state: str | None = None
    description: str | None
    execution_id: str
    parent_task_id: str | None = None
    priority: int
    process_definition_id: str
    process_instance_id: str
    case_execution_id: str | None = None
    case_definition_id: str | None = None
    case_instance_id: str | None = None
    task_definition_key: str
    suspended: bool = False
    form_key: str | None
    camunda_form_ref: CamundaFormRefDto | None
    tenant_id: str | None = None
    task_state: TaskLifecycle


class UserIdDto(Dto):
    user_id: str | None = None


class CompleteTaskDto(Dto):
    variables: VariableMap | None = None
    with_variables_in_return: bool | None = None


class FormDto(Dto):
    key: str | None
    camunda_form_ref: CamundaFormRefDto | None
    context_path: str | None = None
