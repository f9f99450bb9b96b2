"""The counts the metrics endpoint shows, one statement per family, each read through a
partial index over the few rows still live (never the ended instances or the history):
so a scrape costs the same with ten or ten million finished instances."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, literal, or_, select

from bpm.states import (
    LIVE_INSTANCE,
    IncidentState,
    TaskKind,
    TaskState,
    TimerState,
    TokenState,
)
from bpm.store.schema import external_tasks as et
from bpm.store.schema import incidents as inc
from bpm.store.schema import process_instances as pi
from bpm.store.schema import timers as tm
from bpm.store.schema import tokens as tok

#: External task states a worker can still act on (ended ones are history).
OPEN_TASK = (TaskState.READY, TaskState.LOCKED)


def live_instances(conn: Connection) -> list[tuple[str, str, int]]:
    """(process key, state, count) of RUNNING and FAILED instances
    (``ix_process_instances_live``)."""
    stmt = (
        select(pi.c.process_key, pi.c.state, func.count())
        .where(pi.c.state.in_(sorted(LIVE_INSTANCE)))
        .group_by(pi.c.process_key, pi.c.state)
    )
    return [(str(k), str(s), int(n)) for k, s, n in conn.execute(stmt)]


def runnable_tokens(conn: Connection) -> list[tuple[str, int, datetime]]:
    """(mode, count, oldest change) of ACTIVE tokens: each is a step a job is to take
    (``ix_tokens_active``)."""
    stmt = (
        select(tok.c.mode, func.count(), func.min(tok.c.updated_at))
        .where(tok.c.state == TokenState.ACTIVE)
        .group_by(tok.c.mode)
    )
    return [(str(m), int(n), oldest) for m, n, oldest in conn.execute(stmt)]


def runnable_handler_tasks(conn: Connection, now: datetime) -> tuple[int, datetime | None]:
    """How many READY handler tasks are due now, and since when the oldest waits
    (``ix_external_tasks_ready``)."""
    since = func.coalesce(et.c.retry_at, et.c.created_at)
    stmt = select(func.count(), func.min(since)).where(
        et.c.state == TaskState.READY,
        et.c.kind == TaskKind.HANDLER,
        or_(et.c.retry_at.is_(None), et.c.retry_at <= now),
    )
    count, oldest = conn.execute(stmt).one()
    return int(count), oldest


def late_timers(conn: Connection, now: datetime, buckets: Sequence[timedelta]) -> list[int]:
    """For each of ``buckets``: how many SCHEDULED timers were due at least that long ago
    and have not fired (``ix_timers_due``)."""
    counts: list[Any] = [func.count().filter(tm.c.fire_at <= now - late) for late in buckets]
    stmt = select(*counts).where(tm.c.state == TimerState.SCHEDULED, tm.c.fire_at <= now)
    return [int(n) for n in conn.execute(stmt).one()]


def expired_locks(conn: Connection, now: datetime) -> list[tuple[str, int]]:
    """(task kind, count) of LOCKED tasks whose lock has run out: a worker that locked
    them is gone or stuck (``ix_external_tasks_locked``)."""
    stmt = (
        select(et.c.kind, func.count())
        .where(et.c.state == TaskState.LOCKED, et.c.lock_expire_at < now)
        .group_by(et.c.kind)
    )
    return [(str(k), int(n)) for k, n in conn.execute(stmt)]


def open_incidents(conn: Connection) -> list[tuple[str, str, int]]:
    """(process key, activity, count) of open incidents (``ix_incidents_open``)."""
    node = func.coalesce(inc.c.node_id, literal(""))
    stmt = (
        select(pi.c.process_key, node, func.count())
        .select_from(inc.join(pi, pi.c.id == inc.c.instance_id))
        .where(inc.c.state == IncidentState.OPEN)
        .group_by(pi.c.process_key, node)
    )
    return [(str(k), str(a), int(n)) for k, a, n in conn.execute(stmt)]


def open_external_tasks(conn: Connection) -> list[tuple[str, str, int]]:
    """(topic, state, count) of READY and LOCKED external tasks (``ix_external_tasks_fetch``
    and ``ix_external_tasks_locked``)."""
    topic = func.coalesce(et.c.topic, literal(""))
    stmt = (
        select(topic, et.c.state, func.count())
        .where(
            et.c.kind == TaskKind.EXTERNAL,
            or_(
                (et.c.state == TaskState.READY) & (et.c.kind == TaskKind.EXTERNAL),
                et.c.state == TaskState.LOCKED,
            ),
        )
        .group_by(topic, et.c.state)
    )
    return [(str(t), str(s), int(n)) for t, s, n in conn.execute(stmt)]
