"""Retention: finding ended instances past their time to live, and deleting all their rows.

Only instances in an end state (COMPLETED, TERMINATED, CANCELLED) with an ``ended_at`` are ever
selected; RUNNING and FAILED instances have no ``ended_at`` and are not in the index the
selection reads. The caller deletes what it claimed in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, Table, delete, func, select

from bpm.states import InstanceState
from bpm.store.schema import (
    compensation_records,
    engine_events,
    external_tasks,
    incidents,
    local_variables,
    process_definitions,
    process_instances,
    signal_deliveries,
    signals,
    task_comments,
    task_events,
    timers,
    token_events,
    token_links,
    tokens,
    variables,
)

#: The states an instance never leaves: only these are ever deleted.
ENDED = (InstanceState.COMPLETED, InstanceState.TERMINATED, InstanceState.CANCELLED)

#: Rows that hang off an instance, children before what they refer to (foreign key order).
_BY_INSTANCE: tuple[Table, ...] = (
    signal_deliveries,
    token_events,
    task_events,
    task_comments,
    engine_events,
    incidents,
    timers,
    compensation_records,
    external_tasks,
    variables,
    local_variables,
)

pi = process_instances


def definition_ttls(conn: Connection) -> list[tuple[UUID, int | None]]:
    """Every definition's id and ``history_ttl_seconds`` (a small table: a row per version)."""
    t = process_definitions
    return [
        (row.id, row.history_ttl_seconds)
        for row in conn.execute(select(t.c.id, t.c.history_ttl_seconds).order_by(t.c.id))
    ]


def _due(def_id: UUID, ended_before: datetime) -> list[ColumnElement[bool]]:
    # ended_at IS NOT NULL repeats the partial index's predicate so the planner may use it.
    return [
        pi.c.process_def_id == def_id,
        pi.c.ended_at.is_not(None),
        pi.c.ended_at <= ended_before,
        pi.c.state.in_(ENDED),
    ]


def claim_due(conn: Connection, def_id: UUID, ended_before: datetime, limit: int) -> list[UUID]:
    """Lock up to ``limit`` ended instances of ``def_id`` that ended at or before
    ``ended_before``, oldest first, skipping rows another transaction holds (PostgreSQL)."""
    stmt = (
        select(pi.c.id)
        .where(*_due(def_id, ended_before))
        .order_by(pi.c.ended_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [row.id for row in conn.execute(stmt)]


def count_due(conn: Connection, def_id: UUID, ended_before: datetime) -> int:
    return int(
        conn.execute(
            select(func.count()).select_from(pi).where(*_due(def_id, ended_before))
        ).scalar_one()
    )


def delete_instances(conn: Connection, instance_ids: Sequence[UUID]) -> dict[str, int]:
    """Delete the instances and every row of theirs; returns the rows deleted per table.

    The instance rows must be locked by this transaction (``claim_due``). Deleting is
    idempotent: ids already gone delete nothing.
    """
    ids = list(instance_ids)
    counts: dict[str, int] = {}
    if not ids:
        return counts
    for table in _BY_INSTANCE:
        counts[table.name] = conn.execute(
            delete(table).where(table.c.instance_id.in_(ids))
        ).rowcount
    # The signals it threw, once delivered (a signal still being delivered keeps its row, and
    # its deliveries to other instances, until it is done).
    counts[signals.name] = conn.execute(
        delete(signals).where(signals.c.instance_id.in_(ids), signals.c.finished_at.is_not(None))
    ).rowcount
    token_ids = select(tokens.c.id).where(tokens.c.instance_id.in_(ids))
    counts[token_links.name] = sum(
        conn.execute(delete(token_links).where(column.in_(token_ids))).rowcount
        for column in (token_links.c.parent_token_id, token_links.c.child_token_id)
    )
    counts[tokens.name] = conn.execute(delete(tokens).where(tokens.c.instance_id.in_(ids))).rowcount
    counts[pi.name] = conn.execute(
        delete(pi).where(pi.c.id.in_(ids), pi.c.state.in_(ENDED))
    ).rowcount
    return counts


def limit_lock_waits(conn: Connection, milliseconds: int) -> None:
    """Make this transaction give up (a retryable error) rather than wait longer for a lock."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(milliseconds)}")
