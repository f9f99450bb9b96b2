"""The form files deployments hold (Camunda Forms ``.form`` JSON, embedded HTML forms): read by
name from one deployment, or every ``.form`` file in deployment order (a form reference by id
picks among them)."""

from __future__ import annotations

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


def camunda_forms(conn: Connection) -> list[FormFile]:
    """Every deployed ``.form`` file, oldest deployment first."""
    stmt = (
        select(r.c.deployment_id, r.c.name, r.c.content)
        .join(d, d.c.id == r.c.deployment_id)
        .where(func.lower(r.c.name).like("%.form"))
        .order_by(d.c.deployment_time, d.c.id, r.c.name)
    )
    return [FormFile(dep, name, bytes(content)) for dep, name, content in conn.execute(stmt)]
