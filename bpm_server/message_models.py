"""The bodies of ``POST /message`` (Camunda 7's CorrelationMessageDto and
MessageCorrelationResultWithVariableDto) and ``POST /signal`` (SignalDto)."""

from __future__ import annotations

from typing import Any

from bpm_server.models import Dto, Name, NonEmptyName, VariableMap, WithoutNullVariables


class CorrelationMessageDto(Dto):
    message_name: NonEmptyName
    business_key: Name | None = None
    tenant_id: str | None = None
    without_tenant_id: bool | None = None
    process_instance_id: str | None = None
    correlation_keys: VariableMap | None = None
    local_correlation_keys: VariableMap | None = None
    process_variables: VariableMap | None = None
    process_variables_local: VariableMap | None = None
    all: bool | None = None
    start_messages_only: bool | None = None
    result_enabled: bool | None = None
    variables_in_result_enabled: bool | None = None


class MessageResultDto(WithoutNullVariables):
    """One correlation's result; ``variables`` only with ``variablesInResultEnabled``."""

    result_type: str
    execution: dict[str, Any] | None = None
    process_instance: dict[str, Any] | None = None


class SignalDto(Dto):
    name: NonEmptyName
    execution_id: str | None = None
    variables: VariableMap | None = None
    tenant_id: str | None = None
    without_tenant_id: bool | None = None
