"""BPMN's standard symbols inside a shape of the modeler's layout (``bpm.diagram_di_svg``):
an event's trigger (hollow when it catches, filled when it throws), a gateway's marker, a
task's type icon in its top-left corner and the markers at an activity's bottom (loop,
multi-instance, compensation, ad hoc, collapsed). Each function returns SVG text drawn in one
colour around a given point, scaled to the shape it sits in."""

from __future__ import annotations

import math

from bpm.diagram_di import Bounds, Element, Loop, Trigger
from bpm.diagram_shapes import num


def _pts(cx: float, cy: float, s: float, shape: tuple[tuple[float, float], ...]) -> str:
    return " ".join(f"{num(cx + dx * s)},{num(cy + dy * s)}" for dx, dy in shape)


def _polygon(
    cx: float, cy: float, s: float, shape: tuple[tuple[float, float], ...], ink: str, fill: str
) -> str:
    return (
        f'<polygon points="{_pts(cx, cy, s, shape)}" fill="{fill}" stroke="{ink}" '
        f'stroke-width="1.2" stroke-linejoin="round"/>'
    )


_TRIANGLE = ((0.0, -0.85), (0.75, 0.5), (-0.75, 0.5))
_ARROW_UP = ((0.0, -0.9), (0.65, 0.8), (0.0, 0.25), (-0.65, 0.8))
_ZIGZAG = ((-0.7, 0.8), (-0.25, -0.7), (0.2, 0.15), (0.7, -0.8), (0.3, 0.75), (-0.15, -0.05))
_PENTAGON = tuple(
    (math.sin(2 * math.pi * k / 5) * 0.85, -math.cos(2 * math.pi * k / 5) * 0.85 + 0.05)
    for k in range(5)
)
_PLUS = (
    (-0.2, -0.8), (0.2, -0.8), (0.2, -0.2), (0.8, -0.2), (0.8, 0.2), (0.2, 0.2),
    (0.2, 0.8), (-0.2, 0.8), (-0.2, 0.2), (-0.8, 0.2), (-0.8, -0.2), (-0.2, -0.2),
)  # fmt: skip
_LINK = ((-0.8, -0.3), (0.2, -0.3), (0.2, -0.7), (0.85, 0.0), (0.2, 0.7), (0.2, 0.3), (-0.8, 0.3))


def trigger_icon(trigger: Trigger, throwing: bool, cx: float, cy: float, r: float, ink: str) -> str:
    """The event definition's symbol, ``r`` being the event circle's radius."""
    s = r * 0.55
    fill = ink if throwing else "none"
    if trigger is Trigger.MESSAGE:
        back = ink if throwing else "#ffffff"
        line = "#ffffff" if throwing else ink
        return (
            f'<rect x="{num(cx - s)}" y="{num(cy - s * 0.65)}" width="{num(2 * s)}" '
            f'height="{num(1.3 * s)}" fill="{back}" stroke="{ink}" stroke-width="1.2"/>'
            f'<path d="M{num(cx - s)},{num(cy - s * 0.65)} L{num(cx)},{num(cy + s * 0.1)} '
            f'L{num(cx + s)},{num(cy - s * 0.65)}" stroke="{line}" stroke-width="1.2" fill="none"/>'
        )
    if trigger is Trigger.TIMER:
        ticks = "".join(
            f"M{num(cx + math.cos(a) * s * 0.8)},{num(cy + math.sin(a) * s * 0.8)} "
            f"L{num(cx + math.cos(a) * s)},{num(cy + math.sin(a) * s)} "
            for a in (k * math.pi / 6 for k in range(12))
        )
        return (
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(s * 1.1)}" fill="#ffffff" '
            f'stroke="{ink}" stroke-width="1.5"/>'
            f'<path d="{ticks}M{num(cx)},{num(cy - s * 0.7)} L{num(cx)},{num(cy)} '
            f'L{num(cx + s * 0.5)},{num(cy + s * 0.2)}" stroke="{ink}" stroke-width="1" '
            f'fill="none"/>'
        )
    if trigger is Trigger.SIGNAL:
        return _polygon(cx, cy, s, _TRIANGLE, ink, fill)
    if trigger is Trigger.ERROR:
        return _polygon(cx, cy, s, _ZIGZAG, ink, fill)
    if trigger is Trigger.ESCALATION:
        return _polygon(cx, cy, s, _ARROW_UP, ink, fill)
    if trigger is Trigger.COMPENSATION:
        return compensation_mark(cx, cy, s * 0.9, ink, fill)
    if trigger is Trigger.CONDITIONAL:
        lines = " ".join(
            f"M{num(cx - s * 0.45)},{num(cy + dy * s)} L{num(cx + s * 0.45)},{num(cy + dy * s)}"
            for dy in (-0.45, -0.15, 0.15, 0.45)
        )
        return (
            f'<rect x="{num(cx - s * 0.65)}" y="{num(cy - s * 0.8)}" width="{num(1.3 * s)}" '
            f'height="{num(1.6 * s)}" fill="#ffffff" stroke="{ink}" stroke-width="1.2"/>'
            f'<path d="{lines}" stroke="{ink}" stroke-width="1" fill="none"/>'
        )
    if trigger is Trigger.LINK:
        return _polygon(cx, cy, s, _LINK, ink, fill)
    if trigger is Trigger.TERMINATE:
        return f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r * 0.6)}" fill="{ink}"/>'
    if trigger is Trigger.CANCEL:
        a = s * 0.75
        return (
            f'<path d="M{num(cx - a)},{num(cy - a)} L{num(cx + a)},{num(cy + a)} '
            f'M{num(cx + a)},{num(cy - a)} L{num(cx - a)},{num(cy + a)}" stroke="{ink}" '
            f'stroke-width="{3 if throwing else 2}" fill="none"/>'
        )
    if trigger is Trigger.MULTIPLE:
        return _polygon(cx, cy, s, _PENTAGON, ink, fill)
    return _polygon(cx, cy, s, _PLUS, ink, "none")


def compensation_mark(cx: float, cy: float, s: float, ink: str, fill: str) -> str:
    """Two triangles pointing left (rewind)."""
    return "".join(
        f'<polygon points="{num(cx + dx)},{num(cy)} {num(cx + dx + s)},{num(cy - s * 0.65)} '
        f'{num(cx + dx + s)},{num(cy + s * 0.65)}" fill="{fill}" stroke="{ink}" '
        f'stroke-width="1.1" stroke-linejoin="round"/>'
        for dx in (-s, 0.0)
    )


def gateway_marker(tag: str, cx: float, cy: float, size: float, ink: str) -> str:
    """The marker inside a gateway's diamond (an exclusive gateway draws its X)."""
    s = size * 0.2
    if tag == "exclusiveGateway":
        return (
            f'<path d="M{num(cx - s)},{num(cy - s)} L{num(cx + s)},{num(cy + s)} '
            f'M{num(cx + s)},{num(cy - s)} L{num(cx - s)},{num(cy + s)}" stroke="{ink}" '
            f'stroke-width="{num(size / 12)}" stroke-linecap="round"/>'
        )
    if tag == "parallelGateway":
        return _cross(cx, cy, s * 1.2, ink, size / 12)
    if tag == "inclusiveGateway":
        return (
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(s * 1.1)}" fill="none" '
            f'stroke="{ink}" stroke-width="{num(size / 16)}"/>'
        )
    if tag == "complexGateway":
        d = s * 0.85
        star = _cross(cx, cy, s * 1.2, ink, size / 14)
        return star + (
            f'<path d="M{num(cx - d)},{num(cy - d)} L{num(cx + d)},{num(cy + d)} '
            f'M{num(cx + d)},{num(cy - d)} L{num(cx - d)},{num(cy + d)}" stroke="{ink}" '
            f'stroke-width="{num(size / 14)}" stroke-linecap="round"/>'
        )
    if tag == "eventBasedGateway":
        rings = "".join(
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r)}" fill="none" stroke="{ink}" '
            f'stroke-width="1"/>'
            for r in (s * 1.35, s * 1.1)
        )
        return rings + _polygon(cx, cy, s * 0.75, _PENTAGON, ink, "none")
    return ""


def _cross(cx: float, cy: float, s: float, ink: str, width: float) -> str:
    return (
        f'<path d="M{num(cx)},{num(cy - s)} L{num(cx)},{num(cy + s)} M{num(cx - s)},{num(cy)} '
        f'L{num(cx + s)},{num(cy)}" stroke="{ink}" stroke-width="{num(width)}" '
        f'stroke-linecap="round"/>'
    )


def task_icon(tag: str, x: float, y: float, ink: str) -> str:
    """A task type's icon in the box whose top-left corner is (``x``, ``y``), about 16 px."""
    if tag == "userTask":
        return (
            f'<circle cx="{num(x + 9)}" cy="{num(y + 6)}" r="3.6" fill="none" stroke="{ink}" '
            f'stroke-width="1.2"/><path d="M{num(x + 2)},{num(y + 17)} Q{num(x + 2)},{num(y + 10)} '
            f"{num(x + 9)},{num(y + 10)} Q{num(x + 16)},{num(y + 10)} {num(x + 16)},{num(y + 17)} "
            f'Z" fill="none" stroke="{ink}" stroke-width="1.2"/>'
        )
    if tag == "serviceTask":
        cx, cy = x + 9, y + 9
        teeth = " ".join(
            f"M{num(cx + math.cos(a) * 4.5)},{num(cy + math.sin(a) * 4.5)} "
            f"L{num(cx + math.cos(a) * 7.5)},{num(cy + math.sin(a) * 7.5)}"
            for a in (k * math.pi / 4 for k in range(8))
        )
        return (
            f'<path d="{teeth}" stroke="{ink}" stroke-width="2.2"/>'
            f'<circle cx="{num(cx)}" cy="{num(cy)}" r="5" fill="#ffffff" stroke="{ink}" '
            f'stroke-width="1.2"/><circle cx="{num(cx)}" cy="{num(cy)}" r="2" fill="none" '
            f'stroke="{ink}" stroke-width="1"/>'
        )
    if tag == "scriptTask":
        lines = " ".join(
            f"M{num(x + 5 + dy / 4)},{num(y + 5 + dy)} L{num(x + 12 + dy / 4)},{num(y + 5 + dy)}"
            for dy in (0, 3.5, 7)
        )
        return (
            f'<path d="M{num(x + 4)},{num(y + 1)} L{num(x + 15)},{num(y + 1)} '
            f"Q{num(x + 11)},{num(y + 8)} {num(x + 15)},{num(y + 16)} L{num(x + 4)},{num(y + 16)} "
            f'Q{num(x + 8)},{num(y + 8)} {num(x + 4)},{num(y + 1)} Z" fill="none" '
            f'stroke="{ink}" stroke-width="1.1"/>'
            f'<path d="{lines}" stroke="{ink}" stroke-width="1"/>'
        )
    if tag in ("sendTask", "receiveTask"):
        return trigger_icon(Trigger.MESSAGE, tag == "sendTask", x + 9, y + 8, 14, ink)
    if tag == "manualTask":
        return (
            f'<path d="M{num(x + 1)},{num(y + 8)} L{num(x + 6)},{num(y + 3)} L{num(x + 15)},'
            f"{num(y + 3)} M{num(x + 8)},{num(y + 6)} L{num(x + 16)},{num(y + 6)} "
            f"M{num(x + 8)},{num(y + 9)} L{num(x + 16)},{num(y + 9)} M{num(x + 8)},{num(y + 12)} "
            f"L{num(x + 14)},{num(y + 12)} M{num(x + 1)},{num(y + 8)} L{num(x + 1)},{num(y + 13)} "
            f'L{num(x + 4)},{num(y + 15)} L{num(x + 12)},{num(y + 15)}" fill="none" '
            f'stroke="{ink}" stroke-width="1.1" stroke-linejoin="round"/>'
        )
    if tag == "businessRuleTask":
        return (
            f'<rect x="{num(x + 1)}" y="{num(y + 2)}" width="16" height="12" fill="none" '
            f'stroke="{ink}" stroke-width="1.1"/><path d="M{num(x + 1)},{num(y + 6)} '
            f"L{num(x + 17)},{num(y + 6)} M{num(x + 1)},{num(y + 10)} L{num(x + 17)},"
            f'{num(y + 10)} M{num(x + 6)},{num(y + 2)} L{num(x + 6)},{num(y + 14)}" '
            f'stroke="{ink}" stroke-width="1"/><rect x="{num(x + 1)}" y="{num(y + 2)}" '
            f'width="16" height="4" fill="{ink}" fill-opacity="0.35"/>'
        )
    return ""


def activity_markers(element: Element, box: Bounds, collapsed: bool, ink: str) -> str:
    """The markers centred at the bottom of an activity: loop or multi-instance, compensation,
    ad hoc, and the collapsed subprocess's plus, side by side."""
    kinds: list[str] = []
    if element.loop is not None:
        kinds.append(element.loop.value)
    if element.for_compensation:
        kinds.append("compensation")
    if element.tag == "adHocSubProcess":
        kinds.append("adhoc")
    if collapsed:
        kinds.append("collapsed")
    parts: list[str] = []
    step = 18.0
    x = box.cx - step * (len(kinds) - 1) / 2
    y = box.y + box.h - 10
    for kind in kinds:
        parts.append(f'<g class="marker marker-{kind}">{_marker(kind, x, y, ink)}</g>')
        x += step
    return "".join(parts)


def _marker(kind: str, x: float, y: float, ink: str) -> str:
    if kind == Loop.PARALLEL.value:
        return "".join(
            f'<line x1="{num(x + dx)}" y1="{num(y - 6)}" x2="{num(x + dx)}" y2="{num(y + 6)}" '
            f'stroke="{ink}" stroke-width="2"/>'
            for dx in (-4, 0, 4)
        )
    if kind == Loop.SEQUENTIAL.value:
        return "".join(
            f'<line x1="{num(x - 6)}" y1="{num(y + dy)}" x2="{num(x + 6)}" y2="{num(y + dy)}" '
            f'stroke="{ink}" stroke-width="2"/>'
            for dy in (-4, 0, 4)
        )
    if kind == Loop.STANDARD.value:
        return (
            f'<path d="M{num(x - 3)},{num(y + 5)} A6,6 0 1 1 {num(x + 3)},{num(y + 5)}" '
            f'fill="none" stroke="{ink}" stroke-width="1.5"/><path d="M{num(x + 3)},'
            f'{num(y + 1)} L{num(x + 3)},{num(y + 5)} L{num(x + 7)},{num(y + 5)}" fill="none" '
            f'stroke="{ink}" stroke-width="1.5"/>'
        )
    if kind == "compensation":
        return compensation_mark(x, y, 6, ink, "none")
    if kind == "adhoc":
        return (
            f'<path d="M{num(x - 7)},{num(y + 2)} Q{num(x - 3.5)},{num(y - 5)} {num(x)},{num(y)} '
            f'T{num(x + 7)},{num(y - 2)}" fill="none" stroke="{ink}" stroke-width="1.5"/>'
        )
    return (
        f'<rect x="{num(x - 7)}" y="{num(y - 7)}" width="14" height="14" fill="none" '
        f'stroke="{ink}" stroke-width="1.2"/>' + _cross(x, y, 4.5, ink, 1.5)
    )
