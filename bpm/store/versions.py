"""Picking the version of a definition (a process or a decision) that a deployment binding
names: the one deployed in that deployment, else the newest deployed by then. One rule for
both kinds, so a call activity and a business rule task bind alike."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Column, Connection, Row, Table, select


def of_deployment_or_before(
    conn: Connection,
    table: Table,
    columns: Sequence[Column[Any]],
    key: str,
    deployment_id: UUID,
    deployed_at: datetime,
) -> Row[Any] | None:
    """The row of ``key`` in ``table`` deployed with ``deployment_id``, else the newest
    version created by ``deployed_at`` (a changed-only deployment leaves unchanged files
    out)."""
    t = table
    same = select(*columns).where(t.c.key == key, t.c.deployment_id == deployment_id)
    row = conn.execute(same).first()
    if row is None:
        before = (
            select(*columns)
            .where(t.c.key == key, t.c.created_at <= deployed_at)
            .order_by(t.c.version.desc())
            .limit(1)
        )
        row = conn.execute(before).first()
    return row
