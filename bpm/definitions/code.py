"""Code a model carries instead of naming a handler: a service task's or a listener's
``expression`` (Camunda's ``camunda:expression``), ``delegateExpression`` (a bean) or inline
``script``.

Each runs as a handler task does (outside any transaction, with retries and incidents) under
a built-in handler name (:data:`BUILT_IN`), so the engine's task machinery needs nothing new:
only the runner asks the node or listener for its ``Code`` and runs it instead of looking the
name up in the registry. The JSON keys: ``{"expression": "${...}"}``,
``{"delegateExpression": "${bean}"}``, ``{"script": {"format": "javascript", "source": ...}}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bpm.errors import InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression
from bpm.juel_methods import CallScope
from bpm.scripts import scripts_enabled


class CodeKind(StrEnum):
    """What a model's code is; its value is the built-in handler name tasks carry."""

    EXPRESSION = "bpm:expression"
    DELEGATE = "bpm:delegateExpression"
    SCRIPT = "bpm:script"


BUILT_IN = frozenset(kind.value for kind in CodeKind)
CODE_KEYS = ("expression", "delegateExpression", "script")
SCRIPT_KEYS = {"format", "source"}
#: The script formats bpm runs (case-insensitive), all JavaScript.
JAVASCRIPT = frozenset({"javascript", "ecmascript", "js"})
_BEAN = re.compile(r"\s*[$#]\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\s*")
#: ``${orderApproval.loadOrder()}``: a bean method, without arguments, that gives the
#: delegate to run (as a Spring bean's method returning a ``JavaDelegate``).
_BEAN_FACTORY = re.compile(
    r"\s*[$#]\{\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\(\s*\)\s*\}\s*"
)


@dataclass(frozen=True)
class Script:
    """An inline JavaScript script and where it is (named in every incident it causes)."""

    source: str
    format: str
    where: str


@dataclass(frozen=True)
class Code:
    """One piece of model code: exactly one of its three fields is set."""

    kind: CodeKind
    expression: Expression | None = None
    bean: str | None = None
    script: Script | None = None
    #: The bean's method that gives the delegate, for ``${bean.method()}``.
    factory: str | None = None

    @property
    def beans(self) -> frozenset[str]:
        """The beans it calls, checked before an instance starts."""
        if self.bean is not None:
            return frozenset({self.bean})
        return self.expression.beans if self.expression is not None else frozenset()

    def describe(self) -> str:
        if self.expression is not None:
            return self.expression.source
        if self.script is not None:
            return f"{self.script.format} script"
        if self.factory is not None:
            return f"${{{self.bean}.{self.factory}()}}"
        return f"${{{self.bean}}}"


def parse_code(raw: Mapping[str, Any], where: str, node_id: str | None) -> Code | None:
    """The code an element's definition gives (None: it names a handler, topic, ...)."""
    given = [k for k in CODE_KEYS if k in raw]
    if not given:
        return None
    if len(given) > 1:
        raise InvalidDefinition(f"{where}: give one of {', '.join(given)}", node_id)
    value = raw[given[0]]
    if given[0] == "script":
        return Code(CodeKind.SCRIPT, script=_script(value, where, node_id))
    if not isinstance(value, str):
        raise InvalidDefinition(f"{where}: {given[0]!r} must be text", node_id)
    if given[0] == "delegateExpression":
        bean = _BEAN.fullmatch(value)
        if bean is not None:
            return Code(CodeKind.DELEGATE, bean=bean[1])
        made = _BEAN_FACTORY.fullmatch(value)
        if made is None:
            raise InvalidDefinition(
                f"{where}: delegateExpression {value!r} must name a bean (${{beanName}}) or "
                f"a bean method that gives the delegate (${{beanName.method()}})",
                node_id,
            )
        return Code(CodeKind.DELEGATE, bean=made[1], factory=made[2])
    if "${" not in value and "#{" not in value:  # JUEL literal text: nothing to run, as in
        value = json.dumps(value)  # Camunda, where its value is the text itself
    try:
        expr = compile_expression(value, where=where, kind="expression", scope=CallScope.TASK)
    except InvalidExpression as exc:
        raise InvalidDefinition(str(exc), node_id) from None
    return Code(CodeKind.EXPRESSION, expression=expr)


def _script(value: Any, where: str, node_id: str | None) -> Script:
    if not isinstance(value, Mapping) or set(value) - SCRIPT_KEYS:
        raise InvalidDefinition(
            f"{where}: 'script' is an object with 'format' and 'source'", node_id
        )
    fmt, source = value.get("format"), value.get("source")
    if not isinstance(fmt, str) or fmt.strip().lower() not in JAVASCRIPT:
        raise InvalidDefinition(
            f"{where}: script format {fmt!r} is not one bpm runs (javascript, ecmascript, js)",
            node_id,
        )
    if not isinstance(source, str) or not source.strip():
        raise InvalidDefinition(f"{where}: a script's 'source' is non-empty text", node_id)
    return Script(source, fmt.strip(), where)


def inline_script(fmt: str, text: str | None) -> dict[str, Any] | None:
    """The definition keys of an inline script bpm runs: JavaScript (when scripts are on) as
    a ``script``, JUEL as an ``expression``; None for any other language or no text."""
    if text is None or not text.strip():
        return None
    if fmt.lower() in JAVASCRIPT and scripts_enabled():
        return {"script": {"format": fmt, "source": text}}
    if fmt.lower() == "juel":
        return {"expression": text.strip()}
    return None
