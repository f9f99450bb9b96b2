"""Conditional events: the condition a conditional catch event, boundary event or event
subprocess start waits for, and which variable changes make the engine evaluate it again.

The condition is an expression of the engine's safe language (``bpm.expressions``, as a flow's
condition), compiled at deploy so a bad one never reaches a running token. ``variable_name``
and ``variable_events`` are Camunda's ``camunda:variableName`` and ``camunda:variableEvents``:
a change is considered only when it is of that variable and of one of those kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bpm.definitions.mappings import VARIABLE_NAME
from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression


class VariableEvent(StrEnum):
    """How a variable changed (Camunda's ``variableEvents``)."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class Condition:
    """What a conditional event waits for: ``expression`` true, re-evaluated on a change of
    ``variable_name`` (any variable when None) of one of ``variable_events`` (any when
    empty)."""

    expression: Expression
    variable_name: str | None = None
    variable_events: frozenset[VariableEvent] = frozenset()

    def wants(self, changes: Mapping[str, VariableEvent]) -> bool:
        """Whether one of ``changes`` (name -> what happened to it) passes the filters."""
        return any(
            (self.variable_name is None or name == self.variable_name)
            and (not self.variable_events or event in self.variable_events)
            for name, event in changes.items()
        )


def parse_condition(raw: Any, where: str, node_id: str) -> Condition:
    """``"condition"``: the expression as text, or ``{"expression", "variableName",
    "variableEvents"}``; anything else is refused naming the node."""
    spec: Mapping[str, Any] = {"expression": raw} if isinstance(raw, str) else raw
    if not isinstance(spec, Mapping) or set(spec) - {
        "expression",
        "variableName",
        "variableEvents",
    }:
        raise InvalidDefinition(
            f"{where}: 'condition' must be an expression, or an object with 'expression', "
            f"'variableName' and 'variableEvents'",
            node_id,
        )
    try:
        expression = compile_expression(spec.get("expression", ""), where=where)
    except InvalidExpression as exc:
        raise InvalidDefinition(str(exc), node_id) from exc
    name = spec.get("variableName")
    if name is not None and (not isinstance(name, str) or not VARIABLE_NAME.match(name)):
        raise InvalidDefinition(f"{where}: 'variableName' must be a variable name", node_id)
    events = spec.get("variableEvents", [])
    known = {e.value for e in VariableEvent}
    if not isinstance(events, list) or not all(e in known for e in events):
        raise InvalidDefinition(
            f"{where}: 'variableEvents' must be a list of 'create', 'update' and 'delete'",
            node_id,
        )
    return Condition(expression, name, frozenset(VariableEvent(e) for e in events))
