"""Laying out a diagram (``bpm.diagram_svg``): each scope on its own, ranks by longest path
over the flows that do not close a loop, placeholders for long flows, columns ordered by
their predecessors and pushed apart, right-angled lines between columns, loops under the
scope."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from bpm.definitions.model import Flow, Node, NodeType, ProcessGraph
from bpm.diagram_shapes import (
    BOUNDARY_R,
    BOUNDARY_ROOM,
    DUMMY_GAP,
    DUMMY_H,
    EVENT_R,
    EVENTS,
    GAP_X,
    GAP_Y,
    GATEWAY,
    GATEWAYS,
    LABEL_LINE,
    LANE,
    PAD,
    TASK_H,
    TASK_W,
    TITLE_H,
    Item,
    Point,
    Scope,
    outside_lines,
    subprocess_title,
    text_width,
)


class Layout:
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
        self.items: dict[str, Item] = {}  # real nodes, absolute, filled by _place
        self.scopes: list[Scope] = []
        self.root = self._scope(None)
        self._place(self.root, 0.0, 0.0)

    # --- sizes -------------------------------------------------------------------------

    def _item(self, node: Node, layout: Scope) -> Item:
        room = 2 * BOUNDARY_ROOM if node.id in self.boundaries else 0.0
        if node.type is NodeType.SUBPROCESS:
            inner = self._scope(node.id)
            layout.inner[node.id] = inner
            w = max(inner.width + 2 * PAD, text_width(subprocess_title(node)) + 70)
            h = inner.height + TITLE_H + PAD
            return Item(node.id, node, w, h + room, w, h)
        if node.type in EVENTS or node.type in GATEWAYS:
            size = 2 * EVENT_R if node.type in EVENTS else GATEWAY
            lines = outside_lines(node)
            w = max(size, max(text_width(t) for t in lines) + 8)
            return Item(node.id, node, w, size + 2 * LABEL_LINE * len(lines), size, size)
        return Item(node.id, node, TASK_W, TASK_H + room, TASK_W, TASK_H)

    # --- one scope -----------------------------------------------------------------------

    def _scope(self, scope: str | None) -> Scope:
        g = self.graph
        layout = Scope(scope)
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
                layout.items[key] = Item(key, None, 0.0, DUMMY_H, 0.0, DUMMY_H, rank=r)
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

    def _place(self, layout: Scope, ox: float, oy: float) -> None:
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

    def _line(self, layout: Scope, flow: Flow, chain: list[str]) -> list[Point]:
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

    def _loop_line(self, layout: Scope, flow: Flow) -> list[Point]:
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

    def _from_below(self, layout: Scope, item: Item) -> bool:
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
    layout: Scope, preds: dict[str, list[tuple[str, bool]]], tie: dict[str, tuple[int, int, int]]
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
        previous: Item | None = None
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


def _lanes(layout: Scope, back: list[Flow], from_: Callable[[Flow], str]) -> None:
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


def label_spot(points: list[Point], where: str) -> Point:
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
