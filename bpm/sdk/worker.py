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
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from uuid import UUID

from bpm.engine.engine import Engine
from bpm.engine.operations.external import LockedTask, TopicRequest
from bpm.errors import BadVariables, BpmError, TaskLockError
from bpm.sdk.http import Auth, HttpTransport
from bpm.sdk.outcomes import Report, TaskFn, refusal, run_task, send
from bpm.sdk.transport import TaskTransport
from bpm.store import DatabaseUnavailable
from bpm.store.notify import Listener
from bpm.store.outages import until_available

log = logging.getLogger("bpm.sdk")
MAX_LOCK = timedelta(days=7)
#: How long a worker without long polling waits after finding nothing.
IDLE_POLL = 0.5


@dataclass(frozen=True)
class Subscription:
    topic: str
    fn: TaskFn
    lock_duration: timedelta
    variables: tuple[str, ...] | None


@dataclass
class _Running:
    """A task this worker holds: its handler is running, or it waits for a thread."""

    task: LockedTask
    lock_duration: timedelta
    extended: float = field(default_factory=time.monotonic)
    future: Future[None] | None = None


class Worker:
    """One worker id, any number of topic subscriptions, ``threads`` handlers at a time.

    It reaches the engine through ``engine`` (a database connection), or through the HTTP API
    at ``url`` (``http://host:8080/engine-rest``) with ``auth`` (``(name, secret)`` or a
    bearer token), or through the engine ``bpm external-worker`` binds. Over HTTP it behaves
    the same: long polls, lock extension, retries by the node's policy, graceful stop.
    """

    def __init__(
        self,
        worker_id: str,
        *,
        engine: Engine | None = None,
        url: str | None = None,
        auth: Auth = None,
        threads: int = 4,
        long_poll: float = 20.0,
        shutdown_grace: float = 30.0,
        prefetch: int = 0,
        after_report: Callable[[], None] | None = None,
    ) -> None:
        if threads < 1 or prefetch < 0:
            raise BpmError(
                f"worker {worker_id!r}: threads must be at least 1 and prefetch not negative"
            )
        if engine is not None and url is not None:
            raise BpmError(f"worker {worker_id!r}: give engine= or url=, not both")
        self.worker_id = worker_id
        self._engine: TaskTransport | None = engine
        if url is not None:
            self._engine = HttpTransport(url, auth)
        self.threads = threads
        #: Tasks locked ahead, waiting for a free thread: fewer fetches for quick handlers,
        #: at the price of holding tasks other workers could have run.
        self.prefetch = prefetch
        self.long_poll = long_poll
        self.shutdown_grace = shutdown_grace
        self._after_report = after_report
        self._subscriptions: dict[str, Subscription] = {}
        self._running: dict[UUID, _Running] = {}
        self._lock = threading.Lock()
        #: Notified when a handler finishes and frees a thread.
        self._freed = threading.Condition(self._lock)
        #: Free places worth a fetch: one fetch per few tasks when handlers are quick, and
        #: any free place after a short wait when they are not.
        self._batch = max(1, (threads + prefetch) // 2)
        self._stop = threading.Event()
        #: Handlers still running when the worker stopped (their tasks were unlocked).
        self.abandoned = 0

    def subscribe(
        self,
        topic: str,
        *,
        lock_duration: timedelta | float = timedelta(seconds=30),
        variables: list[str] | None = None,
    ) -> Callable[[TaskFn], TaskFn]:
        """Run the decorated function for every task of ``topic``, holding each task's lock
        for ``lock_duration`` (a timedelta, or seconds) and extending it while it runs;
        ``variables`` limits which instance variables are fetched (default: all)."""
        lock = _lock_duration(topic, lock_duration)
        if not isinstance(topic, str) or not topic:
            raise BpmError("subscribe: the topic must be a non-empty string")
        if variables is not None and (
            isinstance(variables, str) or not all(isinstance(v, str) for v in variables)
        ):
            raise BpmError(f"subscribe({topic!r}): variables must be a list of names")

        def register(fn: TaskFn) -> TaskFn:
            self._subscriptions[topic] = Subscription(
                topic, fn, lock, tuple(variables) if variables is not None else None
            )
            return fn

        return register

    @property
    def topics(self) -> list[str]:
        """The topics this worker subscribes to."""
        return list(self._subscriptions)

    @property
    def remote(self) -> bool:
        """Whether it reaches the engine over HTTP (``url=``): then nothing rebinds it."""
        return isinstance(self._engine, HttpTransport)

    @property
    def engine(self) -> TaskTransport:
        if self._engine is None:
            raise BpmError(
                f"worker {self.worker_id!r} has no engine: pass engine=, or run it "
                f"with `bpm external-worker`"
            )
        return self._engine

    def bind(self, engine: TaskTransport, after_report: Callable[[], None] | None = None) -> None:
        if self.remote:
            return  # it keeps its HTTP transport: its steps run where the server sends them
        self._engine = engine
        self._after_report = after_report

    def stop(self) -> None:
        self._stop.set()

    def run(self, *, handle_signals: bool = True) -> None:
        """Fetch and run tasks until ``stop()`` (or SIGTERM/SIGINT in the main thread)."""
        if not self._subscriptions:
            raise BpmError(f"worker {self.worker_id!r} subscribes to no topic")
        self.engine  # noqa: B018 - raises now, naming the worker, when it has none
        if handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop())
        # Locks are kept until shutdown is over: a handler finishing within the grace period
        # must still hold its lock when it reports.
        shut_down = threading.Event()
        extender = threading.Thread(target=self._extend_locks, args=(shut_down,), daemon=True)
        extender.start()
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.worker_id)
        try:
            self._fetch_until_stopped(pool)
            self._give_back_unstarted()
            self.abandoned = self._shut_down()
        finally:
            shut_down.set()
            if isinstance(self._engine, HttpTransport):
                self._engine.close()
        # Handlers still running after the grace period lost their tasks (unlocked above);
        # their threads are not waited for (a later report would be refused anyway).
        pool.shutdown(wait=self.abandoned == 0, cancel_futures=True)
        extender.join(timeout=2)

    def _fetch_until_stopped(self, pool: ThreadPoolExecutor) -> None:
        """One listening connection for the worker's life, opened again if it breaks."""
        topics = {s.topic for s in self._subscriptions.values()}
        while not self._stop.is_set():
            try:
                with self.engine.task_listener(topics) as listener:
                    while not self._stop.is_set():
                        self._fetch_into(pool, listener)
            except Exception:
                log.exception("listening for tasks failed; trying again shortly")
                self._stop.wait(1.0)

    def _fetch_into(self, pool: ThreadPoolExecutor, listener: Listener) -> None:
        capacity = self.threads + self.prefetch
        with self._freed:
            free = capacity - len(self._running)
            if free < self._batch:
                # Too few places for a fetch: a finished handler wakes this at once (look
                # again); after a short wait, any free place will do.
                timed_out = not self._freed.wait(0.05)
                free = capacity - len(self._running) if timed_out else 0
        if free <= 0:
            listener.drain()  # busy: notifications pile up unread on the server otherwise
            return
        topics = [
            TopicRequest(s.topic, s.lock_duration, s.variables)
            for s in self._subscriptions.values()
        ]
        try:
            # Short slices of long polling keep a stop() prompt; the listener stays open.
            tasks = self.engine.fetch_and_lock(
                self.worker_id, topics, free, min(self.long_poll, 1.0), listener
            )
        except Exception as exc:
            if listener.broken:
                raise  # ``_fetch_until_stopped`` listens again on a new connection
            if isinstance(exc, DatabaseUnavailable):  # expected in an outage: no traceback
                log.warning("fetch_and_lock: %s; trying again in 1 s", exc)
            else:
                log.exception("fetch_and_lock failed; trying again shortly")
            self._stop.wait(1.0)
            return
        if self._stop.is_set():  # stopped while waiting: give them back unstarted
            for task in tasks:
                self._unlock(task.id)
            return
        if not tasks and self.long_poll <= 0:
            self._stop.wait(IDLE_POLL)  # no long polling: poll, but not in a tight loop
        for task in tasks:
            sub = self._subscriptions[task.topic]
            run = _Running(task, sub.lock_duration)
            with self._lock:
                self._running[task.id] = run
            run.future = pool.submit(self._execute, sub, task)
            run.future.add_done_callback(self._forgetter(run))

    def _give_back_unstarted(self) -> None:
        """Stopping: prefetched tasks whose handler has not started are unlocked now."""
        with self._lock:
            held = list(self._running.values())
        # cancel() runs the done callback (``_forget``, which takes the lock) at once.
        for run in held:
            if run.future is not None and run.future.cancel():
                self._unlock(run.task.id)

    def _forgetter(self, run: _Running) -> Callable[[Future[None]], None]:
        return lambda _future: self._forget(run)

    def _forget(self, run: _Running) -> None:
        """Drop ``run``, and only it: the same task fetched again (its report landed while
        this run still retried it) is another run under the same id."""
        with self._freed:
            if self._running.get(run.task.id) is run:
                del self._running[run.task.id]
            self._freed.notify()

    def _execute(self, sub: Subscription, task: LockedTask) -> None:
        report = run_task(sub.fn, task)
        if report.refused:
            log.error("task %s: %s", task.id, report.message)
        self._report(task, report)

    def _report(self, task: LockedTask, report: Report) -> None:
        # The outcome exists only in this process: while the database is unreachable, keep
        # trying for as long as the lock can last. Each try names the attempt, so a try
        # after one that landed unseen is refused rather than closing the next run.
        with self._lock:
            run = self._running.get(task.id)
        held = run.lock_duration.total_seconds() if run is not None else 0.0
        engine, me = self.engine, self.worker_id
        try:
            until_available(
                lambda: send(engine, me, task, report),
                within=max(30.0, held),
                what=f"reporting task {task.id}",
            )
        except TaskLockError as exc:  # lost the lock (expired, unlocked at shutdown): dropped
            log.warning("task %s: result dropped: %s", task.id, exc)
        except BadVariables as exc:  # running it again would give the same: an incident now
            self._refuse(task, str(exc))
        except Exception:
            log.exception(
                "task %s: reporting failed; its lock will expire and it runs again", task.id
            )
        else:
            if self._after_report is not None:
                self._after_report()

    def _refuse(self, task: LockedTask, problem: str) -> None:
        """A result the engine cannot take: fail the task with no retries, naming why."""
        log.error("task %s: %s", task.id, problem)
        self._report(task, refusal(problem))

    def _extend_locks(self, shut_down: threading.Event) -> None:
        while not shut_down.wait(0.25):
            now = time.monotonic()
            with self._lock:
                due = [
                    r
                    for r in self._running.values()
                    if now - r.extended > r.lock_duration.total_seconds() / 2
                ]
            for run in due:
                try:
                    self.engine.extend_lock(run.task.id, self.worker_id, run.lock_duration)
                    run.extended = now
                except BpmError as exc:
                    log.warning("task %s: could not extend the lock: %s", run.task.id, exc)
                except Exception:  # a database blip: keep going, the next round tries again
                    log.exception("task %s: extending the lock failed", run.task.id)

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
            self._unlock(task_id)
        return len(left)

    def _unlock(self, task_id: UUID) -> None:
        try:
            self.engine.unlock(task_id, worker_id=self.worker_id)
            log.info("task %s unlocked at shutdown", task_id)
        except BpmError as exc:
            log.warning("task %s: could not unlock at shutdown: %s", task_id, exc)
        except Exception:  # the database: its lock runs out, and the lock scan offers it again
            log.exception("task %s: could not unlock at shutdown", task_id)


def _lock_duration(topic: str, value: object) -> timedelta:
    """A timedelta, or seconds (Camunda's clients take milliseconds: the message says so)."""
    if isinstance(value, timedelta):
        lock = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        lock = timedelta(seconds=value)
    else:
        raise BpmError(
            f"subscribe({topic!r}): lock_duration must be a timedelta or seconds, got {value!r}"
        )
    if not timedelta(0) < lock <= MAX_LOCK:
        raise BpmError(
            f"subscribe({topic!r}): lock_duration must be more than 0 and at most "
            f"7 days, got {lock} (it is in seconds, not milliseconds)"
        )
    return lock
