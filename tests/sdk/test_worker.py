"""The Python worker SDK against real PostgreSQL: topics, BPMN errors to a boundary, failures
retried after the node's backoff, lock extension, and a graceful SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import bpm
from bpm.definitions import ProcessBuilder
from bpm.engine.engine import Engine
from bpm.engine.operations.external import TopicRequest
from bpm.sdk import ExternalTask, Worker
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import EngineFactory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def real_engine(pg_db: Database) -> Engine:
    """Workers sleep and extend locks in real time: no fake clock here."""
    from bpm.dispatch import InProcessDispatcher

    return Engine(pg_db, InProcessDispatcher(), worker_id="sdk-test")


@pytest.fixture
def running(real_engine: Engine) -> Iterator[list[tuple[Worker, threading.Thread]]]:
    """Workers started by the test; stopped and joined before the database goes away."""
    workers: list[tuple[Worker, threading.Thread]] = []
    yield workers
    for w, _ in workers:
        w.stop()
    for _, t in workers:
        t.join(timeout=30)


def start(worker: Worker, running: list[tuple[Worker, threading.Thread]]) -> None:
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    running.append((worker, thread))


def started(engine: Engine, key: str, variables: dict[str, Any] | None = None) -> Any:
    """Start an instance and run its first jobs, up to its first external task."""
    from datetime import UTC, datetime

    from bpm.dispatch import InProcessDispatcher

    iid = engine.start(key, variables).id
    queue = engine.dispatcher
    assert isinstance(queue, InProcessDispatcher)
    while (job := queue.pop(datetime.now(UTC))) is not None:
        engine.run_job(job)
    return iid


def wait_until(check: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def order_process() -> dict[str, Any]:
    return (
        ProcessBuilder("sdk_order")
        .start()
        .service_task("charge", topic="payments", retry={"max_attempts": 2, "backoff": "PT0.2S"})
        .error_boundary("declined", attached_to="charge", error="DECLINED")
        .service_task("ship", topic="shipping")
        .end("done")
        .end("cancelled")
        .sequence("start", "charge", "ship", "done")
        .sequence("declined", "cancelled")
        .build()
    )


def test_worker_runs_two_topics_with_an_error_boundary_and_a_retry(
    real_engine: Engine, running: list[tuple[Worker, threading.Thread]]
) -> None:
    worker = Worker("sdk-1", engine=real_engine, threads=3, long_poll=1.0)
    attempts: dict[str, int] = {}

    @worker.subscribe("payments", variables=["amount"])
    def charge(task: ExternalTask) -> dict[str, Any]:
        attempts[str(task.instance_id)] = task.attempt
        if task.variables["amount"] > 100:
            raise bpm.BpmnError("DECLINED", "over the limit")
        if task.variables["amount"] == 13 and task.attempt == 1:
            raise RuntimeError("unlucky")
        return {"charged": task.variables["amount"]}

    @worker.subscribe("shipping")
    def ship(task: ExternalTask) -> None:
        return None

    real_engine.deploy(order_process())
    ids = {amount: started(real_engine, "sdk_order", {"amount": amount}) for amount in (5, 13, 500)}
    start(worker, running)
    wait_until(lambda: all(rows.state(real_engine.db, i) == "COMPLETED" for i in ids.values()))
    assert attempts[str(ids[13])] == 2  # failed once, retried after the node's backoff
    events = rows.task_events_of(real_engine.db, ids[13], node_id="charge")
    [failed] = [e for e in events if e["type"] == "FAILED"]
    retry_at = datetime.fromisoformat(failed["data"]["retry_at"])
    assert retry_at - failed["at"] == timedelta(seconds=0.2)  # backoff PT0.2S, attempt 1
    [_, second] = [e for e in events if e["type"] == "LOCKED"]
    assert second["at"] >= retry_at
    path = [e["node_id"] for e in real_engine.trace(ids[500]) if e["type"] == "MOVED"]
    assert "cancelled" in path and "ship" not in path


def test_a_handler_longer_than_its_lock_keeps_it(
    real_engine: Engine, running: list[tuple[Worker, threading.Thread]]
) -> None:
    worker = Worker("sdk-slow", engine=real_engine, long_poll=0.5)
    other = Worker("sdk-thief", engine=real_engine, long_poll=0.5)
    ran: list[str] = []

    @worker.subscribe("slow", lock_duration=timedelta(seconds=1))
    def slow(task: ExternalTask) -> None:
        time.sleep(2.5)
        ran.append("slow")

    @other.subscribe("slow", lock_duration=timedelta(seconds=1))
    def steal(task: ExternalTask) -> None:
        ran.append("thief")

    real_engine.deploy(
        ProcessBuilder("slowp")
        .start()
        .service_task("t", topic="slow")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = started(real_engine, "slowp")
    start(worker, running)
    wait_until(lambda: rows.tasks_of(real_engine.db, iid)[0].state == "LOCKED")
    start(other, running)
    wait_until(lambda: rows.state(real_engine.db, iid) == "COMPLETED")
    assert ran == ["slow"]


def test_sigterm_leaves_nothing_locked(
    engine_factory: EngineFactory, pg_url: str, clock: FakeClock
) -> None:
    rt = engine_factory()
    rt.deploy(
        ProcessBuilder("sleepy")
        .start()
        .service_task("t", topic="sleepy")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = rt.start("sleepy")
    rt.drain()
    env = {**os.environ, "BPM_DATABASE_URL": pg_url, "PYTHONPATH": str(ROOT)}
    env.pop("BPM_BROKER_URL", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bpm.cli.main",
            "external-worker",
            "--import",
            "tests.sdk.sleepy_worker",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: rows.tasks_of(rt.engine.db, iid)[0].state == "LOCKED")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    task = rows.tasks_of(rt.engine.db, iid)[0]
    assert task.state == "READY" and task.lock_owner is None, task
    del clock


def test_a_handler_that_finishes_within_the_grace_period_after_its_lock_ran_out_completes(
    real_engine: Engine,
) -> None:
    """The lock keeper goes on extending locks during shutdown, so a handler that finishes
    within ``shutdown_grace`` still holds its (short) lock when it reports."""
    worker = Worker("sdk-graceful", engine=real_engine, long_poll=0.5, shutdown_grace=10)
    began = threading.Event()

    @worker.subscribe("graceful", lock_duration=timedelta(seconds=2))
    def slow(task: ExternalTask) -> dict[str, Any]:
        began.set()
        time.sleep(5)  # well past its 2 s lock, after stop()
        return {"done": True}

    real_engine.deploy(
        ProcessBuilder("gracep")
        .start()
        .service_task("t", topic="graceful")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = started(real_engine, "gracep")
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    assert began.wait(10)
    worker.stop()
    thread.join(timeout=20)
    assert not thread.is_alive() and worker.abandoned == 0
    assert rows.state(real_engine.db, iid) == "COMPLETED"
    assert real_engine.show(iid)["variables"] == {"done": True}


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ("ok", "returned str; a handler returns a dict of variables or None"),
        ({"when": {1, 2}}, "when"),
    ],
)
def test_a_result_the_engine_cannot_take_is_an_incident_at_once(
    real_engine: Engine,
    running: list[tuple[Worker, threading.Thread]],
    result: object,
    problem: str,
) -> None:
    """Running the handler again would give the same result: no retries, and the incident
    says what was wrong (not "never reported back" after the lock ran out)."""
    worker = Worker("sdk-bad", engine=real_engine, long_poll=0.5)
    calls: list[int] = []

    @worker.subscribe("bad")
    def bad(task: ExternalTask) -> Any:
        calls.append(task.attempt)
        return result

    real_engine.deploy(
        ProcessBuilder("badp")
        .start()
        .service_task("t", topic="bad", retry={"max_attempts": 3})
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = started(real_engine, "badp")
    start(worker, running)
    wait_until(lambda: rows.state(real_engine.db, iid) == "FAILED")
    assert calls == [1]
    [incident] = rows.incidents_of(real_engine.db, iid)
    assert problem in incident.message and "never reported back" not in incident.message
    [task] = rows.tasks_of(real_engine.db, iid)
    # failed, not held: it shows the worker that failed it, as Camunda's workerId does
    assert task.state == "FAILED" and task.lock_owner == "sdk-bad"


def test_bpmn_error_variables_reach_the_boundary_path(
    real_engine: Engine, running: list[tuple[Worker, threading.Thread]]
) -> None:
    worker = Worker("sdk-vars", engine=real_engine, long_poll=0.5)

    @worker.subscribe("payments")
    def charge(task: ExternalTask) -> None:
        raise bpm.BpmnError("DECLINED", "no funds", variables={"reason": "funds"})

    real_engine.deploy(order_process())
    iid = started(real_engine, "sdk_order", {"amount": 1})
    start(worker, running)
    wait_until(lambda: rows.state(real_engine.db, iid) == "COMPLETED")
    assert real_engine.show(iid)["variables"]["reason"] == "funds"
    ended = {t.node_id for t in rows.tokens_of(real_engine.db, iid) if t.state == "COMPLETED"}
    assert "cancelled" in ended


@pytest.mark.parametrize(
    ("lock", "message"),
    [
        (30 * 24 * 3600, "at most 7 days"),
        (timedelta(0), "more than 0"),
        ("30s", "a timedelta or seconds"),
    ],
)
def test_subscribe_refuses_a_lock_duration_it_cannot_use(lock: Any, message: str) -> None:
    worker = Worker("sdk-config")
    with pytest.raises(bpm.BpmError, match=message):
        worker.subscribe("t", lock_duration=lock)
    worker.subscribe("t", lock_duration=30)(lambda task: None)  # seconds are fine


def test_an_idle_worker_keeps_one_listening_connection(
    real_engine: Engine, running: list[tuple[Worker, threading.Thread]]
) -> None:
    """Long polling in short slices (so stop() stays prompt) reuses one LISTEN connection
    instead of opening one per slice."""
    worker = Worker("sdk-idle", engine=real_engine, long_poll=20)

    @worker.subscribe("nothing-ever")
    def never(task: ExternalTask) -> None:
        raise AssertionError("no task exists")

    def listeners() -> list[Any]:
        with real_engine.db.transaction() as conn:
            return list(
                conn.exec_driver_sql(
                    "SELECT pid, backend_start FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
                ).all()
            )

    start(worker, running)
    wait_until(lambda: len(listeners()) == 1)
    first = listeners()
    time.sleep(2.5)  # more than two slices of the long poll
    assert listeners() == first


def test_a_long_poll_wakes_when_a_failed_task_comes_due(real_engine: Engine) -> None:
    """No one is told when a retry_at passes: the long poll sleeps until then, not until its
    deadline."""
    real_engine.deploy(
        ProcessBuilder("duep")
        .start()
        .service_task("t", topic="due", retry={"max_attempts": 2})
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    started(real_engine, "duep")
    [task] = real_engine.fetch_and_lock("w", [TopicRequest("due", timedelta(seconds=30))])
    real_engine.fail(task.id, "w", "later", retries=1, retry_timeout=timedelta(seconds=0.5))
    begun = time.monotonic()
    [again] = real_engine.fetch_and_lock(
        "w", [TopicRequest("due", timedelta(seconds=30))], long_poll=30
    )
    assert again.id == task.id and time.monotonic() - begun < 10


def test_prefetched_tasks_wait_for_a_thread_and_are_given_back_unstarted_at_stop(
    real_engine: Engine,
) -> None:
    worker = Worker(
        "sdk-prefetch", engine=real_engine, threads=1, prefetch=3, long_poll=0.5, shutdown_grace=20
    )
    release, began = threading.Event(), threading.Event()
    ran: list[str] = []

    @worker.subscribe("queued")
    def hold(task: ExternalTask) -> None:
        ran.append(str(task.instance_id))
        began.set()
        assert release.wait(30)

    real_engine.deploy(
        ProcessBuilder("queuedp")
        .start()
        .service_task("t", topic="queued")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    ids = [started(real_engine, "queuedp") for _ in range(4)]

    def states() -> list[str]:
        return sorted(rows.tasks_of(real_engine.db, i)[0].state for i in ids)

    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    try:
        assert began.wait(10)
        wait_until(lambda: states() == ["LOCKED"] * 4)  # one running, three waiting
        worker.stop()
        # the three that never started go back at once, long before the grace period ends
        wait_until(lambda: states() == ["LOCKED", "READY", "READY", "READY"], timeout=10)
    finally:
        release.set()
        thread.join(timeout=30)
    assert not thread.is_alive() and worker.abandoned == 0 and len(ran) == 1
    assert rows.state(real_engine.db, ids[[str(i) for i in ids].index(ran[0])]) == "COMPLETED"
    for iid in ids:
        task = rows.tasks_of(real_engine.db, iid)[0]
        if str(iid) != ran[0]:
            assert task.state == "READY" and task.attempts == 0 and task.lock_owner is None


def test_a_worker_listens_again_after_its_listening_connection_is_killed(
    real_engine: Engine, running: list[tuple[Worker, threading.Thread]]
) -> None:
    worker = Worker("sdk-relisten", engine=real_engine, long_poll=20)
    done: list[str] = []

    @worker.subscribe("relisten")
    def work(task: ExternalTask) -> None:
        done.append(str(task.instance_id))

    def listening() -> list[Any]:
        with real_engine.db.transaction() as conn:
            return [
                r[0]
                for r in conn.exec_driver_sql(
                    "SELECT pid FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
                ).all()
            ]

    real_engine.deploy(
        ProcessBuilder("relistenp")
        .start()
        .service_task("t", topic="relisten")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    start(worker, running)
    wait_until(lambda: len(listening()) == 1)
    [first] = listening()
    with real_engine.db.transaction() as conn:  # a server restart, an idle timeout
        conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(first)})")
    wait_until(lambda: len(listening()) == 1 and listening() != [first])
    iid = started(real_engine, "relistenp")
    wait_until(lambda: rows.state(real_engine.db, iid) == "COMPLETED", timeout=10)
    assert done == [str(iid)]


def test_the_lock_keeper_survives_a_database_error(
    real_engine: Engine,
    running: list[tuple[Worker, threading.Thread]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One failed extension (a connection lost for a moment) must not end the thread that
    keeps every running handler's lock."""
    from sqlalchemy.exc import OperationalError

    real_extend, failures = real_engine.extend_lock, list[str]()

    def extend_once_failing(task_id: Any, worker_id: str, duration: timedelta) -> None:
        if not failures:
            failures.append(str(task_id))
            raise OperationalError("extend", {}, Exception("connection lost"))
        real_extend(task_id, worker_id, duration)

    monkeypatch.setattr(real_engine, "extend_lock", extend_once_failing)
    worker = Worker("sdk-keeper", engine=real_engine, long_poll=0.5)

    # the first extension (after 1.5 s) fails; the next round (0.25 s on) must extend the
    # lock before it runs out at 3 s
    @worker.subscribe("kept", lock_duration=timedelta(seconds=3))
    def slow(task: ExternalTask) -> dict[str, bool]:
        time.sleep(7)
        return {"kept": True}

    real_engine.deploy(
        ProcessBuilder("keptp")
        .start()
        .service_task("t", topic="kept")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    iid = started(real_engine, "keptp")
    start(worker, running)
    wait_until(lambda: rows.state(real_engine.db, iid) == "COMPLETED")
    assert failures and real_engine.show(iid)["variables"] == {"kept": True}
