"""The parts of a modeler's diagram that carry no marks (``bpm.diagram_di_svg``): pools and
lanes, groups, text annotations, data objects and stores, message flows and associations,
and the labels of events, gateways and flows (at their BPMNLabel bounds, or where Camunda
Modeler puts a label that has none: centred under an event or gateway, beside a flow's
middle)."""

from __future__ import annotations

import textwrap
from xml.sax.saxutils import quoteattr

from bpm.diagram_di import Bounds, DiEdge, DiShape, Shape
from bpm.diagram_shapes import CHAR_W, Svg, num, wrap

INK, PAPER, MUTED = "#1f2937", "#ffffff", "#6b7280"
#: Camunda Modeler's size of an external label with no bounds of its own.
LABEL_W, LABEL_H = 90.0, 20.0
BAND = 30.0  # the name band at the left of a horizontal pool or lane


def points(edge: DiEdge) -> str:
    return " ".join(f"{num(x)},{num(y)}" for x, y in edge.waypoints)


def lines_of(text: str, width: float, size: float, most: int = 3) -> list[str]:
    """``text`` in at most ``most`` lines of about ``width`` px; a long word stays whole (it
    may run past the width, as in the modeler) unless it is over twice as long."""
    chars = max(int(width / (CHAR_W * size / 12)), 4)
    words = " ".join(text.split())
    lines = textwrap.wrap(words, chars, break_long_words=False) or [""]
    if any(len(line) > 2 * chars for line in lines):
        return wrap(words, chars, most)
    if len(lines) > most:
        lines = lines[:most]
        lines[-1] = lines[-1][: max(chars - 1, 1)].rstrip() + "…"
    return lines


def text_block(svg: Svg, box: Bounds, text: str, size: float, ink: str = INK) -> None:
    """``text`` wrapped and centred in ``box``."""
    lines = lines_of(text, max(box.w, 30.0), size)
    top = box.cy - (len(lines) - 1) * (size + 2) / 2 + size * 0.35
    for n, line in enumerate(lines):
        svg.text(box.cx, top + n * (size + 2), line, size=size, fill=ink)


def outer_label(svg: Svg, shape: DiShape, size: float = 11) -> None:
    """An event's, gateway's or data element's name outside its symbol."""
    name = shape.element.name
    if not name:
        return
    b = shape.bounds
    box = shape.label or Bounds(b.cx - LABEL_W / 2, b.y + b.h + 5, LABEL_W, LABEL_H)
    svg.add('<g class="label">')
    lines = lines_of(name, max(box.w, LABEL_W), size)
    for n, line in enumerate(lines):
        svg.text(box.cx, box.y + size + n * (size + 2), line, size=size, fill=INK, halo=True)
    svg.add("</g>")


def edge_label(svg: Svg, edge: DiEdge) -> None:
    if not edge.name or not edge.waypoints:
        return
    if edge.label is not None:
        box = edge.label
    else:
        mid = len(edge.waypoints) // 2
        (x1, y1), (x2, y2) = edge.waypoints[max(mid - 1, 0)], edge.waypoints[mid]
        box = Bounds((x1 + x2) / 2 - LABEL_W / 2 + 8, (y1 + y2) / 2 - LABEL_H, LABEL_W, LABEL_H)
    for n, line in enumerate(lines_of(edge.name, max(box.w, LABEL_W), 11, 2)):
        svg.text(box.cx, box.y + 11 + n * 13, line, size=11, fill=INK, halo=True)


def pool_or_lane(svg: Svg, shape: DiShape, drawn: bool) -> None:
    """A pool (``drawn``: the process this diagram is about; other pools are drawn empty,
    greyed) or a lane, with its name turned in the band at its left (at its top when the
    modeler laid it out vertically)."""
    el, b = shape.element, shape.bounds
    kind = "pool" if el.shape is Shape.POOL else "lane"
    css = kind if drawn or kind == "lane" else "pool other-pool"
    svg.add(f'<g class="{css}" data-element={quoteattr(el.id)}>')
    fill = "none" if kind == "lane" else (PAPER if drawn else "#f3f4f6")
    svg.add(
        f'<rect x="{num(b.x)}" y="{num(b.y)}" width="{num(b.w)}" height="{num(b.h)}" '
        f'fill="{fill}" stroke="{INK}" stroke-width="{1.5 if kind == "pool" else 1}"/>'
    )
    if shape.horizontal:
        if kind == "pool":
            svg.add(
                f'<line x1="{num(b.x + BAND)}" y1="{num(b.y)}" x2="{num(b.x + BAND)}" '
                f'y2="{num(b.y + b.h)}" stroke="{INK}" stroke-width="1"/>'
            )
        cx, cy = b.x + BAND / 2, b.cy
        if el.name:
            line = lines_of(el.name, b.h - 10, 12, 1)[0]
            svg.add(f'<g transform="rotate(-90 {num(cx)} {num(cy)})">')
            svg.text(cx, cy + 4, line, size=12, fill=INK)
            svg.add("</g>")
    else:
        if kind == "pool":
            svg.add(
                f'<line x1="{num(b.x)}" y1="{num(b.y + BAND)}" x2="{num(b.x + b.w)}" '
                f'y2="{num(b.y + BAND)}" stroke="{INK}" stroke-width="1"/>'
            )
        if el.name:
            svg.text(b.cx, b.y + BAND / 2 + 4, lines_of(el.name, b.w - 10, 12, 1)[0], size=12)
    svg.add("</g>")


def artifact(svg: Svg, shape: DiShape) -> None:
    """A text annotation, data object, data store or group (drawn, never marked)."""
    el, b = shape.element, shape.bounds
    svg.add(f'<g class="{el.shape.value}" data-element={quoteattr(el.id)}>')
    if el.shape is Shape.ANNOTATION:
        svg.add(
            f'<rect x="{num(b.x)}" y="{num(b.y)}" width="{num(b.w)}" height="{num(b.h)}" '
            f'fill="{PAPER}" fill-opacity="0.6" stroke="none"/>'
            f'<path d="M{num(b.x + 15)},{num(b.y)} L{num(b.x)},{num(b.y)} L{num(b.x)},'
            f'{num(b.y + b.h)} L{num(b.x + 15)},{num(b.y + b.h)}" fill="none" stroke="{INK}" '
            f'stroke-width="1.2"/>'
        )
        lines = lines_of(el.name, b.w - 10, 11, max(int(b.h // 13), 1))
        for n, line in enumerate(lines):
            svg.text(b.x + 6, b.y + 14 + n * 13, line, size=11, anchor="start", fill=INK)
    elif el.shape is Shape.DATA_OBJECT:
        fold = min(b.w, b.h) * 0.3
        svg.add(
            f'<path d="M{num(b.x)},{num(b.y)} L{num(b.x + b.w - fold)},{num(b.y)} '
            f"L{num(b.x + b.w)},{num(b.y + fold)} L{num(b.x + b.w)},{num(b.y + b.h)} "
            f'L{num(b.x)},{num(b.y + b.h)} Z" fill="{PAPER}" stroke="{INK}" stroke-width="1.2"/>'
            f'<path d="M{num(b.x + b.w - fold)},{num(b.y)} L{num(b.x + b.w - fold)},'
            f'{num(b.y + fold)} L{num(b.x + b.w)},{num(b.y + fold)}" fill="none" '
            f'stroke="{INK}" stroke-width="1.2"/>'
        )
        outer_label(svg, shape)
    elif el.shape is Shape.DATA_STORE:
        ry = b.h * 0.12
        svg.add(
            f'<path d="M{num(b.x)},{num(b.y + ry)} A{num(b.w / 2)},{num(ry)} 0 0 1 '
            f"{num(b.x + b.w)},{num(b.y + ry)} L{num(b.x + b.w)},{num(b.y + b.h - ry)} "
            f"A{num(b.w / 2)},{num(ry)} 0 0 1 {num(b.x)},{num(b.y + b.h - ry)} Z "
            f'" fill="{PAPER}" stroke="{INK}" stroke-width="1.2"/>'
            f'<path d="M{num(b.x)},{num(b.y + ry)} A{num(b.w / 2)},{num(ry)} 0 0 0 '
            f'{num(b.x + b.w)},{num(b.y + ry)}" fill="none" stroke="{INK}" stroke-width="1.2"/>'
        )
        outer_label(svg, shape)
    else:
        svg.add(
            f'<rect x="{num(b.x)}" y="{num(b.y)}" width="{num(b.w)}" height="{num(b.h)}" '
            f'rx="10" fill="none" stroke="{MUTED}" stroke-width="1.2" '
            f'stroke-dasharray="8 3 1 3"/>'
        )
    svg.add("</g>")


def connector(svg: Svg, edge: DiEdge) -> None:
    """A message flow (dashed, from a small circle to an open arrow), an association or a
    data association (dotted)."""
    message = edge.tag == "messageFlow"
    style = 'stroke-dasharray="8 5"' if message else 'stroke-dasharray="2 4"'
    ends = ' marker-start="url(#message-start)" marker-end="url(#message-end)"' if message else ""
    if edge.tag in ("dataInputAssociation", "dataOutputAssociation"):
        ends = ' marker-end="url(#message-end)"'
    css = "message-flow" if message else "association"
    svg.add(f'<g class="{css}" data-element={quoteattr(edge.id)}>')
    svg.add(
        f'<polyline points="{points(edge)}" fill="none" stroke="{INK}" stroke-width="1.2" '
        f"{style}{ends}/>"
    )
    edge_label(svg, edge)
    svg.add("</g>")


def defs(svg: Svg, taken: str, untaken: str) -> None:
    """The arrowheads: sequence flows (taken, not taken), message flows' ends."""
    svg.add("<defs>")
    for name, colour in (("taken", taken), ("untaken", untaken)):
        svg.add(
            f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="10" refY="5" '
            f'markerWidth="10" markerHeight="10" markerUnits="userSpaceOnUse" '
            f'orient="auto"><path d="M0,1 L10,5 L0,9 z" fill="{colour}"/></marker>'
        )
    svg.add(
        '<marker id="message-start" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse"><circle cx="5" cy="5" r="4" '
        f'fill="{PAPER}" stroke="{INK}"/></marker>'
        '<marker id="message-end" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="10" '
        'markerHeight="10" markerUnits="userSpaceOnUse" orient="auto"><path '
        f'd="M0,1 L10,5 L0,9 z" fill="{PAPER}" stroke="{INK}"/></marker>'
    )
    for name, colour in (("taken", taken), ("untaken", untaken)):
        svg.add(
            f'<marker id="default-{name}" viewBox="0 0 20 20" refX="2" refY="10" '
            f'markerWidth="20" markerHeight="20" markerUnits="userSpaceOnUse" orient="auto">'
            f'<path d="M6,4 L12,16" stroke="{colour}" stroke-width="1.5"/></marker>'
            f'<marker id="conditional-{name}" viewBox="0 0 20 12" refX="0" refY="6" '
            f'markerWidth="20" markerHeight="12" markerUnits="userSpaceOnUse" orient="auto">'
            f'<path d="M0,6 L8,1 L16,6 L8,11 Z" fill="{PAPER}" stroke="{colour}" '
            f'stroke-width="1.2"/></marker>'
        )
    svg.add("</defs>")
