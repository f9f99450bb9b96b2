"""How often the recent instances of one definition version arrived at each node, took each
flow and ran each task, and where their tokens are now: a definition's heatmap, over the
newest ``limit`` instances (by start), so its cost does not grow with the history.
PostgreSQL only (it reads fields of the history's JSON data), as the server is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from sqlalchemy import Connection, Text, func, literal, select

from bpm.store.schema import process_instances as p
from bpm.store.schema import task_events, token_events, tokens

#: Token events that put a token at their node (as ``bpm.diagram`` counts them).
ARRIVALS = ("CREATED", "MOVED", "ERROR_CAUGHT", "TIMER_FIRED", "TRANSACTION_CANCELLED")


@dataclass
class Heat:
    """Per node its arrivals and task runs, per flow how often it was taken, per node and
    state the forward tokens there now; ``instances``: how many instances were read."""

    instances: int = 0
    arrivals: dict[str, int] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    flows: dict[str, int] = field(default_factory=dict)
    now: dict[tuple[str, str], int] = field(default_factory=dict)


def _field(column: Any, name: str) -> Any:
    """A text field of a JSON column (PostgreSQL's ``->>``: the server runs on PostgreSQL)."""
    return column.op("->>", return_type=Text())(literal(name))


def heat(conn: Connection, definition_id: UUID, limit: int) -> Heat:
    recent = (
        select(p.c.id)
        .where(p.c.process_def_id == definition_id)
        .order_by(p.c.started_at.desc())
        .limit(limit)
        .subquery()
    )
    out = Heat()
    out.instances = int(conn.execute(select(func.count()).select_from(recent)).scalar_one())
    e = token_events
    forward = _field(e.c.data, "mode").is_distinct_from("COMPENSATION")
    arrived = (
        select(e.c.node_id, func.count())
        .where(e.c.instance_id.in_(select(recent.c.id)), e.c.type.in_(ARRIVALS), forward)
        .group_by(e.c.node_id)
    )
    out.arrivals = {n: int(c) for n, c in conn.execute(arrived) if n is not None}
    flow = func.coalesce(_field(e.c.data, "flow"), _field(e.c.data, "via"))
    taken = (
        select(flow, func.count())
        .where(e.c.instance_id.in_(select(recent.c.id)), e.c.type.in_(("MOVED", "CREATED")))
        .group_by(flow)
    )
    out.flows = {f: int(c) for f, c in conn.execute(taken) if f is not None}
    t = task_events
    ran = (
        select(t.c.node_id, func.count())
        .where(t.c.instance_id.in_(select(recent.c.id)), t.c.type == "LOCKED")
        .group_by(t.c.node_id)
    )
    out.runs = {n: int(c) for n, c in conn.execute(ran) if n is not None}
    here = (
        select(tokens.c.node_id, tokens.c.state, func.count())
        .where(tokens.c.instance_id.in_(select(recent.c.id)), tokens.c.mode == "FORWARD")
        .group_by(tokens.c.node_id, tokens.c.state)
    )
    out.now = {(n, s): int(c) for n, s, c in conn.execute(here)}
    return out
