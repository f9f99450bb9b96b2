"""The worker's calls over bpm's HTTP API (``bpm serve``), so a worker in another service
needs a URL and a credential, not the database.

The calls are Camunda 7's external-task endpoints, with three bpm extensions that Camunda's
own clients never send and ignore when they receive them: a locked task carries
``bpmAttempt``, ``bpmRetries`` and ``bpmBackoff`` (the node's retry policy: what a failure
leaves and how long the next attempt waits), and a report may name ``bpmAttempt``, so one
sent again after a lost reply cannot close the task's next run. That keeps a worker over
HTTP exactly like one over the database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import httpx

from bpm.api import (
    BadVariables,
    BpmError,
    DatabaseUnavailable,
    Forbidden,
    Listener,
    LockedTask,
    NotAuthenticated,
    TaskLockError,
    TopicRequest,
)
from bpm.sdk import http_values

#: Camunda's date format: milliseconds and a numeric offset.
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"
#: Seconds a request may take beyond the long poll it asks for.
SLACK = 10.0

Auth = tuple[str, str] | str | None


class ServerUnavailable(DatabaseUnavailable):
    """The bpm server could not be reached, or dropped the connection. Like a database
    outage, the call is tried again for a while (every report names its attempt)."""


class HttpTransport:
    """The external-task calls of ``bpm.Engine``, made over HTTP to ``url`` (ending in
    ``/engine-rest``), with ``auth``: ``(name, secret)`` for HTTP Basic, or a bearer token."""

    def __init__(self, url: str, auth: Auth = None, *, timeout: float = 30.0) -> None:
        headers = {"Accept": "application/json"}
        basic: httpx.BasicAuth | None = None
        if isinstance(auth, tuple):
            basic = httpx.BasicAuth(*auth)
        elif isinstance(auth, str):
            headers["Authorization"] = f"Bearer {auth}"
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._basic, self._headers = basic, headers
        self._client: httpx.Client | None = None

    @property
    def client(self) -> httpx.Client:
        """One connection pool (thread-safe), made on first use and again after ``close``."""
        if self._client is None:
            self._client = httpx.Client(base_url=self.url, auth=self._basic, headers=self._headers)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    @contextlib.contextmanager
    def task_listener(self, topics: Iterable[str]) -> Iterator[Listener]:
        """Long polls wait on the server, which hears of new tasks: nothing to hold here."""
        yield Listener(None, set(topics))

    def fetch_and_lock(
        self,
        worker_id: str,
        topics: Sequence[TopicRequest],
        max_tasks: int = 10,
        long_poll: float = 0.0,
        listener: Listener | None = None,
    ) -> list[LockedTask]:
        body = {
            "workerId": worker_id,
            "maxTasks": max_tasks,
            "usePriority": True,
            "asyncResponseTimeout": int(long_poll * 1000),
            "topics": [_topic(t) for t in topics],
        }
        found = self._post("/external-task/fetchAndLock", body, timeout=long_poll + SLACK)
        return [_locked(item) for item in found or []]

    def complete(
        self,
        task_id: UUID | str,
        worker_id: str,
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> None:
        body = {"workerId": worker_id, "variables": http_values.encode(variables)}
        self._report(task_id, "complete", body, attempt)

    def fail(
        self,
        task_id: UUID | str,
        worker_id: str,
        error_message: str,
        error_details: str | None = None,
        retries: int = 0,
        retry_timeout: timedelta = timedelta(0),
        *,
        attempt: int | None = None,
    ) -> None:
        body = {
            "workerId": worker_id,
            "errorMessage": error_message,
            "errorDetails": error_details,
            "retries": retries,
            "retryTimeout": int(retry_timeout.total_seconds() * 1000),
        }
        self._report(task_id, "failure", body, attempt)

    def bpmn_error(
        self,
        task_id: UUID | str,
        worker_id: str,
        code: str,
        message: str = "",
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> None:
        body = {
            "workerId": worker_id,
            "errorCode": code,
            "errorMessage": message,
            "variables": http_values.encode(variables),
        }
        self._report(task_id, "bpmnError", body, attempt)

    def extend_lock(self, task_id: UUID | str, worker_id: str, new_duration: timedelta) -> None:
        body = {"workerId": worker_id, "newDuration": _millis(new_duration)}
        self._post(f"/external-task/{task_id}/extendLock", body)

    def unlock(self, task_id: UUID | str, *, worker_id: str | None = None) -> None:
        # The API's unlock names no worker; the server lets a worker unlock only its topics.
        self._post(f"/external-task/{task_id}/unlock", None)

    def _report(
        self, task_id: UUID | str, verb: str, body: dict[str, Any], attempt: int | None
    ) -> None:
        if attempt is not None:
            body["bpmAttempt"] = attempt
        self._post(f"/external-task/{task_id}/{verb}", body)

    def _post(self, path: str, body: Any, timeout: float | None = None) -> Any:
        try:
            reply = self.client.post(path, json=body, timeout=timeout or self.timeout)
        except httpx.TransportError as exc:
            raise ServerUnavailable(f"bpm server at {self.url}: {exc}") from exc
        if reply.status_code == 204:
            return None
        if reply.is_success:
            return reply.json()
        raise _error(reply, f"POST {self.url}{path}")


def _topic(t: TopicRequest) -> dict[str, Any]:
    topic: dict[str, Any] = {"topicName": t.topic, "lockDuration": _millis(t.lock_duration)}
    if t.variables is not None:
        topic["variables"] = list(t.variables)
    return topic


def _millis(duration: timedelta) -> int:
    return int(duration.total_seconds() * 1000)


def _locked(item: Mapping[str, Any]) -> LockedTask:
    """A locked task as the server sends it (Camunda's shape and bpm's extensions)."""
    definition = item.get("processDefinitionId")
    execution = item.get("executionId")
    return LockedTask(
        id=UUID(item["id"]),
        topic=item["topicName"],
        worker_id=item["workerId"],
        lock_expire_at=_date(item["lockExpirationTime"]) or datetime.min,
        instance_id=UUID(item["processInstanceId"]),
        business_key=item.get("businessKey"),
        process_key=item["processDefinitionKey"],
        process_version=int(item.get("bpmVersion") or 0),
        node_id=item["activityId"],
        attempt=int(item.get("bpmAttempt") or 1),
        retries=int(item.get("bpmRetries") or 0),
        priority=int(item.get("priority") or 0),
        variables=http_values.decode(item.get("variables")),
        backoff=timedelta(milliseconds=int(item.get("bpmBackoff") or 0)),
        created_at=_date(item.get("createTime")),
        token_id=UUID(execution) if execution else None,
        definition_id=UUID(definition) if definition else None,
        error_message=item.get("errorMessage"),
        error_details=item.get("errorDetails"),
        properties=item.get("extensionProperties") or None,
    )


def _date(text: str | None) -> datetime | None:
    return datetime.strptime(text, DATE_FORMAT) if text else None


def _error(reply: httpx.Response, what: str) -> BpmError:
    """The server's refusal as the error the engine itself would have raised."""
    try:
        body = reply.json()
        message = str(body.get("message") or reply.text)
        kind = str(body.get("type") or "")
    except ValueError:
        message, kind = reply.text[:500], ""
    text = f"{what}: {reply.status_code} {message}"
    if reply.status_code == 401:
        return NotAuthenticated(f"{text} (check the worker's auth=)")
    if reply.status_code == 403:
        return Forbidden(f"{text} (the credential's role or topics do not allow it)")
    if reply.status_code == 404 or kind == "RestException":
        return TaskLockError(text)
    if reply.status_code == 400 and kind == "InvalidRequestException":
        return BadVariables(text)
    if reply.status_code >= 500:
        return ServerUnavailable(text)
    return BpmError(text)
