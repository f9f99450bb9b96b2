"""External tasks through the engine's Python API: fetch-and-lock, complete, fail, BPMN error,
extend and unlock, lock expiry; racing workers never share a task."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.engine.operations.external import TopicRequest
from bpm.errors import (
    BadVariables,
    LockExpired,
    TaskLockError,
    TaskNotFound,
    TaskNotLocked,
    WrongWorker,
)
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, snapshot
from tests.helpers.runtime import Calls, EngineFactory, Harness

LOCK = timedelta(seconds=30)


def two_topics() -> dict[str, Any]:
    return (
        ProcessBuilder("ext")
        .start()
        .service_task("charge", topic="payments")
        .service_task("after", handler="work")
        .service_task("ship", topic="shipping")
        .end()
        .sequence("start", "charge", "after", "ship", "end")
        .build()
    )


def fetch(rt: Harness, worker: str = "w1", topic: str = "payments", **kw: Any) -> list[Any]:
    return rt.engine.fetch_and_lock(worker, [TopicRequest(topic, LOCK)], **kw)


def test_a_process_with_two_topics_and_a_handler_completes(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(two_topics(), {"total": 5})
    [task] = fetch(rt)
    assert task.instance_id == iid and task.variables == {"total": 5}
    assert (task.process_key, task.process_version, task.node_id) == ("ext", 1, "charge")
    assert task.attempt == 1 and task.retries == 0
    rt.engine.complete(task.id, "w1", {"charged": True})
    rt.drain()  # the next step was dispatched at once; the handler runs
    assert calls.count("work") == 1
    [ship] = rt.engine.fetch_and_lock("w2", [TopicRequest("shipping", LOCK, ["charged"])])
    assert ship.variables == {"charged": True}
    rt.engine.complete(ship.id, "w2")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_bad_calls_get_their_own_error_and_change_nothing(
    rt: Harness, clock: FakeClock, pg_db: Database
) -> None:
    rt.run(two_topics())
    [task] = fetch(rt)
    before = snapshot(pg_db)
    with pytest.raises(WrongWorker):
        rt.engine.complete(task.id, "intruder")
    with pytest.raises(TaskNotFound):
        rt.engine.complete(UUID(int=1), "w1")
    with pytest.raises(BadVariables):
        rt.engine.complete(task.id, "w1", {"x": {1, 2}})
    with pytest.raises(WrongWorker):
        rt.engine.extend_lock(task.id, "intruder", LOCK)
    with pytest.raises(WrongWorker):
        rt.engine.fail(task.id, "intruder", "boom", retries=1)
    with pytest.raises(WrongWorker):
        rt.engine.bpmn_error(task.id, "intruder", "E1")
    with pytest.raises(TaskNotFound):
        rt.engine.fail(UUID(int=1), "w1", "boom")
    with pytest.raises(TaskNotFound):
        rt.engine.bpmn_error(UUID(int=1), "w1", "E1")
    with pytest.raises(TaskNotFound):
        rt.engine.unlock(UUID(int=1))
    with pytest.raises(BadVariables):
        rt.engine.bpmn_error(task.id, "w1", "E1", variables={"x": float("nan")})
    with pytest.raises(BadVariables, match="non-empty code"):
        rt.engine.bpmn_error(task.id, "w1", "")
    with pytest.raises(TaskLockError, match="must not be negative"):
        rt.engine.fail(task.id, "w1", "boom", retries=-1)
    with pytest.raises(TaskLockError, match="must not be negative"):
        rt.engine.fail(task.id, "w1", "boom", retry_timeout=timedelta(seconds=-1))
    with pytest.raises(TaskLockError, match="must be positive"):
        rt.engine.extend_lock(task.id, "w1", timedelta(0))
    assert snapshot(pg_db) == before
    rt.engine.complete(task.id, "w1")
    after = snapshot(pg_db)
    with pytest.raises(TaskNotLocked):
        rt.engine.complete(task.id, "w1")  # double complete
    with pytest.raises(TaskNotLocked):
        rt.engine.unlock(task.id)
    assert snapshot(pg_db) == after


def test_a_complete_after_the_lock_expired_changes_nothing(
    rt: Harness, clock: FakeClock, pg_db: Database
) -> None:
    rt.run(two_topics())
    [task] = fetch(rt)
    clock.advance(LOCK + timedelta(seconds=1))
    before = snapshot(pg_db)
    with pytest.raises(LockExpired):
        rt.engine.complete(task.id, "w1", {"late": True})
    with pytest.raises(LockExpired):
        rt.engine.bpmn_error(task.id, "w1", "E1")
    assert snapshot(pg_db) == before


def test_fetch_takes_higher_priority_first_then_older_and_says_who_it_is_for(
    rt: Harness, clock: FakeClock
) -> None:
    def with_priority(key: str, priority: int) -> dict[str, Any]:
        return (
            ProcessBuilder(key)
            .start()
            .service_task("t", topic="ordered", priority=priority)
            .end()
            .sequence("start", "t", "end")
            .build()
        )

    for key, priority in (("low_a", 0), ("high_a", 5), ("low_b", 0), ("high_b", 5), ("neg", -1)):
        rt.deploy(with_priority(key, priority))
        rt.start(key, business_key=f"bk-{key}")
        rt.drain()
        clock.advance(timedelta(seconds=1))
    got = rt.engine.fetch_and_lock("w1", [TopicRequest("ordered", LOCK)], max_tasks=3)
    got += rt.engine.fetch_and_lock("w1", [TopicRequest("ordered", LOCK)], max_tasks=3)
    assert [t.process_key for t in got] == ["high_a", "high_b", "low_a", "low_b", "neg"]
    assert [t.priority for t in got] == [5, 5, 0, 0, -1]
    assert [t.business_key for t in got] == [f"bk-{t.process_key}" for t in got]


def test_lock_expiry_hands_the_task_to_another_worker(rt: Harness, clock: FakeClock) -> None:
    rt.run(two_topics())
    [first] = fetch(rt, "w1")
    assert fetch(rt, "w2") == []
    clock.advance(LOCK + timedelta(seconds=1))
    with pytest.raises(LockExpired):
        rt.engine.complete(first.id, "w1")
    rt.engine.run_scans()  # the expired lock counts as an attempt: none left -> incident
    [incident] = rt.engine.incidents()
    assert "never reported back" in incident["message"]


def test_lock_expiry_with_retries_left_goes_to_the_next_worker(
    rt: Harness, clock: FakeClock
) -> None:
    doc = (
        ProcessBuilder("ext2")
        .start()
        .service_task("charge", topic="payments", retry={"max_attempts": 3})
        .end()
        .sequence("start", "charge", "end")
        .build()
    )
    iid = rt.run(doc)
    [first] = fetch(rt, "w1")
    clock.advance(LOCK + timedelta(seconds=1))
    rt.engine.run_scans()
    [second] = fetch(rt, "w2")
    assert second.id == first.id and second.attempt == 2
    with pytest.raises(WrongWorker):
        rt.engine.complete(first.id, "w1")  # the late complete of the first owner
    rt.engine.complete(second.id, "w2")
    rt.drain()
    assert rows.state(rt.engine.db, iid) == "COMPLETED"


def test_fail_with_retries_respects_retry_timeout_then_incident_and_retry(
    rt: Harness, clock: FakeClock
) -> None:
    iid = rt.run(two_topics())
    [task] = fetch(rt)
    rt.engine.fail(
        task.id, "w1", "gateway down", "trace...", retries=1, retry_timeout=timedelta(minutes=1)
    )
    assert fetch(rt) == []  # not before retry_at
    clock.advance(timedelta(minutes=1))
    [again] = fetch(rt)
    rt.engine.fail(again.id, "w1", "still down", "502 from the gateway", retries=0)
    assert rows.state(rt.engine.db, iid) == "FAILED"
    failed = rows.only_task(rt.engine.db, iid, "charge")
    assert rows.token(rt.engine.db, failed.token_id).state == "FAILED"
    [incident] = rt.engine.incidents()
    assert "still down" in incident["message"]
    assert incident["details"] == "502 from the gateway"
    rt.engine.retry(task.id, retries=1)  # the operator's retry
    [third] = fetch(rt)
    rt.engine.complete(third.id, "w1")
    assert rows.state(rt.engine.db, iid) == "RUNNING"


def test_uncaught_bpmn_error_fails_the_token(rt: Harness) -> None:
    iid = rt.run(two_topics())
    [task] = fetch(rt)
    rt.engine.bpmn_error(task.id, "w1", "CARD_DECLINED", "no funds", {"reason": "funds"})
    assert rows.state(rt.engine.db, iid) == "FAILED"
    [incident] = rt.engine.incidents()
    assert "CARD_DECLINED" in incident["message"]


def test_extend_and_unlock(rt: Harness, clock: FakeClock) -> None:
    rt.run(two_topics())
    [task] = fetch(rt)
    clock.advance(timedelta(seconds=20))
    rt.engine.extend_lock(task.id, "w1", timedelta(minutes=5))
    clock.advance(timedelta(seconds=20))
    rt.engine.run_scans()
    assert fetch(rt, "w2") == []  # still locked: the lock was extended
    rt.engine.unlock(task.id)
    [again] = fetch(rt, "w2")
    assert again.attempt == 1  # unlocking gave the attempt back


def test_racing_workers_never_lock_one_task_twice(
    engine_factory: EngineFactory, pg_db: Database
) -> None:
    doc = (
        ProcessBuilder("many")
        .start()
        .service_task("t", topic="bulk")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    rt = engine_factory()
    rt.deploy(doc)
    for _ in range(400):
        rt.start("many")
    rt.drain()
    seen: list[UUID] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        engine = engine_factory().engine
        while batch := engine.fetch_and_lock(f"w{n}", [TopicRequest("bulk", LOCK)], 7):
            with lock:
                seen.extend(t.id for t in batch)
            for t in batch:
                engine.complete(t.id, f"w{n}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 400 and len(set(seen)) == 400


def test_long_polling_returns_soon_after_a_task_appears(engine_factory: EngineFactory) -> None:
    doc = (
        ProcessBuilder("later")
        .start()
        .service_task("t", topic="late")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    rt = engine_factory()
    rt.deploy(doc)
    got: list[Any] = []
    returned: list[float] = []

    def poll() -> None:
        got.extend(rt.engine.fetch_and_lock("poller", [TopicRequest("late", LOCK)], long_poll=10))
        returned.append(time.monotonic())

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(0.5)
    other = engine_factory()
    other.start("later")
    other.drain()  # creates the task and commits it
    committed = time.monotonic()
    poller.join()
    assert len(got) == 1
    assert returned[0] - committed < 0.1  # woken by NOTIFY, not by a polling interval


def test_a_handler_job_never_takes_an_external_task(rt: Harness) -> None:
    iid = rt.run(two_topics())
    task_id = rows.only_task(rt.engine.db, iid, "charge").id
    assert rt.engine.run_handler(task_id) == "stale"
    [task] = fetch(rt)
    assert task.id == task_id and task.attempt == 1


def test_eight_workers_fetching_ten_thousand_tasks_never_share_one(
    engine_factory: EngineFactory, pg_db: Database
) -> None:
    from sqlalchemy import text

    from bench.fetch_and_lock import CREATE  # the rows the engine would write, in bulk

    rt = engine_factory()
    def_id = rt.engine.deploy(
        ProcessBuilder("many")
        .start()
        .service_task("t", topic="bulk")
        .end()
        .sequence("start", "t", "end")
        .build()
    ).id
    with pg_db.transaction() as conn:
        conn.execute(
            text(CREATE), {"def_id": def_id, "n": 10_000, "topic": "bulk", "state": "READY"}
        )
    seen: list[list[UUID]] = [[] for _ in range(8)]

    def worker(n: int) -> None:
        engine = engine_factory().engine
        while batch := engine.fetch_and_lock(f"w{n}", [TopicRequest("bulk", LOCK)], 50):
            seen[n].extend(t.id for t in batch)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [task_id for ids in seen for task_id in ids]
    assert len(every) == 10_000 and len(set(every)) == 10_000
    assert all(seen), "some worker got nothing: the fetches did not run concurrently"


def test_a_last_complete_refuses_to_end_an_instance_that_changed_meanwhile(
    rt: Harness, pg_db: Database
) -> None:
    """The last token's end changes the instance inside the write statement: when the
    instance is no longer RUNNING there, the whole write is refused and nothing changes."""
    iid = rt.run(
        ProcessBuilder("one")
        .start()
        .service_task("t", topic="payments")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    [task] = fetch(rt)
    with pg_db.transaction() as conn:  # as an operator's change the engine did not see
        conn.exec_driver_sql(
            "UPDATE process_instances SET state = 'CANCELLED' WHERE id = %(id)s", {"id": iid}
        )
    before = snapshot(pg_db)
    with pytest.raises(LockExpired, match="no longer RUNNING or FAILED"):
        rt.engine.complete(task.id, "w1")
    assert snapshot(pg_db) == before
    with pg_db.transaction() as conn:
        conn.exec_driver_sql(
            "UPDATE process_instances SET state = 'RUNNING' WHERE id = %(id)s", {"id": iid}
        )
    rt.engine.complete(task.id, "w1")
    assert_finished_cleanly(pg_db, iid)
    completed = [e for e in rt.engine.trace(iid) if e["type"] == "InstanceCompleted"]
    assert [(e["from_state"], e["to_state"]) for e in completed] == [("RUNNING", "COMPLETED")]


# --- completing with the rows the fetch returned --------------------------------------------


def test_a_complete_after_extend_lock_and_after_a_cancel_reads_afresh(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    """The fetch's rows are only a shortcut: a report that changed the task since, or a
    change by someone else, sends the complete back to reading the rows."""
    calls.add("work")
    iid = rt.run(two_topics())
    [task] = fetch(rt)
    rt.engine.extend_lock(task.id, "w1", LOCK * 2)
    rt.engine.complete(task.id, "w1", {"charged": 10})
    rt.drain()
    [ship] = fetch(rt, topic="shipping")
    rt.engine.cancel(iid)
    before = snapshot(pg_db)
    with pytest.raises(TaskNotLocked, match="CANCELLED"):
        rt.engine.complete(ship.id, "w1")
    assert snapshot(pg_db) == before
    assert_finished_cleanly(pg_db, iid, "CANCELLED")


def test_a_complete_whose_task_changed_elsewhere_since_the_fetch_still_completes(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database
) -> None:
    """Another engine of the same worker (a process of its own, say, extending locks)
    changes the task under the rows this engine's fetch returned: the write's version check
    misses, the complete reads the rows again and goes through, once."""
    calls.add("work")
    rt, other = engine_factory(), engine_factory()
    iid = rt.run(two_topics())
    [task] = fetch(rt)
    other.engine.extend_lock(task.id, "w1", LOCK * 2)
    rt.engine.complete(task.id, "w1", {"charged": 1})
    rt.drain()
    assert calls.count("work") == 1
    [ship] = fetch(rt, topic="shipping")
    rt.engine.complete(ship.id, "w1")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    completed = [
        e
        for e in rt.engine.trace(iid)
        if e["type"] == "COMPLETED" and e.get("node_id") == "charge" and e["kind"] == "task"
    ]
    assert len(completed) == 1


def test_a_report_racing_the_workers_own_lock_extension_goes_through(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's lock keeper extends a lock while the handler's report is being written: the
    report's version check misses, and it is tried again from a fresh read, not dropped as
    a lost lock."""
    from bpm.store import tasks as task_store

    calls.add("work")
    rt, keeper = engine_factory(), engine_factory()
    doc = (
        ProcessBuilder("raced")
        .start()
        .service_task("charge", topic="payments")
        .error_boundary("declined", attached_to="charge", error="DECLINED")
        .service_task("notify", handler="work")
        .end("done")
        .end("failed")
        .sequence("start", "charge", "done")
        .sequence("declined", "notify", "failed")
        .build()
    )
    iid = rt.run(doc)
    [task] = fetch(rt)
    real_get, raced = task_store.get, list[UUID]()

    def get_then_extend(conn: Any, task_id: UUID) -> Any:
        row = real_get(conn, task_id)
        if not raced:  # committed by another engine after this read, before the write
            raced.append(task_id)
            keeper.engine.extend_lock(task_id, "w1", LOCK * 2)
        return row

    monkeypatch.setattr(task_store, "get", get_then_extend)
    rt.engine.bpmn_error(task.id, "w1", "DECLINED", "card declined")
    monkeypatch.undo()
    rt.drain()
    assert raced == [task.id]
    assert calls.count("work") == 1
    assert_finished_cleanly(pg_db, iid)


def test_an_unlock_for_a_worker_gives_back_only_its_own_lock(rt: Harness, pg_db: Database) -> None:
    rt.run(two_topics())
    [task] = fetch(rt, "w1")
    before = snapshot(pg_db)
    with pytest.raises(WrongWorker):
        rt.engine.unlock(task.id, worker_id="w2")
    assert snapshot(pg_db) == before
    rt.engine.unlock(task.id, worker_id="w1")
    assert rows.task(pg_db, task.id).state == "READY"


def test_a_fetch_that_fails_after_locking_gives_the_tasks_back(
    rt: Harness, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The locking statement commits on its own; if describing the tasks then fails (a lost
    connection, a definition this worker cannot read), they go back READY, attempt unspent,
    rather than waiting out a lock nobody knows it holds."""
    iid = rt.run(two_topics())

    def unreadable(*args: Any) -> int:
        raise RuntimeError("connection lost while reading the definition")

    monkeypatch.setattr(rt.engine.core, "definition_version", unreadable)
    with pytest.raises(RuntimeError, match="connection lost"):
        fetch(rt)
    monkeypatch.undo()
    [task] = rows.tasks_of(pg_db, iid)
    assert (task.state, task.attempts, task.lock_owner) == ("READY", 0, None)
    [again] = fetch(rt)
    assert again.attempt == 1
