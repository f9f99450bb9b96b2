"""Replay: rebuild an instance's runtime state from its history alone.

History is the record of every change, written in the transaction that made it; replaying it
in write order must give back exactly the runtime rows: every token's node, state, mode,
parent and version; every task's node, state and version; every timer; the variables; every
incident; the instance's state and version. ``check`` compares the two and names each
difference; ``as_of`` stops the replay at an event id or instant, to show the state then.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.semantics.scopes import scopes_of
from bpm.errors import NotFound
from bpm.history_reading import HistoryEvent, HistoryTable
from bpm.states import (
    EngineEvent,
    IncidentState,
    InstanceState,
    TaskEvent,
    TimerState,
    TokenEvent,
    TokenMode,
)
from bpm.store import (
    history,
    incidents,
    instances,
    local_variables,
    tasks,
    timers,
    tokens,
    variables,
)
from bpm.store.rows import EventRow

#: The engine event that puts an instance in each state (keyed by the stored string: rows
#: read back carry plain strings, which equal and hash like the enum members).
INSTANCE_STATES: dict[str, InstanceState] = {
    EngineEvent.INSTANCE_STARTED: InstanceState.RUNNING,
    EngineEvent.INSTANCE_COMPLETED: InstanceState.COMPLETED,
    EngineEvent.INSTANCE_FAILED: InstanceState.FAILED,
    EngineEvent.INSTANCE_RESUMED: InstanceState.RUNNING,
    EngineEvent.INSTANCE_TERMINATED: InstanceState.TERMINATED,
    EngineEvent.INSTANCE_CANCELLED: InstanceState.CANCELLED,
}


@dataclass
class State:
    """An instance as rows: what replay rebuilds, and what the runtime tables hold."""

    instance: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    timers: dict[str, dict[str, Any]] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)
    incidents: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: By scope, ``"<token id>@<node id>"``: the variables local to it.
    local_variables: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "tokens": self.tokens,
            "tasks": self.tasks,
            "timers": self.timers,
            "variables": self.variables,
            "incidents": self.incidents,
            "local_variables": self.local_variables,
        }


def rebuild(
    events: Iterable[EventRow], *, upto_id: int | None = None, upto_at: datetime | None = None
) -> State:
    """Apply history rows in write order (optionally only up to an event id or instant)."""
    state = State()
    for e in events:
        if (upto_id is not None and e.id > upto_id) or (upto_at is not None and e.at > upto_at):
            break
        if e.table == HistoryTable.TOKEN:
            _token(state, e)
        elif e.table == HistoryTable.TASK:
            _task(state, e)
        else:
            _engine(state, e)
    return state


def _token(state: State, e: EventRow) -> None:
    key = str(e.token_id)
    if e.type == TokenEvent.CREATED:
        read = HistoryEvent.of_row(e)
        state.tokens[key] = {
            "node_id": e.node_id,
            "state": e.to_state,
            "mode": read.mode,
            "parent_token_id": read.data.get("parent"),
            "version": 0,
        }
        return
    tok = state.tokens.setdefault(
        key,
        {
            "node_id": None,
            "state": None,
            "mode": TokenMode.FORWARD,
            "parent_token_id": None,
            "version": -1,
        },
    )
    tok.update(node_id=e.node_id, state=e.to_state, version=tok["version"] + 1)


def _task(state: State, e: EventRow) -> None:
    key = str(e.task_id)
    if e.type == TaskEvent.CREATED:
        state.tasks[key] = {
            "node_id": e.node_id,
            "token_id": str(e.token_id),
            "state": e.to_state,
            "version": 0,
        }
        return
    task = state.tasks.setdefault(
        key, {"node_id": e.node_id, "token_id": str(e.token_id), "state": None, "version": -1}
    )
    task.update(state=e.to_state, version=task["version"] + 1)


def _engine(state: State, e: EventRow) -> None:
    data = e.data or {}
    if e.type in INSTANCE_STATES:
        version = state.instance.get("version", -1) + 1 if state.instance else 0
        state.instance = {"state": INSTANCE_STATES[e.type], "version": version}
    elif e.type == EngineEvent.VARIABLES_CHANGED:
        state.variables.update(data.get("values") or {})
    elif e.type == EngineEvent.VARIABLES_DELETED:
        for name in data.get("names") or []:
            state.variables.pop(name, None)
    elif e.type == EngineEvent.LOCAL_VARIABLES_SET:
        scope = f"{e.token_id}@{e.node_id}"
        state.local_variables.setdefault(scope, {}).update(data.get("values") or {})
    elif e.type == EngineEvent.LOCAL_VARIABLES_ENDED:
        state.local_variables.pop(f"{e.token_id}@{e.node_id}", None)
    elif e.type == EngineEvent.TIMER_SCHEDULED:
        state.timers[data["timer_id"]] = {
            "node_id": e.node_id,
            "token_id": str(e.token_id),
            "fire_at": data["fire_at"],
            "state": TimerState.SCHEDULED,
        }
    elif e.type in (EngineEvent.TIMER_FIRED, EngineEvent.TIMER_CANCELLED):
        timer = state.timers.get(data.get("timer_id", ""))
        if timer is not None:
            timer["state"] = (
                TimerState.FIRED if e.type == EngineEvent.TIMER_FIRED else TimerState.CANCELLED
            )
    elif e.type == EngineEvent.INCIDENT_OPENED:
        state.incidents[data["incident_id"]] = {
            "node_id": e.node_id,
            "token_id": str(e.token_id),
            "state": IncidentState.OPEN,
        }
    elif e.type == EngineEvent.INCIDENT_RESOLVED:
        incident = state.incidents.get(data.get("incident_id", ""))
        if incident is not None:
            incident["state"] = IncidentState.RESOLVED


def current(core: EngineCore, instance_id: UUID) -> State:
    """The same shape, read from the runtime tables."""
    with core.db.transaction() as conn:
        inst = instances.get(conn, instance_id)
        if inst is None:
            raise NotFound(f"instance {instance_id} does not exist")
        state = State(instance={"state": inst.state, "version": inst.version})
        for t in tokens.of_instance(conn, instance_id):
            state.tokens[str(t.id)] = {
                "node_id": t.node_id,
                "state": t.state,
                "mode": t.mode,
                "parent_token_id": str(t.parent_token_id) if t.parent_token_id else None,
                "version": t.version,
            }
        for k in tasks.of_instance(conn, instance_id):
            state.tasks[str(k.id)] = {
                "node_id": k.node_id,
                "token_id": str(k.token_id),
                "state": k.state,
                "version": k.version,
            }
        for m in timers.of_instance(conn, instance_id):
            state.timers[str(m.id)] = {
                "node_id": m.node_id,
                "token_id": str(m.token_id),
                "fire_at": m.fire_at.isoformat(),
                "state": m.state,
            }
        state.variables = variables.load(conn, instance_id)
        state.local_variables = scopes_of(local_variables.of_instance(conn, instance_id))
        for i in incidents.of_instance(conn, instance_id):
            state.incidents[str(i.id)] = {
                "node_id": i.node_id,
                "token_id": str(i.token_id) if i.token_id else None,
                "state": i.state,
            }
    return state


def differences(rebuilt: State, actual: State) -> list[str]:
    """Every way the rebuilt state differs from the runtime rows, one line each."""
    out: list[str] = []
    if rebuilt.instance != actual.instance:
        out.append(f"instance: history says {rebuilt.instance}, the row says {actual.instance}")
    for part in ("tokens", "tasks", "timers", "incidents"):
        mine, theirs = getattr(rebuilt, part), getattr(actual, part)
        for key in sorted(set(mine) | set(theirs)):
            a, b = mine.get(key), theirs.get(key)
            if a is None:
                out.append(f"{part[:-1]} {key}: in the tables ({b}) but not in history")
            elif b is None:
                out.append(f"{part[:-1]} {key}: in history ({a}) but not in the tables")
            elif a != b:
                fields = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
                out.append(
                    f"{part[:-1]} {key}: "
                    + ", ".join(f"{f} history={a.get(f)!r} table={b.get(f)!r}" for f in fields)
                )
    for name in sorted(set(rebuilt.variables) | set(actual.variables)):
        a_val, b_val = (
            rebuilt.variables.get(name, "<missing>"),
            actual.variables.get(name, "<missing>"),
        )
        if a_val != b_val:
            out.append(f"variable {name!r}: history={a_val!r} table={b_val!r}")
    mine, theirs = rebuilt.local_variables, actual.local_variables
    for scope in sorted(set(mine) | set(theirs)):
        if mine.get(scope) != theirs.get(scope):
            out.append(
                f"local variables of {scope}: history={mine.get(scope)!r} "
                f"table={theirs.get(scope)!r}"
            )
    return out


def events_of(core: EngineCore, instance_id: UUID) -> list[EventRow]:
    with core.db.transaction() as conn:
        if instances.get(conn, instance_id) is None:
            raise NotFound(f"instance {instance_id} does not exist")
        return history.of_instance(conn, instance_id)


def check(core: EngineCore, instance_id: UUID) -> list[str]:
    """Rebuild from history and compare with the runtime tables; [] when they agree.

    The two reads are separate transactions; an instance that is still running may move in
    between, so check ended or idle instances (or repeat the check)."""
    rebuilt = rebuild(events_of(core, instance_id))
    return differences(rebuilt, current(core, instance_id))


def as_of(core: EngineCore, instance_id: UUID, point: int | datetime) -> State:
    events = events_of(core, instance_id)
    if isinstance(point, int):
        return rebuild(events, upto_id=point)
    return rebuild(events, upto_at=point)


def check_all(
    core: EngineCore, *, since: datetime | None = None, limit: int = 100_000
) -> dict[str, Any]:
    """Check every instance started since ``since``; a summary with the differing ones."""
    with core.db.transaction() as conn:
        rows = instances.search(conn, limit=limit)
    checked, bad = 0, {}
    for row in rows:
        if since is not None and row.started_at < since:
            continue
        checked += 1
        found = check(core, row.id)
        if found:
            bad[str(row.id)] = found
    return {"checked": checked, "with_differences": len(bad), "differences": bad}
