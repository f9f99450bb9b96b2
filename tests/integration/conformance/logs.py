"""The completion and compensation logs, derived from the history of the scenario's
instances (the rules are in the test module's docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.integration.conformance.model import NOT_ACTIVITIES, Model


@dataclass(frozen=True)
class Event:
    """A history row of an instance of ``process``."""

    process: str
    row: dict[str, Any]


def merged(traces: list[tuple[str, list[dict[str, Any]]]]) -> list[Event]:
    """The traces of several instances (process key, trace) as one, in history order (one
    sequence numbers every history row)."""
    events = [Event(process, row) for process, trace in traces for row in trace]
    return sorted(events, key=lambda e: int(e.row["id"]))


def compensation_handlers(history: list[Event]) -> dict[str, str]:
    """Compensation token id -> its handler's node. A compensation token sits at the node of
    the activity it undoes; the record it runs (``CompensationTokenCreated``) names the handler:
    ``node:ID`` for a BPMN handler activity, else the compensated activity itself."""
    out: dict[str, str] = {}
    for event in history:
        row = event.row
        if row["type"] == "CompensationTokenCreated" and row.get("token_id"):
            handler = str((row.get("data") or {}).get("handler", ""))
            out[str(row["token_id"])] = (
                handler.removeprefix("node:")
                if handler.startswith("node:")
                else str(row["node_id"])
            )
    return out


def _bodies(history: list[Event]) -> set[tuple[str, str]]:
    """The tokens that were multi-instance bodies (WAITING for their iterations): Camunda
    logs a body as an activity of its own (``X#multiInstanceBody``), so its leaving is not a
    completion of ``X``; each iteration's end is."""
    return {
        (str(e.row.get("token_id")), str(e.row["node_id"]))
        for e in history
        if e.row["kind"] == "token"
        and e.row["type"] == "WAITING"
        and "multi_instance" in (e.row.get("data") or {})
    }


def _done(
    row: dict[str, Any], handlers: dict[str, str], bodies: set[tuple[str, str]]
) -> str | None:
    """The node a token event completes, if it completes one (not a body's, see _bodies)."""
    done = _completes(row, handlers)
    return None if (str(row.get("token_id")), done) in bodies else done


def _completes(row: dict[str, Any], handlers: dict[str, str]) -> str | None:
    data = row.get("data") or {}
    if row["kind"] != "token":
        return None
    if row["type"] in ("MOVED", "FORKED") and data.get("from"):
        return str(data["from"])
    if row["type"] == "COMPENSATED":
        return handlers.get(str(row.get("token_id")), str(row["node_id"]))
    if row["type"] in ("COMPLETED", "ERROR_THROWN") and row["node_id"]:
        return str(row["node_id"])
    return None


def completion_log(model: Model, history: list[Event]) -> list[str]:
    """The activities the scenario's instances completed, in history order."""
    handlers = compensation_handlers(history)
    bodies = _bodies(history)
    log: list[str] = []
    for event in history:
        done = _done(event.row, handlers, bodies)
        if done is not None:
            label = model.label(event.process, done)
            if model.type(label) not in NOT_ACTIVITIES:
                log.append(label)
    return log


def left(model: Model, history: list[Event]) -> set[str]:
    """Every node a token has left, gateways included (``(J must not fire)``)."""
    handlers = compensation_handlers(history)
    bodies = _bodies(history)
    return {
        model.label(event.process, done)
        for event in history
        if (done := _done(event.row, handlers, bodies)) is not None
    }


def compensation_log(model: Model, history: list[Event]) -> list[str]:
    """The compensation handlers in the order they started (``CompensationTokenCreated``), so
    a handler still open (a user task) counts, as it does for the peers."""
    handlers = compensation_handlers(history)
    return [
        model.label(event.process, handlers[str(event.row["token_id"])])
        for event in history
        if event.row["type"] == "CompensationTokenCreated" and event.row.get("token_id")
    ]


def matches_in_order(expected: list[Any], actual: list[str]) -> bool:
    """``actual`` is ``expected`` with each nested list (an unordered group) in some order."""
    position = 0
    for item in expected:
        group = item if isinstance(item, list) else [item]
        if sorted(actual[position : position + len(group)]) != sorted(group):
            return False
        position += len(group)
    return position == len(actual)
