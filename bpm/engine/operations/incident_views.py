"""Incidents and jobs as an API lists them. A job is what Camunda runs in its job executor:
here an open handler task (run by a worker's registered handler) or a scheduled timer."""

from __future__ import annotations

from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.errors import NotFound
from bpm.store import incident_queries, job_queries
from bpm.store.incident_queries import FoundIncident, IncidentQuery
from bpm.store.job_queries import FoundJob, JobQuery
from bpm.store.paging import Page


def incidents(core: EngineCore, q: IncidentQuery, page: Page) -> list[FoundIncident]:
    with core.db.transaction() as conn:
        return incident_queries.find(conn, q, page)


def count_incidents(core: EngineCore, q: IncidentQuery) -> int:
    with core.db.transaction() as conn:
        return incident_queries.count(conn, q)


def incident(core: EngineCore, incident_id: UUID, *, open_only: bool = True) -> FoundIncident:
    found = incidents(core, IncidentQuery(open_only, incident_ids=[incident_id]), Page(limit=1))
    if not found:
        which = "open incident" if open_only else "incident"
        raise NotFound(f"no {which} has id {incident_id}")
    return found[0]


def jobs(core: EngineCore, q: JobQuery, page: Page) -> list[FoundJob]:
    with core.db.transaction() as conn:
        return job_queries.find(conn, q, page)


def count_jobs(core: EngineCore, q: JobQuery) -> int:
    with core.db.transaction() as conn:
        return job_queries.count(conn, q)


def job(core: EngineCore, job_id: UUID) -> FoundJob:
    found = jobs(core, JobQuery(job_ids=[job_id]), Page(limit=1))
    if not found:
        raise NotFound(f"Job with id {job_id} does not exist")
    return found[0]
