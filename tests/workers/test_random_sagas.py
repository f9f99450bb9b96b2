"""Sagas the tests have never seen, through real workers that get killed along the way.

Random processes (steps and parallel branches, failing at a random step) run on two workers;
one worker is killed with SIGKILL mid-run and replaced. For every instance the compensations
that ran are exactly the succeeded steps that declare one, each once (one idempotency key),
first started in strict reverse success order, and the instance ends TERMINATED.
"""

from __future__ import annotations

import signal
import time

from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import compensation
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import processes
from tests.workers.cluster import Cluster

SEEDS = range(8)
PER_SEED = 3
# A start request the killed worker held exists only in its message; Redis puts it back once
# it is older than the visibility timeout, so the test keeps that short.
SHORT_VISIBILITY = {"BPM_VISIBILITY_TIMEOUT": "4"}


def test_random_sagas_with_a_worker_killed_mid_run(cluster: Cluster) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    for seed in SEEDS:
        engine.deploy(processes.random_saga(seed))
    cluster.worker("w1", extra_env=SHORT_VISIBILITY)
    cluster.worker("w2", extra_env=SHORT_VISIBILITY)
    cluster.beat("beat")
    cluster.wait_ready()
    keys = [f"r{seed}-{n}" for seed in SEEDS for n in range(PER_SEED)]
    for key in keys:
        cluster.start(f"rnd_saga_{key.split('-')[0][1:]}", {}, key)
    cluster.wait_until(lambda: len(cluster.states()) >= 3, 30, "the run to get going")
    time.sleep(0.3)
    unfinished = sum(1 for s in cluster.states().values() if s == "RUNNING")
    cluster.kill("w1", signal.SIGKILL)
    assert unfinished + (len(keys) - len(cluster.states())) > 0, "killed after the run ended"
    cluster.worker("w3", extra_env=SHORT_VISIBILITY)
    states = cluster.wait_all(len(keys), timeout=120, states=frozenset({"TERMINATED"}))
    assert set(states.values()) == {"TERMINATED"}
    for key in keys:
        check(cluster, key)


def check(cluster: Cluster, key: str) -> None:
    iid = cluster.instance_id(key)
    assert_finished_cleanly(cluster.db, iid, "TERMINATED")
    with cluster.db.transaction() as conn:
        recs = compensation.of_instance(conn, iid)
        calls = conn.exec_driver_sql(
            "SELECT node, count(DISTINCT idempotency_key), min(seq) FROM test_calls "
            "WHERE business_key = %(bk)s GROUP BY node ORDER BY min(seq)",
            {"bk": key},
        ).all()
    assert all(r.status == "COMPLETED" for r in recs), [(r.node_id, r.status) for r in recs]
    undone = [str(node)[5:] for node, _, _ in calls if str(node).startswith("undo:")]
    assert undone == [r.node_id for r in sorted(recs, key=lambda r: -r.seq)], key
    assert all(keys == 1 for _, keys, _ in calls), calls
    forward = {str(node) for node, _, _ in calls if not str(node).startswith("undo:")}
    assert {r.node_id for r in recs} <= forward
