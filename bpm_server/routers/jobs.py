"""``/job``: Camunda's jobs are bpm's handler tasks (service tasks run by the handlers
registered in the workers) and its scheduled timers. Setting retries on a failed handler
task runs it again and resolves its incident (docs/http-api.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse

from bpm.api import Engine, FoundJob, InvalidOperation, JobKind, JobQuery, TaskState
from bpm_server.dates import format_date
from bpm_server.incident_models import JobDto, JobRetriesDto
from bpm_server.lists import ListResource, add_list_routes
from bpm_server.query_params import Kind, QuerySpec, both
from bpm_server.routing import Operator, Reader, no_content, runtime_of

router = APIRouter(prefix="/job", tags=["Job"])

SPEC = QuerySpec(
    "job",
    {
        "jobId": Kind.IDS,
        "jobIds": Kind.IDS,
        "processInstanceId": Kind.IDS,
        "processInstanceIds": Kind.IDS,
        "executionId": Kind.IDS,
        "processDefinitionId": Kind.IDS,
        "processDefinitionKey": Kind.TEXT,
        "activityId": Kind.TEXT,
        "failedActivityId": Kind.TEXT,
        "withRetriesLeft": Kind.BOOL,
        "noRetriesLeft": Kind.BOOL,
        "withException": Kind.BOOL,
        "exceptionMessage": Kind.TEXT,
        "timers": Kind.BOOL,
        "messages": Kind.BOOL,
        "priorityLowerThanOrEquals": Kind.INT,
        "priorityHigherThanOrEquals": Kind.INT,
        "active": Kind.BOOL,
        "suspended": Kind.BOOL,
    },
    {
        "jobId": "id",
        "executionId": "token_id",
        "processInstanceId": "instance_id",
        "processDefinitionId": "definition_id",
        "processDefinitionKey": "process_key",
        "jobPriority": "priority",
        "jobRetries": "retries",
        "jobDueDate": "due_at",
    },
    {
        "jobDefinitionId": "bpm has no job definitions",
        "executable": "not supported yet: filter by withRetriesLeft",
        "dueDates": "not supported yet",
        "createTimes": "not supported yet",
        "tenantIdIn": "bpm has no tenants",
        "withoutTenantId": "bpm has no tenants",
        "includeJobsWithoutTenantId": "bpm has no tenants",
    },
)


def job_query(f: Mapping[str, Any]) -> JobQuery:
    kinds: list[JobKind] | None = None
    if f.get("timers") or f.get("messages"):
        kinds = [k for k, n in ((JobKind.TIMER, "timers"), (JobKind.TASK, "messages")) if f.get(n)]
        kinds = [] if len(kinds) == 2 else kinds  # Camunda refuses both; they exclude
    left, none_left = bool(f.get("withRetriesLeft")), bool(f.get("noRetriesLeft"))
    nodes = {f[n] for n in ("activityId", "failedActivityId") if n in f}
    return JobQuery(
        job_ids=both(f, "jobId", "jobIds"),
        kinds=kinds,
        instance_ids=both(f, "processInstanceId", "processInstanceIds"),
        token_ids=f.get("executionId"),
        definition_ids=f.get("processDefinitionId"),
        process_keys=[f["processDefinitionKey"]] if "processDefinitionKey" in f else None,
        node_ids=list(nodes) if len(nodes) == 1 else ([] if nodes else None),
        with_retries_left=None if left == none_left else left,
        with_exception=bool(f.get("withException")) or "failedActivityId" in f,
        exception_message=f.get("exceptionMessage"),
        min_priority=f.get("priorityHigherThanOrEquals"),
        max_priority=f.get("priorityLowerThanOrEquals"),
        none=bool(f.get("suspended")) or (left and none_left),
    )


JOBS: ListResource[JobQuery, FoundJob] = ListResource(
    SPEC, job_query, Engine.find_jobs, Engine.count_jobs, lambda request, j: job_dto(j), JobDto
)
add_list_routes(router, "", JOBS)


@router.get("/{job_id}", response_model=JobDto)
def get_job(job_id: str, request: Request, caller: Reader) -> JobDto:
    return job_dto(runtime_of(request).engine.job(job_id))


@router.get("/{job_id}/stacktrace", response_class=PlainTextResponse)
def stacktrace(job_id: str, request: Request, caller: Reader) -> Response:
    """The failed handler's traceback; 204 for a job that has none (it never failed)."""
    details = runtime_of(request).engine.job(job_id).error_details
    if details is None:
        return no_content()
    return PlainTextResponse(details)


@router.put("/{job_id}/retries", status_code=204, response_class=Response)
def set_retries(job_id: str, body: JobRetriesDto, request: Request, caller: Operator) -> Response:
    """On a handler task failed with an incident, retries > 0 resolve the incident and run
    it again (as ``bpm retry``); bpm changes no other job's retries."""
    runtime = runtime_of(request)
    found = runtime.engine.job(job_id)
    if found.kind is JobKind.TIMER:
        raise InvalidOperation(f"job {job_id} is a timer: a bpm timer has no retries to set")
    if found.state != TaskState.FAILED or body.retries == 0:
        raise InvalidOperation(
            f"job {job_id} is {found.state}: bpm sets retries (> 0) on a failed job only"
        )
    runtime.run(lambda: runtime.engine.retry(found.id, body.retries))
    return no_content()


def job_dto(j: FoundJob) -> JobDto:
    return JobDto(
        id=str(j.id),
        process_instance_id=str(j.instance_id),
        process_definition_id=str(j.definition_id),
        process_definition_key=j.process_key,
        execution_id=str(j.token_id),
        exception_message=j.error_message,
        failed_activity_id=j.node_id if j.error_message is not None else None,
        retries=j.retries,
        due_date=format_date(j.due_at),
        priority=j.priority,
        create_time=format_date(j.created_at),
    )
