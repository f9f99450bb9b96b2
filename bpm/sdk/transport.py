"""What a worker needs from the engine: the external-task calls, over either transport.

``bpm.Engine`` is one (a database connection: for trusted services next to the engine);
``bpm.sdk.http.HttpTransport`` is the other (the HTTP API: for workers in other services,
which then hold no database credentials). The worker behaves the same over both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any, Protocol
from uuid import UUID

from bpm.engine.operations.external import LockedTask, TopicRequest
from bpm.store.notify import Listener


class TaskTransport(Protocol):
    """The external-task calls of ``bpm.Engine`` that a worker makes."""

    def task_listener(self, topics: Iterable[str]) -> AbstractContextManager[Listener]: ...

    def fetch_and_lock(
        self,
        worker_id: str,
        topics: Sequence[TopicRequest],
        max_tasks: int = 10,
        long_poll: float = 0.0,
        listener: Listener | None = None,
    ) -> list[LockedTask]: ...

    def complete(
        self,
        task_id: UUID | str,
        worker_id: str,
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> None: ...

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
    ) -> None: ...

    def bpmn_error(
        self,
        task_id: UUID | str,
        worker_id: str,
        code: str,
        message: str = "",
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> None: ...

    def extend_lock(self, task_id: UUID | str, worker_id: str, new_duration: timedelta) -> None: ...

    def unlock(self, task_id: UUID | str, *, worker_id: str | None = None) -> None: ...
