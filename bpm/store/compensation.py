"""Compensation records: what succeeded, in what order, and how to undo it."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import Connection, bindparam, func, select

from bpm.states import RecordState
from bpm.store.ids import new_id
from bpm.store.rows import RecordRow, from_row
from bpm.store.schema import compensation_records as t
from bpm.store.schema import compensation_seq

_COLS = (
    t.c.id,
    t.c.instance_id,
    t.c.token_id,
    t.c.node_id,
    t.c.scope_id,
    t.c.handler,
    t.c.seq,
    t.c.status,
    t.c.created_at,
    t.c.called_instance_id,
)
# A FAILED record can still complete: an operator retried its compensation.
_FINISH = (
    t.update()
    .where(
        t.c.id == bindparam("b_id"),
        t.c.status.in_((RecordState.PENDING, RecordState.FAILED)),
        t.c.status != bindparam("status"),
    )
    .values(status=bindparam("status"))
)


def record(
    conn: Connection,
    *,
    instance_id: UUID,
    token_id: UUID,
    node_id: str,
    scope_id: str | None,
    handler: str,
    now: datetime,
    called_instance_id: UUID | None = None,
) -> RecordRow:
    """Insert a PENDING record numbered after every earlier success of the instance."""
    if conn.dialect.name == "postgresql":
        seq = conn.execute(select(compensation_seq.next_value())).scalar_one()
    else:  # one writer at a time
        seq = conn.execute(
            select(func.coalesce(func.max(t.c.seq), 0) + 1).where(t.c.instance_id == instance_id)
        ).scalar_one()
    row = RecordRow(
        new_id(),
        instance_id,
        token_id,
        node_id,
        scope_id,
        handler,
        int(seq),
        RecordState.PENDING,
        now,
        called_instance_id,
    )
    conn.execute(t.insert(), {c.name: getattr(row, c.name) for c in _COLS})
    return row


_CANCEL = (
    t.update()
    .where(t.c.id.in_(bindparam("ids", expanding=True)), t.c.status == RecordState.PENDING)
    .values(status=RecordState.CANCELLED)
    .returning(*_COLS)
)


def cancel(conn: Connection, record_ids: list[UUID]) -> list[RecordRow]:
    """PENDING -> CANCELLED; returns the records that changed."""
    if not record_ids:
        return []
    rows = conn.execute(_CANCEL, {"ids": record_ids})
    return sorted((from_row(RecordRow, row) for row in rows), key=lambda r: -r.seq)


def of_instance(conn: Connection, instance_id: UUID) -> list[RecordRow]:
    stmt = select(*_COLS).where(t.c.instance_id == instance_id).order_by(t.c.seq)
    return [from_row(RecordRow, row) for row in conn.execute(stmt)]


def finish(conn: Connection, record_id: UUID, status: str) -> bool:
    """PENDING -> COMPLETED or FAILED (FAILED -> COMPLETED after a retry); False when it was
    already in that state."""
    return conn.execute(_FINISH, {"b_id": record_id, "status": status}).rowcount == 1


def get(conn: Connection, record_id: UUID) -> RecordRow | None:
    row = conn.execute(select(*_COLS).where(t.c.id == record_id)).first()
    return from_row(RecordRow, row) if row is not None else None


def has_pending(conn: Connection, instance_id: UUID) -> bool:
    """Whether the instance has a success still to undo (a called instance's caller then
    records the call, so its saga can undo what the called instance did)."""
    stmt = (
        select(t.c.id)
        .where(t.c.instance_id == instance_id, t.c.status == RecordState.PENDING)
        .limit(1)
    )
    return conn.execute(stmt).first() is not None


def standing_for(conn: Connection, called_instance_id: UUID) -> RecordRow | None:
    """The caller's PENDING record for a call to ``called_instance_id``, if any."""
    stmt = select(*_COLS).where(
        t.c.called_instance_id == called_instance_id,
        t.c.status.in_((RecordState.PENDING, RecordState.FAILED)),
    )
    row = conn.execute(stmt).first()
    return from_row(RecordRow, row) if row is not None else None
