"""What a process will call that the application must provide: handlers (of service tasks,
listeners, call mappings), beans (that its expressions call) and delegates (a
``delegateExpression``'s bean, or a handler of that name).

``bpm start`` asks before an instance starts, so a missing one is refused up front rather
than becoming an incident half way through; a graph is all it needs, so the check is the
same wherever it runs.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from bpm.definitions.code import BUILT_IN, Code, CodeKind
from bpm.definitions.model import Listener, ProcessGraph


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
