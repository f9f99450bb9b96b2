"""The shapes of a diagram (``bpm.diagram_svg``): sizes, gaps and the text measures the
layout and the drawing share, and the items a scope's layout places (a node, or a
placeholder for a long flow)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from bpm.definitions.model import Node, NodeType
from bpm.diagram import (
    COLOURS,
    NOT_VISITED,
    STATUSES,
    Marks,
    label_lines,
)

FONT = "Helvetica, Arial, sans-serif"
CHAR_W = 6.6  # an average character at 12px
TASK_W, TASK_H = 150.0, 64.0
EVENT_R = 18.0
GATEWAY = 46.0
BOUNDARY_R = 11.0
BOUNDARY_ROOM = BOUNDARY_R + 16.0  # below (and, for symmetry, above) a host with boundaries
LABEL_LINE = 14.0
GAP_X, GAP_Y = 64.0, 30.0
DUMMY_H, DUMMY_GAP = 8.0, 10.0
PAD, TITLE_H = 18.0, 26.0  # inside a subprocess box
LANE = 12.0  # between loop lines under a scope
MARGIN, HEADER = 24.0, 46.0
TAKEN, UNTAKEN = "#374151", "#b6bcc6"
EVENTS = frozenset(
    {
        NodeType.START,
        NodeType.END,
        NodeType.TIMER,
        NodeType.MESSAGE,
        NodeType.CONDITIONAL,
        NodeType.COMPENSATION_THROW,
        NodeType.ESCALATION_THROW,
        NodeType.SIGNAL,
        NodeType.SIGNAL_THROW,
    }
)
GATEWAYS = frozenset(
    {NodeType.EXCLUSIVE, NodeType.PARALLEL, NodeType.INCLUSIVE, NodeType.EVENT_GATEWAY}
)
CAPTIONS = {
    NodeType.SERVICE_TASK: "service",
    NodeType.USER_TASK: "user",
    NodeType.RECEIVE_TASK: "receive",
    NodeType.MANUAL_TASK: "manual",
}

Point = tuple[float, float]


def num(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def wrap(text: str, width: int, lines: int = 2) -> list[str]:
    """At most ``lines`` lines of about ``width`` characters; the rest cut with an ellipsis."""
    out = textwrap.wrap(text, max(width, 4), break_long_words=True) or [""]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: max(width - 1, 1)].rstrip() + "…"
    return out


@dataclass
class Item:
    """A node (or a placeholder of a long flow) in its scope's layout."""

    key: str
    node: Node | None
    w: float
    h: float
    shape_w: float
    shape_h: float
    rank: int = 0
    x: float = 0.0  # top-left of the layout box: relative to the scope, then absolute
    y: float = 0.0

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    @property
    def left(self) -> float:
        return self.cx - self.shape_w / 2

    @property
    def right(self) -> float:
        return self.cx + self.shape_w / 2

    @property
    def top(self) -> float:
        return self.cy - self.shape_h / 2

    @property
    def bottom(self) -> float:
        return self.cy + self.shape_h / 2


@dataclass
class Scope:
    scope: str | None
    items: dict[str, Item] = field(default_factory=dict)
    columns: list[list[str]] = field(default_factory=list)
    col_x: list[float] = field(default_factory=list)
    col_w: list[float] = field(default_factory=list)
    chains: dict[str, list[str]] = field(default_factory=dict)  # forward flow -> placeholders
    back: list[str] = field(default_factory=list)  # flows closing a loop
    lanes: dict[str, float] = field(default_factory=dict)  # loop flow -> y of its run under
    inner: dict[str, Scope] = field(default_factory=dict)  # subprocess id -> its layout
    width: float = 0.0
    height: float = 0.0
    content_h: float = 0.0
    ox: float = 0.0
    oy: float = 0.0

    def gap_after(self, rank: int) -> float:
        return self.ox + self.col_x[rank] + self.col_w[rank] + GAP_X / 2

    def gap_before(self, rank: int) -> float:
        return self.ox + self.col_x[rank] - GAP_X / 2

    def lane(self, flow_id: str) -> float:
        return self.oy + self.lanes[flow_id]

    def lowest(self, key: str) -> bool:
        """Whether nothing lies under this item in its column (a loop may leave or enter it
        from below)."""
        item = self.items[key]
        return all(self.items[k].y <= item.y for k in self.columns[item.rank])


def text_width(text: str, size: float = 12) -> float:
    return len(text) * CHAR_W * size / 12


def outside_lines(node: Node) -> list[str]:
    """The label beside an event or gateway: name (wrapped) and id."""
    lines = label_lines(node)
    out = wrap(lines[0], 18) if len(lines) > 1 else []
    return [*out, *wrap(lines[-1], 22, 1)]


def subprocess_title(node: Node) -> str:
    names = label_lines(node)
    return names[0] if len(names) == 1 else f"{names[0]} ({names[-1]})"


class Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: float = 12,
        fill: str = "#111827",
        anchor: str = "middle",
        weight: str | None = None,
        halo: bool = False,
        italic: bool = False,
    ) -> None:
        extra = f' font-weight="{weight}"' if weight else ""
        extra += ' font-style="italic"' if italic else ""
        if halo:
            extra += ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'
        self.add(
            f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}" '
            f'text-anchor="{anchor}" fill="{fill}"{extra}>{escape(text)}</text>'
        )


def legend_items(marks: Marks) -> list[str]:
    return [f"{status} ({marks.count(status)})" for status in STATUSES]


def legend_width(marks: Marks) -> float:
    return sum(text_width(t, 11) + 34 for t in legend_items(marks)) + 230


def legend(svg: Svg, marks: Marks, x: float, y: float) -> None:
    svg.add('<g class="legend">')
    for status, text in zip(STATUSES, legend_items(marks), strict=True):
        fill, stroke, _ = COLOURS[status]
        dash = ' stroke-dasharray="3 2"' if status == NOT_VISITED else ""
        svg.add(
            f'<rect x="{num(x)}" y="{num(y - 10)}" width="14" height="14" rx="3" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"{dash}/>'
        )
        svg.text(x + 20, y + 1, text, size=11, anchor="start", fill="#374151")
        x += text_width(text, 11) + 34
    for name, colour, style, text in (
        ("taken", TAKEN, 'stroke-width="2"', "flow taken (count)"),
        ("untaken", UNTAKEN, 'stroke-width="1.3" stroke-dasharray="5 4"', "not taken"),
    ):
        svg.add(
            f'<line x1="{num(x)}" y1="{num(y - 3)}" x2="{num(x + 26)}" y2="{num(y - 3)}" '
            f'stroke="{colour}" {style} marker-end="url(#arrow-{name})"/>'
        )
        svg.text(x + 32, y + 1, text, size=11, anchor="start", fill="#374151")
        x += text_width(text, 11) + 50
    svg.add("</g>")
