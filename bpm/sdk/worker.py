"""The external-task worker: long-polls, runs handlers on threads, reports back.

- Fetches only as many tasks as it has free threads, with long polling (woken by NOTIFY).
- A handler that runs longer than half its lock gets the lock extended.
- A handler's return value completes the task; ``bpm.BpmnError`` becomes a BPMN error; any
  other exception a failure, retried after the node's backoff while attempts remain.
- ``stop()`` (or SIGTERM/SIGINT in ``run``) stops fetching, lets running handlers finish for
  ``shutdown_grace`` seconds, and unlocks what is still running, so nothing stays locked.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import UUID

from bpm.engine.engine import Engine
from bpm.engine.external import LockedTask, TopicRequest
from bpm.errors import BpmError, BpmnError, TaskLockError

log = logging.getLogger("bpm.sdk")
TaskFn = Callable[[LockedTask], Mapping[str, Any] | None]


@dataclass(frozen=True)
class Subscription:
    topic: str
    fn: TaskFn
    lock_duration: timedelta
    variables: tuple[str, ...] | None


@dataclass
class _Running:
    task: LockedTask
    lock_duration: timedelta
    started: float = field(default_factory=time.monotonic)
    extended: float = field(default_factory=time.monotonic)


class Worker:
    """One worker id, any number of topic subscriptions, ``threads`` handlers at a time."""

    def __init__(self, worker_id: str, *, engine: Engine | None = None, threads: int = 4,
                 long_poll: float = 20.0, shutdown_grace: float = 30.0,
                 after_report: Callable[[], None] | None = None) -> None:
        self.worker_id = worker_id
        self._engine = engine
        self.threads = threads
        self.long_poll = long_poll
        self.shutdown_grace = shutdown_grace
        self._after_report = after_report
        self._subscriptions: dict[str, Subscription] = {}
        self._running: dict[UUID, _Running] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: Handlers still running when the worker stopped (their tasks were unlocked).
        self.abandoned = 0

    def subscribe(self, topic: str, *, lock_duration: timedelta = timedelta(seconds=30),
                  variables: list[str] | None = None) -> Callable[[TaskFn], TaskFn]:
        def register(fn: TaskFn) -> TaskFn:
            self._subscriptions[topic] = Subscription(
                topic, fn, lock_duration, tuple(variables) if variables is not None else None)
            return fn

        return register

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise BpmError(f"worker {self.worker_id!r} has no engine: pass engine=, or run it "
                           f"with `bpm external-worker`")
        return self._engine

    def bind(self, engine: Engine, after_report: Callable[[], None] | None = None) -> None:
        self._engine = engine
        self._after_report = after_report

    def stop(self) -> None:
        self._stop.set()

    def run(self, *, handle_signals: bool = True) -> None:
        """Fetch and run tasks until ``stop()`` (or SIGTERM/SIGINT in the main thread)."""
        if not self._subscriptions:
            raise BpmError(f"worker {self.worker_id!r} subscribes to no topic")
        if handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop())
        extender = threading.Thread(target=self._extend_locks, daemon=True)
        extender.start()
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.worker_id)
        while not self._stop.is_set():
            self._fetch_into(pool)
        self.abandoned = self._shut_down()
        # Handlers still running after the grace period lost their tasks (unlocked above);
        # their threads are not waited for (a later report would be refused anyway).
        pool.shutdown(wait=self.abandoned == 0, cancel_futures=True)
        extender.join(timeout=2)

    def _fetch_into(self, pool: ThreadPoolExecutor) -> None:
        with self._lock:
            free = self.threads - len(self._running)
        if free <= 0:
            time.sleep(0.01)
            return
        topics = [TopicRequest(s.topic, s.lock_duration, s.variables)
                  for s in self._subscriptions.values()]
        try:
            # Short slices of long polling keep a stop() prompt.
            tasks = self.engine.fetch_and_lock(self.worker_id, topics, free,
                                               min(self.long_poll, 1.0))
        except Exception:
            log.exception("fetch_and_lock failed; trying again shortly")
            time.sleep(1.0)
            return
        for task in tasks:
            sub = self._subscriptions[task.topic]
            with self._lock:
                self._running[task.id] = _Running(task, sub.lock_duration)
            future: Future[None] = pool.submit(self._execute, sub, task)
            future.add_done_callback(self._forgetter(task.id))

    def _forgetter(self, task_id: UUID) -> Callable[[Future[None]], None]:
        return lambda _future: self._forget(task_id)

    def _forget(self, task_id: UUID) -> None:
        with self._lock:
            self._running.pop(task_id, None)

    def _execute(self, sub: Subscription, task: LockedTask) -> None:
        engine, me = self.engine, self.worker_id
        try:
            result = sub.fn(task)
        except BpmnError as error:
            code, message = error.code, error.message
            self._report(task, lambda: engine.bpmn_error(task.id, me, code, message))
            return
        except Exception as error:
            text = f"{type(error).__name__}: {error}"
            details = traceback.format_exc()[-8000:]
            self._report(task, lambda: engine.fail(task.id, me, text, details,
                                                   retries=task.retries,
                                                   retry_timeout=task.backoff))
            return
        values = dict(result or {})
        self._report(task, lambda: engine.complete(task.id, me, values))

    def _report(self, task: LockedTask, call: Callable[[], None]) -> None:
        try:
            call()
        except TaskLockError as exc:  # lost the lock (expired, unlocked at shutdown): dropped
            log.warning("task %s: result dropped: %s", task.id, exc)
        except Exception:
            log.exception("task %s: reporting failed; its lock will expire and it runs again",
                          task.id)
        else:
            if self._after_report is not None:
                self._after_report()

    def _extend_locks(self) -> None:
        while not self._stop.wait(0.25):
            now = time.monotonic()
            with self._lock:
                due = [r for r in self._running.values()
                       if now - r.extended > r.lock_duration.total_seconds() / 2]
            for run in due:
                try:
                    self.engine.extend_lock(run.task.id, self.worker_id, run.lock_duration)
                    run.extended = now
                except BpmError as exc:
                    log.warning("task %s: could not extend the lock: %s", run.task.id, exc)

    def _shut_down(self) -> int:
        """Wait for running handlers, then unlock the rest; returns how many were unlocked."""
        deadline = time.monotonic() + self.shutdown_grace
        while time.monotonic() < deadline:
            with self._lock:
                if not self._running:
                    return 0
            time.sleep(0.05)
        with self._lock:
            left = list(self._running)
        for task_id in left:
            try:
                self.engine.unlock(task_id)
                log.info("task %s unlocked at shutdown", task_id)
            except BpmError as exc:
                log.warning("task %s: could not unlock at shutdown: %s", task_id, exc)
        return len(left)
