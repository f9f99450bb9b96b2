"""The form files deployments hold (Camunda Forms ``.form`` JSON, embedded HTML forms): read by
name from one deployment, or the ``.form`` files in deployment order (a form reference by id
picks among them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import Connection, func, select

from bpm.store.schema import deployment_resources as r
from bpm.store.schema import deployments as d


@dataclass(frozen=True)
class FormFile:
    deployment_id: UUID
    name: str
    content: bytes


def by_name(conn: Connection, deployment_id: UUID, name: str) -> FormFile | None:
    row = conn.execute(
        select(r.c.content).where(r.c.deployment_id == deployment_id, r.c.name == name)
    ).first()
    return None if row is None else FormFile(deployment_id, name, bytes(row[0]))


def camunda_forms(
    conn: Connection, *, deployment_id: UUID | None = None, newest_first: bool = False
) -> Iterator[FormFile]:
    """The deployed ``.form`` files (of one deployment, when given), oldest deployment first
    or newest first; read as the caller goes, so one that stops at a match reads no more."""
    order = (
        (d.c.deployment_time.desc(), d.c.id.desc())
        if newest_first
        else (d.c.deployment_time, d.c.id)
    )
    stmt = (
        select(r.c.deployment_id, r.c.name, r.c.content)
        .join(d, d.c.id == r.c.deployment_id)
        .where(func.lower(r.c.name).like("%.form"))
        .order_by(*order, r.c.name)
    )
    if deployment_id is not None:
        stmt = stmt.where(r.c.deployment_id == deployment_id)
    with conn.execute(stmt.execution_options(yield_per=16)) as found:  # closed if left early
        for dep, name, content in found:
            yield FormFile(dep, name, bytes(content))
