"""Timers and messages through real worker and beat processes.

Two beats run for the whole test and a worker is killed while timers are pending: every timer
still fires exactly once, after the restart, and its follow-up handler runs once.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import timers
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import processes
from tests.workers.cluster import Cluster


def deploy(cluster: Cluster, *documents: dict[str, object]) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    for doc in documents:
        engine.deploy(doc)


def test_timers_fire_once_with_two_beats_across_a_worker_restart(cluster: Cluster) -> None:
    # Long enough that every timer is scheduled before the first is due, on a loaded machine.
    deploy(cluster, processes.timed(8), processes.escalated(8))
    cluster.worker("w1")
    cluster.beat("beat1")
    cluster.beat("beat2")
    cluster.wait_ready()
    for i in range(20):
        cluster.start("timed", {}, f"timed-{i}")
    for i in range(5):
        cluster.start("escalated", {}, f"esc-{i}")

    def all_scheduled() -> bool:
        with cluster.db.transaction() as conn:
            return (
                conn.exec_driver_sql(
                    "SELECT count(*) FROM timers WHERE state = 'SCHEDULED'"
                ).scalar()
                == 25
            )

    cluster.wait_until(all_scheduled, 30, "every timer to be scheduled")
    cluster.kill("w1")  # pending timers outlive the worker and one of the beats
    cluster.kill("beat1")
    with cluster.db.transaction() as conn:  # they all come due while no worker runs
        last = conn.exec_driver_sql("SELECT max(fire_at) FROM timers").scalar_one()
    time.sleep(max(0.0, (last - datetime.now(UTC)).total_seconds()) + 0.5)
    cluster.worker("w2")
    cluster.beat("beat3")
    cluster.wait_all(25, timeout=90)
    for i in range(20):
        iid = cluster.instance_id(f"timed-{i}")
        assert_finished_cleanly(cluster.db, iid)
        assert len(rows.engine_events_of(cluster.db, iid, type="TimerFired")) == 1
        assert cluster.calls(f"timed-{i}", "after") == (1, 1)
    for i in range(5):
        iid = cluster.instance_id(f"esc-{i}")
        assert_finished_cleanly(cluster.db, iid)
        assert cluster.calls(f"esc-{i}", "escalate") == (1, 1)
        assert cluster.calls(f"esc-{i}", "after") == (0, 0)
        assert {t.state for t in cluster.task_rows(f"esc-{i}") if t.kind == "USER"} == {"CANCELLED"}
    with cluster.db.transaction() as conn:
        fired = [
            t
            for iid in map(cluster.instance_id, [f"timed-{i}" for i in range(20)])
            for t in timers.of_instance(conn, iid)
        ]
    assert {t.state for t in fired} == {"FIRED"}


def test_a_user_task_completed_through_the_api_goes_on_on_the_workers(cluster: Cluster) -> None:
    deploy(cluster, processes.escalated(60))
    cluster.worker("w1")
    cluster.wait_ready()
    cluster.start("escalated", {}, "esc-api")
    engine = cluster.sender()

    def task_ready() -> bool:
        return "esc-api" in cluster.states() and bool(
            engine.user_tasks(instance_id=cluster.instance_id("esc-api"))
        )

    cluster.wait_until(task_ready, 30, "the user task")
    (task,) = engine.user_tasks(instance_id=cluster.instance_id("esc-api"))
    engine.claim(task["id"], "ann")
    engine.complete_user_task(task["id"], {"approved": True}, user="ann")
    cluster.wait_all(1, timeout=30)
    iid = cluster.instance_id("esc-api")
    assert_finished_cleanly(cluster.db, iid)
    assert cluster.calls("esc-api", "after") == (1, 1)
    assert cluster.calls("esc-api", "escalate") == (0, 0)
    with cluster.db.transaction() as conn:
        assert [t.state for t in timers.of_instance(conn, iid)] == ["CANCELLED"]


def test_another_service_correlates_a_message_by_task_name(cluster: Cluster) -> None:
    deploy(cluster, processes.awaiting_payment())
    cluster.worker("w1")
    cluster.wait_ready()
    cluster.start("awaiting", {}, "pay-1")

    def waiting() -> bool:
        if "pay-1" not in cluster.states():
            return False
        live = rows.live_tokens(cluster.db, cluster.instance_id("pay-1"))
        return [t.wait_kind for t in live] == ["MESSAGE"]

    cluster.wait_until(waiting, 30, "the instance to wait for its message")
    client = cluster.client()
    queue = f"{cluster.prefix}bpm.starts"
    client.send_task(
        "bpm.correlate_message",
        queue=queue,
        kwargs={"message": "nobody-waits", "business_key": "pay-1"},
    )
    client.send_task(
        "bpm.correlate_message",
        queue=queue,
        kwargs={"message": "paid", "business_key": "pay-1", "variables": {"amount": 30}},
    )
    cluster.wait_all(1, timeout=30)
    iid = cluster.instance_id("pay-1")
    assert_finished_cleanly(cluster.db, iid)
    assert cluster.calls("pay-1", "after") == (1, 1)
    log = (cluster.logs / "w1.log").read_text()
    assert "job=bpm.correlate_message" in log and "outcome=refused" in log
    assert "nobody-waits" in log


def test_an_external_workers_completions_go_on_on_the_celery_workers_at_once(
    cluster: Cluster,
) -> None:
    """``bpm external-worker`` with BPM_BROKER_URL: each completion sends the next step to
    the Celery workers right away. The worker's scans are pushed an hour out and no beat
    runs, so nothing but that dispatch can move the instances on."""
    deploy(cluster, processes.external_then_step())
    cluster.worker("w1", extra_env={"BPM_SCAN_INTERVAL": "3600", "BPM_STALL_GRACE": "3600"})
    cluster.wait_ready()
    with (cluster.logs / "ext.log").open("ab") as log:
        ext = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bpm.cli.main",
                "external-worker",
                "--import",
                "tests.workers.ext_worker",
            ],
            env=cluster.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for i in range(5):
            cluster.start("ext_then_step", {"n": i}, f"ext-{i}")
        cluster.wait_all(5, timeout=60)
        ext.send_signal(signal.SIGTERM)
        assert ext.wait(timeout=30) == 0, (cluster.logs / "ext.log").read_text()
    finally:
        if ext.poll() is None:
            ext.kill()
    sender = cluster.sender()
    for i in range(5):
        iid = cluster.instance_id(f"ext-{i}")
        assert_finished_cleanly(cluster.db, iid)
        assert cluster.calls(f"ext-{i}", "after") == (1, 1)
        assert sender.show(iid)["variables"]["reserved"] == i
    worker_log = (cluster.logs / "w1.log").read_text()
    assert worker_log.count("job=bpm.run_handler") >= 5
    with cluster.db.transaction() as conn:
        assert (
            conn.exec_driver_sql(
                "SELECT count(*) FROM external_tasks WHERE state = 'LOCKED'"
            ).scalar()
            == 0
        )
