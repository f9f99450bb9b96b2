"""Recovery is running the scans: lost jobs and dead workers.

``DroppingDispatcher`` stands for a process killed between commit and send: every job it is
given is lost. The instance is then stuck until a scan re-derives the work from the rows.
Time is moved with the fake clock, never slept.
"""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import DroppingDispatcher, InProcessDispatcher
from bpm.engine.core.tx import Stale
from bpm.engine.engine import Engine
from bpm.engine.semantics import handler_runs
from bpm.handlers import HandlerContext, HandlerFn, HandlerRegistry
from bpm.store import Database
from bpm.store.rows import TaskRow
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.processes import fork_one_join, single_task
from tests.helpers.race import HoldingDispatcher
from tests.helpers.runtime import ONLY_ADVANCE, Calls, EngineFactory, Harness, failing

GRACE = timedelta(seconds=30)  # ScanConfig's default
LATER = timedelta(minutes=5)


def stuck(db: Database, iid: UUID) -> bool:
    """Running, and nothing will move it: no job is queued anywhere."""
    return rows.state(db, iid) == "RUNNING"


def scan_and_drain(worker: Harness) -> dict[str, int]:
    found = worker.engine.run_scans()
    worker.drain()
    return found


def root_of(db: Database, iid: UUID) -> UUID:
    return next(t.id for t in rows.tokens_of(db, iid) if t.parent_token_id is None)


def test_lost_advance_after_start(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    crashed = engine_factory(DroppingDispatcher())
    crashed.deploy(single_task())
    iid = crashed.start("single")
    db = crashed.engine.db
    (tok,) = rows.tokens_of(db, iid)
    assert (tok.node_id, tok.state) == ("start", "ACTIVE") and stuck(db, iid)

    worker = engine_factory()
    assert worker.engine.run_scans()["stalled_tokens"] == 0
    clock.advance(GRACE - timedelta(seconds=1))
    assert worker.engine.run_scans()["stalled_tokens"] == 0  # still within the grace period
    assert stuck(db, iid)

    clock.advance(LATER)
    assert scan_and_drain(worker)["stalled_tokens"] == 1
    assert_finished_cleanly(db, iid)
    assert calls.count("work") == 1


def test_two_scanners_at_once_do_the_work_once(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("branch")
    calls.add("after")
    crashed = engine_factory(DroppingDispatcher())
    crashed.deploy(fork_one_join())
    iids = [crashed.start("fork3") for _ in range(3)]
    clock.advance(LATER)

    a, b = engine_factory(), engine_factory()
    found_a = a.engine.run_scans()
    # A row just re-sent is not re-sent again within the grace period (its job may still be
    # queued); after it, the second scanner sends the same jobs again.
    assert b.engine.run_scans()["stalled_tokens"] == 0
    clock.advance(LATER)
    found_b = b.engine.run_scans()
    assert found_a["stalled_tokens"] == 3 and found_b["stalled_tokens"] == 3
    a.drain()
    assert set(b.drain()) == {"stale"}  # the second scanner's nudges arrive after the work
    for iid in iids:
        assert_finished_cleanly(a.engine.db, iid)
    assert (calls.count("branch"), calls.count("after")) == (9, 3)


def test_lost_handler_run_after_task_creation(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    crashed = engine_factory(DroppingDispatcher(), run_handlers_inline=False)
    crashed.deploy(single_task())
    iid = crashed.start("single")
    db = crashed.engine.db
    assert crashed.engine.advance(root_of(db, iid), 0) == "done"
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts, task.retry_at) == ("READY", 0, None)
    assert isinstance(crashed.dispatcher, DroppingDispatcher)
    assert [j.name for j in crashed.dispatcher.dropped][-1] == "bpm.run_handler"

    worker = engine_factory()
    assert worker.engine.run_scans()["ready_tasks"] == 0
    clock.advance(LATER)
    assert scan_and_drain(worker)["ready_tasks"] == 1
    assert_finished_cleanly(db, iid)
    assert [c.attempt for c in calls.seen["work"]] == [1]


@pytest.mark.parametrize("shape", ["join", "end_events"])
def test_lost_nudge_of_a_waiting_parent(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database, clock: FakeClock, shape: str
) -> None:
    calls.add("branch")
    calls.add("after")
    if shape == "join":
        doc = fork_one_join("lost_nudge", branches=2)
    else:
        doc = (
            ProcessBuilder("lost_nudge")
            .start()
            .parallel_gateway("fork")
            .service_task("b0", handler="branch")
            .service_task("b1", handler="branch")
            .end("e0")
            .end("e1")
            .sequence("start", "fork", "b0", "e0")
            .sequence("fork", "b1", "e1")
            .build()
        )
    losing = HoldingDispatcher(pg_db)  # held decisions are never delivered: lost
    crashed = engine_factory(losing, chain_limit=1, run_handlers_inline=False)
    crashed.deploy(doc)
    iid = crashed.start("lost_nudge")
    crashed.drain()
    assert losing.held and stuck(pg_db, iid)
    root = rows.token(pg_db, root_of(pg_db, iid))
    assert (root.state, root.wait_kind) == ("WAITING", "CHILDREN")
    children = [t for t in rows.tokens_of(pg_db, iid) if t.parent_token_id == root.id]
    expected = {"join": ("WAITING", "JOIN"), "end_events": ("COMPLETED", None)}[shape]
    assert {(c.state, c.wait_kind) for c in children} == {expected}

    worker = engine_factory()
    clock.advance(LATER)
    assert scan_and_drain(worker)["waiting_parents"] == 1
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("after") == (1 if shape == "join" else 0)


def test_a_join_waiting_for_a_busy_sibling_is_not_rechecked_by_every_scan(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock, pg_db: Database
) -> None:
    """One branch parks at the join, the other waits for a person for days: the parked token
    records that the join needs both flows, so the scans leave its parent alone (the sibling
    nudges it when it arrives) instead of re-sending it every few seconds."""
    calls.add("after")
    doc = (
        ProcessBuilder("busy_sibling")
        .start()
        .parallel_gateway("fork")
        .task("quick")
        .user_task("slow")
        .parallel_gateway("join")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork", "quick", "join", "after", "end")
        .sequence("fork", "slow", "join")
        .build()
    )
    rt = engine_factory()
    iid = rt.run(doc)
    [parked] = [t for t in rows.tokens_of(pg_db, iid) if t.wait_kind == "JOIN"]
    assert parked.waits_for == 2
    for _ in range(3):
        clock.advance(LATER)
        assert rt.engine.run_scans()["waiting_parents"] == 0
    rt.complete_user_task(iid)
    assert calls.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_lost_retry_runs_once_its_time_has_come(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work", failing(1))
    crashed = engine_factory(DroppingDispatcher())
    crashed.deploy(single_task(retry={"max_attempts": 2, "backoff": "PT10S"}))
    iid = crashed.start("single")
    db = crashed.engine.db
    crashed.engine.advance(root_of(db, iid), 0)  # runs attempt 1; its delayed retry is lost
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts) == ("READY", 1) and task.retry_at is not None

    worker = engine_factory()
    clock.move_to(task.retry_at - timedelta(seconds=1))
    assert scan_and_drain(worker)["ready_tasks"] == 0
    clock.move_to(task.retry_at)
    assert scan_and_drain(worker)["ready_tasks"] == 1
    assert_finished_cleanly(db, iid)
    assert [c.attempt for c in calls.seen["work"]] == [1, 2]


def _lock_and_die(engine_factory: EngineFactory, iid: UUID) -> TaskRow:
    """A runner that locks the task (counting the attempt) and is killed before it reports."""
    dead = engine_factory(DroppingDispatcher(), worker_id="dead-worker")
    task = rows.only_task(dead.engine.db, iid, "work")
    with dead.engine.core.transaction() as tx:
        locked = handler_runs.lock_task(tx, task.id, timedelta(minutes=5))
    assert locked is not None
    return locked


def _ready_task(engine_factory: EngineFactory, max_attempts: int) -> tuple[Harness, UUID]:
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(single_task(retry={"max_attempts": max_attempts, "backoff": "PT1S"}))
    iid = rt.start("single")
    rt.drain(ONLY_ADVANCE)
    assert [j.name for j in rt.queued()] == ["bpm.run_handler"]
    rt.queue.pop(rt.clock.peek())  # forget it: only the runner that dies got the job
    return rt, iid


def test_runner_killed_mid_run_returns_the_task_and_uses_an_attempt(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work", lambda ctx: {"attempt": ctx.attempt})
    rt, iid = _ready_task(engine_factory, max_attempts=2)
    db = rt.engine.db
    locked = _lock_and_die(engine_factory, iid)
    assert (locked.state, locked.attempts, locked.lock_owner) == ("LOCKED", 1, "dead-worker")

    worker = engine_factory()
    clock.advance(timedelta(minutes=4))
    assert scan_and_drain(worker)["expired_locks"] == 0  # the lock still holds
    assert rows.only_task(db, iid, "work").state == "LOCKED"

    clock.advance(timedelta(minutes=2))
    found = worker.engine.run_scans()
    assert found["expired_locks"] == 1
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts, task.retries, task.lock_owner) == ("READY", 1, 1, None)
    (expired,) = rows.task_events_of(db, iid, type="LOCK_EXPIRED")
    assert expired["data"]["owner"] == "dead-worker"
    worker.drain()
    assert_finished_cleanly(db, iid)
    assert rt.engine.show(iid)["variables"] == {"attempt": 2}

    # The dead runner comes back late with a result: it is dropped, nothing changes.
    g = worker.engine.core.graph(rows.instance(db, iid).process_def_id)
    with pytest.raises(Stale), worker.engine.core.transaction() as tx:
        handler_runs.complete_task(tx, g, locked, {"late": True})
    assert rt.engine.show(iid)["variables"] == {"attempt": 2}
    assert_finished_cleanly(db, iid)


def test_runner_killed_on_the_last_attempt_fails_with_an_incident(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    rt, iid = _ready_task(engine_factory, max_attempts=1)
    db = rt.engine.db
    _lock_and_die(engine_factory, iid)
    clock.advance(timedelta(minutes=6))
    assert scan_and_drain(engine_factory())["expired_locks"] == 1

    assert calls.count("work") == 0
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts, task.retries) == ("FAILED", 1, 0)
    assert rows.state(db, iid) == "FAILED"
    (incident,) = rows.incidents_of(db, iid)
    assert "never reported back" in incident.message and "dead-worker" in incident.message
    assert rows.tokens_of(db, iid)[0].state == "FAILED"
    assert_history_consistent(db, iid)


def test_a_handler_that_kills_its_worker_every_time_ends_as_an_incident(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("work")
    rt, iid = _ready_task(engine_factory, max_attempts=3)
    db = rt.engine.db
    worker = engine_factory(DroppingDispatcher())  # its re-run jobs die with it, too
    for _ in range(3):
        _lock_and_die(engine_factory, iid)
        clock.advance(timedelta(minutes=6))
        assert worker.engine.run_scans()["expired_locks"] == 1
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts) == ("FAILED", 3)
    assert rows.state(db, iid) == "FAILED"
    assert len(rows.incidents_of(db, iid, only_open=True)) == 1
    assert worker.engine.run_scans() == {
        "timers": 0,
        "expired_locks": 0,
        "stalled_tokens": 0,
        "ready_tasks": 0,
        "waiting_parents": 0,
        "unfinished_signals": 0,
    }
    assert_history_consistent(db, iid)


def test_scans_alone_carry_an_instance_whose_every_job_is_lost(
    pg_db: Database, calls: Calls, clock: FakeClock, engine_factory: EngineFactory
) -> None:
    """Each job does one step and loses its follow-ups; scans re-derive
    them from the rows, so the instance still completes."""
    attempts: dict[str, int] = {}

    def flaky(ctx: HandlerContext) -> None:
        attempts[ctx.node_id] = ctx.attempt
        if ctx.attempt == 1:
            raise RuntimeError("first attempt fails")

    calls.add("flaky", flaky)
    calls.add("after")
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .service_task("inner", handler="flaky", retry={"max_attempts": 2, "backoff": "PT5S"})
        .end("s_end")
        .sequence("s_start", "inner", "s_end")
    )
    doc = (
        ProcessBuilder("lossy")
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .sub_process("sub", body)
        .task("side")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "fork", "sub", "join")
        .sequence("fork", "side", "join")
        .sequence("join", "after", "end")
        .build()
    )
    lossy = Engine(
        pg_db,
        DroppingDispatcher(),
        handlers=calls.registry,
        clock=clock,
        chain_limit=1,
        run_handlers_inline=False,
    )
    lossy.deploy(doc)
    iid = lossy.start("lossy").id

    rounds = 0
    while rows.state(pg_db, iid) == "RUNNING":
        rounds += 1
        assert rounds < 60, "the scans did not finish the instance"
        clock.advance(timedelta(minutes=1))
        beat = InProcessDispatcher()
        Engine(pg_db, beat, handlers=calls.registry, clock=clock).run_scans()
        while (job := beat.pop(clock.peek())) is not None:
            lossy.run_job(job)  # one step; everything it would send next is lost
    assert_finished_cleanly(pg_db, iid)
    assert attempts == {"inner": 2}
    assert calls.count("after") == 1


class Crash(BaseException):
    """The worker process dies here (not an Exception: nothing in the engine catches it)."""


class DyingRegistry(HandlerRegistry):
    """Handlers whose runner dies just before calling the handler, once."""

    armed = True

    def get(self, name: str) -> HandlerFn | None:
        if self.armed:
            self.armed = False
            raise Crash(f"worker killed before running {name!r}")
        return super().get(name)


@pytest.mark.parametrize(("max_attempts", "ends"), [(2, "COMPLETED"), (1, "FAILED")])
def test_worker_dying_right_after_locking_its_inline_task_counts_as_a_run(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock, max_attempts: int, ends: str
) -> None:
    """A decision, documented in docs/concepts.md: a runner that will run a handler itself
    locks the task in the transaction that creates it, and the attempt starts there. Dying
    before the handler is entered is then the same as dying inside it: the lock expires after
    the node's timeout, the run counts, and the next attempt runs if one is left."""
    calls.add("work")
    dying = DyingRegistry()
    dying.register("work", calls.registry.get("work") or (lambda ctx: None))
    crashed = engine_factory(DroppingDispatcher(), handlers=dying)
    crashed.deploy(single_task(retry={"max_attempts": max_attempts}))
    iid = crashed.start("single")
    db = crashed.engine.db
    with pytest.raises(Crash):
        crashed.engine.advance(root_of(db, iid), 0)
    assert calls.count("work") == 0

    worker = engine_factory()
    for _ in range(3):
        clock.advance(LATER + timedelta(seconds=1))
        scan_and_drain(worker)
    assert calls.count("work") == max_attempts - 1
    assert rows.state(db, iid) == ends
    task = rows.tasks_of(db, iid)[0]
    assert task.attempts == max_attempts


@pytest.mark.parametrize("inline", [True, False])
def test_handler_outliving_its_timeout_loses_to_the_next_run(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock, inline: bool
) -> None:
    """The node's ``timeout`` bounds the lock; a run that overstays it is taken over, and
    its late result is dropped."""
    rescuer = engine_factory(worker_id="rescuer")
    seen: list[tuple[int, str]] = []

    def slow(ctx: HandlerContext) -> dict[str, int]:
        seen.append((ctx.attempt, ctx.idempotency_key))
        if ctx.attempt == 1:  # hangs past its 10 s timeout; meanwhile beat runs the scans
            clock.advance(timedelta(seconds=11))
            assert rescuer.engine.run_scans()["expired_locks"] == 1
            rescuer.drain()
        return {"winner": ctx.attempt}

    calls.add("work", slow)
    rt = engine_factory(run_handlers_inline=inline)
    rt.deploy(single_task(retry={"max_attempts": 2}, timeout="PT10S"))
    iid = rt.start("single")
    rt.drain()
    db = rt.engine.db

    assert [a for a, _ in seen] == [1, 2]
    assert len({key for _, key in seen}) == 1  # one idempotency key for both runs
    assert rt.engine.show(iid)["variables"] == {"winner": 2}
    assert_finished_cleanly(db, iid)
    completed = rows.task_events_of(db, iid, type="COMPLETED")
    assert [e["actor"] for e in completed] == ["rescuer"]
