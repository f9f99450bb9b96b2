"""History as an API lists it: instances with their definitions' facts, the visits of each
node (derived from the token history: a visit starts when a token arrives at a node and ends
when it leaves, completes or is cancelled), and the variables instances hold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

from bpm.definitions.model import Node, NodeType, ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations.instance_views import BODY, BODY_TYPE
from bpm.errors import InvalidRequest, NotFound
from bpm.history_reading import VISIT_STARTS, HistoryEvent, HistoryTable
from bpm.states import TokenEvent, TokenState
from bpm.store import history, history_queries, instances
from bpm.store.history_queries import FoundVariable, InstanceHistoryQuery, VariableQuery
from bpm.store.paging import Page
from bpm.store.rows import EventRow, InstanceRow


@dataclass(frozen=True)
class InstanceHistory:
    instance: InstanceRow
    definition_name: str
    definition_version: int
    start_node: str | None


@dataclass(frozen=True)
class Visit:
    """One visit of a token to a node. ``type`` is the activity type as Camunda 7 names it
    (``startEvent``, ``noneEndEvent``, ``userTask``, ``exclusiveGateway``, ...)."""

    id: str
    node_id: str
    name: str | None
    type: str
    instance_id: UUID
    definition_id: UUID
    process_key: str
    token_id: UUID
    started_at: datetime
    ended_at: datetime | None = None
    canceled: bool = False
    complete_scope: bool = False
    #: A user task's visit: its task, and its assignee when the visit ended (or now).
    task_id: UUID | None = None
    assignee: str | None = None


@dataclass(frozen=True)
class VisitQuery:
    instance_id: UUID
    node_ids: Sequence[str] | None = None
    types: Sequence[str] | None = None
    token_ids: Sequence[UUID] | None = None
    finished: bool | None = None
    canceled: bool | None = None
    complete_scope: bool | None = None
    started_before: datetime | None = None
    started_after: datetime | None = None
    finished_before: datetime | None = None
    finished_after: datetime | None = None
    visit_ids: Sequence[str] | None = None


def find_instances(core: EngineCore, q: InstanceHistoryQuery, page: Page) -> list[InstanceHistory]:
    with core.db.transaction() as conn:
        found = history_queries.find_instances(conn, q, page)
        graphs = {
            f.instance.process_def_id: core.graph(f.instance.process_def_id, conn) for f in found
        }
    return [
        InstanceHistory(
            f.instance,
            f.definition_name,
            f.definition_version,
            graphs[f.instance.process_def_id].starts.get(None),
        )
        for f in found
    ]


def count_instances(core: EngineCore, q: InstanceHistoryQuery) -> int:
    with core.db.transaction() as conn:
        return history_queries.count_instances(conn, q)


def instance(core: EngineCore, instance_id: UUID) -> InstanceHistory:
    found = find_instances(core, InstanceHistoryQuery(instance_ids=[instance_id]), Page(limit=1))
    if not found:
        raise NotFound(f"Historic process instance with id {instance_id} does not exist")
    return found[0]


def find_variables(core: EngineCore, q: VariableQuery, page: Page) -> list[FoundVariable]:
    with core.db.transaction() as conn:
        return history_queries.find_variables(conn, q, page)


def count_variables(core: EngineCore, q: VariableQuery) -> int:
    with core.db.transaction() as conn:
        return history_queries.count_variables(conn, q)


VISIT_SORTS = ("id", "token_id", "node_id", "name", "type", "started", "ended", "duration")


def find_visits(core: EngineCore, q: VisitQuery, page: Page) -> list[Visit]:
    """The visits that match, ordered and paged (none for an instance that does not exist:
    a filter that matches nothing)."""
    found = _matching_visits(core, q)
    for name, descending in reversed(page.order):
        if name not in VISIT_SORTS:
            raise InvalidRequest(
                f"cannot sort by {name!r}; sortBy is one of {', '.join(VISIT_SORTS)}"
            )
        found.sort(key=partial(_sort_key, name=name), reverse=descending)
    return found[page.offset : page.offset + page.limit]


def count_visits(core: EngineCore, q: VisitQuery) -> int:
    return len(_matching_visits(core, q))


def _matching_visits(core: EngineCore, q: VisitQuery) -> list[Visit]:
    try:
        every = visits(core, q.instance_id)
    except NotFound:
        return []
    return [v for v in every if _matches(v, q)]


def visits(core: EngineCore, instance_id: UUID) -> list[Visit]:
    """Every node visit of the instance in the order they started."""
    with core.db.transaction() as conn:
        row = instances.get(conn, instance_id)
        if row is None:
            raise NotFound(f"instance {instance_id} does not exist")
        g = core.graph(row.process_def_id, conn)
        events = history.of_instance(conn, instance_id)
    return _derive(row, g, events)


_GONE = {TokenState.COMPLETED, TokenState.CANCELLED}


def _derive(row: InstanceRow, g: ProcessGraph, events: list[EventRow]) -> list[Visit]:
    """A token's visit starts when it arrives at a node (created there, moved there, or at
    a node other than its last); it ends when the token arrives elsewhere, completes, is
    cancelled (a canceled visit), joins, or forks (the parent of a fork waits for its
    children at no node). Visits are in the order they started (history ids are)."""
    done: list[tuple[int, Visit]] = []
    current: dict[UUID, tuple[int, Visit]] = {}
    seen: dict[tuple[UUID, str], int] = {}
    for e in events:
        held = current.get(e.token_id) if e.token_id is not None else None
        if e.table == HistoryTable.TASK and held is not None and e.node_id == held[1].node_id:
            if held[1].type != NodeType.USER_TASK.value:
                continue  # Camunda names the task of a user task's visit only
            assignee = (e.data or {}).get("assignee", held[1].assignee)
            current[held[1].token_id] = (
                held[0],
                replace(held[1], task_id=e.task_id, assignee=assignee),
            )
            continue
        if e.table != HistoryTable.TOKEN or e.token_id is None or e.node_id is None:
            continue
        canceled = e.to_state == TokenState.CANCELLED
        ends = e.to_state in _GONE or e.type == TokenEvent.FORKED
        moved = held is not None and held[1].node_id.removesuffix(BODY) != e.node_id
        arrives = e.type in VISIT_STARTS or moved
        if held is not None and (arrives or ends):
            del current[e.token_id]
            done.append((held[0], _ended(g, held[1], e.at, canceled and not arrives)))
        if arrives:
            visit = _visit(row, g, e, seen)
            if ends:
                done.append((e.id, _ended(g, visit, e.at, canceled)))
            else:
                current[e.token_id] = (e.id, visit)
    return [v for _, v in sorted([*done, *current.values()], key=lambda sv: sv[0])]


def _visit(
    row: InstanceRow, g: ProcessGraph, e: EventRow, seen: dict[tuple[UUID, str], int]
) -> Visit:
    assert e.token_id is not None and e.node_id is not None
    n = seen.get((e.token_id, e.node_id), 0) + 1
    seen[(e.token_id, e.node_id)] = n
    node = g.nodes.get(e.node_id)
    # a multi-instance body (not an iteration, created at its node's own scope) is
    # Camunda's activity of its own, X#multiInstanceBody
    body = node is not None and node.multi_instance and not HistoryEvent.of_row(e).iteration
    node_id = f"{e.node_id}{BODY}" if body else e.node_id
    return Visit(
        f"{node_id}:{e.token_id}" + (f"#{n}" if n > 1 else ""),
        node_id,
        node.name if node else None,
        BODY_TYPE if body else activity_type(node),
        row.id,
        row.process_def_id,
        row.process_key,
        e.token_id,
        e.at,
    )


def _ended(g: ProcessGraph, visit: Visit, at: datetime, canceled: bool) -> Visit:
    node = g.nodes.get(visit.node_id)
    scope = not canceled and node is not None and node.type is NodeType.END
    return replace(visit, ended_at=at, canceled=canceled, complete_scope=scope)


def activity_type(node: Node | None) -> str:
    """The node's activity type as Camunda 7 names it in its history."""
    if node is None:
        return "unknown"
    if node.transaction:
        return "transaction"
    match node.type:
        case NodeType.END:
            if node.cancel:
                return "cancelEndEvent"
            if node.terminate:
                return "terminateEndEvent"
            if node.error_code is not None:
                return "errorEndEvent"
            if node.signal is not None:
                return "signalEndEvent"
            return "compensationEndEvent" if node.compensate else "noneEndEvent"
        case NodeType.TIMER:
            return "intermediateTimer"
        case NodeType.MESSAGE:
            return "intermediateMessageCatch"
        case NodeType.CONDITIONAL:
            return "intermediateConditional"
        case NodeType.COMPENSATION_THROW:
            return "intermediateCompensationThrowEvent"
        case NodeType.ESCALATION_THROW:
            return "intermediateEscalationThrowEvent"
        case NodeType.SIGNAL:
            return "intermediateSignalCatch"
        case NodeType.SIGNAL_THROW:
            return "intermediateSignalThrow"
        case NodeType.BOUNDARY:
            if node.cancel:
                return "cancelBoundaryCatch"
            if node.timer is not None:
                return "boundaryTimer"
            if node.message is not None:
                return "boundaryMessage"
            if node.escalation is not None:
                return "boundaryEscalation"
            if node.condition is not None:
                return "boundaryConditional"
            if node.signal is not None:
                return "boundarySignal"
            return "boundaryError" if node.catches is not None else "boundaryEvent"
    return node.type.value


def _matches(v: Visit, q: VisitQuery) -> bool:
    checks: list[bool] = [
        q.visit_ids is None or v.id in q.visit_ids,
        q.node_ids is None or v.node_id in q.node_ids,
        q.types is None or v.type in q.types,
        q.token_ids is None or v.token_id in q.token_ids,
        q.finished is None or (v.ended_at is not None) == q.finished,
        q.canceled is None or v.canceled == q.canceled,
        q.complete_scope is None or v.complete_scope == q.complete_scope,
        q.started_before is None or v.started_at < q.started_before,
        q.started_after is None or v.started_at > q.started_after,
        q.finished_before is None or (v.ended_at is not None and v.ended_at < q.finished_before),
        q.finished_after is None or (v.ended_at is not None and v.ended_at > q.finished_after),
    ]
    return all(checks)


def _sort_key(v: Visit, *, name: str) -> Any:
    """Nulls last ascending (as PostgreSQL orders them)."""
    value: Any = {
        "id": v.id,
        "token_id": str(v.token_id),
        "node_id": v.node_id,
        "name": v.name,
        "type": v.type,
        "started": v.started_at,
        "ended": v.ended_at,
        "duration": None if v.ended_at is None else v.ended_at - v.started_at,
    }[name]
    return (value is None, value if value is not None else 0)
