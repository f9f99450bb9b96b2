"""What is drawn over a diagram's shapes: per node a status and its numbers, per flow how
often it was taken; for one instance (its ``bpm.diagram.mark``, live tokens, open incidents
and multi-instance counters) or for a whole definition (a heatmap of how often each node and
flow was taken across its instances, and how many tokens are at each node now).

Kept apart from the drawing so the modeler's layout (``bpm.diagram_di_svg``) needs no database
and the definition-wide counts come from one aggregate query instead of every history."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bpm.diagram import ACTIVE, FAILED, LIVE, NOT_VISITED, VISITED, Marks, Status
from bpm.states import TokenMode, TokenState, WaitKind


@dataclass
class NodeOverlay:
    """One node's status and numbers."""

    status: Status = NOT_VISITED
    entered: int = 0
    runs: int = 0
    #: Live tokens at the node now (failed ones counted apart).
    here: int = 0
    failed_here: int = 0
    #: A multi-instance activity: iterations that ran, and how many it runs (when known).
    iterations: int = 0
    instances: int | None = None
    #: Why it failed (the open incidents' messages), for the node's tooltip and short text.
    reasons: list[str] = field(default_factory=list)
    #: 0 (never taken) to 1 (the most taken node of the heatmap).
    heat: float = 0.0

    def count_text(self) -> str:
        """``2x`` (``2x, 3 runs`` when a handler ran more often than tokens came), or ``""``."""
        if not self.entered and not self.runs:
            return ""
        text = f"{self.entered}x"
        return f"{text}, {self.runs} runs" if self.runs > self.entered else text

    def iteration_text(self) -> str:
        """``3/5`` while a multi-instance activity runs, ``3`` when the total is unknown."""
        if not self.iterations and self.instances is None:
            return ""
        return f"{self.iterations}/{self.instances}" if self.instances else str(self.iterations)


@dataclass
class Overlay:
    nodes: dict[str, NodeOverlay]
    flows: dict[str, int]
    #: A definition's heatmap (counts over all its instances) rather than one instance.
    heatmap: bool = False
    #: The heatmap: how many instances the counts cover.
    instances: int = 0

    def node(self, node_id: str) -> NodeOverlay:
        return self.nodes.get(node_id) or NodeOverlay()

    def count(self, status: str) -> int:
        return sum(1 for n in self.nodes.values() if n.status == status)


def of_instance(
    marks: Marks,
    tokens: Iterable[Mapping[str, Any]],
    incidents: Iterable[tuple[str | None, str]],
    instances: Mapping[str, int] | None = None,
) -> Overlay:
    """One instance: ``marks`` as ``bpm.diagram.mark`` gives them, its tokens (dicts with
    ``node_id``, ``state``, ``mode``), its open incidents as (node id, message) and, per
    running multi-instance activity, how many iterations it runs."""
    nodes = {
        node_id: NodeOverlay(
            status=m.status,
            entered=m.entered,
            runs=m.runs,
            iterations=m.iterations,
            instances=(instances or {}).get(node_id),
        )
        for node_id, m in marks.nodes.items()
    }
    for token in tokens:
        found = nodes.get(str(token.get("node_id")))
        if found is None or token.get("mode", TokenMode.FORWARD) != TokenMode.FORWARD:
            continue
        if token.get("state") in LIVE and token.get("wait_kind") != WaitKind.CHILDREN:
            found.here += 1
        elif token.get("state") == TokenState.FAILED:
            found.failed_here += 1
    for node_id, message in incidents:
        if node_id in nodes and message not in nodes[node_id].reasons:
            nodes[node_id].reasons.append(message)
    return Overlay(nodes, dict(marks.flows))


def heatmap(
    node_ids: Iterable[str],
    flow_ids: Iterable[str],
    counts: HeatCounts,
) -> Overlay:
    """A definition's heatmap from the counts of its instances (see ``HeatCounts``)."""
    nodes: dict[str, NodeOverlay] = {}
    top = max(counts.entered.values(), default=0)
    for node_id in node_ids:
        entered = counts.entered.get(node_id, 0)
        here = counts.live.get(node_id, 0)
        failed = counts.failed.get(node_id, 0)
        status = FAILED if failed else ACTIVE if here else VISITED if entered else NOT_VISITED
        nodes[node_id] = NodeOverlay(
            status=status,
            entered=entered,
            here=here,
            failed_here=failed,
            reasons=list(counts.reasons.get(node_id, ())),
            heat=entered / top if top else 0.0,
        )
    flows = {f: counts.flows.get(f, 0) for f in flow_ids}
    return Overlay(nodes, flows, heatmap=True, instances=counts.instances)


@dataclass(frozen=True)
class HeatCounts:
    """Over all instances of one definition: token arrivals per node, times each flow was
    taken, live and failed tokens per node now, open incidents' messages per node (a few)."""

    instances: int
    entered: Mapping[str, int]
    flows: Mapping[str, int]
    live: Mapping[str, int]
    failed: Mapping[str, int]
    reasons: Mapping[str, tuple[str, ...]]


def heat_colour(heat: float) -> str:
    """From pale yellow (rarely taken) to deep orange (the most taken node)."""
    low, high = (254, 249, 195), (249, 115, 22)
    r, g, b = (round(a + (z - a) * heat) for a, z in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"
