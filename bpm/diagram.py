"""A definition drawn with the path one instance took: Mermaid text or a standalone SVG.

``mark`` reads the instance's history and tokens (the event and token dicts that
``Engine.trace`` and ``Engine.show`` return) and gives every node a status and counts, and every
flow the number of times a token took it. ``to_mermaid`` and ``to_svg`` draw the compiled
definition (``ProcessGraph``) with those marks: pure functions of their arguments, with no
database, no Celery and no Graphviz (``bpm.diagram_svg`` lays the SVG out itself).

A node's status is the first of these that applies:

- ``failed``: a ``FAILED`` token is at it (a forward token, or a compensation that failed),
  or it is a live subprocess with a failed node inside;
- ``active``: a live token is at it now (an ``ACTIVE`` or ``WAITING`` forward token, or a
  compensation running there); a token waiting at a fork for its branches does not count,
  a subprocess whose inner tokens run does;
- ``compensated``: a ``CompensationCompleted`` event names it;
- ``visited``: a token arrived at it (or a handler ran there);
- ``not visited``.

``entered`` counts token arrivals (``CREATED``, ``MOVED``, ``ERROR_CAUGHT``, ``TIMER_FIRED``,
``TRANSACTION_CANCELLED`` at the node, compensation tokens left out); ``runs`` counts handler and
worker runs started there (task ``LOCKED`` events, retries included). A parallel join counts one
arrival per branch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bpm.definitions.model import GATEWAYS, SCOPES, Node, NodeType, ProcessGraph
from bpm.diagram_marker import marker_text
from bpm.history_reading import HistoryEvent, HistoryTable
from bpm.states import EngineEvent, TaskEvent, TokenEvent, TokenMode, TokenState, WaitKind


class Status(StrEnum):
    """A node's status on a diagram (see the module docstring)."""

    FAILED = "failed"
    ACTIVE = "active"
    COMPENSATED = "compensated"
    VISITED = "visited"
    NOT_VISITED = "not visited"


ACTIVE, FAILED, COMPENSATED = Status.ACTIVE, Status.FAILED, Status.COMPENSATED
VISITED, NOT_VISITED = Status.VISITED, Status.NOT_VISITED
#: Every status, the one that wins first.
STATUSES = tuple(Status)
LIVE = frozenset({TokenState.ACTIVE, TokenState.WAITING})
FORMATS = ("mermaid", "svg")
#: Mermaid class names (a class name cannot hold a space).
MERMAID_CLASSES = {
    VISITED: "visited",
    ACTIVE: "active",
    FAILED: "failed",
    COMPENSATED: "compensated",
    NOT_VISITED: "not_visited",
}
#: (fill, stroke, text) per status; the SVG uses the same colours.
COLOURS = {
    FAILED: ("#fee2e2", "#dc2626", "#7f1d1d"),
    ACTIVE: ("#fef3c7", "#d97706", "#78350f"),
    COMPENSATED: ("#f3e8ff", "#9333ea", "#581c87"),
    VISITED: ("#dcfce7", "#16a34a", "#14532d"),
    NOT_VISITED: ("#f9fafb", "#9ca3af", "#6b7280"),
}
UNTAKEN_LINK = "stroke:#9ca3af,stroke-dasharray:4 3"

Event = Mapping[str, Any]
Token = Mapping[str, Any]


@dataclass
class NodeMark:
    """What happened at one node."""

    status: Status = NOT_VISITED
    entered: int = 0
    runs: int = 0
    #: A call activity's called instances (ids), in the order it started them.
    called: list[str] = field(default_factory=list)
    #: A multi-instance activity's iterations (its body's arrivals are ``entered``).
    iterations: int = 0

    def count_text(self) -> str:
        """``2x``, ``1x, 3 runs`` when a handler ran more often than tokens came, or ``""``;
        a call activity adds the instances it called (``bpm show ID`` follows one)."""
        if not self.entered and not self.runs:
            return ""
        text = f"{self.entered}x"
        text = f"{text}, {self.runs} runs" if self.runs > self.entered else text
        text += f", {self.iterations} iterations" if self.iterations else ""
        if self.called:
            text += ", called " + " ".join(c[:8] for c in self.called)
        return text


@dataclass
class Marks:
    """Per node its mark, per flow how often a token took it."""

    nodes: dict[str, NodeMark]
    flows: dict[str, int]

    def count(self, status: str) -> int:
        return sum(1 for m in self.nodes.values() if m.status == status)


@dataclass
class _Seen:
    """What the history says, before the tokens are looked at."""

    backward: set[str]  # tokens created in COMPENSATION mode (saga anchors included)
    undoing: set[str]  # compensation tokens that undo one activity
    undo_runs: dict[str, int]  # per node: compensation tokens created there
    compensated: set[str]


def _read_history(events: Iterable[Event], marks: Marks) -> _Seen:
    read = [HistoryEvent.of_view(e) for e in events]
    seen = _Seen(set(), set(), {}, set())
    for e in read:  # first: which tokens run backwards (they do not walk the flow)
        if e.runs_backward:
            token_id = str(e.token_id)
            seen.backward.add(token_id)
            if e.data.get("record_id"):
                seen.undoing.add(token_id)
                at = str(e.node_id)
                seen.undo_runs[at] = seen.undo_runs.get(at, 0) + 1
    nodes, flows = marks.nodes, marks.flows
    for e in read:
        node_id, backward = e.node_id, str(e.token_id) in seen.backward
        if e.is_token and not backward:
            if e.arrives and node_id in nodes and e.iteration:
                nodes[node_id].iterations += 1  # a multi-instance iteration (at its own node)
            elif e.arrives and node_id in nodes:
                nodes[node_id].entered += 1
            if e.flow is not None and e.flow in flows:
                flows[e.flow] += 1
        if e.is_token and e.type == TokenEvent.CALLED and node_id in nodes:
            nodes[node_id].called.append(str(e.data.get("instance")))
        if e.is_token or node_id is None:
            continue
        if e.table is HistoryTable.TASK and _a_run(e) and not backward and node_id in nodes:
            nodes[node_id].runs += 1
        elif e.type == EngineEvent.COMPENSATION_COMPLETED and node_id in nodes:
            seen.compensated.add(node_id)
    return seen


def _a_run(e: HistoryEvent) -> bool:
    """A task was locked to run, or a reserved task's run began (a reservation is none)."""
    locked = e.type == TaskEvent.LOCKED and not e.data.get("reserved")
    return locked or (e.type == TaskEvent.LOCK_EXTENDED and "attempt" in e.data)


def _at_work(node: Node, token: Token, undoing: set[str]) -> bool:
    """Whether a live token makes its node active."""
    if token.get("mode", TokenMode.FORWARD) != TokenMode.FORWARD:
        return str(token.get("id")) in undoing
    # A scope token waiting for its children is at work only as a subprocess (a fork's or an
    # end event's waiting token is not where anything happens).
    return token.get("wait_kind") != WaitKind.CHILDREN or node.is_scope


def mark(graph: ProcessGraph, events: Iterable[Event], tokens: Iterable[Token]) -> Marks:
    """Statuses and counts of an instance of ``graph`` (see the module docstring)."""
    marks = Marks({n: NodeMark() for n in graph.nodes}, {f: 0 for f in graph.flows})
    seen = _read_history(events, marks)
    failed: set[str] = set()
    active: set[str] = set()
    holding: set[str] = set()
    undo_failed: set[str] = set()
    undo_active: set[str] = set()
    for token in tokens:
        node_id, state = str(token.get("node_id")), token.get("state")
        if node_id not in graph.nodes:
            continue
        undoing = str(token.get("id")) in seen.undoing
        if token.get("mode", TokenMode.FORWARD) == TokenMode.FORWARD:
            holding.add(node_id)
        if state == TokenState.FAILED:
            failed.add(node_id)
            if undoing:
                undo_failed.add(node_id)
        elif state in LIVE and _at_work(graph.nodes[node_id], token, seen.undoing):
            active.add(node_id)
            if undoing:
                undo_active.add(node_id)
    for node_id in list(active):  # a subprocess waiting on a failure inside it has failed
        if graph.nodes[node_id].is_scope and any(_inside(graph, f, node_id) for f in failed):
            failed.add(node_id)
    for node_id, m in marks.nodes.items():
        visited = bool(m.entered or m.runs) or node_id in holding
        m.status = _status(node_id, failed, active, seen.compensated, visited)
    # A handler activity stands apart from the flow (no token ever arrives there): it shows
    # the compensations of its activity, which ran as its stand-in at the activity.
    for node in graph.nodes.values():
        handler = node.compensation.node if node.compensation else None
        if handler is None or handler not in marks.nodes:
            continue
        m = marks.nodes[handler]
        m.entered += seen.undo_runs.get(node.id, 0)
        m.status = _status(node.id, undo_failed, undo_active, seen.compensated, bool(m.entered))
    return marks


def _inside(graph: ProcessGraph, node_id: str, subprocess: str) -> bool:
    scope = graph.nodes[node_id].scope
    while scope is not None:
        if scope == subprocess:
            return True
        scope = graph.nodes[scope].scope
    return False


def _status(
    node_id: str, failed: set[str], active: set[str], compensated: set[str], visited: bool
) -> Status:
    if node_id in failed:
        return FAILED
    if node_id in active:
        return ACTIVE
    if node_id in compensated:
        return COMPENSATED
    return VISITED if visited else NOT_VISITED


def label_lines(node: Node) -> list[str]:
    """The node's name (when it has one) and its id; what a call activity calls."""
    lines = [_clean(node.name)] if node.name and node.name != node.id else []
    if node.call is not None:
        return [*lines, node.id, _clean(f"calls {node.call.process}")]
    return [*lines, node.id]


def _clean(text: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]+", " ", text).strip()


# --- Mermaid -----------------------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """Text for a quoted Mermaid label (entity codes for what would end or break it)."""
    for char, code in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text


def _mermaid_ids(graph: ProcessGraph) -> dict[str, str]:
    """Safe, unique Mermaid ids: ``n_`` + the node id (``end`` alone is a keyword)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for node_id in graph.nodes:
        base = "n_" + re.sub(r"[^A-Za-z0-9_]", "_", node_id)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        out[node_id] = name
    return out


def _mermaid_label(node: Node, m: NodeMark) -> str:
    lines = label_lines(node) + [t for t in (marker_text(node), m.count_text()) if t]
    return "<br/>".join(_mermaid_text(line) for line in lines)


_ROUND = frozenset(  # events drawn as a circle in Mermaid (an end event has a double one)
    {NodeType.START, NodeType.TIMER, NodeType.MESSAGE, NodeType.CONDITIONAL, NodeType.BOUNDARY}
    | {NodeType.SIGNAL, NodeType.COMPENSATION_THROW, NodeType.ESCALATION_THROW}
    | {NodeType.SIGNAL_THROW}
)


def _mermaid_shape(node: Node, label: str) -> str:
    if node.type is NodeType.END:
        return f'((("{label}")))'
    if node.type in _ROUND:
        return f'(("{label}"))'
    if node.type in GATEWAYS:
        return f'{{"{label}"}}'
    return f'("{label}")'


def _mermaid_scope(
    graph: ProcessGraph,
    marks: Marks,
    ids: dict[str, str],
    scope: str | None,
    lines: list[str],
    depth: int,
) -> None:
    pad = "    " * depth
    for node in graph.nodes.values():
        if node.scope != scope:
            continue
        label = _mermaid_label(node, marks.nodes[node.id])
        if node.type in SCOPES:  # a body of nodes (not a multi-instance task's iterations)
            lines.append(f'{pad}subgraph {ids[node.id]} ["{label}"]')
            lines.append(f"{pad}    direction LR")
            _mermaid_scope(graph, marks, ids, node.id, lines, depth + 1)
            lines.append(f"{pad}end")
        else:
            lines.append(f"{pad}{ids[node.id]}{_mermaid_shape(node, label)}")


def render_mermaid(graph: ProcessGraph, marks: Marks, *, title: str | None = None) -> str:
    """A ``flowchart LR``: taken flows thick with their count, the others dashed grey."""
    ids = _mermaid_ids(graph)
    lines: list[str] = []
    if title:
        lines += ["---", f"title: {json.dumps(_clean(title), ensure_ascii=False)}", "---"]
    lines.append("flowchart LR")
    _mermaid_scope(graph, marks, ids, None, lines, 1)
    links = 0
    untaken: list[int] = []
    for flow in graph.flows.values():
        taken = marks.flows.get(flow.id, 0)
        source, target = ids[flow.source], ids[flow.target]
        if taken:
            lines.append(f"    {source} ==>|{taken}x| {target}")
        else:
            lines.append(f"    {source} --> {target}")
            untaken.append(links)
        links += 1
    for node in graph.nodes.values():
        if node.type is NodeType.BOUNDARY and node.attached_to in ids:
            lines.append(f"    {ids[node.attached_to]} -.- {ids[node.id]}")
            links += 1
        handler = node.compensation.node if node.compensation else None
        if handler in ids:
            lines.append(f"    {ids[node.id]} -.->|undo| {ids[str(handler)]}")
            links += 1
    if untaken:
        lines.append(f"    linkStyle {','.join(map(str, untaken))} {UNTAKEN_LINK}")
    for node in graph.nodes.values():
        if node.triggered_by_event:  # an event subprocess: BPMN draws its border dotted
            lines.append(f"    style {ids[node.id]} stroke-dasharray:2 3")
    for status, name in MERMAID_CLASSES.items():
        fill, stroke, text = COLOURS[status]
        width = "3px" if status in (ACTIVE, FAILED) else "1px"
        dash = ",stroke-dasharray:3 3" if status == NOT_VISITED else ""
        lines.append(
            f"    classDef {name} fill:{fill},stroke:{stroke},color:{text},"
            f"stroke-width:{width}{dash}"
        )
    for status, name in MERMAID_CLASSES.items():
        members = [ids[n] for n, m in marks.nodes.items() if m.status == status]
        if members:
            lines.append(f"    class {','.join(members)} {name}")
    return "\n".join(lines) + "\n"


def to_mermaid(
    graph: ProcessGraph,
    events: Iterable[Event],
    tokens: Iterable[Token],
    *,
    title: str | None = None,
) -> str:
    """Mermaid ``flowchart`` text of ``graph`` with the instance's path marked."""
    return render_mermaid(graph, mark(graph, events, tokens), title=title)


def to_svg(
    graph: ProcessGraph,
    events: Iterable[Event],
    tokens: Iterable[Token],
    *,
    title: str | None = None,
) -> str:
    """A standalone SVG document of ``graph`` with the instance's path marked."""
    from bpm.diagram_svg import render_svg  # it imports this module's marks and colours

    return render_svg(graph, mark(graph, events, tokens), title=title)


def render(
    graph: ProcessGraph,
    events: Iterable[Event],
    tokens: Iterable[Token],
    *,
    fmt: str = "mermaid",
    title: str | None = None,
) -> str:
    """``to_mermaid`` or ``to_svg`` by name (``fmt`` is ``"mermaid"`` or ``"svg"``)."""
    if fmt == "mermaid":
        return to_mermaid(graph, events, tokens, title=title)
    if fmt == "svg":
        return to_svg(graph, events, tokens, title=title)
    raise ValueError(f"unknown diagram format {fmt!r}; use one of {', '.join(FORMATS)}")
