"""A transaction cancelled through real worker processes: the cancel end event's
compensations run as ``bpm.run_compensation`` jobs on the compensation queue, latest success
first, then the cancel boundary's path; every such job delivered twice changes nothing."""

from __future__ import annotations

from uuid import uuid4

import pytest

from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import handlers, processes
from tests.workers.cluster import Cluster
from tests.workers.test_sagas import compensation_runs, journal, open_incidents, records

assert callable(handlers.undo)

COMPLETED = frozenset({"COMPLETED"})


def test_a_cancel_end_compensates_then_leaves_by_the_boundary_with_duplicates(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_DATABASE_URL", cluster.env["BPM_DATABASE_URL"])  # for record()
    Engine(cluster.db, InProcessDispatcher()).deploy(processes.transaction_cancelled())
    cluster.env["BPM_TEST_SEND_TWICE"] = "bpm.run_compensation,bpm.advance_token"
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    for i in range(4):
        cluster.start("tx_cancel", {"i": i}, f"tx-{i}", task_id=str(uuid4()))
    assert len(cluster.wait_all(4, timeout=60, states=COMPLETED)) == 4
    for i in range(4):
        key = f"tx-{i}"
        assert journal(cluster, key) == ["a", "b", "undo:b", "undo:a", "after"]
        for node in ("a", "b", "undo:a", "undo:b", "after"):
            assert cluster.calls(key, node) == (1, 1), node
        assert records(cluster, key) == [("a", "COMPLETED"), ("b", "COMPLETED")]
        assert open_incidents(cluster, key) == []
        assert_finished_cleanly(cluster.db, cluster.instance_id(key), "COMPLETED")
    # Every compensation job came twice; the second delivery was a no-op.
    cluster.wait_until(
        lambda: len(compensation_runs(cluster)) >= 4 * 2 * 2, 10, "each job logged twice"
    )
    runs = compensation_runs(cluster)
    assert len(runs) == 4 * 2 * 2, runs
    assert sum("outcome=stale" in line for line in runs) == 4 * 2, runs
