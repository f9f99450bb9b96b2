"""Comments on user tasks: written once, read by task, deleted with their instance."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from sqlalchemy import Connection, select

from bpm.store.ids import new_id
from bpm.store.schema import task_comments as t


@dataclass(frozen=True)
class CommentRow:
    id: UUID
    task_id: UUID
    instance_id: UUID
    user_id: str | None
    message: str
    at: datetime


_COLS = (t.c.id, t.c.task_id, t.c.instance_id, t.c.user_id, t.c.message, t.c.at)


def insert(
    conn: Connection,
    task_id: UUID,
    instance_id: UUID,
    user_id: str | None,
    message: str,
    at: datetime,
) -> CommentRow:
    row = CommentRow(new_id(), task_id, instance_id, user_id, message, at)
    conn.execute(
        t.insert(),
        {
            "id": row.id,
            "task_id": task_id,
            "instance_id": instance_id,
            "user_id": user_id,
            "message": message,
            "at": at,
        },
    )
    return row


def of_task(conn: Connection, task_id: UUID) -> list[CommentRow]:
    """Oldest first."""
    stmt = select(*_COLS).where(t.c.task_id == task_id).order_by(t.c.at, t.c.id)
    return [CommentRow(*r) for r in conn.execute(stmt)]
