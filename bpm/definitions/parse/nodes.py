"""One node compiled from its document: the fields each node type reads (end events, user
tasks, timers, messages, compensation throws, start events), dispatched by ``compile_node``.

Service tasks have their own module (``service_task``), boundary events theirs
(``bpm.definitions.boundaries``); this is where a new node type's fields are added.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions import transactions
from bpm.definitions.assignments import parse_date, parse_people, parse_priority, parse_text
from bpm.definitions.boundaries import boundary_fields
from bpm.definitions.calls import parse_call, parse_in
from bpm.definitions.conditions import parse_condition
from bpm.definitions.forms import parse_form
from bpm.definitions.mappings import VARIABLE_NAME, parse_mappings
from bpm.definitions.model import MULTI_INSTANCE_NODES, Flow, Node, NodeType
from bpm.definitions.multi_instance import MultiInstance, parse_multi_instance
from bpm.definitions.parse import event_starts
from bpm.definitions.parse.keys import DEFAULTED, MAPPED
from bpm.definitions.parse.listeners import parse_listeners
from bpm.definitions.parse.patterns import (
    MESSAGE_PATTERN,
    NAME_PATTERN,
    NAME_RULE,
    node_label,
    signal_name,
)
from bpm.definitions.parse.policies import parse_compensation, parse_saga
from bpm.definitions.parse.service_task import service_task_fields
from bpm.definitions.parse.shape import check_conditions, check_shape, default_flow
from bpm.definitions.signal_names import caught as caught_signal
from bpm.definitions.timers import parse_timer
from bpm.errors import InvalidDefinition


def compile_node(
    node_id: str,
    raw: Mapping[str, Any],
    scope: str | None,
    incoming: tuple[str, ...],
    outgoing: tuple[str, ...],
    flows: Mapping[str, Flow],
) -> Node:
    node_type = NodeType(str(raw["type"]))
    where = node_label(node_id, node_type.value)
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidDefinition(f"{where}: 'name' must be a string", node_id)
    check_shape(node_type, where, node_id, incoming, outgoing)
    check_conditions(node_type, where, node_id, outgoing, flows)
    fields: dict[str, Any] = {}
    if node_type is NodeType.SERVICE_TASK:
        fields = service_task_fields(raw, where, node_id)
    elif node_type is NodeType.END and transactions.cancel_end(raw, where, node_id):
        fields = {"cancel": True}
    elif node_type is NodeType.END:
        fields = _end_fields(raw, where, node_id)
    elif node_type is NodeType.BOUNDARY and "cancel" in raw:
        fields = transactions.cancel_boundary(raw, where, node_id, incoming)
    elif node_type is NodeType.BOUNDARY:
        fields = boundary_fields(raw, where, node_id, incoming)
    elif node_type is NodeType.TIMER:
        fields = {"timer": parse_timer(raw, where, node_id)}
    elif node_type is NodeType.CONDITIONAL:
        fields = {"condition": parse_condition(raw.get("condition"), where, node_id)}
    elif node_type in (NodeType.RECEIVE_TASK, NodeType.MESSAGE):
        fields = {"message": _message_name(raw, where, node_id)}
    elif node_type is NodeType.USER_TASK:
        fields = _user_task_fields(raw, where, node_id)
    elif node_type is NodeType.SUBPROCESS:
        fields = {
            "saga": parse_saga(raw, where, node_id),
            "compensation": parse_compensation(raw, where, node_id),
            "triggered_by_event": event_starts.triggered_by_event(raw, where, node_id),
            "transaction": transactions.transaction_flag(raw, where, node_id),
        }
    elif node_type in (NodeType.TASK, NodeType.MANUAL_TASK):  # done as it passes: then
        fields = {"compensation": parse_compensation(raw, where, node_id)}  # undoable
    elif node_type is NodeType.CALL_ACTIVITY:
        fields = {
            "call": parse_call(raw, where, node_id),
            "compensation": parse_compensation(raw, where, node_id),
        }
    elif node_type is NodeType.COMPENSATION_THROW:
        fields = {
            "activity": _activity(raw, where, node_id),
            "wait_for_completion": _wait_for_completion(raw, where, node_id),
        }
    elif node_type is NodeType.ESCALATION_THROW:
        fields = {"escalation": _escalation(raw, where, node_id)}
    elif node_type is NodeType.SIGNAL:
        fields = {"signal": caught_signal(raw, where, node_id)}
    elif node_type is NodeType.SIGNAL_THROW:
        fields = signal_fields(raw, where, node_id)
    if node_type in DEFAULTED:
        fields.update(default_flow(raw, where, node_id, outgoing, flows))
    fields["properties"] = dict(raw.get("properties", {}))
    fields["listeners"] = parse_listeners(
        raw.get("listeners"), node_type, where, node_id, joins=len(incoming) > 1
    )
    if node_type is NodeType.START:
        fields["initiator"] = _initiator(raw, where, node_id)
        fields["form"] = parse_form(raw.get("form"), where, node_id)
        fields.update(event_starts.trigger_fields(raw, where, node_id))
    if node_type in MULTI_INSTANCE_NODES:
        fields["multi_instance"] = _multi_instance(raw, fields, where, node_id)
    if node_type in MAPPED:
        if node_type is NodeType.END and raw.get("outputs"):
            raise InvalidDefinition(
                f"{where}: an end event takes no 'outputs': nothing after it could read them "
                f"(Camunda 7 refuses them too); map them on the activity before it",
                node_id,
            )
        fields["inputs"] = parse_mappings(raw.get("inputs"), "inputs", where, node_id)
        fields["outputs"] = parse_mappings(raw.get("outputs"), "outputs", where, node_id)
    return Node(node_id, node_type, scope, incoming, outgoing, name=name, **fields)


def _multi_instance(
    raw: Mapping[str, Any], fields: Mapping[str, Any], where: str, node_id: str
) -> MultiInstance | None:
    """The marker; a multi-instance task may be compensable (each iteration is undone apart),
    a multi-instance subprocess or call activity is refused (docs/bpmn.md)."""
    found = parse_multi_instance(raw.get("multiInstance"), where, node_id)
    scope_like = raw.get("type") in (NodeType.SUBPROCESS, NodeType.CALL_ACTIVITY)
    if found is not None and scope_like and fields.get("compensation") is not None:
        raise InvalidDefinition(
            f"{where}: a multi-instance subprocess or call activity cannot declare a "
            "compensation (not supported)",
            node_id,
        )
    return found


def _initiator(raw: Mapping[str, Any], where: str, node_id: str) -> str | None:
    initiator = raw.get("initiator")
    if initiator is not None and (
        not isinstance(initiator, str) or not VARIABLE_NAME.match(initiator)
    ):
        raise InvalidDefinition(f"{where}: 'initiator' must be a variable name", node_id)
    return initiator


def _wait_for_completion(raw: Mapping[str, Any], where: str, node_id: str) -> bool:
    wait = raw.get("waitForCompletion", True)
    if not isinstance(wait, bool):
        raise InvalidDefinition(f"{where}: 'waitForCompletion' must be true or false", node_id)
    return wait


def _activity(raw: Mapping[str, Any], where: str, node_id: str) -> str | None:
    activity = raw.get("activity")
    if activity is not None and not isinstance(activity, str):
        raise InvalidDefinition(f"{where}: 'activity' must be a node id", node_id)
    return activity


def _name(raw: Mapping[str, Any], key: str, where: str, node_id: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not NAME_PATTERN.match(value):
        raise InvalidDefinition(f"{where}: needs '{key}', a name: {NAME_RULE}", node_id)
    return value


def _message_name(raw: Mapping[str, Any], where: str, node_id: str) -> str:
    value = raw.get("message")
    if not isinstance(value, str) or not MESSAGE_PATTERN.match(value):
        raise InvalidDefinition(
            f"{where}: needs 'message', a name of 1 to 255 characters without control "
            "characters or spaces at either end",
            node_id,
        )
    return value


def _user_task_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"compensation": parse_compensation(raw, where, node_id)}
    if raw.get("assignee") is not None:
        fields["assignee"] = parse_text(raw["assignee"], "assignee", where, node_id)
    for key in ("candidate_groups", "candidate_users"):
        fields[key] = parse_people(raw.get(key), key, where, node_id)
    for key in ("due_date", "follow_up_date"):
        fields[key] = parse_date(raw.get(key), key, where, node_id)
    priority = parse_priority(raw.get("priority"), where, node_id)
    if isinstance(priority, int):
        fields["priority"] = priority
    else:
        fields["priority_expression"] = priority
    fields["form"] = parse_form(raw.get("form"), where, node_id)
    return fields


def _end_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    compensate = raw.get("compensate", False)
    if not isinstance(compensate, bool):
        raise InvalidDefinition(f"{where}: 'compensate' must be true or false", node_id)
    if "activity" in raw and not compensate:
        raise InvalidDefinition(f"{where}: 'activity' needs 'compensate': true", node_id)
    if compensate and (raw.get("terminate") or "error" in raw or "signal" in raw):
        raise InvalidDefinition(
            f"{where}: an end event compensates, terminates or throws an error, only one of them",
            node_id,
        )
    if "waitForCompletion" in raw and not compensate:
        raise InvalidDefinition(f"{where}: 'waitForCompletion' needs 'compensate': true", node_id)
    if compensate:
        return {
            "compensate": True,
            "activity": _activity(raw, where, node_id),
            "wait_for_completion": _wait_for_completion(raw, where, node_id),
        }
    terminate = raw.get("terminate", False)
    if not isinstance(terminate, bool):
        raise InvalidDefinition(f"{where}: 'terminate' must be true or false", node_id)
    error = raw.get("error")
    if error is not None and (not isinstance(error, str) or not error):
        raise InvalidDefinition(f"{where}: 'error' must be a non-empty error code", node_id)
    if terminate and error is not None:
        raise InvalidDefinition(f"{where}: an end event is terminate or error, not both", node_id)
    message = raw.get("errorMessage")
    if message is not None and (not isinstance(message, str) or error is None):
        raise InvalidDefinition(f"{where}: 'errorMessage' is text, with an 'error'", node_id)
    escalation = _escalation(raw, where, node_id) if "escalation" in raw else None
    if "in" in raw and "signal" not in raw:
        raise InvalidDefinition(f"{where}: 'in' belongs to a signal end event", node_id)
    signal = signal_fields(raw, where, node_id) if "signal" in raw else {}
    if sum((terminate, error is not None, escalation is not None, bool(signal))) > 1:
        raise InvalidDefinition(
            f"{where}: an end event escalates, signals, terminates or throws an error, only "
            "one of them",
            node_id,
        )
    return {
        "terminate": terminate,
        "error_code": error,
        "error_message": message,
        "escalation": escalation,
        **signal,
    }


def _escalation(raw: Mapping[str, Any], where: str, node_id: str) -> str:
    code = raw.get("escalation")
    if not isinstance(code, str) or not code or code == "*":
        raise InvalidDefinition(
            f"{where}: 'escalation' must be the escalation code it throws", node_id
        )
    return code


def signal_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    """A throw's ``signal`` and its ``in`` variables (as a call activity's); with ``${...}``
    (or Camunda's ``#{...}``) also the expression that gives the name when the token throws."""
    name = signal_name(raw, where, node_id, thrown=True)
    fields: dict[str, Any] = {
        "signal": name,
        "signal_inputs": parse_in(raw.get("in"), where, node_id),
    }
    if "${" in name or "#{" in name:
        text = name.replace("#{", "${")
        [fields["signal_expression"]] = parse_mappings({"signal": text}, "signal", where, node_id)
    return fields
