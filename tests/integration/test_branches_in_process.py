"""A fork's branches in process: with an in-process dispatcher (embedded mode, tests, the
bench) a branch's job would only run next on the same thread, so the transaction that forks
creates every branch's handler task, locked, and the run goes on with each in turn.

Each handler runs once, a task a later step of the run cancelled never runs, a branch that
is not a handler task keeps its job, the run's bound does not strand a locked branch, and a
process killed mid-run leaves locked tasks the lock scan offers again."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.model import ProcessGraph
from bpm.embedded import EmbeddedRuntime
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import handler_runs
from bpm.handlers import HandlerContext
from bpm.states import EngineEvent
from bpm.store import Database
from bpm.store.rows import TaskRow
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.embedded_child import KILLED_AT, journaling
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.processes import fork_one_join
from tests.helpers.runtime import Calls, EngineFactory, Harness

REPO = Path(__file__).resolve().parents[2]


def forked_line(branches: int = 4, *, timeout: str | None = None) -> ProcessBuilder:
    """start -> fork -> b0..bN (handler ``work``) -> join -> after -> end; with a timeout,
    two attempts each."""
    retry = {"max_attempts": 2, "backoff": "PT0S"} if timeout else None
    b = ProcessBuilder("forked_line").start().parallel_gateway("fork").parallel_gateway("join")
    for i in range(branches):
        b.service_task(f"b{i}", handler="work", timeout=timeout, retry=retry)
        b.flow("fork", f"b{i}").flow(f"b{i}", "join")
    b.service_task("after", handler="work", timeout=timeout, retry=retry).end()
    return b.sequence("start", "fork").sequence("join", "after", "end")


def test_the_forking_run_creates_every_branch_task_and_runs_each_handler_once(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("branch")
    calls.add("after")
    rt.deploy(fork_one_join("fork4", branches=4))
    iid = rt.start("fork4")
    outcomes = rt.drain()
    assert outcomes == ["done"]  # the start's job ran it all: no job per branch
    assert calls.count("branch") == 4 and calls.count("after") == 1
    assert len(rows.engine_events_of(pg_db, iid, type=EngineEvent.JOIN_FIRED)) == 1
    assert {t.attempts for t in rows.tasks_of(pg_db, iid)} == {1}
    assert_finished_cleanly(pg_db, iid)


def test_a_branch_that_is_not_a_handler_task_keeps_its_job(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    doc = (
        ProcessBuilder("mixed")
        .start()
        .parallel_gateway("fork")
        .service_task("b0", handler="work")
        .service_task("b1", handler="work")
        .service_task("ext", topic="elsewhere")
        .parallel_gateway("join")
        .end()
        .sequence("start", "fork")
        .sequence("join", "end")
        .sequence("fork", "b0", "join")
        .sequence("fork", "b1", "join")
        .sequence("fork", "ext", "join")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("mixed")
    outcomes = rt.drain()
    assert outcomes == ["done", "done"]  # the start's, and the external task's branch
    assert calls.count("work") == 2
    (ext,) = rows.tasks_of(pg_db, iid, "ext")
    assert ext.state == "READY"
    assert rows.state(pg_db, iid) == "RUNNING"


def test_a_step_that_ends_the_instance_cancels_the_branches_it_took_on(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    """b0 runs first and its path ends at a terminate end event: the tasks of b1 and b2,
    created locked by the same run, are cancelled with the instance, and their handlers
    never run."""
    calls.add("work")
    doc = (
        ProcessBuilder("terminated")
        .start()
        .parallel_gateway("fork")
        .service_task("b0", handler="work")
        .service_task("b1", handler="work")
        .service_task("b2", handler="work")
        .end("stop", terminate=True)
        .end("e1")
        .end("e2")
        .sequence("start", "fork")
        .sequence("fork", "b0", "stop")
        .sequence("fork", "b1", "e1")
        .sequence("fork", "b2", "e2")
        .build()
    )
    iid = rt.run(doc)
    assert [c.node_id for c in calls.seen["work"]] == ["b0"]
    tasks = {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}
    assert tasks == {"b0": "DONE", "b1": "CANCELLED", "b2": "CANCELLED"}
    assert rows.state(pg_db, iid) == "COMPLETED"


def test_the_runs_bound_does_not_strand_a_branch_it_locked(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database
) -> None:
    """A bound of 2 steps: the branches the fork locked still run in the same job (no one
    else could before their locks expire), each one step; what follows them is queued."""
    calls.add("work")
    rt = engine_factory(chain_limit=2)
    iid = rt.run(forked_line(4).build())
    assert Counter(c.node_id for c in calls.seen["work"]) == Counter(
        ["b0", "b1", "b2", "b3", "after"]
    )
    assert {t.attempts for t in rows.tasks_of(pg_db, iid)} == {1}
    assert_finished_cleanly(pg_db, iid)


def test_a_process_killed_mid_run_leaves_locked_branches_the_lock_scan_offers_again(
    pg_url: str, pg_db: Database, tmp_path: Path
) -> None:
    """A process runs the instance in embedded mode and is killed (SIGKILL) inside b0's
    handler, with the tasks of b1..b3 reserved by it and not yet run (their attempts not
    counted). Once the locks expire (the tasks' 1 s timeout), another process's lock scan
    offers them: b0 runs again (its second attempt) with the same idempotency key, every
    other handler once, in its first attempt; the join fires once."""
    journal = tmp_path / "journal"
    recovering = EmbeddedRuntime(db=pg_db, handlers=journaling(journal), migrate=False)
    recovering.engine.deploy(forked_line(4, timeout="PT1S").build())
    child = subprocess.run(
        [sys.executable, "-m", "tests.helpers.embedded_child", pg_url, str(journal)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -9, child.stderr[-2000:]
    with pg_db.transaction() as conn:
        (iid,) = conn.exec_driver_sql(
            "SELECT id FROM process_instances WHERE process_key = 'forked_line'"
        ).scalars()
    locked = {t.node_id: (t.state, t.attempts) for t in rows.tasks_of(pg_db, iid)}
    assert locked == {"b0": ("LOCKED", 1), **{f"b{i}": ("LOCKED", 0) for i in (1, 2, 3)}}
    assert [line.split()[0] for line in journal.read_text().splitlines()] == [KILLED_AT]

    time.sleep(1.5)  # the locks expire
    recovering.recover()
    ended = recovering.wait_for(iid, timeout=30)
    with pg_db.transaction() as conn:
        why = conn.exec_driver_sql(
            "SELECT kind, message FROM incidents WHERE instance_id = %(i)s", {"i": iid}
        ).all()
    assert ended == "COMPLETED", why
    runs = [line.split() for line in journal.read_text().splitlines()]
    assert Counter(node for node, _ in runs) == Counter(["b0", "b0", "b1", "b2", "b3", "after"])
    assert len({key for node, key in runs if node == "b0"}) == 1
    attempts = {t.node_id: t.attempts for t in rows.tasks_of(pg_db, iid)}
    assert attempts == {"b0": 2, "b1": 1, "b2": 1, "b3": 1, "after": 1}
    assert len(rows.engine_events_of(pg_db, iid, type=EngineEvent.JOIN_FIRED)) == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_branch_offered_again_meanwhile_fails_nothing_and_runs_once(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock, pg_db: Database
) -> None:
    """While b0's handler runs, b1's reservation expires (its 1 minute timeout) and another
    engine's lock scan offers it again. The step that records b0 would begin b1's run: that
    misses and changes nothing, b0's result is recorded all the same, b1 leaves the run's
    queue, and the other engine runs it, once."""
    rt, other = engine_factory(), engine_factory()

    def b0(ctx: HandlerContext) -> None:
        clock.advance(timedelta(minutes=2))
        other.engine.run_scans()

    calls.add("work")
    calls.add("first", b0)
    doc = (
        ProcessBuilder("offered")
        .start()
        .parallel_gateway("fork")
        .service_task("b0", handler="first", timeout="PT1H")
        .service_task("b1", handler="work", timeout="PT1M")
        .parallel_gateway("join")
        .service_task("after", handler="work")
        .end()
        .sequence("start", "fork", "b0", "join", "after", "end")
        .sequence("fork", "b1", "join")
        .build()
    )
    iid = rt.run(doc)
    assert calls.count("first") == 1 and calls.count("work") == 0
    assert {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)} == {
        "b0": "DONE",
        "b1": "READY",
    }
    other.drain()
    assert Counter(c.node_id for c in calls.seen["work"]) == Counter(["b1", "after"])
    assert calls.count("first") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_run_that_fails_gives_back_the_branches_it_holds(
    rt: Harness, calls: Calls, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording b0's result fails with an error the run does not handle (as a lost
    database would): the reserved tasks of b1..b3 go back to READY, a job each, instead of
    waiting for their locks to expire; run from the queue, each handler runs once."""
    calls.add("work")
    rt.deploy(forked_line(4).build())
    iid = rt.start("forked_line")
    complete = handler_runs.complete_task

    def broken(tx: Tx, g: ProcessGraph, task: TaskRow, *args: Any, **kwargs: Any) -> Any:
        if task.node_id == "b0":
            raise RuntimeError("the database went away")
        return complete(tx, g, task, *args, **kwargs)

    monkeypatch.setattr(handler_runs, "complete_task", broken)
    with pytest.raises(RuntimeError):
        rt.drain()
    tasks = {t.node_id: (t.state, t.attempts) for t in rows.tasks_of(pg_db, iid)}
    assert tasks == {"b0": ("LOCKED", 1), **{f"b{i}": ("READY", 0) for i in (1, 2, 3)}}
    monkeypatch.undo()
    rt.drain()
    assert Counter(c.node_id for c in calls.seen["work"]) == Counter(["b0", "b1", "b2", "b3"])
