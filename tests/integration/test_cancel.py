"""Cancelling an instance."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from uuid import UUID

import pytest
from sqlalchemy import text

from bpm.definitions import ProcessBuilder
from bpm.errors import InvalidOperation, NotFound
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, snapshot
from tests.helpers.processes import fork_one_join, single_task
from tests.helpers.race import SHAPES, Racers, drive_to_ready, instance_problems, noop, run_together
from tests.helpers.runtime import ONLY_ADVANCE, Calls, EngineFactory, Harness, failing

FAILED_BRANCH = (
    ProcessBuilder("half_failed")
    .start()
    .parallel_gateway("fork")
    .service_task("ok", handler="idle")
    .service_task("bad", handler="bad")
    .end("e_ok")
    .end("e_bad")
    .sequence("start", "fork", "ok", "e_ok")
    .sequence("fork", "bad", "e_bad")
    .build()
)


def test_cancel_a_running_instance(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database
) -> None:
    calls.add("branch")
    calls.add("after")
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(fork_one_join())
    iid = rt.start("fork3")
    rt.drain(ONLY_ADVANCE)
    assert {t.state for t in rows.tasks_of(pg_db, iid)} == {"READY"}

    rt.engine.cancel(iid, reason="customer withdrew")
    assert_finished_cleanly(pg_db, iid, "CANCELLED")
    assert {t.state for t in rows.tokens_of(pg_db, iid)} == {"CANCELLED"}
    assert {t.state for t in rows.tasks_of(pg_db, iid)} == {"CANCELLED"}
    assert rows.instance(pg_db, iid).ended_at is not None
    (event,) = rows.engine_events_of(pg_db, iid, type="InstanceCancelled")
    assert (event["from_state"], event["to_state"]) == ("RUNNING", "CANCELLED")
    reasons = {e["data"]["reason"] for e in rows.token_events_of(pg_db, iid, type="CANCELLED")}
    assert reasons == {"customer withdrew"}

    assert set(rt.drain()) == {"stale"}  # the queued handler runs find nothing to do
    assert calls.count("branch") == 0
    assert_finished_cleanly(pg_db, iid, "CANCELLED")


def test_cancel_a_failed_instance_resolves_its_incidents(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("idle")
    calls.add("bad", failing(99))
    iid = rt.run(FAILED_BRANCH)
    assert rows.state(pg_db, iid) == "FAILED"
    assert [i.state for i in rows.incidents_of(pg_db, iid)] == ["OPEN"]

    rt.engine.cancel(iid)
    assert_finished_cleanly(pg_db, iid, "CANCELLED")
    assert [i.state for i in rows.incidents_of(pg_db, iid)] == ["RESOLVED"]
    assert rt.engine.incidents() == []
    tasks = {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}
    assert tasks == {"ok": "DONE", "bad": "CANCELLED"}
    tokens = {t.node_id: t.state for t in rows.tokens_of(pg_db, iid)}
    assert tokens == {"e_ok": "COMPLETED", "bad": "CANCELLED", "fork": "CANCELLED"}


@pytest.mark.parametrize("end_state", ["COMPLETED", "CANCELLED"])
def test_cancel_an_ended_instance_is_refused(
    rt: Harness, calls: Calls, pg_db: Database, end_state: str
) -> None:
    calls.add("work")
    iid = rt.run(single_task())
    if end_state == "CANCELLED":
        iid = rt.start("single")
        rt.engine.cancel(iid)
    assert rows.state(pg_db, iid) == end_state
    before = snapshot(pg_db)
    with pytest.raises(InvalidOperation, match=f"is {end_state}"):
        rt.engine.cancel(iid)
    assert snapshot(pg_db) == before


def test_cancel_an_unknown_instance(rt: Harness) -> None:
    with pytest.raises(NotFound):
        rt.engine.cancel(UUID(int=3))


def test_cancel_while_the_handler_runs_drops_its_result(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database
) -> None:
    operator = engine_factory()

    def slow(ctx: HandlerContext) -> dict[str, int]:
        operator.engine.cancel(ctx.instance_id)  # lands while this handler is running
        return {"charged": 1}

    calls.add("work", slow)
    rt = engine_factory()
    rt.deploy(single_task())
    iid = rt.start("single")
    rt.drain()

    assert calls.count("work") == 1
    assert_finished_cleanly(pg_db, iid, "CANCELLED")
    assert rt.engine.show(iid)["variables"] == {}
    assert [t.state for t in rows.tasks_of(pg_db, iid)] == ["CANCELLED"]
    assert rows.task_events_of(pg_db, iid, type="COMPLETED") == []


def _cancel_races(
    engine_factory: EngineFactory,
    handlers: HandlerRegistry,
    pg_db: Database,
    clock: FakeClock,
    rounds: int,
) -> Counter[str]:
    """An operator cancels while three workers complete the branches, ``rounds`` times.

    Whichever wins, the instance must end CANCELLED or COMPLETED with nothing left live and
    its history intact.
    """
    shape = SHAPES["one_join"]
    for name in ("branch", "mid", "after"):
        handlers.register(name, noop, replace=True)
    driver = engine_factory(run_handlers_inline=False)
    driver.deploy(shape.doc)
    racers = Racers(pg_db, handlers, clock, k=3)
    operator = engine_factory()
    ended: Counter[str] = Counter()
    for _ in range(rounds):
        iid, task_ids = drive_to_ready(driver, shape)

        def cancel(iid: UUID = iid) -> str:
            try:
                operator.engine.cancel(iid)
            except InvalidOperation:
                return "too late"
            return "cancelled"

        def race(task_ids: list[UUID] = task_ids) -> str:
            return ",".join(racers.race(task_ids))

        both: list[Callable[[], str]] = [race, cancel]
        run_together(both)
        driver.drain()
        state = rows.state(pg_db, iid)
        ended[state] += 1
        assert_finished_cleanly(pg_db, iid, state)
        if state == "COMPLETED":
            assert not instance_problems(pg_db, iid, shape)
    return ended


@pytest.mark.slow
def test_cancel_racing_the_workers_leaves_a_consistent_instance(
    engine_factory: EngineFactory, handlers: HandlerRegistry, pg_db: Database, clock: FakeClock
) -> None:
    ended = _cancel_races(engine_factory, handlers, pg_db, clock, rounds=8)
    assert set(ended) <= {"CANCELLED", "COMPLETED"}


def deadlocks(db: Database) -> int:
    """Deadlocks PostgreSQL detected in this database (backends flush their stats on exit)."""
    db.dispose()
    with db.transaction() as conn:
        return int(
            conn.execute(
                text("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            ).scalar_one()
        )


@pytest.mark.slow
def test_cancel_racing_the_workers_never_deadlocks(
    engine_factory: EngineFactory, handlers: HandlerRegistry, pg_db: Database, clock: FakeClock
) -> None:
    before = deadlocks(pg_db)
    _cancel_races(engine_factory, handlers, pg_db, clock, rounds=8)
    assert deadlocks(pg_db) == before


def test_operator_actions_take_ids_as_strings(rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("idle")
    calls.add("bad", failing(99))
    iid = rt.run(FAILED_BRANCH)
    failed = next(t for t in rows.tokens_of(pg_db, iid) if t.state == "FAILED")
    assert rt.engine.show(str(iid))["id"] == str(iid)
    assert rt.engine.trace(str(iid))[0]["type"] == "InstanceStarted"
    assert rt.engine.retry(str(failed.id)) == failed.id
    rt.drain()
    rt.engine.cancel(str(iid))
    assert_finished_cleanly(pg_db, iid, "CANCELLED")
    before = snapshot(pg_db)
    for action in (rt.engine.show, rt.engine.trace, rt.engine.cancel, rt.engine.retry):
        with pytest.raises(NotFound, match="'not-an-id' is not a valid id"):
            action("not-an-id")
    assert snapshot(pg_db) == before
