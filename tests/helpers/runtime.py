"""Engines for tests: an ``Engine`` with its in-process dispatcher, and a loop that drains it."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from bpm.beans import BeanRegistry
from bpm.dispatch import (
    ADVANCE_TOKEN,
    RUN_COMPENSATION,
    RUN_HANDLER,
    Dispatcher,
    InProcessDispatcher,
    Job,
    JobName,
)
from bpm.engine.engine import Engine
from bpm.engine.jobs.runner import CHAIN_SECONDS, CHAIN_STEPS
from bpm.engine.operations.external import TopicRequest
from bpm.handlers import HandlerContext, HandlerRegistry, HandlerResult
from bpm.store import Database
from tests.helpers.clock import FakeClock

FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
ONLY_ADVANCE = frozenset({ADVANCE_TOKEN})
ALL_JOBS = frozenset({ADVANCE_TOKEN, RUN_HANDLER, RUN_COMPENSATION, JobName.DELIVER_SIGNAL})


@dataclass
class Harness:
    """One engine (one "worker") with the dispatcher it sends follow-up jobs to."""

    engine: Engine
    dispatcher: Dispatcher
    clock: FakeClock

    @property
    def queue(self) -> InProcessDispatcher:
        assert isinstance(self.dispatcher, InProcessDispatcher), "this harness drops its jobs"
        return self.dispatcher

    def deploy(self, document: Mapping[str, Any]) -> UUID:
        return self.engine.deploy(document).id

    def start(
        self,
        key: str,
        variables: Mapping[str, Any] | None = None,
        *,
        business_key: str | None = None,
    ) -> UUID:
        """Start an instance without running any job."""
        return self.engine.start(key, variables, business_key=business_key).id

    def run(
        self,
        document: Mapping[str, Any],
        variables: Mapping[str, Any] | None = None,
    ) -> UUID:
        """Deploy (idempotently), start and drain: the instance as far as it gets."""
        self.deploy(document)
        iid = self.start(str(document["key"]), variables)
        self.drain()
        return iid

    def drain(
        self, only: frozenset[str] = ALL_JOBS, *, follow_delays: bool = True, limit: int = 10_000
    ) -> list[str]:
        """Run queued jobs until none is left; returns each job's outcome.

        Jobs not named in ``only`` are kept queued (e.g. keep handler runs for later).
        Delayed jobs (retries) are run by moving the fake clock to their due time, unless
        ``follow_delays`` is false.
        """
        queue = self.queue
        kept: list[Job] = []
        outcomes: list[str] = []
        for _ in range(limit):
            job = queue.pop(self.clock.peek())
            if job is None:
                due = queue.next_due()
                if due is None or not follow_delays:
                    break
                self.clock.move_to(due)
                continue
            if job.name not in only:
                kept.append(job)
                continue
            outcomes.append(self.engine.run_job(job))
        else:
            raise AssertionError(f"drain did not finish within {limit} jobs")
        queue.dispatch(kept)
        return outcomes

    def pass_time(self, delta: timedelta) -> None:
        """Move the clock on, run the scans (timers come due) and what they sent."""
        self.clock.advance(delta)
        self.engine.run_scans()
        self.drain()

    def fail_for_good(self, topic: str, message: str = "broken") -> None:
        """Fetch the one task of ``topic`` and fail it with no retries left."""
        [task] = self.engine.fetch_and_lock("tests", [TopicRequest(topic, timedelta(minutes=5))])
        self.engine.fail(task.id, "tests", message, retries=0)
        self.drain()

    def complete_user_task(self, instance_id: UUID) -> None:
        """Complete the instance's one open user task, and run what follows."""
        [task] = self.engine.user_tasks(instance_id=instance_id)
        self.engine.complete_user_task(task["id"])
        self.drain()

    def queued(self) -> list[Job]:
        """The jobs waiting in the queue (due or not), leaving the queue as it was."""
        queue = self.queue
        jobs: list[Job] = []
        while (job := queue.pop(FAR_FUTURE)) is not None:
            jobs.append(job)
        queue.dispatch(jobs)  # delayed jobs keep their not_before and wait again
        return jobs


class EngineFactory:
    """Engines on one database, each with its own dispatcher, sharing handlers and clock."""

    def __init__(
        self,
        db: Database,
        handlers: HandlerRegistry,
        clock: FakeClock,
        beans: BeanRegistry | None = None,
    ) -> None:
        self.db, self.handlers, self.clock = db, handlers, clock
        self.beans = beans if beans is not None else BeanRegistry()
        self._count = 0

    def __call__(
        self,
        dispatcher: Dispatcher | None = None,
        *,
        worker_id: str | None = None,
        chain_limit: int = CHAIN_STEPS,
        chain_seconds: float = CHAIN_SECONDS,
        run_handlers_inline: bool = True,
        handlers: HandlerRegistry | None = None,
    ) -> Harness:
        self._count += 1
        engine = Engine(
            self.db,
            dispatcher if dispatcher is not None else InProcessDispatcher(),
            handlers=handlers or self.handlers,
            clock=self.clock,
            worker_id=worker_id or f"test-worker-{self._count}",
            chain_limit=chain_limit,
            chain_seconds=chain_seconds,
            run_handlers_inline=run_handlers_inline,
            beans=self.beans,
        )
        return Harness(engine, engine.dispatcher, self.clock)


@dataclass
class Calls:
    """Handlers that record every call they get (thread-safe)."""

    registry: HandlerRegistry
    seen: dict[str, list[HandlerContext]] = field(default_factory=lambda: defaultdict(list))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self,
        name: str,
        fn: Callable[[HandlerContext], HandlerResult] | None = None,
    ) -> None:
        """Register ``name``: record the call, then run ``fn`` (default: return nothing)."""

        def run(ctx: HandlerContext) -> HandlerResult:
            with self._lock:
                self.seen[name].append(ctx)
            return fn(ctx) if fn is not None else None

        self.registry.register(name, run, replace=True)

    def count(self, name: str) -> int:
        with self._lock:
            return len(self.seen[name])


def failing(
    times: int, error: str = "boom", then: HandlerResult = None
) -> Callable[[HandlerContext], HandlerResult]:
    """A handler body that raises on its first ``times`` attempts, then returns ``then``."""

    def run(ctx: HandlerContext) -> HandlerResult:
        if ctx.attempt <= times:
            raise RuntimeError(f"{error} (attempt {ctx.attempt})")
        return then

    return run
