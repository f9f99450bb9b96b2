"""Testing your own processes: the real engine, on real PostgreSQL, with a clock the test moves.

The engine reads time only from its clock, and in production time only matters through the
scans that beat runs (timers, expired locks, retries that came due). So a test that moves a fake
clock and then runs those same scans sees a day pass in milliseconds, exactly as production
would live it, without sleeping and without a second, simulated engine.

``ProcessTestKit`` works anywhere; the pytest fixtures at the end of this module are enabled with
``pytest_plugins = ["bpm.testing"]`` in a top-level ``conftest.py``. See docs/testing.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self
from uuid import UUID

from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.engine.operations.external import LockedTask, TopicRequest
from bpm.engine.operations.lifecycle import Deployed, Started
from bpm.engine.operations.scans import ScanConfig
from bpm.errors import BadVariables, BpmError, ConfigError
from bpm.handlers import HandlerFn, HandlerRegistry
from bpm.sdk.outcomes import TaskFn, refusal, run_task, send
from bpm.store import Database
from bpm.testing_clock import EPOCH as EPOCH
from bpm.testing_clock import FakeClock as FakeClock
from bpm.testing_clock import step_of as _delta
from bpm.testing_db import DEFAULT_TEST_DATABASE_URL as DEFAULT_TEST_DATABASE_URL
from bpm.testing_db import database_url_for_tests as database_url_for_tests
from bpm.testing_db import prepare_test_database as prepare_test_database
from bpm.testing_db import truncate_bpm_tables as truncate_bpm_tables

__all__ = [
    "DEFAULT_TEST_DATABASE_URL",
    "EPOCH",
    "TEST_WORKER",
    "FakeClock",
    "ProcessTestKit",
    "SubscriptionFn",
    "database_url_for_tests",
    "prepare_test_database",
    "truncate_bpm_tables",
]

#: The worker id the kit fetches external tasks with, unless the test names another.
TEST_WORKER = "bpm-test-worker"
#: What a ``bpm.sdk.Worker`` subscription is: a function of the fetched task that returns the
#: variables to complete it with (or None).
SubscriptionFn = TaskFn


class ProcessTestKit:
    """The engine in this process on a real database, driven by a ``FakeClock``.

    Nothing ever waits on real time: every call runs the work that is due by the fake clock and
    returns. Timers, delayed retries and lock expiries come due only when the test calls
    ``advance``, which runs the same scans beat runs in production.
    """

    def __init__(
        self,
        url: str,
        *,
        handlers: HandlerRegistry | None = None,
        clock: FakeClock | None = None,
        migrate: bool = True,
        scan_config: ScanConfig | None = None,
        max_steps: int = 10_000,
    ) -> None:
        self.clock = clock if clock is not None else FakeClock()
        # A private registry by default: one test's doubles never leak into the next.
        self.handlers = handlers if handlers is not None else HandlerRegistry()
        self.runtime = EmbeddedRuntime(
            url, handlers=self.handlers, clock=self.clock, migrate=migrate
        )
        self.scan_config = scan_config or ScanConfig()
        self.max_steps = max_steps

    @property
    def engine(self) -> Engine:
        return self.runtime.engine

    @property
    def db(self) -> Database:
        return self.runtime.db

    @property
    def now(self) -> datetime:
        return self.clock.peek()

    # --- handlers and definitions -------------------------------------------------------

    def handler(self, name: str, *, replace: bool = False) -> Callable[[HandlerFn], HandlerFn]:
        """Register the decorated function as the handler ``name`` for this kit only."""

        def decorate(fn: HandlerFn) -> HandlerFn:
            self.handlers.register(name, fn, replace=replace)
            return fn

        return decorate

    def deploy(self, document: Mapping[str, Any]) -> Deployed:
        return self.engine.deploy(document)

    # --- driving instances --------------------------------------------------------------

    def start(
        self,
        key: str,
        variables: Mapping[str, Any] | None = None,
        *,
        business_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> Started:
        """Start an instance and run it as far as it gets at the current fake time."""
        started = self.engine.start(
            key, variables, business_key=business_key, idempotency_key=idempotency_key
        )
        self.run()
        return started

    def run(self) -> None:
        """Run every job and timer that is due now; what is due later waits for ``advance``."""
        self.runtime.run_until_idle(wait=False)

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Let time pass (``advance(hours=24)``) and do what production does meanwhile.

        The clock stops at every instant a timer or a delayed job comes due on the way, and at
        the end; at each stop every scan runs (timers, expired locks, stalled tokens, due
        retries), then the work they release. So a timer that re-arms every 8 hours fires three
        times in ``advance(hours=24)``, as over a real day. Only the waiting counts towards
        ``delta``: the engine's own work takes no time here beyond the clock's tick per reading,
        so that drift never pushes something due "at 24 hours" past the end. Returns the new
        time.
        """
        left = _delta(delta, kwargs)
        self.run()
        for _ in range(self.max_steps):
            due = self._next_due()
            if due is None or due - self.clock.peek() > left:
                break
            left -= max(due - self.clock.peek(), timedelta(0))
            self._pass_time_to(due)
        else:
            raise RuntimeError(
                f"work still came due after {self.max_steps} stops within "
                f"{_delta(delta, kwargs)}: a timer loop that never waits?"
            )
        self._pass_time_to(self.clock.peek() + left)
        return self.clock.peek()

    def _pass_time_to(self, instant: datetime) -> None:
        self.clock.move_to(instant)
        self.engine.run_scans(self.clock.peek(), self.scan_config)
        self.run()

    def _next_due(self) -> datetime | None:
        instants = [
            d
            for d in (self.runtime.dispatcher.next_due(), self.engine.next_timer_due())
            if d is not None
        ]
        return min(instants) if instants else None

    def correlate(
        self,
        message: str,
        *,
        business_key: str | None = None,
        instance_id: UUID | str | None = None,
        variables: Mapping[str, Any] | None = None,
        all_waiting: bool = False,
    ) -> list[UUID]:
        """Deliver a message, then run what it woke."""
        woken = self.engine.correlate(
            message,
            business_key=business_key,
            instance_id=instance_id,
            variables=variables,
            all_waiting=all_waiting,
        )
        self.run()
        return woken

    # --- user tasks ---------------------------------------------------------------------

    def user_tasks(
        self,
        *,
        assignee: str | None = None,
        group: str | None = None,
        candidate_user: str | None = None,
        instance_id: UUID | str | None = None,
    ) -> list[dict[str, Any]]:
        return self.engine.user_tasks(
            assignee=assignee, group=group, candidate_user=candidate_user, instance_id=instance_id
        )

    def claim(self, task_id: UUID | str, user: str) -> None:
        self.engine.claim(task_id, user)

    def complete_user_task(
        self,
        task_id: UUID | str,
        variables: Mapping[str, Any] | None = None,
        *,
        user: str | None = None,
    ) -> None:
        """Complete the task as a person would, then run the instance on."""
        self.engine.complete_user_task(task_id, variables, user=user)
        self.run()

    # --- external tasks: the test plays the worker --------------------------------------

    def fetch_and_lock(
        self,
        topic: str,
        *,
        lock: timedelta = timedelta(minutes=5),
        worker_id: str = TEST_WORKER,
        max_tasks: int = 10,
        variables: list[str] | None = None,
    ) -> list[LockedTask]:
        return self.engine.fetch_and_lock(
            worker_id, [TopicRequest(topic, lock, variables)], max_tasks
        )

    def complete_external(
        self, task: LockedTask, variables: Mapping[str, Any] | None = None
    ) -> None:
        self.engine.complete(task.id, task.worker_id, variables)
        self.run()

    def fail_external(
        self,
        task: LockedTask,
        error_message: str,
        *,
        retries: int = 0,
        retry_timeout: timedelta | float = timedelta(0),
        error_details: str | None = None,
    ) -> None:
        """Report a failure; with ``retries`` left the task is offered again once the clock
        has passed ``retry_timeout`` (a timedelta, or seconds: ``300`` is five minutes)."""
        self.engine.fail(
            task.id,
            task.worker_id,
            error_message,
            error_details,
            retries,
            _retry_timeout(retry_timeout),
        )
        self.run()

    def bpmn_error(
        self,
        task: LockedTask,
        code: str,
        message: str = "",
        variables: Mapping[str, Any] | None = None,
    ) -> None:
        self.engine.bpmn_error(task.id, task.worker_id, code, message, variables)
        self.run()

    def work(self, task: LockedTask, fn: SubscriptionFn) -> None:
        """Run a ``bpm.sdk.Worker`` subscription's function on a task this kit fetched, in this
        thread, and report the outcome as the worker does, then run the instance on.

        A subscription is a plain function (``@worker.subscribe`` returns it unchanged), so the
        test can call it with the task the worker would have been given; what the worker then
        reports is the part a test would otherwise write out by hand, and get subtly different:
        the dict (or None) it returns completes the task; ``BpmnError`` is reported as a BPMN
        error; any other exception fails the task with ``"Type: message"`` and its traceback,
        offered again after the node's backoff while ``task.retries`` remain; a return value
        that is not a dict, or variables the engine refuses, fail it with no retries left.
        The worker's threads, long polling and lock extension are left out: they are the
        SDK's to test, and they run on real time.
        """
        report = run_task(fn, task)
        try:
            send(self.engine, task.worker_id, task, report)
        except BadVariables as exc:  # the worker's answer too: the same result would fail again
            send(self.engine, task.worker_id, task, refusal(str(exc)))
        self.run()

    # --- reading ------------------------------------------------------------------------

    def state(self, instance_id: UUID | str) -> str:
        return self.runtime.state(
            instance_id if isinstance(instance_id, UUID) else UUID(instance_id)
        )

    def show(self, instance_id: UUID | str) -> dict[str, Any]:
        return self.engine.show(instance_id)

    def trace(self, instance_id: UUID | str) -> list[dict[str, Any]]:
        return self.engine.trace(instance_id)

    def variables(self, instance_id: UUID | str) -> dict[str, Any]:
        shown: dict[str, Any] = self.engine.show(instance_id)["variables"]
        return shown

    def close(self) -> None:
        self.runtime.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _retry_timeout(value: object) -> timedelta:
    """``fail_external``'s ``retry_timeout``: a timedelta, or seconds as a number (as
    ``Worker.subscribe`` takes ``lock_duration``); anything else is refused before the task is
    touched, with a message that says what is accepted."""
    if isinstance(value, timedelta):
        timeout = value
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        try:
            timeout = timedelta(seconds=value)
        except OverflowError:
            raise BpmError(
                f"fail_external: retry_timeout of {value!r} seconds is too long for a timedelta"
            ) from None
    else:
        raise BpmError(
            f"fail_external: retry_timeout must be a timedelta or a number of "
            f"seconds, got {value!r}"
        )
    if timeout < timedelta(0):
        raise BpmError(
            f"fail_external: retry_timeout must not be negative, got "
            f"{timeout.total_seconds():g} seconds"
        )
    return timeout


# --- the pytest plugin: pytest_plugins = ["bpm.testing"] --------------------------------------

try:
    import pytest
except ImportError:  # the kit works without pytest; only the fixtures need it
    pass
else:

    @pytest.fixture(scope="session")
    def bpm_database_url() -> str:
        """The session's test database: created if missing and migrated once; override this
        fixture to point the kit somewhere else."""
        url = database_url_for_tests()
        try:
            prepare_test_database(url)
        except OperationalError as exc:
            shown = make_url(url).render_as_string(hide_password=True)
            pytest.fail(
                f"bpm_kit needs a PostgreSQL server: cannot reach {shown} ({exc.orig}); "
                f"start one or set BPM_TEST_DATABASE_URL",
                pytrace=False,
            )
        except ConfigError as exc:
            pytest.fail(f"bpm_kit: {exc}; set BPM_TEST_DATABASE_URL", pytrace=False)
        return url

    @pytest.fixture
    def bpm_handlers() -> HandlerRegistry:
        """The handlers ``bpm_kit`` runs: a fresh registry per test. Override it to return
        ``bpm.handlers.registry`` to run the handlers your modules register with
        ``@bpm.handler``."""
        return HandlerRegistry()

    @pytest.fixture
    def bpm_kit(bpm_database_url: str, bpm_handlers: HandlerRegistry) -> Iterator[ProcessTestKit]:
        """A kit on an empty database: the rows of earlier tests are truncated first (not
        afterwards, so a failed test's rows stay for a look until the next test starts)."""
        kit = ProcessTestKit(bpm_database_url, handlers=bpm_handlers, migrate=False)
        try:
            truncate_bpm_tables(kit.db)
            yield kit
        finally:
            kit.close()
