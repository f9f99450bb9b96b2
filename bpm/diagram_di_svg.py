"""A process drawn in the modeler's own layout (its BPMNDI, ``bpm.diagram_di``) with marks
over it (``bpm.diagram_overlay``): one instance's path, or a definition's heatmap.

Every shape lands at its DI bounds and every edge follows its waypoints; the document's
``viewBox`` is the diagram's extent with a margin, a title above and the legend below. Each
flow node is a ``<g class="node <status>" data-node="<BPMN id>">`` and each sequence flow a
``<g class="flow …" data-flow="<id>">``, so a page or a test can find "the failed node". What
the overlay says is drawn on the node: a count badge (top right), the live tokens (bottom
left, as Camunda's cockpit does), the failed tokens in red with the failure's reason (in the
node's tooltip and as a short line under it), a multi-instance activity's iterations
(``3/5``, bottom right); in a heatmap the fill goes from pale yellow to orange with the count.
Every text is escaped (``Svg.text`` and ``quoteattr``).
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from bpm.diagram import COLOURS, NOT_VISITED, STATUSES, Status
from bpm.diagram_di import Bounds, Diagram, DiEdge, DiShape, Shape, Trigger
from bpm.diagram_di_parts import (
    artifact,
    connector,
    defs,
    edge_label,
    lines_of,
    outer_label,
    points,
    pool_or_lane,
    text_block,
)
from bpm.diagram_di_symbols import activity_markers, gateway_marker, task_icon, trigger_icon
from bpm.diagram_overlay import NodeOverlay, Overlay, heat_colour
from bpm.diagram_shapes import FONT, TAKEN, UNTAKEN, Svg, num, text_width

MARGIN, HEADER, FOOTER = 30.0, 44.0, 40.0
TOKENS, FAILURES = "#2563eb", "#dc2626"
_FLOW_NODES = frozenset({Shape.EVENT, Shape.GATEWAY, Shape.TASK, Shape.SUBPROCESS})
_ARTIFACTS = frozenset({Shape.ANNOTATION, Shape.DATA_OBJECT, Shape.DATA_STORE, Shape.GROUP})


def render_di(diagram: Diagram, overlay: Overlay, *, name: str, title: str | None = None) -> str:
    """The whole SVG document (see the module docstring)."""
    box = diagram.extent()
    legend_w = _legend_width(overlay)
    width = max(box.w + 2 * MARGIN, legend_w + 2 * MARGIN)
    x0, y0 = box.x - MARGIN, box.y - MARGIN - HEADER
    height = box.h + 2 * MARGIN + HEADER + FOOTER
    svg = Svg()
    svg.add('<?xml version="1.0" encoding="UTF-8"?>')
    css = "bpmn-diagram heatmap" if overlay.heatmap else "bpmn-diagram"
    svg.add(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css}" '
        f'width="{num(width)}" height="{num(height)}" '
        f'viewBox="{num(x0)} {num(y0)} {num(width)} {num(height)}" font-family="{FONT}">'
    )
    svg.add(f"<title>{escape(title or name)}</title>")
    defs(svg, TAKEN, UNTAKEN)
    svg.add(
        f'<rect x="{num(x0)}" y="{num(y0)}" width="{num(width)}" height="{num(height)}" '
        f'fill="#ffffff"/>'
    )
    svg.text(x0 + MARGIN, y0 + MARGIN, name, size=16, anchor="start", weight="bold")
    if title:
        svg.text(x0 + MARGIN, y0 + MARGIN + 17, title, size=11, anchor="start", fill="#4b5563")
    _body(svg, diagram, overlay)
    _legend(svg, overlay, x0 + MARGIN, y0 + height - FOOTER / 2)
    svg.add("</svg>")
    return "\n".join(svg.parts) + "\n"


def _body(svg: Svg, diagram: Diagram, overlay: Overlay) -> None:
    shapes = diagram.shapes
    for s in shapes:  # pools under lanes, both under everything else
        if s.element.shape in (Shape.POOL, Shape.LANE):
            pool_or_lane(svg, s, s.element.id in _pools_of(diagram))
    for s in shapes:
        if s.element.shape is Shape.GROUP:
            artifact(svg, s)
    bodies = [s for s in shapes if s.element.shape is Shape.SUBPROCESS and s.expanded]
    for s in sorted(bodies, key=lambda s: -s.bounds.w * s.bounds.h):  # outer before inner
        _node(svg, s, overlay.node(s.element.id), overlay.heatmap)
    for e in diagram.edges:
        if e.tag == "sequenceFlow":
            _flow(svg, e, overlay.flows.get(e.id, 0))
        else:
            connector(svg, e)
    for s in shapes:
        if s.element.shape in _ARTIFACTS and s.element.shape is not Shape.GROUP:
            artifact(svg, s)
    flow_nodes = [
        s
        for s in shapes
        if s.element.shape in _FLOW_NODES
        and not (s.element.shape is Shape.SUBPROCESS and s.expanded)
    ]
    flow_nodes.sort(key=lambda s: s.element.tag == "boundaryEvent")  # boundaries on their hosts
    for s in flow_nodes:
        _node(svg, s, overlay.node(s.element.id), overlay.heatmap)


def _pools_of(diagram: Diagram) -> frozenset[str]:
    """The pools that hold this process: those with its nodes inside (a collaboration names
    the process of each pool; the reader keeps only this process's nodes)."""
    nodes = [s.bounds for s in diagram.shapes if s.element.shape in _FLOW_NODES]
    return frozenset(
        s.element.id
        for s in diagram.shapes
        if s.element.shape is Shape.POOL and any(_within(b, s.bounds) for b in nodes)
    )


def _within(inner: Bounds, outer: Bounds) -> bool:
    return outer.x <= inner.cx <= outer.x + outer.w and outer.y <= inner.cy <= outer.y + outer.h


def _look(o: NodeOverlay, heatmap: bool) -> tuple[str, str, str]:
    """Fill, stroke and stroke width for a node."""
    fill, stroke, _ = COLOURS[o.status]
    if heatmap:
        fill = heat_colour(o.heat) if o.entered else "#ffffff"
    if o.status == NOT_VISITED and not heatmap:
        fill = "#ffffff"
    width = "3" if o.status in (Status.FAILED, Status.ACTIVE) else "1.5"
    return fill, stroke, width


def _node(svg: Svg, shape: DiShape, o: NodeOverlay, heatmap: bool) -> None:
    el, b = shape.element, shape.bounds
    css = "node " + o.status.replace(" ", "-")
    svg.add(
        f'<g class="{css}" data-node={quoteattr(el.id)} data-type="{el.tag}" '
        f'data-status="{o.status}" data-entered="{o.entered}" data-tokens="{o.here}">'
    )
    svg.add(f"<title>{escape(_tooltip(shape, o))}</title>")
    fill, stroke, width = _look(o, heatmap)
    if el.shape is Shape.EVENT:
        _event(svg, shape, fill, stroke, width)
    elif el.shape is Shape.GATEWAY:
        h = b.w / 2
        svg.add(
            f'<polygon points="{num(b.cx)},{num(b.y)} {num(b.x + b.w)},{num(b.cy)} '
            f'{num(b.cx)},{num(b.y + b.h)} {num(b.x)},{num(b.cy)}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width}" stroke-linejoin="round"/>'
        )
        svg.add(gateway_marker(el.tag, b.cx, b.cy, h * 2, stroke))
        outer_label(svg, shape)
    else:
        _activity(svg, shape, fill, stroke, width, o)
    _numbers(svg, shape, o)
    svg.add("</g>")


def _tooltip(shape: DiShape, o: NodeOverlay) -> str:
    el = shape.element
    parts = [f"{el.name or el.id} ({el.id}, {el.tag}): {o.status}"]
    for text in (o.count_text(), f"{o.here} token(s) here" if o.here else ""):
        if text:
            parts.append(text)
    if o.iteration_text():
        parts.append(f"iterations {o.iteration_text()}")
    parts += [f"failed: {reason}" for reason in o.reasons]
    return "; ".join(parts)


def _event(svg: Svg, shape: DiShape, fill: str, stroke: str, width: str) -> None:
    el, b = shape.element, shape.bounds
    r = min(b.w, b.h) / 2
    dash = "" if el.interrupting else ' stroke-dasharray="5 3"'
    outer = "4" if el.tag == "endEvent" else width
    svg.add(
        f'<circle cx="{num(b.cx)}" cy="{num(b.cy)}" r="{num(r)}" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{outer}"{dash}/>'
    )
    if el.tag in ("intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent"):
        svg.add(
            f'<circle cx="{num(b.cx)}" cy="{num(b.cy)}" r="{num(r - 3)}" fill="none" '
            f'stroke="{stroke}" stroke-width="1"{dash}/>'
        )
    if el.trigger is not None:
        throwing = el.throwing or el.trigger is Trigger.TERMINATE
        svg.add(trigger_icon(el.trigger, throwing, b.cx, b.cy, r, stroke))
    outer_label(svg, shape)


def _activity(svg: Svg, shape: DiShape, fill: str, stroke: str, width: str, o: NodeOverlay) -> None:
    el, b = shape.element, shape.bounds
    expanded = el.shape is Shape.SUBPROCESS and shape.expanded
    dash = ' stroke-dasharray="2 3"' if el.triggered_by_event else ""
    thick = "4" if el.tag == "callActivity" else width
    opacity = ' fill-opacity="0.35"' if expanded else ""
    svg.add(
        f'<rect x="{num(b.x)}" y="{num(b.y)}" width="{num(b.w)}" height="{num(b.h)}" rx="10" '
        f'fill="{fill}"{opacity} stroke="{stroke}" stroke-width="{thick}"{dash}/>'
    )
    if el.tag == "transaction":  # a double border
        svg.add(
            f'<rect x="{num(b.x + 3)}" y="{num(b.y + 3)}" width="{num(b.w - 6)}" '
            f'height="{num(b.h - 6)}" rx="8" fill="none" stroke="{stroke}" stroke-width="1"/>'
        )
    svg.add(task_icon(el.tag, b.x + 5, b.y + 5, stroke))
    if expanded:
        for n, line in enumerate(lines_of(el.name, b.w - 20, 12, 2)):
            svg.text(b.x + 8, b.y + 18 + n * 14, line, size=12, anchor="start", fill="#111827")
    else:
        text_block(svg, Bounds(b.x + 4, b.y + 4, b.w - 8, b.h - 14), el.name, 12)
    collapsed = el.shape is Shape.SUBPROCESS and not shape.expanded
    svg.add(activity_markers(el, b, collapsed, stroke))


def _numbers(svg: Svg, shape: DiShape, o: NodeOverlay) -> None:
    """The overlay's numbers around a node (see the module docstring)."""
    b = shape.bounds
    count = o.count_text()
    if count:
        _pill(svg, "count", b.x + b.w, b.y, count, "#374151")
    if o.here:
        _pill(svg, "tokens", b.x, b.y + b.h, str(o.here), TOKENS)
    if o.failed_here or o.reasons:
        _pill(
            svg,
            "incidents",
            b.x + (22 if o.here else 0),
            b.y + b.h,
            str(o.failed_here or len(o.reasons)),
            FAILURES,
        )
    if o.iteration_text():
        _pill(svg, "iterations", b.x + b.w, b.y + b.h, o.iteration_text(), "#7c3aed")
    if o.reasons:
        short = lines_of(o.reasons[0], max(b.w + 60, 150), 10, 1)[0]
        svg.add('<g class="reason">')
        svg.text(b.cx, b.y - 14, short, size=10, fill=FAILURES, halo=True, weight="bold")
        svg.add("</g>")


def _pill(svg: Svg, css: str, cx: float, cy: float, text: str, colour: str) -> None:
    w = text_width(text, 10) + 10
    svg.add(f'<g class="{css}">')
    svg.add(
        f'<rect x="{num(cx - w / 2)}" y="{num(cy - 8)}" width="{num(w)}" height="16" rx="8" '
        f'fill="{colour}"/>'
    )
    svg.text(cx, cy + 3.5, text, size=10, fill="#ffffff", weight="bold")
    svg.add("</g>")


def _flow(svg: Svg, edge: DiEdge, taken: int) -> None:
    colour = TAKEN if taken else UNTAKEN
    style = f'stroke-width="{num(min(2 + taken / 5, 6))}"' if taken else 'stroke-width="1.3"'
    svg.add(
        f'<g class="flow {"taken" if taken else "not-taken"}" data-flow={quoteattr(edge.id)} '
        f'data-count="{taken}">'
    )
    svg.add(f"<title>{escape(f'{edge.name or edge.id}: taken {taken}x')}</title>")
    look = "taken" if taken else "untaken"
    start = "default" if edge.default else "conditional" if edge.conditional else ""
    begin = f' marker-start="url(#{start}-{look})"' if start else ""
    svg.add(
        f'<polyline points="{points(edge)}" fill="none" stroke="{colour}" {style} '
        f'stroke-linejoin="round" marker-end="url(#arrow-{look})"{begin}/>'
    )
    edge_label(svg, edge)
    if taken and len(edge.waypoints) > 1:
        x, y, anchor = _count_spot(edge)
        svg.text(x, y, f"{taken}x", size=10, fill=TAKEN, weight="bold", halo=True, anchor=anchor)
    svg.add("</g>")


def _count_spot(edge: DiEdge) -> tuple[float, float, str]:
    """Where a flow's count goes: on its last segment, just before the arrowhead (a flow's
    name sits at its middle), above a level segment and beside an upright one."""
    (x1, y1), (x2, y2) = edge.waypoints[-2], edge.waypoints[-1]
    length = max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1.0)
    back = min(26.0, length / 2) / length
    x, y = x2 - (x2 - x1) * back, y2 - (y2 - y1) * back
    if abs(x2 - x1) >= abs(y2 - y1):
        return x, y - 5, "middle"
    return x + 5, y + 4, "start"


def _legend_items(overlay: Overlay) -> list[str]:
    return [f"{status} ({overlay.count(status)})" for status in STATUSES]


def _legend_width(overlay: Overlay) -> float:
    return sum(text_width(t, 11) + 34 for t in _legend_items(overlay)) + 120


def _legend(svg: Svg, overlay: Overlay, x: float, y: float) -> None:
    svg.add('<g class="legend">')
    for status, text in zip(STATUSES, _legend_items(overlay), strict=True):
        fill, stroke, _ = COLOURS[status]
        svg.add(
            f'<rect x="{num(x)}" y="{num(y - 10)}" width="14" height="14" rx="3" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>'
        )
        svg.text(x + 20, y + 1, text, size=11, anchor="start", fill="#374151")
        x += text_width(text, 11) + 34
    if overlay.heatmap:
        svg.text(
            x,
            y + 1,
            f"counts over {overlay.instances} instance(s)",
            size=11,
            anchor="start",
            fill="#374151",
        )
    svg.add("</g>")
