"""The facade's external-task calls: fetch and lock, the reports, and locks by id.

A lock is held for its ``worker_id`` and, optionally, for a ``credential``: an opaque name
given by a caller that vouches for who is asking (the HTTP server passes its caller's API
credential, which the worker id, chosen by the caller, cannot prove). A report given a
credential must come with the lock's own (else ``Forbidden``); a report given none is not held
to one, as the engine's own callers are not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any
from uuid import UUID

from bpm.engine.core.causes import because
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.ids import as_id
from bpm.engine.operations import external, external_reports, external_views
from bpm.store.notify import Listener, listen


class ExternalTaskCalls:
    """Mixed into ``Engine``, which sets ``core``."""

    core: EngineCore

    def fetch_and_lock(
        self,
        worker_id: str,
        topics: Sequence[external.TopicRequest],
        max_tasks: int = 10,
        long_poll: float = 0.0,
        listener: Listener | None = None,
        *,
        credential: str | None = None,
    ) -> list[external.LockedTask]:
        """With ``long_poll`` seconds, wait for a task to appear; a long-running worker passes
        its own ``listener`` (``task_listener``) instead of a connection per poll;
        ``credential``: who else the locks are held for (the module's docstring)."""
        with because(f"api fetch_and_lock worker={worker_id}"):
            fetch = (worker_id, topics, max_tasks, long_poll, listener, credential)
            return external.fetch_and_lock(self.core, *fetch)

    def task_listener(self, topics: Iterable[str]) -> AbstractContextManager[Listener]:
        """A connection that hears when a task of one of ``topics`` is offered."""
        return listen(self.core.db, set(topics))

    def complete(
        self,
        task_id: UUID | str,
        worker_id: str,
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
        local_variables: Mapping[str, Any] | None = None,
        credential: str | None = None,
    ) -> None:
        """With ``attempt``, only the lock of that attempt (a report sent again after a lost
        reply then never closes a later run); ``local_variables`` stay in the task's scope."""
        with because(f"api complete task={task_id}"):
            tid, local = as_id(task_id, "task"), local_variables
            external_reports.complete(
                self.core, tid, worker_id, variables, attempt, local, credential
            )

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
        credential: str | None = None,
    ) -> None:
        with because(f"api fail task={task_id}"):
            tid = as_id(task_id, "task")
            failure = (error_message, error_details, retries, retry_timeout)
            external_reports.fail(self.core, tid, worker_id, *failure, attempt, credential)

    def bpmn_error(
        self,
        task_id: UUID | str,
        worker_id: str,
        code: str,
        message: str = "",
        variables: Mapping[str, Any] | None = None,
        *,
        attempt: int | None = None,
        credential: str | None = None,
    ) -> None:
        with because(f"api bpmn_error task={task_id}"):
            tid = as_id(task_id, "task")
            external_reports.bpmn_error(
                self.core, tid, worker_id, code, message, variables, attempt, credential
            )

    def extend_lock(
        self,
        task_id: UUID | str,
        worker_id: str,
        new_duration: timedelta,
        *,
        credential: str | None = None,
    ) -> None:
        with because(f"api extend_lock task={task_id}"):
            tid = as_id(task_id, "task")
            external_reports.extend_lock(self.core, tid, worker_id, new_duration, credential)

    def unlock(
        self,
        task_id: UUID | str,
        *,
        worker_id: str | None = None,
        credential: str | None = None,
    ) -> None:
        """Give a locked task back. With ``worker_id``, only if that worker holds the lock
        (a worker giving back its own tasks must not give back another's); with
        ``credential``, only a lock taken with it."""
        with because(f"api unlock task={task_id}"):
            external_reports.unlock(self.core, as_id(task_id, "task"), worker_id, credential)

    def lock(
        self,
        task_id: UUID | str,
        worker_id: str,
        duration: timedelta,
        *,
        credential: str | None = None,
        any_credential: bool = False,
    ) -> None:
        """Lock one waiting task by id (or renew the lock ``worker_id`` holds on it). A new
        lock is held for ``credential`` too; a renewal must come from the lock's credential
        unless ``any_credential``."""
        with because(f"api lock task={task_id}"):
            tid = as_id(task_id, "task")
            external_views.lock(self.core, tid, worker_id, duration, credential, any_credential)
