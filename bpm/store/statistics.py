"""Counts over many instances at once: per definition (running, failed, ended instances and
open incidents by type) and per node of one definition (live tokens there and their open
incidents), for Camunda's ``/statistics`` endpoints and the cockpit.

Each count is one grouped statement that an index answers without reading the tables'
rows: the live instances by the partial index on (definition, state, id), the
open incidents by their partial index; so they stay fast when most of a million instances
have ended (the cockpit's census of every state, ``instance_counts``, reads them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, and_, func, select

from bpm.states import LIVE_INSTANCE, LIVE_TOKEN, IncidentState, InstanceState, TokenMode
from bpm.store.incident_queries import FAILED_JOB, TYPE
from bpm.store.schema import external_tasks as task_table
from bpm.store.schema import incidents as i
from bpm.store.schema import process_instances as p
from bpm.store.schema import tokens as t


@dataclass(frozen=True)
class LiveCounts:
    """A definition's live instances: ``running`` counts the failed ones too (Camunda's
    running instances)."""

    running: int = 0
    failed: int = 0


@dataclass(frozen=True)
class IncidentCount:
    """Open incidents of one type (``failedJob``, ``failedExternalTask``, or bpm's kind)."""

    type: str
    count: int


@dataclass(frozen=True)
class NodeCount:
    """Live forward tokens at one node in one state (and what a waiting one waits for)."""

    node_id: str
    state: str
    wait_kind: str | None
    count: int


def live_counts(conn: Connection) -> dict[UUID, LiveCounts]:
    """From the partial index of live instances alone, however many have ended."""
    live = (
        select(
            p.c.process_def_id,
            func.count(),
            func.count().filter(p.c.state == InstanceState.FAILED),
        )
        .where(p.c.state.in_(sorted(LIVE_INSTANCE)))
        .group_by(p.c.process_def_id)
    )
    return {d: LiveCounts(int(n), int(f)) for d, n, f in conn.execute(live)}


def open_incidents_by_definition(conn: Connection) -> dict[UUID, list[IncidentCount]]:
    stmt = (
        select(p.c.process_def_id, TYPE, func.count())
        .select_from(i)
        .join(p, _live_instance_of(i.c.instance_id))
        .outerjoin(task_table, task_table.c.id == i.c.task_id)
        .where(i.c.state == IncidentState.OPEN)
        .group_by(p.c.process_def_id, TYPE)
        .order_by(p.c.process_def_id, TYPE)
    )
    out: dict[UUID, list[IncidentCount]] = {}
    for d, kind, n in conn.execute(stmt):
        out.setdefault(d, []).append(IncidentCount(str(kind), int(n)))
    return out


def node_counts(conn: Connection, definition_id: UUID) -> list[NodeCount]:
    """The live forward tokens of the definition's live instances, by node and state."""
    stmt = (
        select(t.c.node_id, t.c.state, t.c.wait_kind, func.count())
        .select_from(p)
        .join(t, t.c.instance_id == p.c.id)
        .where(
            p.c.process_def_id == definition_id,
            p.c.state.in_(sorted(LIVE_INSTANCE)),
            t.c.state.in_(sorted(LIVE_TOKEN)),
            t.c.mode == TokenMode.FORWARD,
        )
        .group_by(t.c.node_id, t.c.state, t.c.wait_kind)
        .order_by(t.c.node_id)
    )
    return [NodeCount(n, s, w, int(c)) for n, s, w, c in conn.execute(stmt)]


def open_incidents_by_node(conn: Connection, definition_id: UUID) -> dict[str, list[IncidentCount]]:
    stmt = (
        select(i.c.node_id, TYPE, func.count())
        .select_from(i)
        .join(p, _live_instance_of(i.c.instance_id))
        .outerjoin(task_table, task_table.c.id == i.c.task_id)
        .where(i.c.state == IncidentState.OPEN, p.c.process_def_id == definition_id)
        .group_by(i.c.node_id, TYPE)
        .order_by(i.c.node_id, TYPE)
    )
    out: dict[str, list[IncidentCount]] = {}
    for node, kind, n in conn.execute(stmt):
        out.setdefault(str(node or ""), []).append(IncidentCount(str(kind), int(n)))
    return out


def _live_instance_of(instance_id: ColumnElement[UUID]) -> ColumnElement[bool]:
    """The instance of an open incident is live (ending an instance resolves its incidents);
    saying so lets the join read the live instances' index instead of every instance."""
    return and_(p.c.id == instance_id, p.c.state.in_(sorted(LIVE_INSTANCE)))


def failed_jobs(counts: Sequence[IncidentCount]) -> int:
    """Camunda's failed jobs: the incidents of failed handler tasks (its jobs)."""
    return sum(c.count for c in counts if c.type == FAILED_JOB)
