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

import itertools
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from bpm.definitions.model import Flow, Node, NodeType, ProcessGraph
from bpm.diagram import (
    COLOURS,
    NOT_VISITED,
    STATUSES,
    Marks,
    NodeMark,
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
    {NodeType.START, NodeType.END, NodeType.TIMER, NodeType.MESSAGE, NodeType.COMPENSATION_THROW}
)
GATEWAYS = frozenset({NodeType.EXCLUSIVE, NodeType.PARALLEL})
CAPTIONS = {
    NodeType.SERVICE_TASK: "service",
    NodeType.USER_TASK: "user",
    NodeType.RECEIVE_TASK: "receive",
    NodeType.MANUAL_TASK: "manual",
}

Point = tuple[float, float]


def _num(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _wrap(text: str, width: int, lines: int = 2) -> list[str]:
    """At most ``lines`` lines of about ``width`` characters; the rest cut with an ellipsis."""
    out = textwrap.wrap(text, max(width, 4), break_long_words=True) or [""]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: max(width - 1, 1)].rstrip() + "…"
    return out


@dataclass
class _Item:
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
class _Scope:
    scope: str | None
    items: dict[str, _Item] = field(default_factory=dict)
    columns: list[list[str]] = field(default_factory=list)
    col_x: list[float] = field(default_factory=list)
    col_w: list[float] = field(default_factory=list)
    chains: dict[str, list[str]] = field(default_factory=dict)  # forward flow -> placeholders
    back: list[str] = field(default_factory=list)  # flows closing a loop
    lanes: dict[str, float] = field(default_factory=dict)  # loop flow -> y of its run under
    inner: dict[str, _Scope] = field(default_factory=dict)  # subprocess id -> its layout
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


class _Layout:
    """Positions of every node and the lines of every flow, in absolute coordinates."""

    def __init__(self, graph: ProcessGraph) -> None:
        self.graph = graph
        self.boundaries: dict[str, list[str]] = {}
        self.handlers: dict[str, str] = {}  # compensation handler activity -> its activity
        for node in graph.nodes.values():
            if node.type is NodeType.BOUNDARY and node.attached_to in graph.nodes:
                self.boundaries.setdefault(str(node.attached_to), []).append(node.id)
            if node.compensation and node.compensation.node in graph.nodes:
                self.handlers[node.compensation.node] = node.id
        self.items: dict[str, _Item] = {}  # real nodes, absolute, filled by _place
        self.scopes: list[_Scope] = []
        self.root = self._scope(None)
        self._place(self.root, 0.0, 0.0)

    # --- sizes -------------------------------------------------------------------------

    def _item(self, node: Node, layout: _Scope) -> _Item:
        room = 2 * BOUNDARY_ROOM if node.id in self.boundaries else 0.0
        if node.type is NodeType.SUBPROCESS:
            inner = self._scope(node.id)
            layout.inner[node.id] = inner
            w = max(inner.width + 2 * PAD, _text_w(_subprocess_title(node)) + 70)
            h = inner.height + TITLE_H + PAD
            return _Item(node.id, node, w, h + room, w, h)
        if node.type in EVENTS or node.type in GATEWAYS:
            size = 2 * EVENT_R if node.type in EVENTS else GATEWAY
            lines = _outside_lines(node)
            w = max(size, max(_text_w(t) for t in lines) + 8)
            return _Item(node.id, node, w, size + 2 * LABEL_LINE * len(lines), size, size)
        return _Item(node.id, node, TASK_W, TASK_H + room, TASK_W, TASK_H)

    # --- one scope -----------------------------------------------------------------------

    def _scope(self, scope: str | None) -> _Scope:
        g = self.graph
        layout = _Scope(scope)
        members = [
            n for n in g.nodes.values() if n.scope == scope and n.type is not NodeType.BOUNDARY
        ]
        for node in members:
            layout.items[node.id] = self._item(node, layout)
        flows = [
            f
            for f in g.flows.values()
            if self._from(f) in layout.items and f.target in layout.items
        ]
        start = g.starts.get(scope)
        back = _loops(start, [n.id for n in members], flows, self._from)
        layout.back = [f.id for f in flows if f.id in back]
        forward = [f for f in flows if f.id not in back]
        rank = _ranks([n.id for n in members], forward, self._from)
        for handler, activity in self.handlers.items():
            if handler in rank and activity in rank:
                rank[handler] = rank[activity]
        # per item: the items it follows, and whether it goes below that one (a boundary's
        # target under the host); and how to order a column: (group: 0 the flow, 1 after a
        # boundary, 2 a compensation handler; then the rank of the flow among its source's
        # outgoing flows, the start first in its column; then definition order)
        preds: dict[str, list[tuple[str, bool]]] = {k: [] for k in layout.items}
        tie: dict[str, tuple[int, int, int]] = {}
        order = {n.id: i for i, n in enumerate(members)}
        for key, item in layout.items.items():
            item.rank = rank.get(key, 0)
            below = 2 if key in self.handlers else 0
            tie[key] = (below, 0 if key == start else 1, order[key])
        for flow in forward:
            source = self._from(flow)
            below = flow.source != source
            index = _index(g.nodes[flow.source].outgoing, flow.id)
            previous = source
            chain: list[str] = []
            for r in range(rank[source] + 1, rank[flow.target]):
                key = f"{flow.id}#{r}"
                layout.items[key] = _Item(key, None, 0.0, DUMMY_H, 0.0, DUMMY_H, rank=r)
                preds[key] = [(previous, below and not chain)]
                tie[key] = (1 if below else 0, index, len(order) + len(chain))
                chain.append(key)
                previous = key
            layout.chains[flow.id] = chain
            preds[flow.target].append((previous, below and not chain))
            if not chain and below:
                tie[flow.target] = (1, *tie[flow.target][1:])
            elif len(preds[flow.target]) == 1:
                tie[flow.target] = (tie[flow.target][0], index, tie[flow.target][2])
        _arrange(layout, preds, tie)
        _lanes(layout, [g.flows[f] for f in layout.back], self._from)
        return layout

    def _from(self, flow: Flow) -> str:
        """The flow's source, a boundary event standing for its host."""
        node = self.graph.nodes[flow.source]
        if node.type is NodeType.BOUNDARY and node.attached_to:
            return node.attached_to
        return flow.source

    # --- absolute positions ----------------------------------------------------------------

    def _place(self, layout: _Scope, ox: float, oy: float) -> None:
        layout.ox, layout.oy = ox, oy
        self.scopes.append(layout)
        for item in layout.items.values():
            item.x += ox
            item.y += oy
            if item.node is not None:
                self.items[item.key] = item
        for sub_id, inner in layout.inner.items():
            box = layout.items[sub_id]
            self._place(inner, box.left + PAD, box.top + TITLE_H)

    # --- lines -------------------------------------------------------------------------

    def boundary_point(self, boundary_id: str) -> Point:
        host_id = str(self.graph.nodes[boundary_id].attached_to)
        host = self.items[host_id]
        n = self.boundaries[host_id].index(boundary_id)
        return host.left + 24 + n * (2 * BOUNDARY_R + 10), host.bottom

    def routes(self) -> Iterator[tuple[Flow, list[Point], str]]:
        """Every flow's polyline, and which horizontal stretch its count goes on: ``first``
        where the target has several incoming lines that meet before it, ``longest`` for a
        loop (its run under the scope), else ``last``."""
        incoming: dict[str, int] = {}
        for flow in self.graph.flows.values():
            incoming[flow.target] = incoming.get(flow.target, 0) + 1
        for layout in self.scopes:
            for flow_id in layout.back:
                flow = self.graph.flows[flow_id]
                yield flow, self._loop_line(layout, flow), "longest"
            for flow_id, chain in layout.chains.items():
                flow = self.graph.flows[flow_id]
                first = (
                    incoming[flow.target] > 1 and len(self.graph.nodes[flow.source].outgoing) == 1
                )
                yield flow, self._line(layout, flow, chain), "first" if first else "last"

    def _start(self, flow: Flow) -> tuple[Point, bool]:
        node = self.graph.nodes[flow.source]
        if node.type is NodeType.BOUNDARY and flow.source != self._from(flow):
            x, y = self.boundary_point(flow.source)
            return (x, y + BOUNDARY_R), True
        item = self.items[flow.source]
        return (item.right, item.cy), False

    def _line(self, layout: _Scope, flow: Flow, chain: list[str]) -> list[Point]:
        (x, y), down = self._start(flow)
        points = [(x, y)]
        stops = [layout.items[k] for k in chain] + [self.items[flow.target]]
        if down:  # from a boundary: straight down to the first stop, or out under the host
            y = stops[0].cy if stops[0].cy > y + 4 else y + 14
            points.append((x, y))
        for stop in stops:
            gap = layout.gap_after(stop.rank - 1)
            if abs(stop.cy - y) > 0.5:
                points += [(gap, y), (gap, stop.cy)]
            y = stop.cy
            if stop.node is None:
                col = layout.ox + layout.col_x[stop.rank]
                points += [(col, y), (col + layout.col_w[stop.rank], y)]
            else:
                points.append((stop.left, y))
        return _simplify(points)

    def _loop_line(self, layout: _Scope, flow: Flow) -> list[Point]:
        """Back under the scope: out of the source's bottom (or its right side and the gap
        after it), along the loop's lane, into the target's bottom (or its left side)."""
        (x, y), down = self._start(flow)
        lane = layout.lane(flow.id)
        source, target = self.items[flow.source] if not down else None, self.items[flow.target]
        if source is not None and self._from_below(layout, source):
            x, y = source.cx, source.bottom
        points = [(x, y)]
        if source is not None and not self._from_below(layout, source):
            x = layout.gap_after(source.rank)
            points.append((x, y))
        points.append((x, lane))
        if self._from_below(layout, target):
            points += [(target.cx, lane), (target.cx, target.bottom)]
        else:
            gap = layout.gap_before(target.rank)
            points += [(gap, lane), (gap, target.cy), (target.left, target.cy)]
        return _simplify(points)

    def _from_below(self, layout: _Scope, item: _Item) -> bool:
        """Whether a loop may meet ``item`` at its bottom: nothing under it, no boundary
        events or label there."""
        node = item.node
        return (
            node is not None
            and node.type not in EVENTS
            and node.id not in self.boundaries
            and layout.lowest(item.key)
        )


def _index(values: tuple[str, ...], value: str) -> int:
    return values.index(value) if value in values else 0


def _text_w(text: str, size: float = 12) -> float:
    return len(text) * CHAR_W * size / 12


def _outside_lines(node: Node) -> list[str]:
    """The label beside an event or gateway: name (wrapped) and id."""
    lines = label_lines(node)
    out = _wrap(lines[0], 18) if len(lines) > 1 else []
    return [*out, *_wrap(lines[-1], 22, 1)]


def _loops(
    start: str | None, members: list[str], flows: list[Flow], from_: Callable[[Flow], str]
) -> set[str]:
    """Flows that close a cycle, found by a depth-first walk from the start (then from every
    node not reached yet, in definition order)."""
    out: dict[str, list[tuple[str, str]]] = {m: [] for m in members}
    for flow in flows:
        out[from_(flow)].append((flow.id, flow.target))
    state: dict[str, int] = {}
    back: set[str] = set()
    roots = ([start] if start in out else []) + members
    for root in roots:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(out[root]))]
        while stack:
            node, edges = stack[-1]
            for flow_id, target in edges:
                seen = state.get(target)
                if seen == 1:
                    back.add(flow_id)
                elif seen is None:
                    state[target] = 1
                    stack.append((target, iter(out[target])))
                    break
            else:
                state[node] = 2
                stack.pop()
    return back


def _ranks(members: list[str], forward: list[Flow], from_: Callable[[Flow], str]) -> dict[str, int]:
    """Longest path from the sources of the acyclic ``forward`` flows."""
    out: dict[str, list[str]] = {m: [] for m in members}
    indegree = dict.fromkeys(members, 0)
    for flow in forward:
        out[from_(flow)].append(flow.target)
        indegree[flow.target] += 1
    rank = dict.fromkeys(members, 0)
    todo = [m for m in members if indegree[m] == 0]
    while todo:
        node = todo.pop(0)
        for target in out[node]:
            rank[target] = max(rank[target], rank[node] + 1)
            indegree[target] -= 1
            if indegree[target] == 0:
                todo.append(target)
    return rank


def _arrange(
    layout: _Scope, preds: dict[str, list[tuple[str, bool]]], tie: dict[str, tuple[int, int, int]]
) -> None:
    """Order and place every column, then size the scope."""
    items = layout.items
    count = max((i.rank for i in items.values()), default=0) + 1
    layout.columns = [[] for _ in range(count)]
    for key, item in items.items():
        layout.columns[item.rank].append(key)
    centre: dict[str, float] = {}
    for column in layout.columns:
        wanted: dict[str, float] = {}
        for key in column:
            spots = [
                centre[p] + (items[p].h / 2 + GAP_Y + items[key].h / 2 if below else 0)
                for p, below in preds.get(key, [])
                if p in centre
            ]
            if spots:
                wanted[key] = sum(spots) / len(spots)
        column.sort(key=lambda k: (tie[k][0], wanted.get(k, float("inf")), *tie[k][1:]))
        bottom: float | None = None
        previous: _Item | None = None
        for key in column:
            item = items[key]
            want = (
                wanted.get(key, (bottom + GAP_Y + item.h / 2) if bottom is not None else item.h / 2)
                - item.h / 2
            )
            if bottom is not None and previous is not None:
                gap = DUMMY_GAP if item.node is None or previous.node is None else GAP_Y
                want = max(want, bottom + gap)
            item.y = want
            bottom, previous = want + item.h, item
        pushed = [items[k].cy - wanted[k] for k in column if k in wanted]
        shift = sum(pushed) / len(pushed) if pushed else 0.0
        for key in column:
            items[key].y -= shift
            centre[key] = items[key].cy
    top = min(i.y for i in items.values())
    for item in items.values():
        item.y -= top
    layout.content_h = max(i.y + i.h for i in items.values())
    lead = GAP_X / 2 if layout.back else 0.0
    x = lead
    for column in layout.columns:
        width = max([items[k].w for k in column] + [20.0])
        layout.col_x.append(x)
        layout.col_w.append(width)
        for key in column:
            item = items[key]
            item.x = x + (width - item.w) / 2
            if item.node is None:
                item.x, item.w = x, width
        x += width + GAP_X
    layout.width = x - GAP_X + lead
    layout.height = layout.content_h


def _lanes(layout: _Scope, back: list[Flow], from_: Callable[[Flow], str]) -> None:
    """Each loop runs back under the columns it spans, on a lane of its own."""
    for n, flow in enumerate(back):
        ranks = sorted((layout.items[from_(flow)].rank, layout.items[flow.target].rank))
        spanned = [
            layout.items[k] for r in range(ranks[0], ranks[1] + 1) for k in layout.columns[r]
        ]
        lane = max(i.y + i.h for i in spanned) + 16 + LANE * n
        layout.lanes[flow.id] = lane
        layout.height = max(layout.height, lane + 10)


def _simplify(points: list[Point]) -> list[Point]:
    """Drop repeated points and the middle of straight runs."""
    out: list[Point] = []
    for p in points:
        if out and abs(out[-1][0] - p[0]) < 0.01 and abs(out[-1][1] - p[1]) < 0.01:
            continue
        if len(out) >= 2:
            (ax, ay), (bx, by) = out[-2], out[-1]
            if (abs(ax - bx) < 0.01 and abs(bx - p[0]) < 0.01) or (
                abs(ay - by) < 0.01 and abs(by - p[1]) < 0.01
            ):
                out[-1] = p
                continue
        out.append(p)
    return out


def _label_spot(points: list[Point], where: str) -> Point:
    """Where a flow's count goes: above its first, last or longest horizontal stretch."""
    stretches = [
        (a, b)
        for a, b in itertools.pairwise(points)
        if abs(a[1] - b[1]) < 0.01 and abs(a[0] - b[0]) >= 12
    ]
    if not stretches:
        (ax, ay), (bx, by) = points[-2], points[-1]
        return (ax + bx) / 2 + 10, (ay + by) / 2
    if where == "longest":
        stretch = max(stretches, key=lambda s: abs(s[0][0] - s[1][0]))
    else:
        stretch = stretches[0] if where == "first" else stretches[-1]
    (ax, ay), (bx, _) = stretch
    return (ax + bx) / 2, ay - 5


# --- drawing -------------------------------------------------------------------------------


class _Svg:
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
            f'<text x="{_num(x)}" y="{_num(y)}" font-size="{_num(size)}" '
            f'text-anchor="{anchor}" fill="{fill}"{extra}>{escape(text)}</text>'
        )


def render_svg(graph: ProcessGraph, marks: Marks, *, title: str | None = None) -> str:
    """The whole SVG document."""
    layout = _Layout(graph)
    width = max(layout.root.width, _legend_width(marks)) + 2 * MARGIN
    legend_y = MARGIN + HEADER + layout.root.height + 34
    height = legend_y + 8 + MARGIN
    svg = _Svg()
    svg.add('<?xml version="1.0" encoding="UTF-8"?>')
    svg.add(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" '
        f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" '
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
    svg.add(f'<rect width="{_num(width)}" height="{_num(height)}" fill="#ffffff"/>')
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
    svg.add(f'<g transform="translate({_num(MARGIN)},{_num(MARGIN + HEADER)})">')
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
    _legend(svg, marks, MARGIN, legend_y)
    svg.add("</svg>")
    return "\n".join(svg.parts) + "\n"


def _open_node(svg: _Svg, node: Node, m: NodeMark) -> None:
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


def _badge(svg: _Svg, x: float, y: float, m: NodeMark) -> None:
    text = m.count_text()
    if not text:
        return
    _, stroke, _, _ = _style(m)
    w = _text_w(text, 10) + 10
    svg.add(
        f'<rect class="count" x="{_num(x - w / 2)}" y="{_num(y - 8)}" width="{_num(w)}" '
        f'height="16" rx="8" fill="{stroke}"/>'
    )
    svg.text(x, y + 3.5, text, size=10, fill="#ffffff", weight="bold")


def _node(svg: _Svg, node: Node, item: _Item, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    dash = ' stroke-dasharray="4 3"' if m.status == NOT_VISITED else ""
    _open_node(svg, node, m)
    cx, cy = item.cx, item.cy
    if node.type in EVENTS:
        r = EVENT_R
        thick = "3.5" if node.type is NodeType.END else width
        svg.add(
            f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(r)}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{thick}"{dash}/>'
        )
        if node.type not in (NodeType.START, NodeType.END):
            svg.add(
                f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(r - 3.5)}" fill="none" '
                f'stroke="{stroke}" stroke-width="1"/>'
            )
        _icon(svg, node, cx, cy, stroke)
        _label(svg, node, cx, cy + r, ink)
        _badge(svg, cx + r, cy - r, m)
    elif node.type in GATEWAYS:
        h = GATEWAY / 2
        svg.add(
            f'<polygon points="{_num(cx)},{_num(cy - h)} {_num(cx + h)},{_num(cy)} '
            f'{_num(cx)},{_num(cy + h)} {_num(cx - h)},{_num(cy)}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
        )
        s = 8.0
        if node.type is NodeType.EXCLUSIVE:
            path = (
                f"M{_num(cx - s)},{_num(cy - s)} L{_num(cx + s)},{_num(cy + s)} "
                f"M{_num(cx + s)},{_num(cy - s)} L{_num(cx - s)},{_num(cy + s)}"
            )
        else:
            path = (
                f"M{_num(cx)},{_num(cy - s - 2)} L{_num(cx)},{_num(cy + s + 2)} "
                f"M{_num(cx - s - 2)},{_num(cy)} L{_num(cx + s + 2)},{_num(cy)}"
            )
        svg.add(f'<path d="{path}" stroke="{stroke}" stroke-width="3" fill="none"/>')
        _label(svg, node, cx, cy - h, ink, above=True)
        _badge(svg, cx + h / 2 + 12, cy + h / 2 + 4, m)
    else:
        _task(svg, node, item, m)
    svg.add("</g>")


def _label(svg: _Svg, node: Node, cx: float, y: float, ink: str, above: bool = False) -> None:
    """An event's label under it, a gateway's above it (so a loop can leave from below)."""
    lines = _outside_lines(node)
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


def _task(svg: _Svg, node: Node, item: _Item, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    dash = ' stroke-dasharray="4 3"' if m.status == NOT_VISITED else ""
    x, y = item.left, item.top
    svg.add(
        f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(TASK_W)}" height="{_num(TASK_H)}" '
        f'rx="10" fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}/>'
    )
    caption = CAPTIONS.get(node.type)
    if caption:
        svg.text(x + 8, y + 13, caption, size=9, fill="#6b7280", anchor="start")
    names = label_lines(node)
    named = len(names) > 1
    lines = _wrap(names[0], int((TASK_W - 16) / CHAR_W)) if named else []
    ident = _wrap(names[-1], int((TASK_W - 16) / _text_w("x", 10 if named else 12)), 1)[0]
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
    _badge(svg, item.right - 6, item.top, m)


def _subprocess(svg: _Svg, node: Node, item: _Item, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    dash = ' stroke-dasharray="6 4"' if m.status == NOT_VISITED else ""
    _open_node(svg, node, m)
    svg.add(
        f'<rect x="{_num(item.left)}" y="{_num(item.top)}" width="{_num(item.shape_w)}" '
        f'height="{_num(item.shape_h)}" rx="12" fill="{fill}" fill-opacity="0.35" '
        f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
    )
    room = int((item.shape_w - 60) / CHAR_W)
    svg.text(
        item.left + 10,
        item.top + 17,
        _wrap(_subprocess_title(node), room, 1)[0],
        anchor="start",
        fill=ink,
        weight="bold",
    )
    _badge(svg, item.right - 22, item.top + 13, m)
    svg.add("</g>")


def _subprocess_title(node: Node) -> str:
    names = label_lines(node)
    return names[0] if len(names) == 1 else f"{names[0]} ({names[-1]})"


def _boundary(svg: _Svg, node: Node, at: Point, m: NodeMark) -> None:
    fill, stroke, ink, width = _style(m)
    x, y = at
    dash = ' stroke-dasharray="3 2"' if not node.interrupting else ""
    _open_node(svg, node, m)
    svg.add(
        f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(BOUNDARY_R)}" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{width}"{dash}/>'
    )
    svg.add(
        f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(BOUNDARY_R - 3)}" fill="none" '
        f'stroke="{stroke}" stroke-width="1"{dash}/>'
    )
    _icon(svg, node, x, y, stroke, small=True)
    count = m.count_text()
    text = label_lines(node)[0] + (f" · {count}" if count else "")
    svg.text(
        x + BOUNDARY_R + 3,
        y + BOUNDARY_R + 10,
        _wrap(text, 24, 1)[0],
        size=10,
        fill=ink,
        anchor="start",
        halo=True,
    )
    svg.add("</g>")


def _icon(svg: _Svg, node: Node, cx: float, cy: float, colour: str, small: bool = False) -> None:
    s = 4.5 if small else 7.0
    if node.timer is not None:
        svg.add(
            f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(s)}" fill="#ffffff" '
            f'stroke="{colour}" stroke-width="1.2"/>'
        )
        svg.add(
            f'<path d="M{_num(cx)},{_num(cy - s * 0.7)} L{_num(cx)},{_num(cy)} '
            f'L{_num(cx + s * 0.5)},{_num(cy + s * 0.3)}" stroke="{colour}" '
            f'stroke-width="1.2" fill="none"/>'
        )
    elif node.message is not None:
        svg.add(
            f'<rect x="{_num(cx - s)}" y="{_num(cy - s * 0.65)}" width="{_num(2 * s)}" '
            f'height="{_num(1.3 * s)}" fill="#ffffff" stroke="{colour}" stroke-width="1.2"/>'
        )
        svg.add(
            f'<path d="M{_num(cx - s)},{_num(cy - s * 0.65)} L{_num(cx)},{_num(cy + 0.1)} '
            f'L{_num(cx + s)},{_num(cy - s * 0.65)}" stroke="{colour}" stroke-width="1.2" '
            f'fill="none"/>'
        )
    elif node.catches is not None or node.error_code is not None:
        zigzag = ((-0.7, 0.8), (-0.2, -0.7), (0.2, 0.1), (0.7, -0.8))
        path = " L".join(f"{_num(cx + dx * s)},{_num(cy + dy * s)}" for dx, dy in zigzag)
        svg.add(f'<path d="M{path}" stroke="{colour}" stroke-width="1.5" fill="none"/>')
    elif node.type is NodeType.COMPENSATION_THROW or node.compensate:
        for dx in (-s * 0.9, 0.0):
            svg.add(
                f'<polygon points="{_num(cx + dx)},{_num(cy)} '
                f"{_num(cx + dx + s * 0.9)},{_num(cy - s * 0.6)} "
                f'{_num(cx + dx + s * 0.9)},{_num(cy + s * 0.6)}" fill="{colour}"/>'
            )


def _flow(svg: _Svg, flow: Flow, points: list[Point], where: str, taken: int) -> None:
    colour = TAKEN if taken else UNTAKEN
    style = 'stroke-width="2"' if taken else 'stroke-width="1.3" stroke-dasharray="5 4"'
    path = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
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
        x, y = _label_spot(points, where)
        svg.text(x, y, f"{taken}x", size=10, fill=TAKEN, weight="bold", halo=True)
    svg.add("</g>")


def _association(svg: _Svg, activity: _Item, handler: _Item) -> None:
    """The dotted line from an activity to the handler activity that undoes it."""
    x = (max(activity.left, handler.left) + min(activity.right, handler.right)) / 2
    top, bottom = activity.bottom, handler.top
    svg.add(
        f'<line class="association" x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}" '
        f'y2="{_num(bottom)}" stroke="{UNTAKEN}" stroke-width="1.3" '
        f'stroke-dasharray="2 3"/>'
    )
    svg.text(
        x + 4, (top + bottom) / 2 + 4, "undo", size=10, fill="#6b7280", anchor="start", halo=True
    )


def _legend_items(marks: Marks) -> list[str]:
    return [f"{status} ({marks.count(status)})" for status in STATUSES]


def _legend_width(marks: Marks) -> float:
    return sum(_text_w(t, 11) + 34 for t in _legend_items(marks)) + 230


def _legend(svg: _Svg, marks: Marks, x: float, y: float) -> None:
    svg.add('<g class="legend">')
    for status, text in zip(STATUSES, _legend_items(marks), strict=True):
        fill, stroke, _ = COLOURS[status]
        dash = ' stroke-dasharray="3 2"' if status == NOT_VISITED else ""
        svg.add(
            f'<rect x="{_num(x)}" y="{_num(y - 10)}" width="14" height="14" rx="3" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"{dash}/>'
        )
        svg.text(x + 20, y + 1, text, size=11, anchor="start", fill="#374151")
        x += _text_w(text, 11) + 34
    for name, colour, style, text in (
        ("taken", TAKEN, 'stroke-width="2"', "flow taken (count)"),
        ("untaken", UNTAKEN, 'stroke-width="1.3" stroke-dasharray="5 4"', "not taken"),
    ):
        svg.add(
            f'<line x1="{_num(x)}" y1="{_num(y - 3)}" x2="{_num(x + 26)}" y2="{_num(y - 3)}" '
            f'stroke="{colour}" {style} marker-end="url(#arrow-{name})"/>'
        )
        svg.text(x + 32, y + 1, text, size=11, anchor="start", fill="#374151")
        x += _text_w(text, 11) + 50
    svg.add("</g>")
