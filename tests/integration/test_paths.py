"""Less common paths through the engine: long chains, loops, unbalanced forks, failures inside
subprocesses and joins, parallel variable writes."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.engine.core.tx import NextToken
from bpm.errors import ConfigError, InvalidOperation
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, snapshot
from tests.helpers.processes import fork_one_join
from tests.helpers.race import Racers, drive_to_ready
from tests.helpers.runtime import ONLY_ADVANCE, Calls, EngineFactory, Harness, failing


def sequence_of_tasks(key: str, n: int) -> ProcessBuilder:
    b = ProcessBuilder(key).start().end()
    names = [f"t{i}" for i in range(n)]
    for name in names:
        b.service_task(name, handler="work")
    return b.sequence("start", *names, "end")


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_chain_limit_hands_the_rest_to_the_queue_without_losing_it(
    engine_factory: EngineFactory, calls: Calls, limit: int
) -> None:
    calls.add("work")
    rt = engine_factory(chain_limit=limit)
    iid = rt.run(sequence_of_tasks("chained", 6).build())
    assert calls.count("work") == 6
    assert {t.attempts for t in rows.tasks_of(rt.engine.db, iid)} == {1}
    assert_finished_cleanly(rt.engine.db, iid)


def test_chain_limit_with_handlers_run_from_the_queue(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("work")
    rt = engine_factory(chain_limit=1, run_handlers_inline=False)
    iid = rt.run(sequence_of_tasks("chained_queue", 6).build())
    assert calls.count("work") == 6
    assert_finished_cleanly(rt.engine.db, iid)


def test_the_chains_time_bound_queues_the_rest_after_a_slow_handler(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    """A job stops going on in process once its time is up: the step that ran past it
    creates its next task unlocked, and the rest runs from the queue, each task once."""
    calls.add("work", lambda ctx: time.sleep(0.03))
    rt = engine_factory(chain_seconds=0.05)
    rt.deploy(sequence_of_tasks("slow_chain", 12).build())
    iid = rt.start("slow_chain")
    outcomes = rt.drain()
    assert outcomes.count("deferred") >= 2, outcomes
    assert calls.count("work") == 12
    assert {t.attempts for t in rows.tasks_of(rt.engine.db, iid)} == {1}
    assert_finished_cleanly(rt.engine.db, iid)


@pytest.mark.parametrize("bad", [{"chain_limit": 0}, {"chain_seconds": 0.0}])
def test_a_chain_bound_that_allows_nothing_is_refused(
    engine_factory: EngineFactory, bad: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match="BPM_CHAIN_"):
        engine_factory(**bad)


def test_a_long_chain_of_automatic_nodes_is_deferred_not_lost(
    engine_factory: EngineFactory,
) -> None:
    b = ProcessBuilder("long").start().end()
    names = [f"n{i}" for i in range(300)]
    for name in names:
        b.task(name)
    rt = engine_factory(chain_limit=3)
    rt.deploy(b.sequence("start", *names, "end").build())
    iid = rt.start("long")
    outcomes = rt.drain()
    assert "deferred" in outcomes
    assert_finished_cleanly(rt.engine.db, iid)
    assert len(rows.token_events_of(rt.engine.db, iid, type="MOVED")) == 301


def test_loop_through_an_exclusive_gateway(rt: Harness, calls: Calls) -> None:
    calls.add("work", lambda ctx: {"n": ctx.variables["n"] + 1})
    doc = (
        ProcessBuilder("loop")
        .start()
        .service_task("again", handler="work")
        .exclusive_gateway("more", default="f_done")
        .end()
        .sequence("start", "again", "more")
        .flow("more", "again", condition="n < 4", flow_id="f_loop")
        .flow("more", "end", flow_id="f_done")
        .build()
    )
    rt.deploy(doc)
    iid = rt.engine.start("loop", {"n": 0}).id
    rt.drain()
    assert_finished_cleanly(rt.engine.db, iid)
    assert rt.engine.show(iid)["variables"] == {"n": 4}
    tasks = rows.tasks_of(rt.engine.db, iid)
    assert len(tasks) == 4 and {t.state for t in tasks} == {"DONE"}
    assert [c.variables["n"] for c in calls.seen["work"]] == [0, 1, 2, 3]


@pytest.mark.parametrize("last", ["c", "a"])
def test_unbalanced_fork_where_one_inner_branch_ends_alone(
    engine_factory: EngineFactory, calls: Calls, last: str
) -> None:
    """fork1 -> a -> join1;  fork1 -> fork2 -> {c -> end_c, d -> join1};  join1 -> after."""
    for name in ("a", "c", "d", "after"):
        calls.add(name)
    doc = (
        ProcessBuilder("unbalanced")
        .start()
        .parallel_gateway("fork1")
        .parallel_gateway("fork2")
        .parallel_gateway("join1")
        .service_task("a", handler="a")
        .service_task("c", handler="c")
        .service_task("d", handler="d")
        .service_task("after", handler="after")
        .end("end_c")
        .end()
        .sequence("start", "fork1", "a", "join1")
        .sequence("fork1", "fork2", "c", "end_c")
        .sequence("fork2", "d", "join1")
        .sequence("join1", "after", "end")
        .build()
    )
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(doc)
    iid = rt.start("unbalanced")
    rt.drain(ONLY_ADVANCE)
    db = rt.engine.db
    ready = {t.node_id: t.id for t in rows.tasks_of(db, iid)}
    assert sorted(ready) == ["a", "c", "d"]
    order = [n for n in ("a", "c", "d") if n != last] + [last]
    for node in order:
        rt.engine.run_handler(ready[node])
        rt.drain(ONLY_ADVANCE)
    rt.drain()
    assert_finished_cleanly(db, iid)
    assert [calls.count(n) for n in ("a", "c", "d", "after")] == [1, 1, 1, 1]
    assert len(rows.engine_events_of(db, iid, type="JoinFired")) == 1


def test_terminate_cancels_tokens_inside_a_subprocess(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("inner")
    calls.add("gate")
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .service_task("inner", handler="inner")
        .end("s_end")
        .sequence("s_start", "inner", "s_end")
    )
    doc = (
        ProcessBuilder("terminate_deep")
        .start()
        .parallel_gateway("fork")
        .sub_process("sub", body)
        .end()
        .service_task("gate", handler="gate")
        .end("stop", terminate=True)
        .sequence("start", "fork", "sub", "end")
        .sequence("fork", "gate", "stop")
        .build()
    )
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(doc)
    iid = rt.start("terminate_deep")
    rt.drain(ONLY_ADVANCE)
    db = rt.engine.db
    rt.engine.run_handler(rows.only_task(db, iid, "gate").id)
    rt.drain(ONLY_ADVANCE)

    assert_finished_cleanly(db, iid)
    assert rows.only_task(db, iid, "inner").state == "CANCELLED"
    states = {(t.node_id, t.scope_id): t.state for t in rows.tokens_of(db, iid)}
    assert states[("inner", "sub")] == "CANCELLED" and states[("sub", None)] == "CANCELLED"
    assert calls.count("inner") == 0


def test_error_end_event_inside_a_subprocess_fails_the_instance(rt: Harness) -> None:
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .end("s_err", error="E_INNER")
        .sequence("s_start", "s_err")
    )
    doc = (
        ProcessBuilder("inner_error")
        .start()
        .sub_process("sub", body)
        .task("after")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db
    assert rows.state(db, iid) == "FAILED"
    states = {t.node_id: t.state for t in rows.tokens_of(db, iid)}
    assert states == {"sub": "WAITING", "s_err": "FAILED"}
    (incident,) = rows.incidents_of(db, iid)
    assert "'s_err'" in incident.message and "E_INNER" in incident.message

    failed = next(t for t in rows.tokens_of(db, iid) if t.state == "FAILED")
    before = snapshot(db)
    with pytest.raises(InvalidOperation, match="cancel the instance instead"):
        rt.engine.retry(failed.id)
    assert snapshot(db) == before
    rt.engine.cancel(iid)
    assert_finished_cleanly(db, iid, "CANCELLED")


def test_failed_branch_retried_by_an_operator_completes_the_join(rt: Harness, calls: Calls) -> None:
    broken = {"yes": True}

    def branch(ctx: HandlerContext) -> None:
        if broken["yes"] and ctx.node_id == "b1":
            raise RuntimeError("b1 is broken")

    calls.add("branch", branch)
    calls.add("after")
    iid = rt.run(fork_one_join(branches=3))
    db = rt.engine.db
    assert rows.state(db, iid) == "FAILED"
    parked = [t for t in rows.tokens_of(db, iid) if t.wait_kind == "JOIN"]
    assert len(parked) == 2 and calls.count("after") == 0

    broken["yes"] = False
    rt.engine.retry(rows.only_task(db, iid, "b1").id)
    rt.drain()
    assert_finished_cleanly(db, iid)
    assert calls.count("after") == 1
    assert len(rows.engine_events_of(db, iid, type="JoinFired")) == 1


def test_parallel_branches_writing_variables_keep_every_write(
    engine_factory: EngineFactory, handlers: HandlerRegistry, pg_db: Database, clock: FakeClock
) -> None:
    from tests.helpers.race import SHAPES

    shape = SHAPES["one_join"]

    def branch(ctx: HandlerContext) -> dict[str, object]:
        return {f"from_{ctx.node_id}": ctx.attempt, "shared": ctx.node_id}

    handlers.register("branch", branch)
    handlers.register("after", lambda ctx: None)
    driver = engine_factory(run_handlers_inline=False)
    driver.deploy(shape.doc)
    racers = Racers(pg_db, handlers, clock, k=3)
    seen: Counter[str] = Counter()
    for _ in range(10):
        iid, task_ids = drive_to_ready(driver, shape)
        racers.race(task_ids)
        values = driver.engine.show(iid)["variables"]
        assert {k: v for k, v in values.items() if k != "shared"} == {
            "from_b0": 1,
            "from_b1": 1,
            "from_b2": 1,
        }
        seen[values["shared"]] += 1  # last writer wins; which one is up to the race
        assert_finished_cleanly(pg_db, iid)
    assert sum(seen.values()) == 10


def test_variables_written_by_a_retried_handler_come_from_the_successful_run(
    rt: Harness, calls: Calls
) -> None:
    calls.add("work", failing(2, then={"result": "ok"}))
    doc = (
        ProcessBuilder("retried")
        .start()
        .service_task("work", handler="work", retry={"max_attempts": 3})
        .end()
        .sequence("start", "work", "end")
        .build()
    )
    iid = rt.run(doc)
    assert rt.engine.show(iid)["variables"] == {"result": "ok"}


def test_implicit_end_inside_a_subprocess_completes_it(rt: Harness, calls: Calls) -> None:
    calls.add("work")
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .parallel_gateway("s_fork")
        .service_task("inner", handler="work")
        .task("dead_end")
        .sequence("s_start", "s_fork", "inner")
        .sequence("s_fork", "dead_end")
    )
    doc = (
        ProcessBuilder("sub_implicit")
        .start()
        .sub_process("sub", body)
        .task("after")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(rt.engine.db, iid)
    assert len(rows.engine_events_of(rt.engine.db, iid, type="SubprocessCompleted")) == 1
    assert calls.count("work") == 1


def test_a_stale_row_handed_to_the_next_transaction_changes_nothing(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    """A job's next transaction begins from the row the last one saw (``NextToken.seen``). If
    another job moved the token meanwhile, the write's version check misses, the retry reads
    the token afresh and the step is a no-op: nothing is written twice."""
    calls.add("work")
    rt = engine_factory()
    rt.deploy(sequence_of_tasks("seen_row", 2).build())
    iid = rt.start("seen_row")
    (root,) = rows.tokens_of(rt.engine.db, iid)
    assert root.version == 0
    rt.drain()  # the queued job moves the token on and the instance completes
    before = snapshot(rt.engine.db)
    outcome = rt.engine.runner._chain(NextToken(root.id, 0, seen=root))
    assert outcome == "stale"
    assert snapshot(rt.engine.db) == before
    assert calls.count("work") == 2
    assert_finished_cleanly(rt.engine.db, iid)
