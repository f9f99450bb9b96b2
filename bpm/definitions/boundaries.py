"""Boundary events: the checks that need the whole graph, and the lookup the engine uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.conditions import parse_condition
from bpm.definitions.mappings import any_variable_name
from bpm.definitions.model import ACTIVITIES, Node, NodeType
from bpm.definitions.parse.patterns import MESSAGE_PATTERN
from bpm.definitions.signal_names import caught as caught_signal
from bpm.definitions.timers import TIMER_KINDS, parse_timer
from bpm.errors import InvalidDefinition

#: Where a boundary event may sit: an activity, or a task or manual task, which a token passes
#: at once, so a boundary there never fires (Camunda 7 deploys it and it never fires either).
ATTACHABLE = ACTIVITIES | {NodeType.TASK, NodeType.MANUAL_TASK}


def boundary_fields(
    raw: Mapping[str, Any], where: str, node_id: str, incoming: tuple[str, ...]
) -> dict[str, Any]:
    """What a boundary event reacts to: an error code (always interrupting) or a timer."""
    interrupting = raw.get("interrupting", True)
    if not isinstance(interrupting, bool):
        raise InvalidDefinition(f"{where}: 'interrupting' must be true or false", node_id)
    fields: dict[str, Any] = {"interrupting": interrupting}
    keys = ("timer", "error", "message", "escalation", "condition", "signal")
    if sum(key in raw for key in keys) != 1:
        raise InvalidDefinition(
            f"{where}: needs exactly one of 'error' (the code it catches, "
            f"or '*' for any), 'timer' ({{\"duration\": ...}}, "
            f'{{"date": ...}} or {{"cycle": ...}}), \'message\' (the message it waits for), '
            "'escalation', 'condition' or 'signal' (the signal it waits for)",
            node_id,
        )
    if "condition" in raw:
        fields["condition"] = parse_condition(raw["condition"], where, node_id)
    elif "signal" in raw:
        fields["signal"] = caught_signal(raw, where, node_id)
    elif "escalation" in raw:
        code = raw["escalation"]
        if not isinstance(code, str) or not code:
            raise InvalidDefinition(
                f"{where}: 'escalation' must be the escalation code it catches, or '*' for any",
                node_id,
            )
        fields["escalation"] = code
        fields["escalation_code_variable"] = code_variable(raw, where, node_id)
    elif "message" in raw:
        name = raw["message"]
        if not isinstance(name, str) or not MESSAGE_PATTERN.match(name):
            raise InvalidDefinition(
                f"{where}: 'message' must be a name of 1 to 255 characters without control "
                "characters or spaces at either end",
                node_id,
            )
        fields["message"] = name
    elif "timer" in raw:
        timer = raw["timer"]
        if not isinstance(timer, Mapping) or set(timer) - set(TIMER_KINDS):
            raise InvalidDefinition(
                f"{where}: 'timer' must be an object with 'duration', 'date' or 'cycle'", node_id
            )
        fields["timer"] = parse_timer(timer, where, node_id)
        if "errorCodeVariable" in raw or "errorMessageVariable" in raw:
            raise InvalidDefinition(
                f"{where}: errorCodeVariable and errorMessageVariable belong to an error boundary",
                node_id,
            )
    else:
        code = raw.get("error")
        if not isinstance(code, str) or not code:
            raise InvalidDefinition(
                f"{where}: 'error' must be the error code it catches, or '*' for any", node_id
            )
        if not interrupting:
            raise InvalidDefinition(
                f"{where}: error boundary events are always interrupting", node_id
            )
        fields["catches"] = code
        fields.update(error_variables(raw, where, node_id))
    attached = raw.get("attachedTo")
    if not isinstance(attached, str):
        raise InvalidDefinition(
            f"{where}: needs 'attachedTo', the id of a task or subProcess", node_id
        )
    if incoming:
        raise InvalidDefinition(f"{where}: a boundary event cannot have incoming flows", node_id)
    return {**fields, "attached_to": attached}


def check_attachments(nodes: Mapping[str, Node]) -> dict[str, tuple[str, ...]]:
    """Every boundary sits on a service task or subprocess of its own scope; returns the
    boundary ids per activity, and refuses two boundaries catching the same code there."""
    out: dict[str, list[str]] = {}
    for node in nodes.values():
        if node.type is not NodeType.BOUNDARY:
            continue
        where = f"node {node.id!r} (boundaryEvent)"
        host = nodes.get(node.attached_to or "")
        if host is None or host.scope != node.scope:
            raise InvalidDefinition(
                f"{where}: attachedTo {node.attached_to!r} is not a node of its scope", node.id
            )
        if host.type not in ATTACHABLE:
            raise InvalidDefinition(
                f"{where}: can only be attached to an activity (a task or subprocess), not a "
                f"{host.type.value}",
                node.id,
            )
        for other in out.get(host.id, []):
            if node.catches is not None and nodes[other].catches == node.catches:
                raise InvalidDefinition(
                    f"{where}: {other!r} on {host.id!r} already catches {node.catches!r}", node.id
                )
        out.setdefault(host.id, []).append(node.id)
    return {host: tuple(ids) for host, ids in out.items()}


def error_variables(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, str | None]:
    """An error catch's ``errorCodeVariable`` and ``errorMessageVariable`` (a boundary
    event's or an event subprocess's error start's): the variables that get the caught
    error's code and message."""
    fields: dict[str, str | None] = {}
    for key, field in (
        ("errorCodeVariable", "error_code_variable"),
        ("errorMessageVariable", "error_message_variable"),
    ):
        name = raw.get(key)
        if name is not None and not any_variable_name(name):
            raise InvalidDefinition(f"{where}: {key!r} must be a variable name", node_id)
        fields[field] = name
    return fields


def code_variable(raw: Mapping[str, Any], where: str, node_id: str) -> str | None:
    """An escalation catch's ``escalationCodeVariable``: the variable that gets the code."""
    name = raw.get("escalationCodeVariable")
    if name is not None and not any_variable_name(name):
        raise InvalidDefinition(
            f"{where}: 'escalationCodeVariable' must be a variable name", node_id
        )
    return name
