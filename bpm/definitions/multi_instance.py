"""A multi-instance marker on an activity (BPMN's ``multiInstanceLoopCharacteristics``):
its compiled form and its keys in the JSON definition format.

A marker, not a node type: any activity may carry one, and the engine runs the activity's own
semantics once per iteration (``bpm.engine.semantics.multi_instance``). Everything here is
checked at deploy, so a running token meets only values it can evaluate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bpm.definitions.mappings import VARIABLE_NAME
from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression

#: The keys of a node's ``multiInstance`` object.
KEYS = frozenset(
    {
        "sequential",
        "cardinality",
        "collection",
        "elementVariable",
        "completionCondition",
        "outputCollection",
        "outputElement",
    }
)


@dataclass(frozen=True)
class MultiInstance:
    """How many times an activity runs and how: in parallel or one after another, for a
    count or for each element of a list, until all ran or the completion condition holds."""

    sequential: bool = False
    #: A count (an int) or an expression giving one; None when ``collection`` is set.
    cardinality: int | Expression | None = None
    #: A variable name or an expression giving the list to run over.
    collection: str | Expression | None = None
    #: The variable (local to each iteration) that holds the iteration's element.
    element_variable: str | None = None
    completion_condition: Expression | None = None
    #: Zeebe's: each iteration's ``output_element`` collected, in loop-counter order, into
    #: this variable of the scope around the activity.
    output_collection: str | None = None
    output_element: Expression | None = None

    def describe(self) -> str:
        return "sequential" if self.sequential else "parallel"


def parse_multi_instance(raw: Any, where: str, node_id: str) -> MultiInstance | None:
    """A node's ``multiInstance`` key (None when absent); every problem names the node."""
    if raw is None:
        return None
    where = f"{where}: multiInstance"
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(f"{where} must be an object", node_id)
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise InvalidDefinition(
            f"{where} has unknown keys {unknown}; allowed: {sorted(KEYS)}", node_id
        )
    sequential = raw.get("sequential", False)
    if not isinstance(sequential, bool):
        raise InvalidDefinition(f"{where}: 'sequential' must be true or false", node_id)
    cardinality = _cardinality(raw.get("cardinality"), where, node_id)
    collection = _collection(raw.get("collection"), where, node_id)
    if (cardinality is None) == (collection is None):
        raise InvalidDefinition(
            f"{where} needs exactly one of 'cardinality' and 'collection'", node_id
        )
    element = _name(raw.get("elementVariable"), "elementVariable", where, node_id)
    if element is not None and collection is None:
        raise InvalidDefinition(f"{where}: 'elementVariable' needs a 'collection'", node_id)
    output = _name(raw.get("outputCollection"), "outputCollection", where, node_id)
    output_element = _expression(raw.get("outputElement"), "outputElement", where, node_id)
    if (output is None) != (output_element is None):
        raise InvalidDefinition(
            f"{where}: 'outputCollection' and 'outputElement' go together", node_id
        )
    condition = _expression(
        raw.get("completionCondition"), "completionCondition", where, node_id, "condition"
    )
    return MultiInstance(
        sequential, cardinality, collection, element, condition, output, output_element
    )


def _cardinality(raw: Any, where: str, node_id: str) -> int | Expression | None:
    if raw is None or isinstance(raw, Expression):
        return raw
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise InvalidDefinition(
            f"{where}: 'cardinality' must be a whole number or an expression", node_id
        )
    if isinstance(raw, int):
        if raw < 0:
            raise InvalidDefinition(f"{where}: 'cardinality' must not be negative", node_id)
        return raw
    text = raw.strip()
    if text.isdigit():
        return int(text)
    return _expression(text, "cardinality", where, node_id)


def _collection(raw: Any, where: str, node_id: str) -> str | Expression | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidDefinition(
            f"{where}: 'collection' must be a variable name or an expression", node_id
        )
    if VARIABLE_NAME.fullmatch(raw):
        return raw
    return _expression(raw, "collection", where, node_id)


def _name(raw: Any, key: str, where: str, node_id: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not VARIABLE_NAME.fullmatch(raw):
        raise InvalidDefinition(f"{where}: {key!r} must be a variable name", node_id)
    return raw


def _expression(
    raw: Any, key: str, where: str, node_id: str, kind: str = "value"
) -> Expression | None:
    if raw is None:
        return None
    try:
        return compile_expression(raw, where=f"{where} {key}", kind=kind)
    except InvalidExpression as exc:
        raise InvalidDefinition(str(exc), node_id) from None


def to_document(mi: MultiInstance) -> dict[str, Any]:
    """The ``multiInstance`` object that compiles back to ``mi`` (the builder's shape)."""
    out: dict[str, Any] = {}
    if mi.sequential:
        out["sequential"] = True
    for key, value in (
        ("cardinality", mi.cardinality),
        ("collection", mi.collection),
        ("elementVariable", mi.element_variable),
        ("completionCondition", mi.completion_condition),
        ("outputCollection", mi.output_collection),
        ("outputElement", mi.output_element),
    ):
        if value is not None:
            out[key] = value.source if isinstance(value, Expression) else value
    return out
