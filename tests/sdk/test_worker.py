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
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import bpm
from bpm.definitions import ProcessBuilder
from bpm.engine.engine import Engine
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
    return (ProcessBuilder("sdk_order").start()
            .service_task("charge", topic="payments", retry={"max_attempts": 2,
                                                             "backoff": "PT0.2S"})
            .error_boundary("declined", attached_to="charge", error="DECLINED")
            .service_task("ship", topic="shipping").end("done").end("cancelled")
            .sequence("start", "charge", "ship", "done").sequence("declined", "cancelled")
            .build())


def test_worker_runs_two_topics_with_an_error_boundary_and_a_retry(
        real_engine: Engine, running: list[tuple[Worker, threading.Thread]]) -> None:
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
    ids = {amount: started(real_engine, "sdk_order", {"amount": amount})
           for amount in (5, 13, 500)}
    start(worker, running)
    wait_until(lambda: all(rows.state(real_engine.db, i) == "COMPLETED" for i in ids.values()))
    assert attempts[str(ids[13])] == 2  # failed once, retried after the node's backoff
    path = [e["node_id"] for e in real_engine.trace(ids[500]) if e["type"] == "MOVED"]
    assert "cancelled" in path and "ship" not in path


def test_a_handler_longer_than_its_lock_keeps_it(
        real_engine: Engine, running: list[tuple[Worker, threading.Thread]]) -> None:
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

    real_engine.deploy(ProcessBuilder("slowp").start().service_task("t", topic="slow").end()
                       .sequence("start", "t", "end").build())
    iid = started(real_engine, "slowp")
    start(worker, running)
    wait_until(lambda: rows.tasks_of(real_engine.db, iid)[0].state == "LOCKED")
    start(other, running)
    wait_until(lambda: rows.state(real_engine.db, iid) == "COMPLETED")
    assert ran == ["slow"]


def test_sigterm_leaves_nothing_locked(engine_factory: EngineFactory, pg_url: str,
                                       clock: FakeClock) -> None:
    rt = engine_factory()
    rt.deploy(ProcessBuilder("sleepy").start().service_task("t", topic="sleepy").end()
              .sequence("start", "t", "end").build())
    iid = rt.start("sleepy")
    rt.drain()
    env = {**os.environ, "BPM_DATABASE_URL": pg_url, "PYTHONPATH": str(ROOT)}
    env.pop("BPM_BROKER_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "bpm.cli.main", "external-worker",
                             "--import", "tests.sdk.sleepy_worker"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
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
