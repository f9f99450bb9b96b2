"""``bpm external-worker``: a module without a usable Worker is a one-line error, not a worker
that runs and does nothing. ``bpm start --wait`` on a process an external worker carries."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.engine.operations.external import TopicRequest
from bpm.store import Database
from tests.cli.conftest import Bpm


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("no_worker_here", "idle_worker_here"):
        sys.modules.pop(name, None)


def test_a_module_that_defines_no_worker_is_refused(bpm: Bpm, module_dir: Path) -> None:
    (module_dir / "no_worker_here.py").write_text("X = 1\n")
    line = bpm.error("external-worker", "--import", "no_worker_here")
    assert "no bpm.sdk.Worker is defined in no_worker_here" in line


def test_a_worker_that_subscribes_to_nothing_is_refused(bpm: Bpm, module_dir: Path) -> None:
    (module_dir / "idle_worker_here.py").write_text(
        "from bpm.sdk import Worker\nworker = Worker('idle-1')\n"
    )
    line = bpm.error("external-worker", "--import", "idle_worker_here")
    assert "'idle-1' subscribes to no topic" in line


def test_start_wait_watches_an_instance_an_external_worker_finishes(
    bpm: Bpm, db_url: str, tmp_path: Path
) -> None:
    """Embedded ``bpm start`` has nothing to run for an external task; with --wait it
    watches until the worker (another process, here a thread with its own engine) is done,
    and fires the timer that comes after it."""
    doc = (
        ProcessBuilder("ext_cli")
        .start()
        .service_task("t", topic="cli-topic")
        .timer("pause", duration="PT0.3S")
        .end()
        .sequence("start", "t", "pause", "end")
        .build()
    )
    (tmp_path / "ext.json").write_text(json.dumps(doc))
    bpm.ok("deploy", str(tmp_path / "ext.json"))
    db = Database(db_url)
    worker = Engine(db, InProcessDispatcher(), worker_id="cli-worker")

    def work() -> None:
        [task] = worker.fetch_and_lock(
            "w", [TopicRequest("cli-topic", timedelta(minutes=1))], long_poll=30
        )
        worker.complete(task.id, "w", {"done": True})

    thread = threading.Thread(target=work)
    thread.start()
    try:
        started = bpm.json("start", "ext_cli", "--wait", "30")
    finally:
        thread.join(timeout=40)
        db.dispose()
    assert isinstance(started, dict) and started["state"] == "COMPLETED"
