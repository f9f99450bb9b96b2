"""The symbols drawn inside events and gateways: what triggers an event (timer, message,
error, escalation, condition, compensation, cancel), filled when the event throws and hollow
when it catches, as BPMN draws them; the event-based gateway's mark."""

from __future__ import annotations

import math

from bpm.definitions.model import Node, NodeType
from bpm.diagram_shapes import Svg, num


def icon(svg: Svg, node: Node, cx: float, cy: float, colour: str, small: bool = False) -> None:
    s = 4.5 if small else 7.0
    if node.timer is not None:
        svg.add(
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(s)}" fill="#ffffff" '
            f'stroke="{colour}" stroke-width="1.2"/>'
        )
        svg.add(
            f'<path d="M{num(cx)},{num(cy - s * 0.7)} L{num(cx)},{num(cy)} '
            f'L{num(cx + s * 0.5)},{num(cy + s * 0.3)}" stroke="{colour}" '
            f'stroke-width="1.2" fill="none"/>'
        )
    elif node.message is not None:
        svg.add(
            f'<rect x="{num(cx - s)}" y="{num(cy - s * 0.65)}" width="{num(2 * s)}" '
            f'height="{num(1.3 * s)}" fill="#ffffff" stroke="{colour}" stroke-width="1.2"/>'
        )
        svg.add(
            f'<path d="M{num(cx - s)},{num(cy - s * 0.65)} L{num(cx)},{num(cy + 0.1)} '
            f'L{num(cx + s)},{num(cy - s * 0.65)}" stroke="{colour}" stroke-width="1.2" '
            f'fill="none"/>'
        )
    elif node.condition is not None:  # a sheet with lines (always caught)
        svg.add(
            f'<rect x="{num(cx - s * 0.6)}" y="{num(cy - s * 0.8)}" width="{num(1.2 * s)}" '
            f'height="{num(1.6 * s)}" fill="#ffffff" stroke="{colour}" stroke-width="1.2"/>'
        )
        lines = " ".join(
            f"M{num(cx - s * 0.4)},{num(cy + dy * s)} L{num(cx + s * 0.4)},{num(cy + dy * s)}"
            for dy in (-0.45, -0.15, 0.15, 0.45)
        )
        svg.add(f'<path d="{lines}" stroke="{colour}" stroke-width="1" fill="none"/>')
    elif node.escalation is not None:  # an arrowhead pointing up
        points = ((0.0, -0.9), (0.7, 0.8), (0.0, 0.2), (-0.7, 0.8))
        shape = " ".join(f"{num(cx + dx * s)},{num(cy + dy * s)}" for dx, dy in points)
        thrown = node.type in (NodeType.ESCALATION_THROW, NodeType.END)
        fill = colour if thrown else "none"
        svg.add(f'<polygon points="{shape}" stroke="{colour}" stroke-width="1.2" fill="{fill}"/>')
    elif node.catches is not None or node.error_code is not None:
        zigzag = ((-0.7, 0.8), (-0.2, -0.7), (0.2, 0.1), (0.7, -0.8))
        path = " L".join(f"{num(cx + dx * s)},{num(cy + dy * s)}" for dx, dy in zigzag)
        svg.add(f'<path d="M{path}" stroke="{colour}" stroke-width="1.5" fill="none"/>')
    elif node.cancel:  # an X, filled (thicker) when a cancel end event throws it
        a, b = s * 0.7, (2.2 if node.type is NodeType.END else 1.4)
        cross = f"M{num(cx - a)},{num(cy - a)} L{num(cx + a)},{num(cy + a)} "
        cross += f"M{num(cx + a)},{num(cy - a)} L{num(cx - a)},{num(cy + a)}"
        svg.add(f'<path d="{cross}" stroke="{colour}" stroke-width="{b}" fill="none"/>')
    elif node.type is NodeType.COMPENSATION_THROW or node.compensate:
        for dx in (-s * 0.9, 0.0):
            svg.add(
                f'<polygon points="{num(cx + dx)},{num(cy)} '
                f"{num(cx + dx + s * 0.9)},{num(cy - s * 0.6)} "
                f'{num(cx + dx + s * 0.9)},{num(cy + s * 0.6)}" fill="{colour}"/>'
            )


def event_gateway_mark(svg: Svg, cx: float, cy: float, s: float, stroke: str) -> None:
    for r in (s + 1, s - 1.5):
        svg.add(
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r)}" stroke="{stroke}" '
            f'stroke-width="1" fill="none"/>'
        )
    corners = [(math.sin(2 * math.pi * k / 5), -math.cos(2 * math.pi * k / 5)) for k in range(5)]
    shape = " ".join(f"{num(cx + dx * (s - 4))},{num(cy + dy * (s - 4))}" for dx, dy in corners)
    svg.add(f'<polygon points="{shape}" stroke="{stroke}" stroke-width="1" fill="none"/>')
