"""Saga compensation through real worker and beat processes.

A -> B -> C under a global saga, C always fails: B then A are compensated, one at a time, each
by a ``bpm.run_compensation`` job on the compensation queue, and the instance ends TERMINATED.
Workers die and messages come twice: every compensation still completes exactly once per
idempotency key, latest success first.
"""

from __future__ import annotations

import os
from collections import Counter
from uuid import uuid4

import pytest

from bpm.dispatch import InProcessDispatcher
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.store import compensation, history, incidents
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import handlers, processes
from tests.workers.cluster import Cluster

assert callable(handlers.undo)  # the reference run in this process needs these handlers

TERMINATED = frozenset({"TERMINATED"})


def deploy(cluster: Cluster, *documents: dict[str, object]) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    for doc in documents:
        engine.deploy(doc)


def journal(cluster: Cluster, business_key: str) -> list[str]:
    """Every handler call of the instance, in the order they were recorded."""
    with cluster.db.transaction() as conn:
        rows = conn.exec_driver_sql(
            "SELECT node FROM test_calls WHERE business_key = %(bk)s ORDER BY seq",
            {"bk": business_key},
        ).all()
    return [str(r[0]) for r in rows]


def first_starts(cluster: Cluster, business_key: str) -> list[tuple[str, int]]:
    """Each compensation's first start, in order: (node label, runs with its key)."""
    with cluster.db.transaction() as conn:
        rows = conn.exec_driver_sql(
            "SELECT node, count(*) FROM test_calls "
            "WHERE business_key = %(bk)s AND node LIKE 'undo:%%' "
            "GROUP BY node, idempotency_key ORDER BY min(seq)",
            {"bk": business_key},
        ).all()
    return [(str(r[0]), int(r[1])) for r in rows]


def records(cluster: Cluster, business_key: str) -> list[tuple[str, str]]:
    """The instance's compensation records in success order: (node, status)."""
    with cluster.db.transaction() as conn:
        rows = compensation.of_instance(conn, cluster.instance_id(business_key))
    seqs = [r.seq for r in rows]
    assert seqs == sorted(set(seqs)), f"records not numbered in success order: {seqs}"
    return [(r.node_id, r.status) for r in rows]


def open_incidents(cluster: Cluster, business_key: str) -> list[str]:
    with cluster.db.transaction() as conn:
        found = incidents.of_instance(conn, cluster.instance_id(business_key), only_open=True)
    return [f"{i.kind} at {i.node_id}: {i.message}" for i in found]


def signature(cluster: Cluster, business_key: str) -> Counter[tuple[str, str, str | None]]:
    """History without ids, times and actors: what happened, not who or when."""
    with cluster.db.transaction() as conn:
        events = history.of_instance(conn, cluster.instance_id(business_key))
    return Counter((e.table, e.type, e.node_id) for e in events)


def assert_compensated_once(cluster: Cluster, business_key: str) -> None:
    """B then A undone, once each with its own key; C (which failed) not at all."""
    assert journal(cluster, business_key) == ["a", "b", "c", "undo:b", "undo:a"]
    for node in ("a", "b", "c", "undo:a", "undo:b"):
        assert cluster.calls(business_key, node) == (1, 1), node
    assert cluster.calls(business_key, "undo:c") == (0, 0)
    assert records(cluster, business_key) == [("a", "COMPLETED"), ("b", "COMPLETED")]
    assert open_incidents(cluster, business_key) == []
    assert_finished_cleanly(cluster.db, cluster.instance_id(business_key), "TERMINATED")


def test_a_failed_step_compensates_the_earlier_ones_on_two_workers(cluster: Cluster) -> None:
    deploy(cluster, processes.saga_abc())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.wait_ready()
    for i in range(10):
        cluster.start("saga_abc", {"i": i}, f"saga-{i}")
    states = cluster.wait_all(10, timeout=60, states=TERMINATED)
    assert len(states) == 10
    for i in range(10):
        assert_compensated_once(cluster, f"saga-{i}")
        compensating = [t for t in cluster.task_rows(f"saga-{i}") if t.node_id in ("a", "b")]
        assert sorted((t.node_id, t.state, t.attempts) for t in compensating) == [
            ("a", "DONE", 1),
            ("a", "DONE", 1),
            ("b", "DONE", 1),
            ("b", "DONE", 1),
        ]


def test_worker_killed_while_a_compensation_runs(cluster: Cluster) -> None:
    # The compensated steps' timeout is the compensation task's lock: it expires in 3 s.
    deploy(
        cluster,
        processes.saga_abc(
            "slow_saga",
            undo="slow_undo",
            timeout="PT3S",
            undo_retry={"max_attempts": 3, "backoff": "PT0S"},
        ),
    )
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.wait_ready()
    cluster.start("slow_saga", {"undo_seconds": 1.5}, "victim")
    cluster.wait_until(
        lambda: bool(cluster.running_pids("undo:b")), 30, "the compensation of b to run"
    )
    pid = cluster.running_pids("undo:b")[0]
    victim = next(name for name, p in cluster.procs.items() if os.getpgid(pid) == p.pid)
    cluster.kill(victim)
    cluster.worker("w3")
    cluster.wait_all(1, timeout=30, states=TERMINATED)
    # b's compensation was killed mid-run and ran again with the same key; then a's.
    assert first_starts(cluster, "victim") == [("undo:b", 2), ("undo:a", 1)]
    assert cluster.calls("victim", "undone:b") == (1, 1)
    assert cluster.calls("victim", "undone:a") == (1, 1)
    undone = [n for n in journal(cluster, "victim") if n.startswith("undone:")]
    assert undone == ["undone:b", "undone:a"]
    assert cluster.calls("victim", "c") == (1, 1)
    assert records(cluster, "victim") == [("a", "COMPLETED"), ("b", "COMPLETED")]
    assert open_incidents(cluster, "victim") == []
    b_tasks = [t for t in cluster.task_rows("victim") if t.node_id == "b"]
    assert sorted((t.state, t.attempts) for t in b_tasks) == [("DONE", 1), ("DONE", 2)]
    assert_finished_cleanly(cluster.db, cluster.instance_id("victim"), "TERMINATED")


def test_every_compensation_message_delivered_twice_changes_nothing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_DATABASE_URL", cluster.env["BPM_DATABASE_URL"])  # for record()
    deploy(cluster, processes.saga_abc())
    cluster.env["BPM_TEST_SEND_TWICE"] = "bpm.run_compensation"  # see handlers.py
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    for i in range(5):
        cluster.start("saga_abc", {"i": i}, f"dup-{i}", task_id=str(uuid4()))
    cluster.wait_all(5, timeout=60, states=TERMINATED)
    # The same process run once, with single deliveries, in this test process.
    reference = EmbeddedRuntime(db=cluster.db, migrate=False)
    started = reference.engine.start("saga_abc", {"i": 0}, business_key="reference")
    assert reference.wait_for(started.id, timeout=30) == "TERMINATED"
    assert_compensated_once(cluster, "reference")
    expected = signature(cluster, "reference")
    for i in range(5):
        assert signature(cluster, f"dup-{i}") == expected
        assert_compensated_once(cluster, f"dup-{i}")
    # Every compensation job did come twice, and the second delivery was a no-op.
    cluster.wait_until(
        lambda: len(compensation_runs(cluster)) >= 5 * 2 * 2,
        10,
        "every compensation job to be logged twice",
    )
    runs = compensation_runs(cluster)
    assert len(runs) == 5 * 2 * 2, runs
    assert sum("outcome=stale" in line for line in runs) == 5 * 2, runs
    assert len(cluster.states()) == 6


def compensation_runs(cluster: Cluster) -> list[str]:
    """The workers' log lines of finished bpm.run_compensation jobs."""
    logs = "".join((cluster.logs / f"{w}.log").read_text() for w in ("w1", "w2"))
    return [
        line for line in logs.splitlines() if "job=bpm.run_compensation" in line and " ms=" in line
    ]
