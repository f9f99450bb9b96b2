"""The bodies of the ``/task`` endpoints (Camunda 7's TaskDto, UserIdDto, CompleteTaskDto,
FormDto, CamundaFormRef)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from bpm_server.models import Dto, VariableMap
from bpm_server.variables import encode_value


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


def form_key(form: Mapping[str, Any] | None) -> str | None:
    """A task's or start event's form key as Camunda shows it."""
    key = (form or {}).get("key")
    return key if isinstance(key, str) else None


def form_ref(form: Mapping[str, Any] | None) -> CamundaFormRefDto | None:
    """Its Camunda Form reference (``camunda:formRef``), if it has one."""
    ref = (form or {}).get("ref")
    if not isinstance(ref, Mapping) or not ref.get("id"):
        return None
    version = ref.get("version")
    return CamundaFormRefDto(
        key=str(ref["id"]),
        binding=ref.get("binding"),
        version=version if isinstance(version, int) else None,
    )


_FIELD_TYPES = {"long": "Long", "boolean": "Boolean", "date": "Date", "string": "String"}


def typed_form_value(value: Any, field_type: str | None) -> dict[str, Any]:
    """A form field's value typed by the field (``long`` -> Long, ``boolean`` -> Boolean,
    ``date`` -> Date, ``string`` and ``enum`` -> String), else by the value."""
    typed = encode_value(value)
    wanted = _FIELD_TYPES.get(field_type or "", "String" if field_type == "enum" else None)
    if wanted is not None:
        typed["type"] = wanted
    return typed
