"""The engine's measurements: what an observer is told (steps, handler runs, instance
starts and ends, once each and only after commit), and the database's health counts
(``Engine.metrics_snapshot``) as instances wait, fail, hold locks and miss timers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from bpm.definitions import ProcessBuilder
from bpm.dispatch import ADVANCE_TOKEN, InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.engine.operations.external import TopicRequest
from bpm.engine.operations.metrics import LATE_TIMER_BUCKETS, MetricsSnapshot, WorkQueue
from bpm.handlers import HandlerRegistry
from bpm.observe import ConflictKind, HandlerOutcome
from bpm.store import Database
from bpm.store import metrics as store_metrics
from tests.helpers.clock import FakeClock
from tests.helpers.processes import single_task
from tests.helpers.runtime import Harness, failing


@dataclass
class Recorder:
    """An observer that keeps what it is told."""

    enabled: bool = True
    steps: list[tuple[str, float]] = field(default_factory=list)
    handlers: list[tuple[str, HandlerOutcome]] = field(default_factory=list)
    conflicts: list[ConflictKind] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    ended: list[tuple[str, str, float | None]] = field(default_factory=list)

    def step_done(self, node_type: str, seconds: float) -> None:
        assert seconds >= 0
        self.steps.append((node_type, seconds))

    def handler_done(self, handler: str, seconds: float, outcome: HandlerOutcome) -> None:
        self.handlers.append((handler, outcome))

    def conflict(self, kind: ConflictKind) -> None:
        self.conflicts.append(kind)

    def instance_started(self, process_key: str) -> None:
        self.started.append(process_key)

    def instance_ended(self, process_key: str, state: str, seconds: float | None) -> None:
        self.ended.append((process_key, state, seconds))


def _harness(db: Database, handlers: HandlerRegistry, clock: FakeClock, observer: Any) -> Harness:
    dispatcher = InProcessDispatcher()
    engine = Engine(db, dispatcher, handlers=handlers, clock=clock, observer=observer)
    return Harness(engine, dispatcher, clock)


def _counts(rows: tuple[tuple[Any, ...], ...]) -> dict[tuple[Any, ...], int]:
    return {tuple(r[:-1]): r[-1] for r in rows}


def _runnable(snap: MetricsSnapshot, queue: WorkQueue) -> tuple[int, float]:
    [found] = [r for r in snap.runnable if r.queue == queue]
    return found.count, found.oldest_seconds


def test_the_observer_hears_each_step_handler_run_start_and_end(
    pg_db: Database, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    seen = Recorder()
    rt = _harness(pg_db, handlers, clock, seen)
    handlers.register("work", lambda ctx: {"done": True})
    handlers.register("broken", failing(99))
    rt.deploy(single_task("ok_proc"))
    rt.deploy(single_task("bad_proc", handler="broken", retry={"max_attempts": 1}))
    ok = rt.start("ok_proc")
    clock.advance(timedelta(seconds=3))
    rt.drain()
    rt.start("bad_proc")
    rt.drain()
    assert seen.started == ["ok_proc", "bad_proc"]
    assert ("work", HandlerOutcome.OK) in seen.handlers
    assert ("broken", HandlerOutcome.FAILED) in seen.handlers
    assert {t for t, _ in seen.steps} >= {"startEvent"}
    [(key, state, seconds)] = [e for e in seen.ended if e[0] == "ok_proc"]
    assert (key, state) == ("ok_proc", "COMPLETED")
    assert seconds is not None and 3.0 <= seconds < 4.0  # the fake clock ticks as it is read
    assert ("bad_proc", "FAILED", None) in seen.ended  # it may run again: no duration
    assert rt.engine.show(ok)["state"] == "COMPLETED"
    rt.engine.cancel(rt.start("ok_proc"))
    assert seen.ended[-1][:2] == ("ok_proc", "CANCELLED")
    assert seen.conflicts == []


def test_a_rolled_back_start_is_not_counted(
    pg_db: Database, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    seen = Recorder()
    rt = _harness(pg_db, handlers, clock, seen)
    rt.deploy(single_task("once"))
    rt.engine.start("once", business_key="k", idempotency_key="k")
    rt.engine.start("once", business_key="k", idempotency_key="k")  # the same start again
    assert seen.started == ["once"]


def test_the_snapshot_counts_waiting_work_late_timers_locks_and_incidents(
    pg_db: Database, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    rt = _harness(pg_db, handlers, clock, Recorder())
    handlers.register("broken", failing(99))
    timer = (
        ProcessBuilder("waits")
        .start()
        .timer("nap", duration="PT1M")
        .end()
        .sequence("start", "nap", "end")
        .build()
    )
    external = (
        ProcessBuilder("remote")
        .start()
        .service_task("call", topic="billing")
        .end()
        .sequence("start", "call", "end")
        .build()
    )
    for doc in (timer, external, single_task("bad", handler="broken", retry={"max_attempts": 1})):
        rt.deploy(doc)
    empty = rt.engine.metrics_snapshot()
    assert empty.live_instances == () and empty.open_incidents == ()
    assert _runnable(empty, WorkQueue.TOKENS) == (0, 0.0)

    rt.start("waits")
    rt.start("waits")
    clock.advance(timedelta(seconds=7))
    queued = rt.engine.metrics_snapshot()  # nobody advanced the start tokens yet
    count, oldest = _runnable(queued, WorkQueue.TOKENS)
    assert count == 2 and 7.0 <= oldest < 8.0
    assert _counts(queued.live_instances) == {("waits", "RUNNING"): 2}

    rt.drain(only=frozenset({ADVANCE_TOKEN}))  # both wait at their timers now
    rt.start("remote")
    rt.start("bad")
    rt.drain()
    clock.advance(timedelta(minutes=3))  # the timers are two minutes late: nobody scanned
    snap = rt.engine.metrics_snapshot()
    assert dict(snap.late_timers) == {0.0: 2, 10.0: 2, 60.0: 2, 300.0: 0, 3600.0: 0}
    assert _counts(snap.external_tasks) == {("billing", "READY"): 1}
    assert _counts(snap.open_incidents) == {("bad", "work"): 1}
    assert _counts(snap.live_instances) == {
        ("waits", "RUNNING"): 2,
        ("remote", "RUNNING"): 1,
        ("bad", "FAILED"): 1,
    }
    assert _runnable(snap, WorkQueue.TOKENS) == (0, 0.0)

    rt.engine.fetch_and_lock("w", [TopicRequest("billing", timedelta(seconds=30))])
    assert _counts(rt.engine.metrics_snapshot().external_tasks) == {("billing", "LOCKED"): 1}
    clock.advance(timedelta(minutes=1))
    assert _counts(rt.engine.metrics_snapshot().expired_locks) == {("EXTERNAL",): 1}


def test_every_family_is_read_through_an_index(pg_db: Database) -> None:
    """With sequential scans priced out, no family's statement reads a whole table: each
    can go through an index over the live rows (on a small table PostgreSQL would rightly
    pick a sequential scan, which says nothing)."""
    sent: list[tuple[str, Any]] = []

    def remember(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sent.append((statement, parameters))

    now = datetime.now(UTC)
    with pg_db.transaction() as conn:
        event.listen(conn, "before_cursor_execute", remember)
        store_metrics.live_instances(conn)
        store_metrics.runnable_tokens(conn)
        store_metrics.runnable_handler_tasks(conn, now)
        store_metrics.late_timers(conn, now, LATE_TIMER_BUCKETS)
        store_metrics.expired_locks(conn, now)
        store_metrics.open_incidents(conn)
        store_metrics.open_external_tasks(conn)
        event.remove(conn, "before_cursor_execute", remember)
        assert len(sent) == 7
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        for statement, parameters in sent:
            lines = conn.exec_driver_sql("EXPLAIN " + statement, parameters).scalars()
            plan = "\n".join(str(line) for line in lines)
            assert "Seq Scan" not in plan, f"{statement}\n{plan}"
            assert "Index" in plan, plan
