"""Multi-instance under concurrency: 50 parallel iterations whose tasks are completed at the
same instant from several threads, each with its own engine and connections. Every iteration
counts once and the activity completes exactly once (its body leaves once, the node after it
runs once), however the completions interleave."""

from __future__ import annotations

import functools
from collections import Counter
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.engine.operations.external import TopicRequest
from bpm.handlers import HandlerRegistry
from bpm.store import Database, variables
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.race import drain, noop, run_together
from tests.helpers.runtime import EngineFactory

ITERATIONS = 50
THREADS = 10
ROUNDS = 3
LOCK = 300


def _doc(kind: str) -> dict[str, Any]:
    b = ProcessBuilder(f"mi-race-{kind}").start()
    mi = {"cardinality": ITERATIONS, "outputCollection": "out", "outputElement": "${loopCounter}"}
    if kind == "user":
        b.user_task("mi", multi_instance=mi)
    else:
        b.service_task("mi", topic="race", multi_instance=mi)
    b.service_task("after", handler="after").end()
    return b.sequence("start", "mi", "after", "end").build()


def _racers(pg_db: Database, handlers: HandlerRegistry, clock: FakeClock) -> list[Any]:
    queues = [InProcessDispatcher() for _ in range(THREADS)]
    engines = [
        Engine(pg_db, q, handlers=handlers, clock=clock, worker_id=f"mi-racer-{i}")
        for i, q in enumerate(queues)
    ]
    return list(zip(engines, queues, strict=True))


def _check(pg_db: Database, iid: UUID) -> None:
    assert_finished_cleanly(pg_db, iid)
    after = [t for t in rows.tasks_of(pg_db, iid, "after")]
    assert len(after) == 1, f"the node after the activity ran {len(after)} times"
    moved = [e for e in rows.token_events_of(pg_db, iid, type="MOVED") if e["data"]]
    left = Counter(e["data"].get("from") for e in moved)
    assert left["mi"] == 1, f"the body left {left['mi']} times"
    completed = [e for e in rows.token_events_of(pg_db, iid, type="COMPLETED")]
    assert Counter(e["node_id"] for e in completed)["mi"] == ITERATIONS
    with pg_db.transaction() as conn:
        assert variables.load(conn, iid)["out"] == list(range(ITERATIONS))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["user", "external"])
def test_fifty_iterations_completed_at_once_complete_the_activity_once(
    engine_factory: EngineFactory,
    handlers: HandlerRegistry,
    pg_db: Database,
    clock: FakeClock,
    kind: str,
) -> None:
    handlers.register("after", noop)
    driver = engine_factory()
    driver.deploy(_doc(kind))
    racers = _racers(pg_db, handlers, clock)
    for _ in range(ROUNDS):
        iid = driver.start(f"mi-race-{kind}")
        driver.drain()
        if kind == "user":
            ids = [t["id"] for t in driver.engine.user_tasks(instance_id=iid, limit=ITERATIONS)]
        else:
            request = [TopicRequest("race", timedelta(seconds=LOCK))]
            ids = [t.id for t in driver.engine.fetch_and_lock("w", request, ITERATIONS)]
        assert len(ids) == ITERATIONS
        shares = [ids[i::THREADS] for i in range(THREADS)]

        def racer(i: int, share: list[Any]) -> list[str]:
            engine, queue = racers[i]
            for task_id in share:
                if kind == "user":
                    engine.complete_user_task(task_id)
                else:
                    engine.complete(task_id, "w")
            return drain(engine, queue, clock)

        run_together([functools.partial(racer, i, s) for i, s in enumerate(shares)])
        driver.drain()
        for engine, queue in racers:
            drain(engine, queue, clock)
        _check(pg_db, iid)
