"""Timer start events under two real beats and two workers on the real clock: each due tick
of a cycle starts exactly one instance, the cycle stops when its repetitions run out, and a
redeploy that removes the timer start stops the schedule."""

from __future__ import annotations

import time
from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import instances
from tests.helpers.invariants import assert_finished_cleanly
from tests.workers import handlers
from tests.workers.cluster import Cluster

assert callable(handlers.noop)

TICKS = 3


def ticking(cycle: str | None) -> dict[str, Any]:
    """``tick``: a timer start with ``cycle`` (none: a plain start event replaces it)."""
    b = ProcessBuilder("ticking")
    if cycle is None:
        b.start("tick")
    else:
        b._node("tick", "startEvent", timer={"cycle": cycle})
    b.service_task("work", handler="noop").end()
    return b.sequence("tick", "work", "end").build()


def started(cluster: Cluster) -> list[Any]:
    with cluster.db.transaction() as conn:
        rows = instances.search(conn, limit=1000)
    return sorted((r for r in rows if r.process_key == "ticking"), key=lambda r: r.started_at)


def test_two_beats_start_one_instance_per_tick(cluster: Cluster) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.beat("beat1")
    cluster.beat("beat2")
    cluster.wait_ready()
    engine.deploy(ticking(f"R{TICKS}/PT2S"))
    cluster.wait_until(lambda: len(started(cluster)) >= TICKS, 60, f"{TICKS} ticks")
    time.sleep(5)  # two more periods: no fourth tick, no tick started twice
    rows = started(cluster)
    # a tick started twice would show as one more instance: the cycle has only TICKS
    assert len(rows) == TICKS, [r.started_at for r in rows]
    cluster.wait_until(
        lambda: all(r.state == "COMPLETED" for r in started(cluster)), 30, "the ticks' work"
    )
    for row in rows:
        assert_finished_cleanly(cluster.db, row.id)


def test_a_redeploy_without_the_timer_stops_the_schedule(cluster: Cluster) -> None:
    engine = Engine(cluster.db, InProcessDispatcher())
    cluster.worker("w1")
    cluster.beat("beat1")
    cluster.beat("beat2")
    cluster.wait_ready()
    engine.deploy(ticking("R/PT1S"))
    cluster.wait_until(lambda: len(started(cluster)) >= 2, 60, "two ticks")
    engine.deploy(ticking(None))
    time.sleep(1.5)  # a tick already claimed may still commit
    before = len(started(cluster))
    time.sleep(4)
    assert len(started(cluster)) == before
