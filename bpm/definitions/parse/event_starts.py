"""Event subprocesses in a definition: the trigger of their start event, and the rules that
look across nodes (an event subprocess stands apart from the flow; its scope's other starts
have no trigger; one catcher per error code and one subscription per message in a scope).

A module of its own so the start event's common fields (``nodes``) and the graph checks
(``graph``) each need one call here, not a copy of these rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.boundaries import code_variable, error_variables
from bpm.definitions.conditions import parse_condition
from bpm.definitions.model import Node, NodeType
from bpm.definitions.parse.patterns import MESSAGE_PATTERN, signal_name
from bpm.definitions.timers import parse_timer
from bpm.errors import InvalidDefinition

#: The triggers an event subprocess's start event may have (one of them).
TRIGGERS = ("error", "message", "timer", "escalation", "condition", "signal")
#: Triggers BPMN allows that bpm refuses for now, with what to do instead.
LATER = {
    "conditional": "write the condition as 'condition'",
    "compensation": (
        "compensation start events are not supported yet; give the activities of the "
        "scope a 'compensation' and throw it from the scope instead"
    ),
}
#: The triggers the engine runs today.
RUNNING = frozenset({"error", "message", "timer", "escalation", "condition", "signal"})
START_KEYS = {
    *TRIGGERS,
    *LATER,
    "interrupting",
    "errorCodeVariable",
    "errorMessageVariable",
    "escalationCodeVariable",
}


def trigger_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    """A start event's trigger (only an event subprocess's may have one: ``check``)."""
    for key, why in LATER.items():
        if key in raw:
            raise InvalidDefinition(f"{where}: a {key} start event: {why}", node_id)
    present = [k for k in TRIGGERS if k in raw]
    if len(present) > 1:
        raise InvalidDefinition(
            f"{where}: has several triggers ({', '.join(present)}); give it one", node_id
        )
    interrupting = raw.get("interrupting", True)
    if not isinstance(interrupting, bool):
        raise InvalidDefinition(f"{where}: 'interrupting' must be true or false", node_id)
    fields: dict[str, Any] = {"interrupting": interrupting}
    if not present:
        if "interrupting" in raw or "errorCodeVariable" in raw or "errorMessageVariable" in raw:
            raise InvalidDefinition(
                f"{where}: 'interrupting' and the error variables belong to the start event "
                f"of an event subprocess with a trigger",
                node_id,
            )
        return fields
    kind = present[0]
    if kind not in RUNNING:
        raise InvalidDefinition(
            f"{where}: a {kind} start event of an event subprocess is not supported yet", node_id
        )
    if kind != "error" and ("errorCodeVariable" in raw or "errorMessageVariable" in raw):
        raise InvalidDefinition(
            f"{where}: errorCodeVariable and errorMessageVariable belong to an error start event",
            node_id,
        )
    if kind == "error":
        code = raw["error"]
        if not isinstance(code, str) or not code:
            raise InvalidDefinition(
                f"{where}: 'error' must be the error code it catches, or '*' for any", node_id
            )
        if not interrupting:
            raise InvalidDefinition(
                f"{where}: an error start event always interrupts its scope (BPMN)", node_id
            )
        fields["catches"] = code
        fields.update(error_variables(raw, where, node_id))
    elif kind == "escalation":
        code = raw["escalation"]
        if not isinstance(code, str) or not code:
            raise InvalidDefinition(
                f"{where}: 'escalation' must be the escalation code it catches, or '*' for any",
                node_id,
            )
        fields["escalation"] = code
        fields["escalation_code_variable"] = code_variable(raw, where, node_id)
    elif kind == "condition":
        fields["condition"] = parse_condition(raw["condition"], where, node_id)
    elif kind == "signal":
        fields["signal"] = signal_name(raw, where, node_id)
    elif kind == "message":
        name = raw["message"]
        if not isinstance(name, str) or not MESSAGE_PATTERN.match(name):
            raise InvalidDefinition(
                f"{where}: 'message' must be a name of 1 to 255 characters without control "
                "characters or spaces at either end",
                node_id,
            )
        fields["message"] = name
    else:
        timer = raw["timer"]
        if not isinstance(timer, Mapping) or set(timer) - {"duration", "date", "cycle"}:
            raise InvalidDefinition(
                f"{where}: 'timer' must be an object with 'duration', 'date' or 'cycle'",
                node_id,
            )
        fields["timer"] = parse_timer(timer, where, node_id)
    return fields


def triggered_by_event(raw: Mapping[str, Any], where: str, node_id: str) -> bool:
    value = raw.get("triggeredByEvent", False)
    if not isinstance(value, bool):
        raise InvalidDefinition(f"{where}: 'triggeredByEvent' must be true or false", node_id)
    return value


def has_trigger(node: Node) -> bool:
    return (
        node.catches is not None
        or node.message is not None
        or node.timer is not None
        or node.escalation is not None
        or node.condition is not None
        or node.signal is not None
    )


def check(nodes: Mapping[str, Node], starts: Mapping[str | None, str]) -> None:
    """The rules only the whole graph shows (see the module's docstring)."""
    seen_codes: dict[tuple[str | None, str], str] = {}
    seen_messages: dict[tuple[str | None, str], str] = {}
    seen_signals: dict[tuple[str | None, str], str] = {}
    for scope, start_id in starts.items():
        start = nodes[start_id]
        host = nodes[scope] if scope is not None else None
        triggered = host is not None and host.triggered_by_event
        where = f"node {start_id!r} (startEvent)"
        if scope is None and (
            start.message is not None
            or start.timer is not None
            or start.condition is not None
            or start.signal is not None
        ):
            continue  # the process's own message, timer, conditional or signal start event
        if not triggered and has_trigger(start):
            raise InvalidDefinition(
                f"{where}: only the start event of an event subprocess (triggeredByEvent) "
                f"has a trigger; a process is started by bpm start, a subprocess by its flow",
                start_id,
            )
        if not triggered:
            continue
        assert host is not None
        if not has_trigger(start):
            raise InvalidDefinition(
                f"node {host.id!r} (subProcess): an event subprocess needs a start event with "
                f"a trigger ('error', 'message' or 'timer'); {start_id!r} has none",
                host.id,
            )
        outer = host.scope
        if start.catches is not None:
            _once(seen_codes, (outer, start.catches), host.id, f"catches error {start.catches!r}")
        if start.message is not None:
            _once(seen_messages, (outer, start.message), host.id, f"waits for {start.message!r}")
        if start.signal is not None:
            _once(seen_signals, (outer, start.signal), host.id, f"waits for {start.signal!r}")
    for node in nodes.values():
        if not node.triggered_by_event:
            continue
        where = f"node {node.id!r} (subProcess)"
        if node.incoming or node.outgoing:
            raise InvalidDefinition(
                f"{where}: an event subprocess has no incoming or outgoing flows (its start "
                f"event's trigger starts it)",
                node.id,
            )
        if node.compensation is not None or node.saga != "none":
            raise InvalidDefinition(
                f"{where}: an event subprocess cannot declare a compensation or a saga", node.id
            )
        for other in nodes.values():
            if other.type is NodeType.BOUNDARY and other.attached_to == node.id:
                raise InvalidDefinition(
                    f"node {other.id!r} (boundaryEvent): cannot be attached to the event "
                    f"subprocess {node.id!r}",
                    other.id,
                )


def _once(
    seen: dict[tuple[str | None, str], str], key: tuple[str | None, str], esp: str, what: str
) -> None:
    if key in seen:
        inside = "the process" if key[0] is None else f"subProcess {key[0]!r}"
        raise InvalidDefinition(
            f"node {esp!r} (subProcess): event subprocess {seen[key]!r} of {inside} already {what}",
            esp,
        )
    seen[key] = esp
