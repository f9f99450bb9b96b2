"""Joins under concurrency: the critical race of the engine.

Branch tasks of one fork are completed by several workers at the same instant, many times
over; every join must fire exactly once, the node after it must run once, and nothing may be
left behind. Also: two decisions for one arrival set are one decision.
"""

from __future__ import annotations

import functools
import multiprocessing
from collections import Counter
from uuid import UUID

import pytest

from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerRegistry
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.processes import fork_one_join
from tests.helpers.race import (
    SHAPES,
    HoldingDispatcher,
    Racers,
    drive_to_ready,
    instance_problems,
    noop,
    process_racer,
    run_together,
)
from tests.helpers.runtime import Calls, EngineFactory, Harness

INSTANCES_PER_SHAPE = 30


@pytest.mark.slow
@pytest.mark.parametrize("shape_name", sorted(SHAPES))
def test_branches_completed_at_the_same_instant_fire_each_join_once(
    engine_factory: EngineFactory,
    handlers: HandlerRegistry,
    pg_db: Database,
    clock: FakeClock,
    shape_name: str,
) -> None:
    shape = SHAPES[shape_name]
    for name in ("branch", "mid", "after"):
        handlers.register(name, noop)
    driver = engine_factory(run_handlers_inline=False)
    driver.deploy(shape.doc)
    racers = Racers(pg_db, handlers, clock, k=len(shape.branches))

    problems: list[str] = []
    outcomes: Counter[str] = Counter()
    for _ in range(INSTANCES_PER_SHAPE):
        iid, task_ids = drive_to_ready(driver, shape)
        outcomes.update(racers.race(task_ids))
        # The driver's own handler jobs arrive late, as duplicates: all no-ops.
        late = driver.drain()
        if set(late) != {"stale"}:
            problems.append(f"late duplicate jobs did work: {late}")
        problems += instance_problems(pg_db, iid, shape)
    assert not problems, "\n".join(problems[:20])
    assert outcomes["done"] >= INSTANCES_PER_SHAPE * len(shape.branches)


@pytest.mark.slow
def test_branches_completed_from_separate_processes(
    engine_factory: EngineFactory,
    handlers: HandlerRegistry,
    pg_db: Database,
    pg_url: str,
    clock: FakeClock,
) -> None:
    """The same race with real OS processes (spawned), each with its own pool and engine."""
    rounds = 6
    ctx = multiprocessing.get_context("spawn")
    for name in ("branch", "mid", "after"):
        handlers.register(name, noop)
    driver = engine_factory(run_handlers_inline=False)
    prepared: list[tuple[str, UUID, list[UUID]]] = []
    k = 3
    shapes = sorted(name for name, shape in SHAPES.items() if len(shape.branches) == k)
    for i in range(rounds):
        shape = SHAPES[shapes[i % len(shapes)]]
        driver.deploy(shape.doc)
        iid, task_ids = drive_to_ready(driver, shape)
        prepared.append((shape.name, iid, task_ids))

    barrier = ctx.Barrier(k)
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=process_racer,
            args=(pg_url, [str(p[2][i]) for p in prepared], barrier, clock.peek().isoformat(), out),
        )
        for i in range(k)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    out.close()
    out.join_thread()

    problems = [
        msg for name, iid, _ in prepared for msg in instance_problems(pg_db, iid, SHAPES[name])
    ]
    assert not problems, "\n".join(problems)
    assert sum(r.count("done") for r in results) >= rounds * k


def _arrived_but_undecided(
    engine_factory: EngineFactory, pg_db: Database, calls: Calls
) -> tuple[Harness, HoldingDispatcher, UUID]:
    """An instance whose two branches are parked at the join, with no decision taken yet."""
    calls.add("branch")
    calls.add("after")
    holding = HoldingDispatcher(pg_db)
    # Every next step goes through the queue, where the decisions are held back.
    rt = engine_factory(holding, chain_limit=1, run_handlers_inline=False)
    rt.deploy(fork_one_join("decide", branches=2))
    iid = rt.start("decide")
    rt.drain()
    parked = [t for t in rows.tokens_of(pg_db, iid) if t.wait_kind == "JOIN"]
    assert len(parked) == 2, rows.tokens_of(pg_db, iid)
    assert holding.held, "no decision was asked for"
    assert rows.engine_events_of(pg_db, iid, type="JoinFired") == []
    return rt, holding, iid


@pytest.mark.slow
def test_two_concurrent_decisions_for_one_arrival_set_fire_once(
    engine_factory: EngineFactory,
    pg_db: Database,
    calls: Calls,
    clock: FakeClock,
    handlers: HandlerRegistry,
) -> None:
    for _ in range(15):
        rt, holding, iid = _arrived_but_undecided(engine_factory, pg_db, calls)
        root = next(t for t in rows.tokens_of(pg_db, iid) if t.parent_token_id is None)
        queues = [InProcessDispatcher(), InProcessDispatcher()]
        engines = [Engine(pg_db, q, handlers=handlers, clock=clock) for q in queues]
        outcomes = run_together(
            [functools.partial(engine.advance, root.id, root.version) for engine in engines]
        )
        assert sorted(outcomes) == ["done", "stale"]
        assert len(rows.engine_events_of(pg_db, iid, type="JoinFired")) == 1

        for engine, queue in zip(engines, queues, strict=True):
            while (job := queue.pop(clock.peek())) is not None:
                engine.run_job(job)
        late = [rt.engine.run_job(job) for job in holding.held]
        assert set(late) == {"stale"}
        rt.drain()
        assert_finished_cleanly(pg_db, iid)
        assert len(rows.engine_events_of(pg_db, iid, type="JoinFired")) == 1
        assert len(rows.tasks_of(pg_db, iid, "after")) == 1


def test_repeated_decisions_after_one_arrival_set_fire_once(
    engine_factory: EngineFactory, pg_db: Database, calls: Calls
) -> None:
    rt, holding, iid = _arrived_but_undecided(engine_factory, pg_db, calls)
    root = next(t for t in rows.tokens_of(pg_db, iid) if t.parent_token_id is None)
    worker = engine_factory()

    outcomes = [worker.engine.advance(root.id, root.version) for _ in range(3)]
    outcomes += [rt.engine.run_job(job) for job in holding.held]  # the original nudges
    assert outcomes[0] == "done" and set(outcomes[1:]) == {"stale"}
    worker.drain()
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert len(rows.engine_events_of(pg_db, iid, type="JoinFired")) == 1
    assert calls.count("after") == 1
