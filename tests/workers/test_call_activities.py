"""Call activities across real worker processes: a worker killed (SIGKILL) while calls start
and called instances run loses no instance and starts no called instance twice."""

from __future__ import annotations

from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import instances
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import handlers
from tests.workers.cluster import Cluster

assert callable(handlers.noop)

CALLS = 30


#: A task a killed worker held is run again once its lock expires.
TIMEOUT = "PT3S"
RETRY: dict[str, Any] = {"max_attempts": 2, "backoff": "PT0S"}


def called() -> dict[str, Any]:
    b = ProcessBuilder("called").start()
    for name in ("c1", "c2", "c3"):
        b.service_task(name, handler="noop", timeout=TIMEOUT, retry=RETRY)
    return b.end().sequence("start", "c1", "c2", "c3", "end").build()


def caller() -> dict[str, Any]:
    return (
        ProcessBuilder("caller")
        .start()
        .service_task("before", handler="noop", timeout=TIMEOUT, retry=RETRY)
        .call_activity(
            "call", process="called", inputs=[{"all": True}], business_key="${child_key}"
        )
        .service_task("after", handler="noop", timeout=TIMEOUT, retry=RETRY)
        .end()
        .sequence("start", "before", "call", "after", "end")
        .build()
    )


def test_a_worker_killed_during_calls_starts_each_called_instance_once(cluster: Cluster) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    engine.deploy(called())
    engine.deploy(caller())
    # A start message the killed worker held comes back after the visibility timeout: no row
    # records a start before it runs.
    short = {"BPM_VISIBILITY_TIMEOUT": "3"}
    cluster.worker("w1", extra_env=short)
    cluster.worker("w2", extra_env=short)
    cluster.beat("beat1")
    cluster.wait_ready()
    for i in range(CALLS):
        cluster.start("caller", {"child_key": f"child-{i}"}, f"caller-{i}")

    def called_so_far() -> int:
        with cluster.db.transaction() as conn:
            return sum(1 for r in instances.search(conn, limit=1000) if r.process_key == "called")

    cluster.wait_until(lambda: called_so_far() >= 5, 60, "calls to start")
    cluster.kill("w1")
    unfinished = sum(1 for s in cluster.states().values() if s != "COMPLETED")
    assert unfinished > 0, "everything finished before the kill; make the run longer"
    cluster.worker("w3", extra_env=short)
    try:
        cluster.wait_all(2 * CALLS, timeout=90)
    except AssertionError:
        for bk, state in cluster.states().items():
            if state != "COMPLETED":
                doc = engine.show(cluster.instance_id(bk))
                print("UNFINISHED", bk, doc["tokens"], doc["tasks"], doc.get("called"))
        raise
    with cluster.db.transaction() as conn:
        rows = instances.search(conn, limit=1000)
    children = [r for r in rows if r.process_key == "called"]
    assert len(children) == CALLS, "a call started a second instance"
    parents = {r.id: r for r in rows if r.process_key == "caller"}
    assert {c.super_instance_id for c in children} == set(parents)
    reruns = []
    for i in range(CALLS):
        for bk, nodes in ((f"caller-{i}", ("before", "after")), (f"child-{i}", ("c1", "c2", "c3"))):
            for node in nodes:
                count, keys = cluster.calls(bk, node)
                assert keys == 1 and count >= 1, (bk, node, count, keys)
                if count > 1:
                    reruns.append((bk, node))
    assert len(reruns) <= 1, reruns  # only a handler running in the killed worker
    for i in range(0, CALLS, 5):
        assert_finished_cleanly(cluster.db, cluster.instance_id(f"caller-{i}"))
        assert_finished_cleanly(cluster.db, cluster.instance_id(f"child-{i}"))
