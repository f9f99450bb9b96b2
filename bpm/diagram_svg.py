"""A small layered SVG renderer for ``bpm.diagram``: left to right, one column per rank.

Each scope (the process, each subprocess) is laid out on its own, then drawn inside its
subprocess box. Within a scope:

- flows that close a loop (found by a depth-first walk from the start event) are set aside;
- a node's rank is the longest path from the start over the other flows; a flow leaving a
  boundary event counts as leaving its host, and a compensation handler activity stands in its
  activity's column, below it;
- a flow spanning several ranks gets a placeholder in every column it crosses, so nothing is
  drawn through a node;
- each column is ordered and placed by where its predecessors are (a boundary's target below
  its host), pushed apart where they overlap, then shifted to stay centred on them;
- flows are drawn as right-angled lines bending in the gaps between columns; loops run back
  under the scope.

No font metrics are available, so text widths are estimated and long labels shortened.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from bpm.definitions.model import Flow, Node, NodeType, ProcessGraph
from bpm.diagram import (
    COLOURS,
    NOT_VISITED,
    Marks,
    NodeMark,
    label_lines,
)
from bpm.diagram_icons import event_gateway_mark, icon
from bpm.diagram_layout import (
    Layout,
    label_spot,
)
from bpm.diagram_marker import marker_svg
from bpm.diagram_shapes import (
    BOUNDARY_R,
    CAPTIONS,
    CHAR_W,
    EVENT_R,
    EVENTS,
    FONT,
    GATEWAY,
    GATEWAYS,
    HEADER,
    LABEL_LINE,
    MARGIN,
    TAKEN,
    TASK_H,
    TASK_W,
    UNTAKEN,
    Item,
    Point,
    Svg,
    legend,
    legend_width,
    num,
    outside_lines,
    subprocess_title,
    text_width,
    wrap,
)


def render_svg(graph: ProcessGraph, marks: Marks, *, title: str | None = None) -> str:
    """The whole SVG document."""
    layout = Layout(graph)
    width = max(layout.root.width, legend_width(marks)) + 2 * MARGIN
    legend_y = MARGIN + HEADER + layout.root.height + 34
    height = legend_y + 8 + MARGIN
    svg = Svg()
    svg.add('<?xml version="1.0" encoding="UTF-8"?>')
    svg.add(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}" '
        f'height="{num(height)}" viewBox="0 0 {num(width)} {num(height)}" '
        f'font-family="{FONT}">'
    )
    svg.add(f"<title>{escape(title or graph.name)}</title>")
    svg.add("<defs>")
    for name, colour in (("taken", TAKEN), ("untaken", UNTAKEN)):
        svg.add(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="10" refY="5" '
            f'markerWidth="9" markerHeight="9" markerUnits="userSpaceOnUse" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        )
    svg.add("</defs>")
    svg.add(f'<rect width="{num(width)}" height="{num(height)}" fill="#ffffff"/>')
    svg.text(
        MARGIN,
        MARGIN + 14,
        graph.name if graph.name != graph.key else graph.key,
        size=16,
        anchor="start",
        weight="bold",
    )
    if title:
        svg.text(MARGIN, MARGIN + 32, title, size=11, anchor="start", fill="#4b5563")
    svg.add(f'<g transform="translate({num(MARGIN)},{num(MARGIN + HEADER)})">')
    nodes = [n for n in graph.nodes.values() if n.type is not NodeType.BOUNDARY]
    for node in nodes:  # subprocess boxes first (outer before inner), under everything
        if node.type is NodeType.SUBPROCESS:
            _subprocess(svg, node, layout.items[node.id], marks.nodes[node.id])
    routes = sorted(layout.routes(), key=lambda r: marks.flows.get(r[0].id, 0) > 0)
    for flow, points, where in routes:  # taken flows last, over any line they share
        _flow(svg, flow, points, where, marks.flows.get(flow.id, 0))
    for handler, activity in layout.handlers.items():
        _association(svg, layout.items[activity], layout.items[handler])
    for node in nodes:
        if node.type is not NodeType.SUBPROCESS:
            _node(svg, node, layout.items[node.id], marks.nodes[node.id])
    for ids in layout.boundaries.values():
        for boundary_id in ids:
            _boundary(
                svg,
                graph.nodes[boundary_id],
                layout.boundary_point(boundary_id),
                marks.nodes[boundary_id],
            )
    svg.add("</g>")
    legend(svg, marks, MARGIN, legend_y)
    svg.add("</svg>")
    return "\n".join(svg.parts) + "\n"


def _open_node(svg: Svg, node: Node, m: NodeMark) -> None:
    css = "node " + m.status.replace(" ", "-")
    svg.add(
        f'<g id={quoteattr("node-" + node.id)} class="{css}" data-node={quoteattr(node.id)} '
        f'data-type="{node.type.value}" data-status="{m.status}" '
        f'data-entered="{m.entered}" data-runs="{m.runs}">'
    )
    detail = m.count_text()
    tip = f"{node.id} ({node.type.value}): {m.status}" + (f", {detail}" if detail else "")
    svg.add(f"<title>{escape(tip)}</title>")


def _style(m: NodeMark) -> tuple[str, str, str, str]:
    fill, stroke, text = COLOURS[m.status]
    width = "3" if m.status in ("active", "failed") else "1.5"
    return fill, stroke, text, width


def _badge(svg: Svg, x: float, y: float, m: NodeMark) -> None:
    text = m.count_text()
    if not text:
        return
    _, stroke, _, _ = _style(m)
    w = text_width(text, 10) + 10
    svg.add(
        f'<rect class="count" x="{num(x - w / 2)}" y="{num(y - 8)}" width="{num(w)}" '
        f'height="16" rx="8" fill="{stroke}"/>'
    )
    svg.text(x, y + 3.5, text, size=10, fill="#ffffff", weight="bold")


def _node(svg: Svg, node: Node, item: Item, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    dash = ' stroke-dasharray="4 3"' if m.status == NOT_VISITED else ""
    _open_node(svg, node, m)
    cx, cy = item.cx, item.cy
    if node.type in EVENTS:
        r = EVENT_R
        thick = "3.5" if node.type is NodeType.END else width
        svg.add(
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r)}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{thick}"{dash}/>'
        )
        if node.type not in (NodeType.START, NodeType.END):
            svg.add(
                f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r - 3.5)}" fill="none" '
                f'stroke="{stroke}" stroke-width="1"/>'
            )
        icon(svg, node, cx, cy, stroke)
        _label(svg, node, cx, cy + r, ink)
        _badge(svg, cx + r, cy - r, m)
    elif node.type in GATEWAYS:
        h = GATEWAY / 2
        svg.add(
            f'<polygon points="{num(cx)},{num(cy - h)} {num(cx + h)},{num(cy)} '
            f'{num(cx)},{num(cy + h)} {num(cx - h)},{num(cy)}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
        )
        s = 8.0
        if node.type is NodeType.INCLUSIVE:  # a circle, as BPMN draws it
            svg.add(
                f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(s + 1)}" stroke="{stroke}" '
                f'stroke-width="3" fill="none"/>'
            )
            path = ""
        elif node.type is NodeType.EVENT_GATEWAY:  # a double circle around a pentagon
            event_gateway_mark(svg, cx, cy, s, stroke)
            path = ""
        elif node.type is NodeType.EXCLUSIVE:
            path = (
                f"M{num(cx - s)},{num(cy - s)} L{num(cx + s)},{num(cy + s)} "
                f"M{num(cx + s)},{num(cy - s)} L{num(cx - s)},{num(cy + s)}"
            )
        else:
            path = (
                f"M{num(cx)},{num(cy - s - 2)} L{num(cx)},{num(cy + s + 2)} "
                f"M{num(cx - s - 2)},{num(cy)} L{num(cx + s + 2)},{num(cy)}"
            )
        if path:
            svg.add(f'<path d="{path}" stroke="{stroke}" stroke-width="3" fill="none"/>')
        _label(svg, node, cx, cy - h, ink, above=True)
        _badge(svg, cx + h / 2 + 12, cy + h / 2 + 4, m)
    else:
        _task(svg, node, item, m)
    svg.add("</g>")


def _label(svg: Svg, node: Node, cx: float, y: float, ink: str, above: bool = False) -> None:
    """An event's label under it, a gateway's above it (so a loop can leave from below)."""
    lines = outside_lines(node)
    first = y - 6 - (len(lines) - 1) * LABEL_LINE if above else y + 14
    for n, text in enumerate(lines):
        is_id = n == len(lines) - 1 and len(lines) > 1
        svg.text(
            cx,
            first + n * LABEL_LINE,
            text,
            size=10 if is_id else 11,
            fill="#6b7280" if is_id else ink,
            italic=is_id,
        )


def _task(svg: Svg, node: Node, item: Item, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    dash = ' stroke-dasharray="4 3"' if m.status == NOT_VISITED else ""
    x, y = item.left, item.top
    svg.add(
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(TASK_W)}" height="{num(TASK_H)}" '
        f'rx="10" fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}/>'
    )
    caption = CAPTIONS.get(node.type)
    if caption:
        svg.text(x + 8, y + 13, caption, size=9, fill="#6b7280", anchor="start")
    names = label_lines(node)
    named = len(names) > 1
    lines = wrap(names[0], int((TASK_W - 16) / CHAR_W)) if named else []
    ident = wrap(names[-1], int((TASK_W - 16) / text_width("x", 10 if named else 12)), 1)[0]
    # the lines are centred in the box under the caption
    room = TASK_H - 20
    baseline = y + 16 + (room - (len(lines) + 1) * 14) / 2 + 11
    for n, text in enumerate(lines):
        svg.text(item.cx, baseline + n * 14, text, fill=ink)
    svg.text(
        item.cx,
        baseline + len(lines) * 14,
        ident,
        size=10 if named else 12,
        fill="#6b7280" if named else ink,
        italic=named,
    )
    svg.add(marker_svg(node, item.cx, y + TASK_H, stroke))
    _badge(svg, item.right - 6, item.top, m)


def _subprocess(svg: Svg, node: Node, item: Item, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    dash = ' stroke-dasharray="6 4"' if m.status == NOT_VISITED else ""
    if node.triggered_by_event:  # an event subprocess: BPMN draws its border dotted
        dash = ' stroke-dasharray="1.5 3" stroke-linecap="round"'
    _open_node(svg, node, m)
    svg.add(
        f'<rect x="{num(item.left)}" y="{num(item.top)}" width="{num(item.shape_w)}" '
        f'height="{num(item.shape_h)}" rx="12" fill="{fill}" fill-opacity="0.35" '
        f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
    )
    if node.transaction:  # BPMN draws a transaction with a double border
        svg.add(
            f'<rect x="{num(item.left + 4)}" y="{num(item.top + 4)}" '
            f'width="{num(item.shape_w - 8)}" height="{num(item.shape_h - 8)}" rx="9" '
            f'fill="none" stroke="{stroke}" stroke-width="1"{dash}/>'
        )
    room = int((item.shape_w - 60) / CHAR_W)
    svg.text(
        item.left + 10,
        item.top + 17,
        wrap(subprocess_title(node), room, 1)[0],
        anchor="start",
        fill=ink,
        weight="bold",
    )
    _badge(svg, item.right - 22, item.top + 13, m)
    svg.add(marker_svg(node, item.cx, item.top + item.shape_h, stroke))
    svg.add("</g>")


def _boundary(svg: Svg, node: Node, at: Point, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    x, y = at
    dash = ' stroke-dasharray="3 2"' if not node.interrupting else ""
    _open_node(svg, node, m)
    svg.add(
        f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(BOUNDARY_R)}" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
    )
    svg.add(
        f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(BOUNDARY_R - 3)}" fill="none" '
        f'stroke="{stroke}" stroke-width="1"{dash}/>'
    )
    icon(svg, node, x, y, stroke, small=True)
    count = m.count_text()
    text = label_lines(node)[0] + (f" · {count}" if count else "")
    svg.text(
        x + BOUNDARY_R + 3,
        y + BOUNDARY_R + 10,
        wrap(text, 24, 1)[0],
        size=10,
        fill=ink,
        anchor="start",
        halo=True,
    )
    svg.add("</g>")


def _flow(svg: Svg, flow: Flow, points: list[Point], where: str, taken: int) -> None:
    colour = TAKEN if taken else UNTAKEN
    style = 'stroke-width="2"' if taken else 'stroke-width="1.3" stroke-dasharray="5 4"'
    path = " ".join(f"{num(x)},{num(y)}" for x, y in points)
    svg.add(
        f'<g class="flow {"taken" if taken else "not-taken"}" data-flow={quoteattr(flow.id)} '
        f'data-count="{taken}">'
    )
    tip = f"{flow.id}: {flow.source} → {flow.target}"
    if flow.condition is not None:
        tip += f" if {flow.condition.source}"
    svg.add(f"<title>{escape(tip + (f', taken {taken}x' if taken else ', not taken'))}</title>")
    svg.add(
        f'<polyline points="{path}" fill="none" stroke="{colour}" {style} '
        f'marker-end="url(#arrow-{"taken" if taken else "untaken"})"/>'
    )
    if taken:
        x, y = label_spot(points, where)
        svg.text(x, y, f"{taken}x", size=10, fill=TAKEN, weight="bold", halo=True)
    svg.add("</g>")


def _association(svg: Svg, activity: Item, handler: Item) -> None:
    """The dotted line from an activity to the handler activity that undoes it."""
    x = (max(activity.left, handler.left) + min(activity.right, handler.right)) / 2
    top, bottom = activity.bottom, handler.top
    svg.add(
        f'<line class="association" x1="{num(x)}" y1="{num(top)}" x2="{num(x)}" '
        f'y2="{num(bottom)}" stroke="{UNTAKEN}" stroke-width="1.3" '
        f'stroke-dasharray="2 3"/>'
    )
    svg.text(
        x + 4, (top + bottom) / 2 + 4, "undo", size=10, fill="#6b7280", anchor="start", halo=True
    )
