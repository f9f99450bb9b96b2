"""Multi-instance activities across real worker processes: a worker killed (SIGKILL) in the
middle of 20-iteration parallel activities loses no iteration, runs none twice (but the
handler it was running), and completes each activity once."""

from __future__ import annotations

from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import handlers
from tests.workers.cluster import Cluster

assert callable(handlers.noop)

INSTANCES = 6
ITERATIONS = 20
#: A task a killed worker held is run again once its lock expires.
TIMEOUT = "PT3S"
RETRY: dict[str, Any] = {"max_attempts": 2, "backoff": "PT0S"}


def process() -> dict[str, Any]:
    return (
        ProcessBuilder("mi")
        .start()
        .service_task(
            "each",
            handler="noop",
            timeout=TIMEOUT,
            retry=RETRY,
            multi_instance={"collection": "items", "elementVariable": "item"},
        )
        .service_task("after", handler="noop", timeout=TIMEOUT, retry=RETRY)
        .end()
        .sequence("start", "each", "after", "end")
        .build()
    )


def test_a_worker_killed_during_parallel_iterations_loses_none_and_repeats_none(
    cluster: Cluster,
) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    engine.deploy(process())
    short = {"BPM_VISIBILITY_TIMEOUT": "3"}
    cluster.worker("w1", extra_env=short)
    cluster.worker("w2", extra_env=short)
    cluster.beat("beat1")
    cluster.wait_ready()
    for i in range(INSTANCES):
        cluster.start("mi", {"items": list(range(ITERATIONS))}, f"mi-{i}")

    def iterations_so_far() -> int:
        return sum(cluster.calls(f"mi-{i}", "each")[1] for i in range(INSTANCES))

    cluster.wait_until(lambda: iterations_so_far() >= 15, 60, "iterations to run")
    cluster.kill("w1")
    unfinished = sum(1 for s in cluster.states().values() if s != "COMPLETED")
    assert unfinished > 0, "everything finished before the kill; make the run longer"
    cluster.worker("w3", extra_env=short)
    cluster.wait_all(INSTANCES, timeout=120)
    reruns = []
    for i in range(INSTANCES):
        bk = f"mi-{i}"
        count, keys = cluster.calls(bk, "each")
        assert keys == ITERATIONS, (bk, count, keys)  # every iteration ran, each its own task
        reruns += [bk] * (count - keys)
        count, keys = cluster.calls(bk, "after")
        assert (count, keys) == (1, 1) or (keys == 1 and count == 2), (bk, count, keys)
        reruns += [bk] * (count - keys)
        assert_finished_cleanly(cluster.db, cluster.instance_id(bk))
    assert len(reruns) <= 2, reruns  # only what a handler in the killed worker was running
