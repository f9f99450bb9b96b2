"""What a process will call that the application must provide: handlers (of service tasks,
listeners, call mappings), beans (that its expressions call) and delegates (a
``delegateExpression``'s bean, or a handler of that name).

``bpm start`` asks before an instance starts, so a missing one is refused up front rather
than becoming an incident half way through; a graph is all it needs, so the check is the
same wherever it runs.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping
from typing import Any

from bpm.definitions.code import BUILT_IN, Code, CodeKind
from bpm.definitions.model import Listener, ProcessGraph
from bpm.definitions.parse.document import compile_definition as compile_definition
from bpm.errors import InvalidDefinition
from bpm.script_values import SCRIPT_KEY
from bpm.scripts import SCRIPTS_SETTING, scripts_enabled


def missing(graph: ProcessGraph, handlers: Container[str], beans: Container[str]) -> list[str]:
    """Each thing the process calls that neither registry has, as ``handler 'x'`` or
    ``bean 'y'`` (sorted, once each)."""
    out: set[str] = set()
    for handler, code in _called(graph):
        if code is None:
            if handler not in BUILT_IN and handler not in handlers:
                out.add(f"handler {handler!r}")
            continue
        if code.kind is CodeKind.DELEGATE and code.bean is not None:
            if code.bean not in beans and code.bean not in handlers:
                out.add(f"bean {code.bean!r} (or a handler of that name)")
            continue
        out.update(f"bean {name!r}" for name in code.beans if name not in beans)
    return sorted(out)


def compile_for_deploy(document: Any) -> ProcessGraph:
    """``compile_definition``, and the checks only a new deployment gets (scripts allowed)."""
    graph = compile_definition(document)
    check_scripts_allowed(graph.document)
    return graph


def check_scripts_allowed(document: Any) -> None:
    """Refuse a definition that holds a script where the installation runs none
    (``BPM_SCRIPTS=off``); checked at deploy only, so a definition deployed earlier still
    loads (its scripts then fail as incidents naming the setting)."""
    if scripts_enabled():
        return
    where = _first_script(document, document.get("key", "?") if isinstance(document, dict) else "?")
    if where is not None:
        raise InvalidDefinition(
            f"{where} holds a script, and this installation runs no scripts "
            f"({SCRIPTS_SETTING}=off); register a handler that does its work instead"
        )


def _first_script(value: Any, where: str) -> str | None:
    if isinstance(value, Mapping):
        here = f"node {value['id']!r}" if isinstance(value.get("id"), str) else where
        script = value.get("script")
        if SCRIPT_KEY in value or (isinstance(script, Mapping) and "source" in script):
            return here
        values: Any = value.values()
    elif isinstance(value, list):
        here, values = where, value
    else:
        return None
    return next((w for v in values if (w := _first_script(v, here)) is not None), None)


def _called(graph: ProcessGraph) -> Iterator[tuple[str, Code | None]]:
    listeners: list[Listener] = [x for flow in graph.flows.values() for x in flow.listeners]
    for node in graph.nodes.values():
        if node.handler:
            yield node.handler, node.code
        if node.call is not None and node.call.mapping:
            yield node.call.mapping, None
        listeners.extend(node.listeners)
    for listener in listeners:
        yield listener.handler, listener.code
