"""What the database says about the engine's health right now (``Engine.metrics_snapshot``):
live instances, work waiting for a worker, late timers, expired locks, open incidents and
external tasks, each counted by a few bounded labels (process keys, states, queues, topics,
activities), never by an instance, token or task."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from bpm.engine.core.engine_core import EngineCore
from bpm.states import TokenMode
from bpm.store import metrics

#: Timer lateness buckets: a timer due this long ago that has not fired is counted in each
#: bucket up to its lateness (as a histogram's ``le``, the other way round).
LATE_TIMER_BUCKETS: tuple[timedelta, ...] = (
    timedelta(0),
    timedelta(seconds=10),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(hours=1),
)


class WorkQueue(StrEnum):
    """The queue a runnable row's job goes to (as ``bpm.engine.jobs.spec.JobQueue`` names it)."""

    TOKENS = "bpm.tokens"
    COMPENSATION = "bpm.compensation"
    HANDLERS = "bpm.handlers"


_QUEUE_OF_MODE = {
    TokenMode.FORWARD: WorkQueue.TOKENS,
    TokenMode.COMPENSATION: WorkQueue.COMPENSATION,
}


@dataclass(frozen=True, slots=True)
class Runnable:
    """Rows of one queue that wait for a job, and the age of the oldest, in seconds."""

    queue: WorkQueue
    count: int
    oldest_seconds: float


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """Counts read from the database at ``taken_at``; each list holds (labels..., count)."""

    taken_at: datetime
    #: (process key, state, count) of RUNNING and FAILED instances.
    live_instances: tuple[tuple[str, str, int], ...]
    #: One entry per queue, zero counts included.
    runnable: tuple[Runnable, ...]
    #: (late by at least seconds, count) of timers due but not fired.
    late_timers: tuple[tuple[float, int], ...]
    #: (task kind, count) of tasks LOCKED past their lock's expiry.
    expired_locks: tuple[tuple[str, int], ...]
    #: (process key, activity id, count) of open incidents.
    open_incidents: tuple[tuple[str, str, int], ...]
    #: (topic, state, count) of READY and LOCKED external tasks.
    external_tasks: tuple[tuple[str, str, int], ...]


def snapshot(core: EngineCore) -> MetricsSnapshot:
    """Every family in one read-only transaction, one statement each."""
    now = core.clock.now()
    with core.db.transaction() as conn:
        live = metrics.live_instances(conn)
        tokens = metrics.runnable_tokens(conn)
        handlers = metrics.runnable_handler_tasks(conn, now)
        late = metrics.late_timers(conn, now, LATE_TIMER_BUCKETS)
        expired = metrics.expired_locks(conn, now)
        incidents = metrics.open_incidents(conn)
        external = metrics.open_external_tasks(conn)
    return MetricsSnapshot(
        taken_at=now,
        live_instances=tuple(live),
        runnable=_runnable(now, tokens, handlers),
        late_timers=tuple(
            (b.total_seconds(), n) for b, n in zip(LATE_TIMER_BUCKETS, late, strict=True)
        ),
        expired_locks=tuple(expired),
        open_incidents=tuple(incidents),
        external_tasks=tuple(external),
    )


def _runnable(
    now: datetime,
    tokens: list[tuple[str, int, datetime]],
    handlers: tuple[int, datetime | None],
) -> tuple[Runnable, ...]:
    found: dict[WorkQueue, Runnable] = {q: Runnable(q, 0, 0.0) for q in WorkQueue}
    for mode, count, oldest in tokens:
        queue = _QUEUE_OF_MODE.get(TokenMode(mode), WorkQueue.TOKENS)
        found[queue] = Runnable(queue, count, _age(now, oldest))
    ready, since = handlers
    found[WorkQueue.HANDLERS] = Runnable(WorkQueue.HANDLERS, ready, _age(now, since))
    return tuple(found.values())


def _age(now: datetime, since: datetime | None) -> float:
    return max(0.0, (now - since).total_seconds()) if since is not None else 0.0
