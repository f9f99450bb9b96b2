"""Which layout a diagram is drawn in: the modeler's own (BPMNDI) when the deployed file has
one for the process that covers it, the automatic layered layout otherwise.

The modeler's layout is used when the deployed source is BPMN, has a plane for the process
and places every node of the compiled process, except those inside a subprocess it draws
collapsed (a modeler draws their insides on a plane of their own). When a node has no shape
(a file edited by hand, DI of an older version of the process) the whole diagram falls back
to the automatic layout, so no node is ever missing from a picture of an instance. JSON
definitions have no DI and always get the automatic layout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bpm.definitions.model import ProcessGraph
from bpm.diagram import Marks, NodeMark, mark
from bpm.diagram_di import Diagram, read_diagram
from bpm.diagram_di_svg import render_di
from bpm.diagram_overlay import HeatCounts, heatmap, of_instance
from bpm.diagram_svg import render_svg
from bpm.errors import BpmError

#: The source formats that can carry BPMNDI.
DI_FORMATS = frozenset({"bpmn", "xml"})


def modeler_layout(graph: ProcessGraph, source: tuple[str, str] | None) -> Diagram | None:
    """The BPMNDI of ``graph``'s process in its deployed ``source`` (text, format), when it
    covers the process (see the module docstring); else ``None``."""
    if source is None or source[1].lower() not in DI_FORMATS:
        return None
    try:
        diagram = read_diagram(source[0], graph.key)
    except BpmError:  # the file was accepted when deployed; an unreadable DI is only a picture
        return None
    return diagram if diagram is not None and covers(diagram, graph) else None


def covers(diagram: Diagram, graph: ProcessGraph) -> bool:
    drawn = diagram.ids()
    collapsed = {s.element.id for s in diagram.shapes if not s.expanded}
    for node in graph.nodes.values():
        if node.id in drawn:
            continue
        scope = node.scope
        while scope is not None and scope not in collapsed:
            scope = graph.nodes[scope].scope if scope in graph.nodes else None
        if scope is None:
            return False
    return True


def instance_svg(
    graph: ProcessGraph,
    source: tuple[str, str] | None,
    events: Iterable[Mapping[str, Any]],
    tokens: Iterable[Mapping[str, Any]],
    *,
    incidents: Iterable[tuple[str | None, str]] = (),
    instances: Mapping[str, int] | None = None,
    title: str | None = None,
) -> str:
    """One instance's SVG, in the modeler's layout when there is one (see ``of_instance``
    for ``incidents`` and ``instances``)."""
    tokens = list(tokens)
    marks = mark(graph, events, tokens)
    diagram = modeler_layout(graph, source)
    if diagram is None:
        return render_svg(graph, marks, title=title)
    overlay = of_instance(marks, tokens, incidents, instances)
    return render_di(diagram, overlay, name=graph.name or graph.key, title=title)


def definition_svg(
    graph: ProcessGraph,
    source: tuple[str, str] | None,
    counts: HeatCounts,
    *,
    title: str | None = None,
) -> str:
    """A definition's heatmap: how often each node and flow was taken over its instances,
    and where its instances' tokens are now."""
    overlay = heatmap(graph.nodes, graph.flows, counts)
    diagram = modeler_layout(graph, source)
    if diagram is not None:
        return render_di(diagram, overlay, name=graph.name or graph.key, title=title)
    return render_svg(graph, heat_marks(graph, counts), title=title)


def heat_marks(graph: ProcessGraph, counts: HeatCounts) -> Marks:
    """The heatmap as marks, for the automatic layout and Mermaid."""
    overlay = heatmap(graph.nodes, graph.flows, counts)
    return Marks(
        {n: NodeMark(status=o.status, entered=o.entered) for n, o in overlay.nodes.items()},
        overlay.flows,
    )
