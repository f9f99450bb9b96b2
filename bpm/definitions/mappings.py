"""Input and output mappings: the local variables an activity or subprocess makes on entry,
and the results it copies out when it completes.

A mapping's value is JSON: a string wrapped in ``${...}`` is an expression of the safe
evaluator, a string with text around ``${...}`` parts (``Dear ${name}``) is a composite, the
text with each part's value as text, any other string is text, and lists and objects hold
values of the same kinds (each element evaluated on its own). Input values are evaluated over
the variables the token sees as it enters; output values over what it sees inside, just before
it leaves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression
from bpm.script_values import compile_script, is_script

#: A variable name a mapping may create (the names the expression language can read).
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The longest name any variable may have (``bpm.variables``).
_NAME_MAX = 255


def any_variable_name(value: object) -> bool:
    """A name Camunda 7 takes for a variable the engine fills by name (a form field's id, the
    variable a caught error's code or message goes to): any printable text, such as
    ``jaar-omzet`` or ``Error in risk model``, though an expression can read it only with
    ``execution.getVariable('...')``."""
    return isinstance(value, str) and 0 < len(value) <= _NAME_MAX and value.isprintable()


_WRAPPED = re.compile(r"\s*\$\{.*\}\s*", re.DOTALL)
#: One ``${...}`` part of a composite (no ``}`` inside, as in JUEL's composite expressions).
_PART = re.compile(r"\$\{([^}]*)\}")
#: ``list`` and ``dict`` values as compiled: tuples, so a graph stays immutable.
MappingValue = Any


@dataclass(frozen=True)
class VariableMapping:
    """One parameter: the variable ``name`` gets ``value``, evaluated."""

    name: str
    value: MappingValue


@dataclass(frozen=True)
class _List:
    items: tuple[MappingValue, ...]


@dataclass(frozen=True)
class _Map:
    items: tuple[tuple[str, MappingValue], ...]


@dataclass(frozen=True)
class Composite:
    """Text with expressions in it: each expression's value joins the text as JUEL coerces
    it (null is empty, true and false are words, numbers as written, lists and objects as
    JSON)."""

    parts: tuple[str | Expression, ...]
    source: str

    def evaluate(self, view: Mapping[str, Any]) -> str:
        return "".join(p if isinstance(p, str) else as_text(p.evaluate(view)) for p in self.parts)


def parse_mappings(raw: Any, key: str, where: str, node_id: str) -> tuple[VariableMapping, ...]:
    """``inputs`` or ``outputs`` of a node: an object of variable name -> value."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise InvalidDefinition(
            f"{where}: {key!r} must be an object of variable name -> value", node_id
        )
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not VARIABLE_NAME.match(name):
            raise InvalidDefinition(
                f"{where}: {key!r} parameter {name!r} is not a variable name (letters, digits "
                f"and '_', not starting with a digit)",
                node_id,
            )
        context = f"{where} {key[:-1]} {name!r}"
        try:
            out.append(VariableMapping(name, _compile(value, context, key[:-1] + " mapping")))
        except InvalidExpression as exc:
            raise InvalidDefinition(str(exc), node_id) from None
    return tuple(out)


def _compile(value: Any, where: str, kind: str) -> MappingValue:
    if is_script(value):
        return compile_script(value, where=where, kind=kind)
    if isinstance(value, str):
        if _WRAPPED.fullmatch(value) and len(_PART.findall(value)) <= 1:
            return compile_expression(value, where=where, kind=kind)
        if "${" in value:
            return composite(value, where, kind)
        return value
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list):
        return _List(tuple(_compile(v, where, kind) for v in value))
    if isinstance(value, Mapping):
        for k in value:
            if not isinstance(k, str):
                raise InvalidDefinition(f"{where}: map keys must be strings, got {k!r}")
        return _Map(tuple((k, _compile(v, where, kind)) for k, v in value.items()))
    raise InvalidDefinition(f"{where}: {type(value).__name__} is not a JSON value")


def composite(value: str, where: str, kind: str) -> Composite:
    parts: list[str | Expression] = []
    last = 0
    for match in _PART.finditer(value):
        if match.start() > last:
            parts.append(value[last : match.start()])
        parts.append(compile_expression(match[0], where=where, kind=kind))
        last = match.end()
    rest = value[last:]
    if "${" in rest:
        raise InvalidExpression(f"{where}: {kind} {value!r} has a '${{' without its '}}'")
    if rest:
        parts.append(rest)
    return Composite(tuple(parts), value)


def as_text(value: Any) -> str:
    """A value as JUEL puts it into text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def evaluate(mappings: tuple[VariableMapping, ...], view: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter's value over ``view``; raises the evaluator's errors (with the
    parameter named in them)."""
    return {m.name: _value(m.value, view) for m in mappings}


def _value(value: MappingValue, view: Mapping[str, Any]) -> Any:
    if isinstance(value, Expression):
        return value.evaluate(view)
    if isinstance(value, Composite):
        return value.evaluate(view)
    if isinstance(value, _List):
        return [_value(v, view) for v in value.items]
    if isinstance(value, _Map):
        return {k: _value(v, view) for k, v in value.items}
    return value


def describe(mappings: tuple[VariableMapping, ...]) -> dict[str, Any]:
    """The parameters as the definition wrote them (for views and diagrams)."""
    return {m.name: _source(m.value) for m in mappings}


def _source(value: MappingValue) -> Any:
    if isinstance(value, Expression):
        return value.source
    if isinstance(value, Composite):
        return value.source
    if isinstance(value, _List):
        return [_source(v) for v in value.items]
    if isinstance(value, _Map):
        return {k: _source(v) for k, v in value.items}
    return value
