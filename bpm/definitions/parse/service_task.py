"""A service task's fields: what runs it (exactly one of an in-process handler, an external
worker topic, a DMN decision or a connector), its timeout, priority, fields and result variable.

The node type with the most keys and rules, so it has a module of its own; the retry and
compensation it shares with other activities are read by ``policies``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from bpm.definitions.code import CODE_KEYS, parse_code
from bpm.definitions.durations import parse_duration
from bpm.definitions.mappings import VARIABLE_NAME, VariableMapping, parse_mappings
from bpm.definitions.parse.decisions import parse_decision_ref
from bpm.definitions.parse.patterns import (
    MAX_INT,
    MESSAGE_PATTERN,
    NAME_PATTERN,
    NAME_RULE,
    TOPIC_PATTERN,
    check_keys,
)
from bpm.definitions.parse.policies import parse_compensation, parse_retry
from bpm.errors import InvalidDefinition


def service_task_fields(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "retry": parse_retry(raw.get("retry"), where, node_id),
        "compensation": parse_compensation(raw, where, node_id),
    }
    if sum(k in raw for k in ("handler", "topic", "decision", "connector", *CODE_KEYS)) != 1:
        raise InvalidDefinition(
            f"{where}: needs exactly one of 'handler' (an in-process handler name), 'topic' "
            f"(an external worker topic), 'decision' (a DMN decision to evaluate), "
            f"'connector' (a handler given its inputs, whose outputs map its result), "
            f"'expression', 'delegateExpression' (a bean) or 'script'",
            node_id,
        )
    code = parse_code(raw, where, node_id)
    if code is not None:
        fields["code"], fields["handler"] = code, code.kind.value
    if "connector" in raw:
        fields.update(_connector(raw, where, node_id))
    if "decision" in raw:
        fields["decision"] = parse_decision_ref(raw["decision"], where, node_id)
    if "handler" in raw:
        value = raw["handler"]
        if not isinstance(value, str) or not NAME_PATTERN.match(value):
            raise InvalidDefinition(f"{where}: 'handler' must be a name: {NAME_RULE}", node_id)
        fields["handler"] = value
    if "topic" in raw:
        fields["topic"] = _topic(raw["topic"], where, node_id)
        fields["topic_expression"] = _topic_expression(fields["topic"], where, node_id)
    if "timeout" in raw:
        timeout = parse_duration(raw["timeout"], where=f"{where} 'timeout'", element=node_id)
        if timeout <= timedelta(0):
            raise InvalidDefinition(f"{where}: 'timeout' must be positive", node_id)
        fields["timeout"] = timeout
    if "connector" not in raw:
        fields["fields"] = parse_mappings(raw.get("fields"), "fields", where, node_id)
    result = raw.get("resultVariable")
    if result is not None:
        if not isinstance(result, str) or not VARIABLE_NAME.match(result):
            raise InvalidDefinition(f"{where}: 'resultVariable' must be a variable name", node_id)
        if "topic" in raw:
            raise InvalidDefinition(
                f"{where}: 'resultVariable' needs a 'handler', code or a 'decision' (an external "
                f"worker completes with the variables it sets)",
                node_id,
            )
        fields["result_variable"] = result
    if "priority" in raw:
        priority = raw["priority"]
        if not isinstance(priority, int) or isinstance(priority, bool) or abs(priority) > MAX_INT:
            raise InvalidDefinition(
                f"{where}: 'priority' must be an integer between -{MAX_INT} and {MAX_INT}",
                node_id,
            )
        fields["priority"] = priority
    return fields


def _topic(value: Any, where: str, node_id: str) -> str:
    if isinstance(value, str) and ("${" in value or "#{" in value):
        return value  # an expression: checked by _topic_expression, evaluated per task
    if not isinstance(value, str) or not TOPIC_PATTERN.match(value):
        raise InvalidDefinition(
            f"{where}: 'topic' must be text of 1 to 255 characters, without control "
            f"characters or space at either end, got {value!r}",
            node_id,
        )
    return value


def _topic_expression(topic: str, where: str, node_id: str) -> VariableMapping | None:
    """A topic with ``${...}`` (Camunda allows expressions there): evaluated over the
    variables when each task is created."""
    if "${" not in topic and "#{" not in topic:
        return None
    text = topic.replace("#{", "${")
    [mapping] = parse_mappings({"topic": text}, "topic", where, node_id)
    return mapping


CONNECTOR_KEYS = {"id", "inputs", "outputs"}


def _connector(raw: Mapping[str, Any], where: str, node_id: str) -> dict[str, Any]:
    """``connector``: ``{"id": handler, "inputs": {...}, "outputs": {...}}``; the inputs are
    the handler's fields, the outputs are evaluated over its result."""
    spec = raw["connector"]
    if not isinstance(spec, Mapping):
        raise InvalidDefinition(f"{where}: 'connector' must be an object", node_id)
    check_keys(spec, CONNECTOR_KEYS, f"{where} 'connector'", node_id)
    ident = spec.get("id")
    # Camunda looks a connector up by any id it is given ("Interview Scheduling"): the
    # handler registered under that text runs.
    if not isinstance(ident, str) or not MESSAGE_PATTERN.match(ident):
        raise InvalidDefinition(
            f"{where}: connector 'id' must be text of 1 to 255 characters, without control "
            f"characters or spaces at either end",
            node_id,
        )
    if "fields" in raw:
        raise InvalidDefinition(
            f"{where}: a connector's handler gets the connector's inputs as its fields; "
            f"give 'inputs' in the connector instead of 'fields'",
            node_id,
        )
    return {
        "handler": ident,
        "fields": parse_mappings(spec.get("inputs"), "inputs", f"{where} connector", node_id),
        "connector_outputs": parse_mappings(
            spec.get("outputs"), "outputs", f"{where} connector", node_id
        ),
    }
