"""A script where an expression would be: a flow's ``conditionExpression language="javascript"``
and a ``camunda:script`` input or output parameter.

Such a script stands in for an expression, so it is one (:class:`ScriptExpression` is an
``Expression`` whose evaluation runs the sandbox) and every caller of conditions and mappings
takes it as it is. It runs where the expression would, inside the engine's transaction: it
is bounded (``BPM_SCRIPT_TIMEOUT_MS``, ``BPM_SCRIPT_MEMORY_MB``), reaches nothing outside the
sandbox and sets no variables (``execution`` only reads), so it is evaluated like an
expression, not run as user code. In the JSON format it is ``{"$script": {"format":
"javascript", "source": "..."}}`` (a flow's ``condition``, a mapping's value).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bpm.errors import ExpressionEvalError, InvalidExpression
from bpm.expressions import Expression
from bpm.juel_methods import ExecutionView, Invocation
from bpm.scripts import ScriptFailed, run_script

SCRIPT_KEY = "$script"
JAVASCRIPT = frozenset({"javascript", "ecmascript", "js"})


@dataclass(frozen=True)
class ScriptExpression(Expression):
    """An inline JavaScript script evaluated as an expression (its last value)."""

    language: str = "javascript"

    def evaluate(self, variables: Mapping[str, Any], invocation: Invocation | None = None) -> Any:
        given = invocation or Invocation(ExecutionView(variables))
        try:
            return run_script(self.source, f"{self.where}: {self.kind}", dict(variables), given)
        except ScriptFailed as exc:
            raise ExpressionEvalError(str(exc)) from None


def is_script(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {SCRIPT_KEY}


def compile_script(value: Mapping[str, Any], *, where: str, kind: str) -> ScriptExpression:
    """``{"$script": {"format", "source"}}`` checked at deploy (format, text, scripts on)."""
    spec = value[SCRIPT_KEY]
    if not isinstance(spec, Mapping) or set(spec) != {"format", "source"}:
        raise InvalidExpression(f"{where}: a {kind} script is {{'format': ..., 'source': ...}}")
    fmt, source = spec["format"], spec["source"]
    if not isinstance(fmt, str) or fmt.strip().lower() not in JAVASCRIPT:
        raise InvalidExpression(
            f"{where}: {kind} script format {fmt!r} is not one bpm runs "
            f"(javascript, ecmascript, js)"
        )
    if not isinstance(source, str) or not source.strip():
        raise InvalidExpression(f"{where}: a {kind} script's 'source' is non-empty text")
    tree = ast.Expression(body=ast.Constant(None))
    return ScriptExpression(source, "", frozenset(), tree, where, f"{kind} script", language=fmt)
