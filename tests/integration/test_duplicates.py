"""Duplicate, late and stale jobs are logged no-ops.

A message may be delivered twice, late, or after someone else did the work: the second
delivery must change nothing and the token's transition must be recorded exactly once.
"""

from __future__ import annotations

import functools
from uuid import UUID

from bpm.definitions import ProcessBuilder
from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER, Job
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, snapshot
from tests.helpers.processes import single_task
from tests.helpers.race import run_together
from tests.helpers.runtime import ONLY_ADVANCE, Calls, EngineFactory, Harness

DOC = (
    ProcessBuilder("dup")
    .start()
    .task("a")
    .service_task("work", handler="work")
    .end()
    .sequence("start", "a", "work", "end")
    .build()
)


def moves_from(db: Database, iid: UUID, node: str) -> int:
    return sum(
        1
        for e in rows.token_events_of(db, iid)
        if e["type"] == "MOVED" and (e["data"] or {}).get("from") == node
    )


def root_of(db: Database, iid: UUID) -> UUID:
    (root,) = [t.id for t in rows.tokens_of(db, iid) if t.parent_token_id is None]
    return root


def test_advance_twice_with_the_same_version_moves_once(rt: Harness, calls: Calls) -> None:
    calls.add("work")
    rt.deploy(DOC)
    iid = rt.start("dup")  # its advance job stays queued: it arrives late, below
    db = rt.engine.db
    root = root_of(db, iid)

    assert rt.engine.advance(root, 0) == "done"
    after_first = snapshot(db)
    assert rt.engine.advance(root, 0) == "stale"
    assert rt.drain() == ["stale"]  # the original nudge, delivered after the work was done
    assert snapshot(db) == after_first

    assert moves_from(db, iid, "start") == 1
    assert calls.count("work") == 1
    assert len(rows.engine_events_of(db, iid, type="InstanceCompleted")) == 1
    assert_finished_cleanly(db, iid)


def test_concurrent_duplicate_advances_move_once(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("work")
    rt = engine_factory()
    rt.deploy(DOC)
    workers = [engine_factory() for _ in range(3)]
    for _ in range(10):
        iid = rt.start("dup")
        root = root_of(rt.engine.db, iid)
        outcomes = run_together([functools.partial(w.engine.advance, root, 0) for w in workers])
        for w in workers:
            w.drain()
        assert sorted(outcomes) == ["done", "stale", "stale"]
        assert moves_from(rt.engine.db, iid, "start") == 1
        assert_finished_cleanly(rt.engine.db, iid)
    assert calls.count("work") == 10


def test_old_version_after_the_token_moved_is_a_no_op(rt: Harness, calls: Calls) -> None:
    calls.add("work")
    iid = rt.run(DOC)
    db = rt.engine.db
    root = rows.token(db, root_of(db, iid))
    before = snapshot(db)
    for version in range(root.version):
        assert rt.engine.advance(root.id, version) == "stale"
    assert rt.engine.advance(root.id, root.version) == "stale"  # COMPLETED: nothing to do
    assert rt.engine.advance(root.id, root.version + 5) == "stale"
    assert snapshot(db) == before


def test_run_handler_twice_runs_the_handler_once(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("work", lambda ctx: {"ran": ctx.attempt})
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(single_task())
    iid = rt.start("single")
    rt.drain(ONLY_ADVANCE)
    db = rt.engine.db
    task = rows.only_task(db, iid, "work")
    assert task.state == "READY"

    assert rt.engine.run_handler(task.id) == "done"
    after_first = snapshot(db)
    assert rt.engine.run_handler(task.id) == "stale"
    assert rt.drain() == ["stale"]  # the queued job for the same task
    assert snapshot(db) == after_first
    assert calls.count("work") == 1
    assert len(rows.task_events_of(db, iid, type="COMPLETED")) == 1
    assert_finished_cleanly(db, iid)


def test_concurrent_run_handler_runs_the_handler_once(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("work")
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(single_task())
    workers = [engine_factory() for _ in range(3)]
    for n in range(1, 11):
        iid = rt.start("single")
        rt.drain(ONLY_ADVANCE)
        task = rows.only_task(rt.engine.db, iid, "work")
        outcomes = run_together([functools.partial(w.engine.run_handler, task.id) for w in workers])
        assert sorted(outcomes) == ["done", "stale", "stale"]
        assert calls.count("work") == n
        assert rows.only_task(rt.engine.db, iid, "work").attempts == 1
        assert_finished_cleanly(rt.engine.db, iid)
    assert set(rt.drain()) == {"stale"}


def test_jobs_for_unknown_ids_are_dropped(rt: Harness) -> None:
    before = snapshot(rt.engine.db)
    missing = str(UUID(int=1))
    assert (
        rt.engine.run_job(Job(ADVANCE_TOKEN, {"token_id": missing, "expected_version": 0}))
        == "unknown"
    )
    assert rt.engine.run_job(Job(RUN_HANDLER, {"task_id": missing})) == "stale"
    assert snapshot(rt.engine.db) == before
