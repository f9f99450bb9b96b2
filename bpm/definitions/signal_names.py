"""Signal names with ``${...}`` on catching events (a catch, a boundary, an event
subprocess start, an event after an event-based gateway): ``done-${execution.processBusinessKey}``.

Camunda 7 models use them for instance-specific signals, thrown elsewhere with the concrete
name. A template is kept as written in ``definition_signal_subscriptions`` (its ``${`` or
``#{`` is the marker: no literal catch name holds one, since such a name is a template), and a
throw evaluates it for each token waiting there (``engine/semantics/signal_names``).

The expression is the safe evaluator's, with ``execution`` an object of the instance's
``processBusinessKey``, ``businessKey`` and ``processInstanceId`` (read-only: it is made for
each evaluation). JUEL's getters for them (``execution.getProcessBusinessKey()``) are
rewritten to those properties here, before compiling, so the evaluator itself stays as it is.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from bpm.definitions.mappings import VariableMapping, parse_mappings
from bpm.errors import InvalidDefinition

#: JUEL getters of ``execution`` a signal template may call, and the property each reads.
_GETTERS = re.compile(
    r"\bexecution\s*\.\s*get(ProcessBusinessKey|BusinessKey|ProcessInstanceId)\s*\(\s*\)"
)


def is_template(name: str) -> bool:
    """Whether a signal name (as written in the definition) is evaluated."""
    return "${" in name or "#{" in name


def compile_template(name: str, where: str, node_id: str) -> VariableMapping:
    """The compiled template (``#{`` read as ``${``); refused as the definition's error."""
    text = _GETTERS.sub(lambda m: f"execution.{m[1][0].lower()}{m[1][1:]}", name)
    # "signals": parse_mappings names each entry by the key's singular ("signal mapping")
    [mapping] = parse_mappings({"signal": text.replace("#{", "${")}, "signals", where, node_id)
    return mapping


@lru_cache(maxsize=1024)
def cached(name: str) -> VariableMapping | None:
    """The compiled template of a deployed name (compiled once per process: a deployed
    name compiled at deploy already, so None only for a literal name)."""
    if not is_template(name):
        return None
    try:
        return compile_template(name, "signal", "signal")
    except InvalidDefinition:  # pragma: no cover - deployed names compiled at deploy
        return None


def could_give(template: str, name: str) -> bool:
    """Whether ``template`` could evaluate to ``name``: its text before the first expression
    and after the last one must be there, so a throw evaluates only the templates that
    might match (``done-${...}`` never for ``alarm``)."""
    marks = [i for i in (template.find("${"), template.find("#{")) if i >= 0]
    prefix, suffix = template[: min(marks)], template[template.rindex("}") + 1 :]
    return (
        len(name) >= len(prefix) + len(suffix) and name.startswith(prefix) and name.endswith(suffix)
    )


def execution(instance_id: Any, business_key: str | None) -> dict[str, Any]:
    """What ``execution`` reads in a template: a fresh object per evaluation, so nothing an
    expression does can change the instance."""
    return {
        "processBusinessKey": business_key,
        "businessKey": business_key,
        "processInstanceId": str(instance_id),
    }


def caught(raw: Any, where: str, node_id: str) -> str:
    """A catching node's ``signal``: a literal name, or a template compiled now so a bad one
    is refused at deploy naming the node."""
    from bpm.definitions.parse.patterns import signal_name  # parse imports this module

    name = signal_name(raw, where, node_id, caught=True)
    if is_template(name):
        compile_template(name, where, node_id)
    return name
