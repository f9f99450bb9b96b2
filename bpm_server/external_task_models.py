"""The bodies of the external-task endpoints (Camunda 7's FetchExternalTasksDto,
LockedExternalTaskDto, CompleteExternalTaskDto, ExternalTaskFailureDto, ...)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bpm_server.models import (
    INT_MAX,
    Count,
    Dto,
    ErrorDetails,
    ErrorMessage,
    Millis,
    Name,
    NonEmptyName,
    PositiveMillis,
    VariableMap,
)

#: Camunda's longest long poll: 30 minutes.
MAX_ASYNC_RESPONSE_TIMEOUT = 1_800_000


class SortingDto(Dto):
    sort_by: str
    sort_order: str | None = None


class FetchTopicDto(Dto):
    topic_name: NonEmptyName
    lock_duration: PositiveMillis
    variables: list[str] | None = None
    local_variables: bool | None = None
    business_key: Name | None = None
    process_definition_id: str | None = None
    process_definition_id_in: list[str] | None = None
    process_definition_key: str | None = None
    process_definition_key_in: list[str] | None = None
    process_definition_version_tag: str | None = None
    tenant_id_in: list[str] | None = None
    without_tenant_id: bool | None = None
    process_variables: dict[str, Any] | None = None
    deserialize_values: bool | None = None
    include_extension_properties: bool | None = None


class FetchDto(Dto):
    worker_id: NonEmptyName
    max_tasks: int = Field(ge=0, le=1000)
    use_priority: bool | None = None
    async_response_timeout: int | None = Field(
        default=None, ge=0, le=MAX_ASYNC_RESPONSE_TIMEOUT, description="milliseconds"
    )
    sorting: list[SortingDto] | None = None
    topics: list[FetchTopicDto] | None = None


class LockedTaskDto(Dto):
    id: str
    topic_name: str
    worker_id: str | None
    lock_expiration_time: str | None
    create_time: str | None
    retries: int | None
    error_message: str | None
    error_details: str | None
    process_instance_id: str
    execution_id: str | None
    activity_id: str
    activity_instance_id: str | None
    process_definition_id: str | None
    process_definition_key: str
    process_definition_version_tag: str | None = None
    tenant_id: str | None = None
    priority: int
    business_key: str | None
    suspended: bool = False
    variables: dict[str, dict[str, Any]]
    extension_properties: dict[str, str]
    #: bpm's extensions for its own worker (Camunda's clients ignore them): the attempt this
    #: lock is, the retries a failure leaves and the wait before the next attempt (ms), by the
    #: node's retry policy, and the definition's version.
    bpm_attempt: int
    bpm_retries: int
    bpm_backoff: int
    bpm_version: int


class ExternalTaskDto(Dto):
    """``GET /external-task``: a locked task's fields without variables and details."""

    id: str
    topic_name: str
    worker_id: str | None
    lock_expiration_time: str | None
    create_time: str | None
    retries: int | None
    error_message: str | None
    process_instance_id: str
    execution_id: str | None
    activity_id: str
    activity_instance_id: str | None
    process_definition_id: str | None
    process_definition_key: str
    process_definition_version_tag: str | None = None
    tenant_id: str | None = None
    priority: int
    business_key: str | None
    suspended: bool = False


class CompleteDto(Dto):
    worker_id: Name | None = None
    #: bpm's worker names the attempt it reports on (``bpmAttempt`` of the locked task), so
    #: a report sent again after a lost reply never closes a later run.
    bpm_attempt: int | None = Field(default=None, ge=1, le=INT_MAX)
    variables: VariableMap | None = None
    local_variables: VariableMap | None = None


class FailureDto(Dto):
    worker_id: Name | None = None
    #: bpm's worker names the attempt it reports on (``bpmAttempt`` of the locked task), so
    #: a report sent again after a lost reply never closes a later run.
    bpm_attempt: int | None = Field(default=None, ge=1, le=INT_MAX)
    error_message: ErrorMessage | None = None
    error_details: ErrorDetails | None = None
    #: Omitted means 0, as in Camunda: the task fails with an incident at once.
    retries: Count | None = None
    retry_timeout: Millis | None = None
    variables: VariableMap | None = None
    local_variables: VariableMap | None = None


class BpmnErrorDto(Dto):
    worker_id: Name | None = None
    #: bpm's worker names the attempt it reports on (``bpmAttempt`` of the locked task), so
    #: a report sent again after a lost reply never closes a later run.
    bpm_attempt: int | None = Field(default=None, ge=1, le=INT_MAX)
    error_code: NonEmptyName
    error_message: ErrorMessage | None = None
    variables: VariableMap | None = None


class ExtendLockDto(Dto):
    worker_id: Name | None = None
    new_duration: PositiveMillis


class LockDto(Dto):
    worker_id: NonEmptyName
    lock_duration: PositiveMillis


class RetriesDto(Dto):
    retries: Count
