"""Conditional events through real worker processes: a handler's result, committed by one
worker, makes the condition of a waiting catch event and of an interrupting boundary event
true; each passes or fires exactly once, whichever of two workers runs which step."""

from __future__ import annotations

from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers.cluster import Cluster


def flagged() -> dict[str, Any]:
    """Three branches: ``set`` sets ``flag``; ``wait`` (a conditional catch) goes on to
    ``after`` once it is set; the user task ``work`` is interrupted by ``stop`` then."""
    return (
        ProcessBuilder("flagged")
        .start()
        .parallel_gateway("fork")
        .service_task("set", handler="set_flag")
        .end("set_end")
        .conditional_event("wait", condition="${flag == 1}")
        .service_task("after", handler="noop")
        .end("after_end")
        .user_task("work")
        .end("work_end")
        .conditional_boundary("stop", attached_to="work", condition="${flag == 1}")
        .service_task("stopped", handler="noop")
        .end("stop_end")
        .sequence("start", "fork", "set", "set_end")
        .sequence("fork", "wait", "after", "after_end")
        .sequence("fork", "work", "work_end")
        .sequence("stop", "stopped", "stop_end")
        .build()
    )


def test_a_handler_result_passes_a_catch_and_fires_a_boundary_once(cluster: Cluster) -> None:
    Engine(cluster.db, InProcessDispatcher()).deploy(flagged())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_ready()
    for i in range(8):
        cluster.start("flagged", {"flag": 0}, f"flag-{i}")
    cluster.wait_all(8, timeout=90)
    for i in range(8):
        iid = cluster.instance_id(f"flag-{i}")
        assert_finished_cleanly(cluster.db, iid)
        assert cluster.calls(f"flag-{i}", "after") == (1, 1)
        assert cluster.calls(f"flag-{i}", "stopped") == (1, 1)
        met = rows.token_events_of(cluster.db, iid, type="CONDITION_MET")
        assert len(met) <= 2  # the catch (unless it passed at once) and the boundary
        assert {t.state for t in cluster.task_rows(f"flag-{i}") if t.kind == "USER"} <= {
            "CANCELLED"
        }
