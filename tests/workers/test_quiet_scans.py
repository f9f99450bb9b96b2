"""Beat's scans stay out of Flower's task list and the logs unless they find work.

A monitor (Flower) builds its task list from the task events on the broker; the test listens
to the same events while a worker and beat run, with one instance whose timer fires.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from celery import Celery

from bpm_workers.config import SCAN_JOBS
from tests.workers import processes
from tests.workers.cluster import Cluster
from tests.workers.test_runtime import deploy


@contextmanager
def task_events(broker_url: str) -> Iterator[list[dict[str, Any]]]:
    """Every task event sent on the broker while the block runs, as Flower receives them."""
    app = Celery(broker=broker_url, set_as_current=False)
    seen: list[dict[str, Any]] = []
    listening = threading.Event()
    receivers: list[Any] = []

    def listen() -> None:
        # One capture for the whole block, as Flower runs it: each capture subscribes anew,
        # and on Redis an event published between two of them is lost to the listener.
        with app.connection() as conn:
            receiver = app.events.Receiver(conn, handlers={"*": seen.append})
            receivers.append(receiver)
            listening.set()
            with contextlib.suppress(OSError):
                receiver.capture(limit=None, timeout=None, wakeup=False)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    assert listening.wait(10)
    # The receiver's queue is bound once capture runs, which on a busy machine takes a while:
    # probe events are sent until one comes back, so no event of the run is missed.
    deadline = time.monotonic() + 20
    with app.events.default_dispatcher() as probe:
        while not any(e.get("type") == "test-probe" for e in seen):
            assert time.monotonic() < deadline, "the event receiver never heard its probe"
            probe.send("test-probe")
            time.sleep(0.2)
    try:
        yield seen
    finally:
        receivers[0].should_stop = True  # the capture loop checks it every second
        thread.join(5)


def _succeeded(seen: list[dict[str, Any]], name: str) -> bool:
    """Whether a task of that name has both its received and its succeeded event."""
    received = {e["uuid"] for e in list(seen) if e["type"] == "task-received" and e["name"] == name}
    return any(e["type"] == "task-succeeded" and e["uuid"] in received for e in list(seen))


def test_scans_that_found_nothing_send_no_events_and_log_no_lines(cluster: Cluster) -> None:
    deploy(cluster, processes.timed(3))
    cluster.env["BPM_TIMER_INTERVAL"] = "0.5"
    with task_events(cluster.env["BPM_BROKER_URL"]) as seen:
        cluster.worker("w1")
        cluster.beat("beat1")
        cluster.wait_ready()
        cluster.start("timed", {}, "quiet-1")
        cluster.wait_all(1, timeout=60)
        # The scan that fired the timer reports itself after its own transaction, so on a busy
        # machine its events may still be on their way when the instance has ended.
        cluster.wait_until(lambda: _succeeded(seen, "bpm.scan_timers"), 30, "the timer scan")
        time.sleep(3)  # a few more ticks of beat, each finding nothing
    tasks = [e for e in seen if e["type"].startswith("task-")]
    names = {e["uuid"]: e["name"] for e in tasks if "name" in e}
    scans = {uuid for uuid, name in names.items() if name in SCAN_JOBS}
    timer_scans = {uuid for uuid in scans if names[uuid] == "bpm.scan_timers"}
    # The one timer scan that fired the timer is listed; the dozens that found nothing are not.
    assert len(timer_scans) == 1, (timer_scans, cluster.tail())
    assert not [e for e in tasks if e["type"] == "task-sent" and names.get(e["uuid"]) in scans]
    fired = [e for e in tasks if e["uuid"] in timer_scans]
    assert {e["type"] for e in fired} == {"task-received", "task-succeeded"}
    # bpm's own jobs are still listed as before.
    assert any(name == "bpm.start_instance" for name in names.values())

    worker_log = (cluster.logs / "w1.log").read_text()
    beat_log = (cluster.logs / "beat1.log").read_text()
    assert "Sending due task" not in beat_log  # beat did send: the worker ran its scans
    assert "Task bpm.scan" not in worker_log  # Celery's received/succeeded lines
    scan_lines = [line for line in worker_log.splitlines() if "job=bpm.scan" in line]
    assert len(scan_lines) == 1 and "job=bpm.scan_timers" in scan_lines[0], scan_lines
    assert cluster.redis.llen(f"{cluster.prefix}bpm.scans") < 5  # beat's ticks were consumed


def test_a_worker_logs_that_it_is_ready_at_celerys_default_level(cluster: Cluster) -> None:
    """The docs tell a newcomer to wait for this line; ``celery worker`` logs at WARNING
    unless given ``-l``."""
    cluster._spawn("plain", ["worker", "-n", f"plain@{cluster.prefix}", "-c", "1"], None)
    log = cluster.logs / "plain.log"
    cluster.wait_until(
        lambda: "worker ready: recovery scans requested" in log.read_text(), 40, "ready line"
    )


def test_beat_keeps_its_schedule_file_in_the_state_dir(cluster: Cluster, tmp_path: Path) -> None:
    """``celery -A bpm_workers beat`` as documented, without ``-s``: the working directory (a
    checkout, often) stays clean."""
    workdir, state = tmp_path / "cwd", tmp_path / "state" / "bpm"
    workdir.mkdir()
    env = {**cluster.env, "BPM_STATE_DIR": str(state)}
    with (cluster.logs / "beat-plain.log").open("ab") as log:
        cluster.procs["beat-plain"] = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "bpm_workers", "beat"],
            env=env,
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    cluster.wait_until(lambda: any(state.glob("celerybeat-schedule*")), 40, "beat's schedule file")
    assert list(workdir.iterdir()) == []
