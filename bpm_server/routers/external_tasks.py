"""``/external-task``: fetch and lock, the reports, locks, lists, retries; as the official
Camunda external-task clients call them (docs/http-api.md lists the differences)."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from bpm.api import (
    Forbidden,
    InstanceMatch,
    InvalidOperation,
    InvalidRequest,
    LockedTask,
    Role,
    TaskLockError,
    TaskState,
    TopicRequest,
)
from bpm_server.auth import ANONYMOUS, Authenticator, Permission, Principal
from bpm_server.dates import format_date
from bpm_server.definition_models import definition_uuid
from bpm_server.external_task_models import (
    BpmnErrorDto,
    CompleteDto,
    ExtendLockDto,
    FailureDto,
    FetchDto,
    FetchTopicDto,
    LockDto,
    LockedTaskDto,
    RetriesDto,
)
from bpm_server.long_poll import fetch_waiting
from bpm_server.models import wire
from bpm_server.routing import Fetcher, Operator, Reporter, no_content
from bpm_server.runtime import ServerRuntime
from bpm_server.variables import decode_variables, encode_variables

router = APIRouter(prefix="/external-task", tags=["External Task"])


def _runtime(request: Request) -> ServerRuntime:
    runtime: ServerRuntime = request.app.state.runtime
    return runtime


@router.post("/fetchAndLock", response_model=list[LockedTaskDto])
async def fetch_and_lock(body: FetchDto, request: Request, caller: Fetcher) -> list[LockedTaskDto]:
    """Lock up to ``maxTasks`` tasks; with ``asyncResponseTimeout``, wait for one."""
    topics = body.topics or []
    _may_fetch(caller, [t.topic_name for t in topics])
    for topic in topics:
        if topic.process_definition_version_tag is not None:
            raise InvalidRequest(
                f"topics[{topic.topic_name}].processDefinitionVersionTag: not supported yet;"
                " filter by processDefinitionId or processDefinitionIdIn instead"
            )
    for sort in body.sorting or []:
        if sort.sort_by != "createTime" or (sort.sort_order or "asc") != "asc":
            raise InvalidRequest(
                f"sorting {sort.sort_by} {sort.sort_order}: bpm fetches by priority, then"
                " oldest first; only createTime asc is accepted"
            )
    # bpm has no tenants: a topic asking for some tenants can match no task.
    requests = [_topic_request(t) for t in topics if not t.tenant_id_in]
    if not requests or body.max_tasks == 0:
        return []
    engine = _runtime(request).engine

    holder = _holder(caller)

    def fetch() -> list[LockedTask]:
        return engine.fetch_and_lock(body.worker_id, requests, body.max_tasks, credential=holder)

    timeout = (body.async_response_timeout or 0) / 1000
    if timeout <= 0:
        found = await run_in_threadpool(fetch)
    else:
        names = [t.topic for t in requests]
        filtered = any(_has_filters(t) for t in topics)
        signals = request.app.state.signals
        authenticator: Authenticator = request.app.state.authenticator
        header = request.headers.get("authorization")

        first = True

        async def authorize() -> None:
            # The first fetch follows the request's own check; each later one reads the
            # credential's row again, so a removal ends the poll before it locks anything.
            nonlocal first
            if first:
                first = False
                return
            _may_fetch(await authenticator.confirm(header), names)

        found = await fetch_waiting(
            request,
            engine,
            signals,
            fetch,
            names,
            body.max_tasks,
            timeout,
            filtered,
            authorize,
            authenticator.ttl,
        )
    wanted = {t.topic_name: bool(t.include_extension_properties) for t in topics}
    return [_locked(task, wanted.get(task.topic, False)) for task in found]


def _may_fetch(caller: Principal, topics: list[str]) -> None:
    """The caller's role fetches, and its topic limit holds every topic asked for."""
    if not caller.can(Permission.FETCH_TASKS):
        raise Forbidden(f"{caller.name} ({caller.role.lower()}) may not {Permission.FETCH_TASKS}")
    for topic in topics:
        caller.check_topic(topic)


def _topic_request(t: FetchTopicDto) -> TopicRequest:
    keys = [*([t.process_definition_key] if t.process_definition_key else [])]
    keys += t.process_definition_key_in or []
    ids = [*([t.process_definition_id] if t.process_definition_id else [])]
    ids += t.process_definition_id_in or []
    has_keys = t.process_definition_key is not None or t.process_definition_key_in is not None
    has_ids = t.process_definition_id is not None or t.process_definition_id_in is not None
    match = InstanceMatch(
        t.business_key,
        tuple(keys) if has_keys else None,
        tuple(u for u in map(_maybe_uuid, ids) if u is not None) if has_ids else None,
        dict(t.process_variables) if t.process_variables else None,
    )
    wanted = None if t.variables is None else tuple(t.variables)
    lock = timedelta(milliseconds=t.lock_duration)
    return TopicRequest(t.topic_name, lock, wanted, match, bool(t.local_variables))


def _has_filters(t: FetchTopicDto) -> bool:
    return not _topic_request(t).match.empty


def _maybe_uuid(text: str) -> UUID | None:
    """A definition id (bpm's, or Camunda's ``key:version:id``) that holds no bpm id names
    no definition."""
    return definition_uuid(text)[0]


@router.post("/{task_id}/complete", status_code=204, response_class=Response)
def complete(task_id: str, body: CompleteDto, request: Request, caller: Reporter) -> Response:
    runtime = _runtime(request)
    _check_topic(runtime, caller, task_id)
    values = decode_variables(wire(body.variables))
    local = decode_variables(wire(body.local_variables))
    worker = _worker(body.worker_id)
    runtime.run(
        lambda: runtime.engine.complete(
            task_id,
            worker,
            values,
            local_variables=local or None,
            attempt=body.bpm_attempt,
            credential=_held_to(caller),
        )
    )
    return no_content()


@router.post("/{task_id}/failure", status_code=204, response_class=Response)
def failure(task_id: str, body: FailureDto, request: Request, caller: Reporter) -> Response:
    """``retries`` omitted is 0: an incident at once, as in Camunda."""
    runtime = _runtime(request)
    _check_topic(runtime, caller, task_id)
    if body.variables or body.local_variables:
        raise InvalidRequest("bpm does not set variables with a failure; drop 'variables'")
    worker = _worker(body.worker_id)
    retries = body.retries or 0
    wait = timedelta(milliseconds=body.retry_timeout or 0)
    message = body.error_message or "failed (no errorMessage given)"
    runtime.run(
        lambda: runtime.engine.fail(
            task_id,
            worker,
            message,
            body.error_details,
            retries,
            wait,
            attempt=body.bpm_attempt,
            credential=_held_to(caller),
        )
    )
    return no_content()


@router.post("/{task_id}/bpmnError", status_code=204, response_class=Response)
def bpmn_error(task_id: str, body: BpmnErrorDto, request: Request, caller: Reporter) -> Response:
    runtime = _runtime(request)
    _check_topic(runtime, caller, task_id)
    values = decode_variables(wire(body.variables))
    worker, message = _worker(body.worker_id), body.error_message or ""
    runtime.run(
        lambda: runtime.engine.bpmn_error(
            task_id,
            worker,
            body.error_code,
            message,
            values,
            attempt=body.bpm_attempt,
            credential=_held_to(caller),
        )
    )
    return no_content()


@router.post("/{task_id}/extendLock", status_code=204, response_class=Response)
def extend_lock(task_id: str, body: ExtendLockDto, request: Request, caller: Reporter) -> Response:
    runtime = _runtime(request)
    _check_topic(runtime, caller, task_id)
    duration = timedelta(milliseconds=body.new_duration)
    worker = _worker(body.worker_id)
    runtime.engine.extend_lock(task_id, worker, duration, credential=_held_to(caller))
    return no_content()


@router.post("/{task_id}/unlock", status_code=204, response_class=Response)
def unlock(task_id: str, request: Request, caller: Reporter) -> Response:
    """No body, as the JS client sends it: any worker's lock is given back, if it was taken
    with the caller's credential (an operator's: any lock)."""
    runtime = _runtime(request)
    _check_topic(runtime, caller, task_id)
    runtime.engine.unlock(task_id, credential=_held_to(caller))
    return no_content()


@router.post("/{task_id}/lock", status_code=204, response_class=Response)
def lock(task_id: str, body: LockDto, request: Request, caller: Reporter) -> Response:
    runtime = _runtime(request)
    _check_topic(runtime, caller, task_id)
    duration = timedelta(milliseconds=body.lock_duration)
    runtime.engine.lock(
        task_id,
        body.worker_id,
        duration,
        credential=_holder(caller),
        any_credential=caller.role is Role.OPERATOR,
    )
    return no_content()


@router.put("/{task_id}/retries", status_code=204, response_class=Response)
def set_retries(task_id: str, body: RetriesDto, request: Request, caller: Operator) -> Response:
    """On a task failed with an incident, retries > 0 resolve the incident and offer it
    again; bpm changes no other task's retries."""
    runtime = _runtime(request)
    view = runtime.engine.external_task(task_id)
    if view.state != TaskState.FAILED or body.retries == 0:
        raise InvalidOperation(
            f"task {task_id} is {view.state}: bpm sets retries (> 0) on a failed task only"
        )
    runtime.run(lambda: runtime.engine.retry(view.id, body.retries))
    return no_content()


def _check_topic(runtime: ServerRuntime, caller: Principal, task_id: str) -> None:
    """A worker limited to topics reports only on tasks of those (read before acting)."""
    if caller.topics is not None:
        topic = runtime.engine.external_task(task_id).topic
        if topic not in caller.topics:
            # The task's topic is not the caller's to see: the refusal names the task only.
            raise Forbidden(f"{caller.name} may not report on task {task_id}")


def _holder(caller: Principal) -> str | None:
    """The credential the caller's locks are held for (none on an open server)."""
    return None if caller is ANONYMOUS else caller.name


def _held_to(caller: Principal) -> str | None:
    """The credential a caller's report must match the lock's with: its own, but an operator
    may act on any lock (None: not held to one)."""
    return None if caller.role is Role.OPERATOR else caller.name


def _worker(worker_id: str | None) -> str:
    if not worker_id:
        raise TaskLockError("workerId is required")
    return worker_id


def _locked(t: LockedTask, properties: bool) -> LockedTaskDto:
    return LockedTaskDto(
        id=str(t.id),
        topic_name=t.topic,
        worker_id=t.worker_id,
        lock_expiration_time=format_date(t.lock_expire_at),
        create_time=format_date(t.created_at),
        # Camunda shows no retries until a failure set them; a lock spent one in advance.
        retries=None if t.error_message is None else t.retries + 1,
        error_message=t.error_message,
        error_details=t.error_details,
        process_instance_id=str(t.instance_id),
        execution_id=None if t.token_id is None else str(t.token_id),
        activity_id=t.node_id,
        activity_instance_id=None if t.token_id is None else f"{t.node_id}:{t.token_id}",
        process_definition_id=None if t.definition_id is None else str(t.definition_id),
        process_definition_key=t.process_key,
        priority=t.priority,
        business_key=t.business_key,
        variables=encode_variables(t.variables),
        extension_properties=dict(t.properties or {}) if properties else {},
        bpm_attempt=t.attempt,
        bpm_retries=t.retries,
        bpm_backoff=int(t.backoff.total_seconds() * 1000),
        bpm_version=t.process_version,
    )
