"""Completing the branch tasks of one fork from several workers at the same instant.

Each racer is its own ``Engine`` with its own dispatcher (one worker each), sharing only the
database, as Celery workers would. The instance is first driven until every branch task is
READY; then the racers line up on a barrier and each runs one branch's handler and drains what
that produced. The join rule must hold: every join fires exactly once.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from bpm.dispatch import ADVANCE_TOKEN, InProcessDispatcher, Job
from bpm.engine.engine import Engine
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import history_problems
from tests.helpers.processes import (
    Doc,
    fork_one_join,
    fork_two_joins,
    fork_two_joins_direct,
    inclusive_fork_join,
    join_then_fork,
    nested_fork,
)
from tests.helpers.runtime import ONLY_ADVANCE, Harness

T = TypeVar("T")


@dataclass(frozen=True)
class Shape:
    name: str
    doc: Doc
    branches: tuple[str, ...]  # the serviceTasks that race
    joins: tuple[str, ...]  # each must fire exactly once per instance
    once: tuple[str, ...]  # serviceTasks after a join: exactly one task row each


SHAPES = {
    "one_join": Shape(
        "one_join", fork_one_join("race_one_join"), ("b0", "b1", "b2"), ("join",), ("after",)
    ),
    "two_joins": Shape(
        "two_joins",
        fork_two_joins("race_two_joins"),
        ("b0", "b1", "b2"),
        ("join1", "join2"),
        ("mid", "after"),
    ),
    "nested": Shape(
        "nested",
        nested_fork("race_nested"),
        ("b0", "b1", "b2"),
        ("join1", "join2"),
        ("mid", "after"),
    ),
    "two_joins_direct": Shape(
        "two_joins_direct",
        fork_two_joins_direct("race_direct"),
        ("b0", "b1", "b2"),
        ("join1", "join2"),
        ("after",),
    ),
    "inclusive_join": Shape(
        "inclusive_join",
        inclusive_fork_join("race_inclusive"),
        ("b0", "b1", "b2"),
        ("join",),
        ("after",),
    ),
    "join_fork": Shape(
        "join_fork",
        join_then_fork("race_join_fork"),
        ("b0", "b1"),
        ("jf", "join"),
        ("c0", "c1", "after"),
    ),
}


def noop(ctx: HandlerContext) -> None:
    return None


def noop_registry() -> HandlerRegistry:
    reg = HandlerRegistry()
    for name in ("branch", "mid", "after"):
        reg.register(name, noop)
    return reg


def drive_to_ready(driver: Harness, shape: Shape) -> tuple[UUID, list[UUID]]:
    """Start an instance and advance it until every branch task is READY (no handler runs).

    ``driver`` must not run handlers inline; its queued handler runs stay in its queue.
    """
    iid = driver.start(str(shape.doc["key"]))
    driver.drain(ONLY_ADVANCE)
    ready = {t.node_id: t for t in rows.tasks_of(driver.engine.db, iid) if t.state == "READY"}
    assert sorted(ready) == sorted(shape.branches), ready
    return iid, [ready[b].id for b in shape.branches]


def drain(engine: Engine, queue: InProcessDispatcher, clock: FakeClock) -> list[str]:
    outcomes = []
    while (job := queue.pop(clock.peek())) is not None:
        outcomes.append(engine.run_job(job))
    return outcomes


class Racers:
    """K worker threads, each with its own engine; ``race`` runs one round."""

    def __init__(self, db: Database, handlers: HandlerRegistry, clock: FakeClock, k: int):
        self.clock = clock
        self.queues = [InProcessDispatcher() for _ in range(k)]
        self.engines = [
            Engine(db, q, handlers=handlers, clock=clock, worker_id=f"racer-{i}")
            for i, q in enumerate(self.queues)
        ]

    def race(self, task_ids: Sequence[UUID]) -> list[str]:
        """Run ``task_ids[i]`` on racer ``i``, all released at once; return every outcome."""
        assert len(task_ids) == len(self.engines)

        def racer(i: int) -> list[str]:
            first = self.engines[i].run_handler(task_ids[i])
            return [first, *drain(self.engines[i], self.queues[i], self.clock)]

        results = run_together([functools.partial(racer, i) for i in range(len(task_ids))])
        return [o for per in results for o in per]


def run_together(fns: Sequence[Callable[[], T]]) -> list[T]:
    """Call each function in its own thread, all released by one barrier; re-raise errors."""
    barrier = threading.Barrier(len(fns))
    results: list[T | None] = [None] * len(fns)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = fns[i]()
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=run, args=(i,), name=f"together-{i}") for i in range(len(fns))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


def instance_problems(db: Database, iid: UUID, shape: Shape) -> list[str]:
    """Everything wrong with one raced instance (empty when it is right)."""
    problems: list[str] = []
    state = rows.state(db, iid)
    if state != "COMPLETED":
        problems.append(f"instance is {state}")
    fired = Counter(e["node_id"] for e in rows.engine_events_of(db, iid, type="JoinFired"))
    for join in shape.joins:
        if fired[join] != 1:
            problems.append(f"join {join!r} fired {fired[join]} times")
    tasks = Counter(t.node_id for t in rows.tasks_of(db, iid))
    for node in (*shape.branches, *shape.once):
        if tasks[node] != 1:
            problems.append(f"{node!r} has {tasks[node]} task rows")
    not_done = [(t.node_id, t.state) for t in rows.tasks_of(db, iid) if t.state != "DONE"]
    if not_done:
        problems.append(f"tasks not DONE: {not_done}")
    live = [(t.node_id, t.state) for t in rows.live_tokens(db, iid)]
    if live:
        problems.append(f"tokens left live: {live}")
    problems += history_problems(db, iid)
    return [f"instance {iid} ({shape.name}): {p}" for p in problems]


# --- the multiprocess variant: a spawned worker process --------------------------------------


def process_racer(url: str, rounds: list[str], barrier: Any, start: str, out: Any) -> None:
    """Entry point of one spawned worker: for each round, wait for the others, run, drain."""
    db = Database(url)
    try:
        clock = FakeClock(datetime.fromisoformat(start))
        queue = InProcessDispatcher()
        engine = Engine(db, queue, handlers=noop_registry(), clock=clock)
        outcomes = []
        for task_id in rounds:
            barrier.wait(timeout=60)
            outcomes.append(engine.run_handler(UUID(task_id)))
            outcomes.extend(drain(engine, queue, clock))
        out.put(outcomes)
    finally:
        db.dispose()


def is_decision(db: Database, job: Job) -> bool:
    """Whether ``job`` asks a WAITING parent to decide about its children."""
    if job.name != ADVANCE_TOKEN:
        return False
    tok = rows.token(db, UUID(job.args["token_id"]))
    return tok.state == "WAITING" and tok.wait_kind == "CHILDREN"


class HoldingDispatcher(InProcessDispatcher):
    """Queues jobs like ``InProcessDispatcher`` but sets aside the ones ``hold`` picks."""

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        self.held: list[Job] = []

    def dispatch(self, jobs: Sequence[Job]) -> None:
        keep = [j for j in jobs if not is_decision(self.db, j)]
        self.held.extend(j for j in jobs if is_decision(self.db, j))
        super().dispatch(keep)
