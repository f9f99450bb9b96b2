"""Read models for the CLI and the Python API: plain JSON-ready dicts with stable names."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from bpm import diagram as drawing
from bpm import diagram_views
from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations import event_subscriptions
from bpm.engine.semantics import event_subprocesses, message_boundaries
from bpm.engine.semantics.multi_instance import INSTANCES
from bpm.engine.semantics.tree import Tree
from bpm.errors import NotFound
from bpm.states import TimerState
from bpm.store import (
    definitions,
    history,
    incidents,
    instances,
    local_variables,
    tasks,
    timers,
    tokens,
    variables,
)
from bpm.store.local_variables import LocalRow
from bpm.store.rows import EventRow, IncidentRow, InstanceRow, TaskRow, TimerRow, TokenRow


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _id(value: UUID | None) -> str | None:
    return str(value) if value else None


def instance_summary(row: InstanceRow, version: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(row.id),
        "key": row.process_key,
        "business_key": row.business_key,
        "state": row.state,
        "started_at": _iso(row.started_at),
        "ended_at": _iso(row.ended_at),
        "definition_id": str(row.process_def_id),
    }
    if row.super_instance_id is not None:  # started by a call activity
        out["called_by"] = {
            "instance": str(row.super_instance_id),
            "token": _id(row.super_token_id),
            "root": _id(row.root_instance_id),
        }
    if version is not None:
        out["definition_version"] = version
    return out


def called_view(c: InstanceRow) -> dict[str, Any]:
    """An instance one of this instance's call activities started."""
    return {
        "instance": str(c.id),
        "key": c.process_key,
        "state": c.state,
        "token": _id(c.super_token_id),
    }


def token_view(t: TokenRow) -> dict[str, Any]:
    return {
        "id": str(t.id),
        "node_id": t.node_id,
        "state": t.state,
        "mode": t.mode,
        "parent_token_id": _id(t.parent_token_id),
        "scope_id": t.scope_id,
        "wait_kind": t.wait_kind,
        "waits_for": t.waits_for,
        "version": t.version,
        "created_at": _iso(t.created_at),
        "updated_at": _iso(t.updated_at),
    }


def task_view(t: TaskRow) -> dict[str, Any]:
    return {
        "id": str(t.id),
        "token_id": str(t.token_id),
        "node_id": t.node_id,
        "kind": t.kind,
        "handler": t.handler,
        "topic": t.topic,
        "state": t.state,
        "attempts": t.attempts,
        "retries": t.retries,
        "retry_at": _iso(t.retry_at),
        "lock_owner": t.lock_owner,
        "lock_expire_at": _iso(t.lock_expire_at),
        "error_message": t.error_message,
        "assignee": t.assignee,
        "candidate_groups": t.candidate_groups,
        "candidate_users": t.candidate_users or [],
        "priority": t.priority,
        "due_date": _iso(t.due_date),
        "follow_up_date": _iso(t.follow_up_date),
        "form": t.form,
    }


def timer_view(t: TimerRow) -> dict[str, Any]:
    return {
        "id": str(t.id),
        "token_id": str(t.token_id),
        "node_id": t.node_id,
        "fire_at": _iso(t.fire_at),
        "state": t.state,
    }


def incident_view(i: IncidentRow) -> dict[str, Any]:
    return {
        "id": str(i.id),
        "token_id": _id(i.token_id),
        "task_id": _id(i.task_id),
        "node_id": i.node_id,
        "kind": i.kind,
        "message": i.message,
        "details": i.details,
        "state": i.state,
        "created_at": _iso(i.created_at),
        "resolved_at": _iso(i.resolved_at),
    }


def event_view(e: EventRow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": e.id,
        "at": _iso(e.at),
        "kind": e.table,
        "type": e.type,
        "node_id": e.node_id,
    }
    for name, value in (
        ("from_state", e.from_state),
        ("to_state", e.to_state),
        ("token_id", _id(e.token_id)),
        ("task_id", _id(e.task_id)),
        ("actor", e.actor),
        ("data", e.data),
        ("cause", e.cause),
    ):
        if value is not None:
            out[name] = value
    return out


def local_views(rows: list[LocalRow]) -> list[dict[str, Any]]:
    """Local variables by scope: the token, the node it is at, the variables."""
    scopes: dict[tuple[UUID, str], dict[str, Any]] = {}
    for row in rows:
        scopes.setdefault((row.scope_token_id, row.scope_node_id), {})[row.name] = row.value
    return [
        {"token_id": str(token), "node_id": node, "variables": values}
        for (token, node), values in sorted(
            scopes.items(), key=lambda kv: (kv[0][1], str(kv[0][0]))
        )
    ]


def show(core: EngineCore, instance_id: UUID) -> dict[str, Any]:
    with core.db.transaction() as conn:
        row = instances.get(conn, instance_id)
        if row is None:
            raise NotFound(f"instance {instance_id} does not exist")
        definition = definitions.by_id(conn, row.process_def_id)
        out = instance_summary(row, definition.version if definition else None)
        token_rows = tokens.of_instance(conn, instance_id)
        timer_rows = timers.of_instance(conn, instance_id)
        out["tokens"] = [token_view(t) for t in token_rows]
        out["tasks"] = [task_view(t) for t in tasks.of_instance(conn, instance_id)]
        out["timers"] = [timer_view(t) for t in timer_rows]
        graph = core.graph(row.process_def_id, conn)
        out["subscriptions"] = subscription_views(graph, token_rows, timer_rows)
        out["variables"] = variables.load(conn, instance_id)
        out["local_variables"] = local_views(local_variables.of_instance(conn, instance_id))
        out["incidents"] = [incident_view(i) for i in incidents.of_instance(conn, instance_id)]
        out["called"] = [
            {
                "instance": str(c.id),
                "key": c.process_key,
                "state": c.state,
                "token": _id(c.super_token_id),
            }
            for c in instances.called_from(conn, instance_id)
        ]
    return out


def subscription_views(
    g: ProcessGraph, token_rows: list[TokenRow], timer_rows: list[TimerRow]
) -> list[dict[str, Any]]:
    """The event subprocesses that can start now, with what starts each (a timer start's
    SCHEDULED timer row; a message start is found from its scope's token when correlated),
    then the message, signal and conditional boundary events listening on the activities
    tokens work at and the signal catches tokens wait at (itself or after an event-based
    gateway; a conditional catch event's token waits with ``wait_kind`` CONDITION)."""
    out = [
        {
            "boundary": boundary.id,
            "activity": tok.node_id,
            "token": str(tok.id),
            "interrupting": boundary.interrupting,
            **_trigger(boundary),
        }
        for tok in token_rows
        for boundary in message_boundaries.armed(g, tok)
        if boundary.message is not None
        or boundary.signal is not None
        or boundary.condition is not None
    ]
    out.extend(
        {"event": node, "token": str(tok.id), "signal": signal}
        for tok in token_rows
        for node, signal in event_subscriptions.signal_waits(g, tok)
    )
    if not g.event_subprocesses:
        return out
    for sub in event_subprocesses.subscriptions(g, Tree(token_rows)):
        trigger = g.trigger_of(sub.esp.id)
        view: dict[str, Any] = {
            "event_subprocess": sub.esp.id,
            "scope": sub.scope,
            "token": str(sub.host.id),
            "interrupting": trigger.interrupting,
        }
        if trigger.message is not None or trigger.condition is not None or trigger.signal:
            view.update(_trigger(trigger))
        elif trigger.catches is not None:
            view["error"] = trigger.catches
        else:
            timer = next(
                (
                    t
                    for t in timer_rows
                    if t.node_id == trigger.id
                    and t.token_id == sub.host.id
                    and t.state == TimerState.SCHEDULED
                ),
                None,
            )
            if timer is None:
                continue  # fired (a start fires once) or not armed
            view["timer"] = {"id": str(timer.id), "fire_at": timer.fire_at.isoformat()}
        out.append(view)
    return out


def _trigger(event: Node) -> dict[str, Any]:
    """A message, signal or conditional event's trigger: the message, the signal, or the
    condition's text."""
    if event.condition is not None:
        return {"condition": event.condition.expression.source}
    if event.signal is not None:
        return {"signal": event.signal}
    return {"message": event.message}


def trace(core: EngineCore, instance_id: UUID) -> list[dict[str, Any]]:
    with core.db.transaction() as conn:
        if instances.get(conn, instance_id) is None:
            raise NotFound(f"instance {instance_id} does not exist")
        return with_old_values([event_view(e) for e in history.of_instance(conn, instance_id)])


def with_old_values(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add to each ``VariablesChanged`` row what the variables were before it (derived from
    the rows before: the row itself stores the new values only), so a trace shows old -> new.
    A variable set for the first time has no old value."""
    current: dict[str, Any] = {}
    for event in events:
        if event["type"] == "VariablesDeleted" and event.get("data"):
            for name in event["data"].get("names") or []:
                current.pop(name, None)
            continue
        if event["type"] != "VariablesChanged" or not event.get("data"):
            continue
        values = event["data"].get("values") or {}
        event["data"] = {**event["data"], "old": {k: current[k] for k in values if k in current}}
        current.update(values)
    return events


def open_incidents(core: EngineCore, limit: int = 100) -> list[dict[str, Any]]:
    with core.db.transaction() as conn:
        return [
            dict(incident_view(i), instance_id=str(i.instance_id))
            for i in incidents.all_open(conn, limit)
        ]


def diagram(core: EngineCore, instance_id: UUID, fmt: str = "mermaid") -> str:
    """The instance's definition drawn with the path it took (``bpm.diagram``)."""
    if fmt not in drawing.FORMATS:
        raise ValueError(f"unknown diagram format {fmt!r}; use one of {', '.join(drawing.FORMATS)}")
    with core.db.transaction() as conn:
        row = instances.get(conn, instance_id)
        if row is None:
            raise NotFound(f"instance {instance_id} does not exist")
        graph = core.graph(row.process_def_id, conn)
        version = core.definition_version(row.process_def_id, conn)
        events = [event_view(e) for e in history.of_instance(conn, instance_id)]
        found = [token_view(t) for t in tokens.of_instance(conn, instance_id)]
        if fmt == "svg":  # the modeler's layout when the deployed file has one
            source = definitions.source(conn, row.process_def_id)
            failures = incidents.of_instance(conn, instance_id, only_open=True)
            counters = local_variables.of_instance(conn, instance_id)
    title = f"{row.process_key} v{version}, instance {row.id}, {row.state}"
    if fmt != "svg":
        return drawing.render(graph, events, found, fmt=fmt, title=title)
    return diagram_views.instance_svg(
        graph,
        source,
        events,
        found,
        incidents=[(i.node_id, i.message) for i in failures],
        instances={v.scope_node_id: v.value for v in counters if v.name == INSTANCES},
        title=title,
    )
