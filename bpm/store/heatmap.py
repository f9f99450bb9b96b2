"""A definition's heatmap in a few aggregate queries: over all its instances, how often a token
arrived at each node and took each flow (history), and where tokens are now (live tokens,
failed ones with their open incidents).

Each query starts from the definition's instances (``ix_process_instances_definition``) and
reaches their rows through the per-instance indexes of the history and token tables, so the
cost follows the definition's own instances, not the size of the tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import ColumnElement, Connection, Select, String, and_, func, literal, or_, select

from bpm.history_reading import COUNTED_ARRIVALS
from bpm.states import IncidentState, TokenEvent, TokenMode, TokenState, WaitKind
from bpm.store.schema import incidents as inc
from bpm.store.schema import process_instances as pi
from bpm.store.schema import token_events as te
from bpm.store.schema import tokens as tk

#: The most incident messages kept per node (a tooltip, not a report).
REASONS_PER_NODE = 3


@dataclass(frozen=True)
class DefinitionHeat:
    instances: int
    entered: Mapping[str, int]
    flows: Mapping[str, int]
    live: Mapping[str, int]
    failed: Mapping[str, int]
    reasons: Mapping[str, tuple[str, ...]]


def _field(conn: Connection, column: ColumnElement[object], name: str) -> ColumnElement[str]:
    """A text field of a JSON column (JSONB on PostgreSQL, JSON text on SQLite)."""
    if conn.dialect.name == "postgresql":
        return column.op("->>", return_type=String())(literal(name, String()))
    return func.json_extract(column, f"$.{name}", type_=String())


def of_definition(conn: Connection, def_id: UUID, recent: int | None = None) -> DefinitionHeat:
    """``recent``: over the newest that many instances only (a page's heatmap stays fast
    whatever the definition's history holds); None: over all of them."""
    mine: ColumnElement[bool] = pi.c.process_def_id == def_id
    if recent is not None:
        newest = select(pi.c.id).where(mine).order_by(pi.c.started_at.desc()).limit(recent)
        mine = pi.c.id.in_(newest.scalar_subquery())
    instances = conn.execute(select(func.count()).select_from(pi).where(mine)).scalar_one()
    forward = or_(
        _field(conn, te.c.data, "mode").is_(None),
        _field(conn, te.c.data, "mode") != TokenMode.COMPENSATION,
    )
    history = te.join(pi, pi.c.id == te.c.instance_id)
    iteration = func.coalesce(_field(conn, te.c.data, "scope"), "") == te.c.node_id
    entered = select(te.c.node_id, func.count()).select_from(history)
    entered = entered.where(mine, te.c.type.in_(COUNTED_ARRIVALS), forward, ~iteration)
    flow = func.coalesce(_field(conn, te.c.data, "flow"), _field(conn, te.c.data, "via"))
    taken = select(flow, func.count()).select_from(history)
    taken = taken.where(
        mine, te.c.type.in_((TokenEvent.MOVED, TokenEvent.CREATED)), forward, flow.is_not(None)
    )
    now = tk.join(pi, pi.c.id == tk.c.instance_id)
    live = select(tk.c.node_id, func.count()).select_from(now)
    live = live.where(
        mine,
        tk.c.state.in_((TokenState.ACTIVE, TokenState.WAITING)),
        tk.c.mode == TokenMode.FORWARD,
        func.coalesce(tk.c.wait_kind, "") != WaitKind.CHILDREN,
    )
    failed = select(tk.c.node_id, func.count()).select_from(now)
    failed = failed.where(mine, tk.c.state == TokenState.FAILED)
    return DefinitionHeat(
        instances=int(instances),
        entered=_counts(conn, entered.group_by(te.c.node_id)),
        flows=_counts(conn, taken.group_by(flow)),
        live=_counts(conn, live.group_by(tk.c.node_id)),
        failed=_counts(conn, failed.group_by(tk.c.node_id)),
        reasons=_reasons(conn, mine),
    )


def _counts(conn: Connection, stmt: Select[str, int]) -> dict[str, int]:
    return {str(key): int(n) for key, n in conn.execute(stmt) if key is not None}


def _reasons(conn: Connection, mine: ColumnElement[bool]) -> dict[str, tuple[str, ...]]:
    stmt = (
        select(inc.c.node_id, inc.c.message)
        .select_from(inc.join(pi, pi.c.id == inc.c.instance_id))
        .where(and_(mine, inc.c.state == IncidentState.OPEN, inc.c.node_id.is_not(None)))
        .distinct()
        .limit(200)
    )
    out: dict[str, list[str]] = {}
    for node_id, message in conn.execute(stmt):
        kept = out.setdefault(str(node_id), [])
        if len(kept) < REASONS_PER_NODE:
            kept.append(str(message))
    return {node: tuple(messages) for node, messages in out.items()}
