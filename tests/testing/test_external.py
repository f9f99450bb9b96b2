"""The kit playing an external worker: ``fail_external``'s ``retry_timeout`` in seconds, and
``work`` reporting a ``bpm.sdk.Worker`` subscription's outcome exactly as the worker does.

The parity test runs each outcome twice, once through ``kit.work`` and once through a real
``Worker`` thread on an engine of its own, and compares what the tables say afterwards: both
report through ``bpm.sdk.outcomes``, and this shows they still end the same way.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from sqlalchemy.engine import make_url

from bpm import BpmError, BpmnError
from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.sdk import ExternalTask, Worker
from bpm.store import Database
from bpm.testing import ProcessTestKit, SubscriptionFn
from tests.conftest import CLONE_PREFIX, DEFAULT_TEST_URL, create_database, drop_database

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kit(pg_url: str) -> Iterator[ProcessTestKit]:
    with ProcessTestKit(pg_url) as k:
        yield k


def charge_process(*, max_attempts: int = 3, backoff: str = "PT1M") -> dict[str, Any]:
    return (
        ProcessBuilder("order")
        .start()
        .service_task(
            "charge", topic="payments", retry={"max_attempts": max_attempts, "backoff": backoff}
        )
        .error_boundary("declined", attached_to="charge", error="CARD_DECLINED")
        .end()
        .end("rejected")
        .sequence("start", "charge", "end")
        .sequence("declined", "rejected")
        .build()
    )


# --- fail_external's retry_timeout ---------------------------------------------------------


@pytest.mark.parametrize("timeout", [300, 300.0, timedelta(minutes=5)])
def test_retry_timeout_takes_seconds_as_well_as_a_timedelta(
    kit: ProcessTestKit, timeout: Any
) -> None:
    kit.deploy(charge_process())
    iid = kit.start("order").id
    [task] = kit.fetch_and_lock("payments")
    kit.fail_external(task, "gateway down", retries=2, retry_timeout=timeout)
    kit.advance(seconds=299)
    assert kit.fetch_and_lock("payments") == []
    kit.advance(seconds=1)
    [again] = kit.fetch_and_lock("payments")
    assert again.id == task.id and again.attempt == 2
    kit.complete_external(again)
    assert kit.state(iid) == "COMPLETED"


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        ("300", "must be a timedelta or a number of seconds, got '300'"),
        (True, "must be a timedelta or a number of seconds, got True"),
        (None, "must be a timedelta or a number of seconds, got None"),
        (float("nan"), "must be a timedelta or a number of seconds, got nan"),
        (-5, "must not be negative, got -5 seconds"),
        (timedelta(seconds=-1), "must not be negative, got -1 seconds"),
    ],
)
def test_a_retry_timeout_it_cannot_use_is_refused_and_the_task_stays_locked(
    kit: ProcessTestKit, timeout: Any, message: str
) -> None:
    kit.deploy(charge_process())
    iid = kit.start("order").id
    [task] = kit.fetch_and_lock("payments")
    with pytest.raises(BpmError, match=re.escape(f"fail_external: retry_timeout {message}")):
        kit.fail_external(task, "gateway down", retries=2, retry_timeout=timeout)
    [row] = kit.show(iid)["tasks"]
    assert (row["state"], row["attempts"], row["error_message"]) == ("LOCKED", 1, None)
    kit.complete_external(task)  # still the worker's to report on
    assert kit.state(iid) == "COMPLETED"


# --- work: a subscription's outcome, reported as the worker reports it ----------------------


def test_work_completes_with_what_the_subscription_returns(kit: ProcessTestKit) -> None:
    worker = Worker("payments-1")

    @worker.subscribe("payments", variables=["total"])
    def charge(task: ExternalTask) -> dict[str, Any]:
        return {"charged": task.variables["total"], "seen": sorted(task.variables)}

    kit.deploy(charge_process())
    iid = kit.start("order", {"total": 120, "customer": "ada"}).id
    [task] = kit.fetch_and_lock("payments", variables=["total"])
    kit.work(task, charge)
    assert kit.state(iid) == "COMPLETED"
    assert kit.variables(iid) == {
        "total": 120,
        "customer": "ada",
        "charged": 120,
        "seen": ["total"],
    }


def test_work_retries_a_failure_after_the_nodes_backoff(kit: ProcessTestKit) -> None:
    calls: list[int] = []

    def flaky(task: ExternalTask) -> None:
        calls.append(task.attempt)
        if task.attempt == 1:
            raise ConnectionError("gateway timed out")

    kit.deploy(charge_process(backoff="PT2M"))
    iid = kit.start("order").id
    [task] = kit.fetch_and_lock("payments")
    kit.work(task, flaky)
    [row] = kit.show(iid)["tasks"]
    assert (row["state"], row["error_message"]) == ("READY", "ConnectionError: gateway timed out")
    assert kit.fetch_and_lock("payments") == []
    kit.advance(minutes=2)
    [again] = kit.fetch_and_lock("payments")
    kit.work(again, flaky)
    assert calls == [1, 2] and kit.state(iid) == "COMPLETED"


def test_work_reports_a_bpmn_error_to_the_boundary(kit: ProcessTestKit) -> None:
    def declined(task: ExternalTask) -> None:
        raise BpmnError("CARD_DECLINED", "over the limit", {"reason": "limit"})

    kit.deploy(charge_process())
    iid = kit.start("order").id
    [task] = kit.fetch_and_lock("payments")
    kit.work(task, declined)
    assert kit.state(iid) == "COMPLETED" and kit.variables(iid) == {"reason": "limit"}
    assert [e["node_id"] for e in kit.trace(iid) if e["type"] == "MOVED"][-1] == "rejected"


# --- parity with bpm.sdk.Worker ------------------------------------------------------------


def _returns_a_list(task: ExternalTask) -> Any:
    return ["not", "a", "dict"]


def _returns_no_json(task: ExternalTask) -> dict[str, Any]:
    return {"when": object()}


def _raises(task: ExternalTask) -> None:
    raise RuntimeError("boom")


def _declines(task: ExternalTask) -> None:
    raise BpmnError("CARD_DECLINED", "over the limit", {"reason": "limit"})


OUTCOMES: dict[str, tuple[SubscriptionFn, int]] = {
    "a dict": (lambda task: {"charged": task.variables["total"]}, 3),
    "None": (lambda task: None, 3),
    "a BPMN error": (_declines, 3),
    "an exception with attempts left": (_raises, 3),
    "an exception on the last attempt": (_raises, 1),
    "a list": (_returns_a_list, 3),
    "values that are not JSON": (_returns_no_json, 3),
}


def _outcome(engine: Engine, iid: UUID) -> dict[str, Any]:
    """What the tables say, without the ids and times that differ between two runs."""
    shown = engine.show(iid)
    task_ids = {t["id"] for t in shown["tasks"]}

    def plain(text: str | None) -> str | None:
        for tid in task_ids:
            text = text.replace(tid, "<task>") if text else text
        return text

    return {
        "state": shown["state"],
        "variables": shown["variables"],
        "tasks": [
            (
                t["node_id"],
                t["state"],
                t["attempts"],
                t["retries"],
                plain(t["error_message"]),
                t["retry_at"] is not None,
            )
            for t in shown["tasks"]
        ],
        "incidents": [
            (i["node_id"], i["kind"], plain(i["message"]), i["state"]) for i in shown["incidents"]
        ],
        "path": [e["node_id"] for e in engine.trace(iid) if e["type"] == "MOVED"],
    }


@pytest.fixture
def worker_db(pg_template: str) -> Iterator[Database]:
    """A second database, for the real worker's engine (it runs on the real clock)."""
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"  # dropped as an orphan if we die
    db = Database(create_database(name, template=pg_template))
    try:
        yield db
    finally:
        db.dispose()
        drop_database(name)


def _with_the_worker(
    db: Database, fn: SubscriptionFn, deploy: Callable[[Engine], None]
) -> dict[str, Any]:
    queue = InProcessDispatcher()
    engine = Engine(db, queue, worker_id="parity")
    deploy(engine)
    iid = engine.start("order", {"total": 40}).id
    _drain(engine, queue)  # up to the external task
    worker = Worker("parity-worker", engine=engine, threads=1, long_poll=0.2)
    worker.subscribe("payments", variables=["total"])(fn)
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not _reported(engine, iid):
            assert time.monotonic() < deadline, "the worker never reported"
            time.sleep(0.05)
    finally:
        worker.stop()
        thread.join(timeout=30)
    _drain(engine, queue)  # what the report released, as the kit's run() does
    return _outcome(engine, iid)


def _drain(engine: Engine, queue: InProcessDispatcher) -> None:
    while (job := queue.pop(engine.clock.now())) is not None:
        engine.run_job(job)


def _reported(engine: Engine, iid: UUID) -> bool:
    [task] = engine.show(iid)["tasks"]
    return bool(task["attempts"] >= 1 and task["state"] != "LOCKED")


@pytest.mark.parametrize("returns", list(OUTCOMES))
def test_work_reports_what_the_real_worker_reports(
    kit: ProcessTestKit, worker_db: Database, returns: str
) -> None:
    fn, max_attempts = OUTCOMES[returns]
    doc = charge_process(max_attempts=max_attempts, backoff="PT1H")

    def deploy(engine: Engine) -> None:
        engine.deploy(doc)

    by_worker = _with_the_worker(worker_db, fn, deploy)
    deploy(kit.engine)
    iid = kit.start("order", {"total": 40}).id
    [task] = kit.fetch_and_lock("payments", variables=["total"])
    kit.work(task, fn)
    assert _outcome(kit.engine, iid) == by_worker


# --- the example in docs/testing.md, run as a user runs it -----------------------------------


def _documented(name: str) -> str:
    """The code block of docs/testing.md that starts with ``# <name>``, without that line."""
    doc = (ROOT / "docs" / "testing.md").read_text()
    blocks: list[str] = re.findall(r"```python\n(.*?)```", doc, re.S)
    [block] = [b for b in blocks if b.startswith(f"# {name}\n")]
    return block.split("\n", 1)[1]


def test_the_documented_worker_example_passes(tmp_path: Path) -> None:
    """docs/testing.md's worker module and its tests, written out as a user would save them,
    run by pytest with ``pytest_plugins = ["bpm.testing"]`` on a database of their own."""
    for name in ("payments_worker.py", "test_payments.py"):
        (tmp_path / name).write_text(_documented(name))
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["bpm.testing"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    name = f"{CLONE_PREFIX}{os.getpid()}_{uuid4().hex[:8]}"  # dropped as an orphan if we die
    server = make_url(os.environ.get("BPM_TEST_DATABASE_URL", DEFAULT_TEST_URL))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["BPM_TEST_DATABASE_URL"] = server.set(database=name).render_as_string(hide_password=False)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                "test_payments.py",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        drop_database(name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
