"""A definition version drawn as a heatmap of its recent instances: each node with how often
tokens arrived there (and tasks ran), each flow with how often it was taken, and the nodes
where tokens are now marked active or failed (``bpm.diagram``'s marks and SVG)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bpm.diagram import ACTIVE, FAILED, LIVE, NOT_VISITED, VISITED, Marks, NodeMark
from bpm.diagram_svg import render_svg
from bpm.engine.core.engine_core import EngineCore
from bpm.store import definition_heatmap
from bpm.store.definition_heatmap import Heat

#: The newest instances a heatmap reads.
RECENT = 10_000


@dataclass(frozen=True)
class Heatmap:
    """The SVG, and the counts it was drawn from."""

    svg: str
    heat: Heat


def _status(node_id: str, heat: Heat) -> str:
    states = {s for (n, s), c in heat.now.items() if n == node_id and c}
    if "FAILED" in states:
        return FAILED
    if states & LIVE:
        return ACTIVE
    return VISITED if heat.arrivals.get(node_id) or heat.runs.get(node_id) else NOT_VISITED


def heatmap(core: EngineCore, definition_id: UUID, recent: int = RECENT) -> Heatmap:
    with core.db.transaction() as conn:
        graph = core.graph(definition_id, conn)
        version = core.definition_version(definition_id, conn)
        heat = definition_heatmap.heat(conn, definition_id, recent)
    marks = Marks(
        {
            n: NodeMark(_status(n, heat), heat.arrivals.get(n, 0), heat.runs.get(n, 0))
            for n in graph.nodes
        },
        {f: heat.flows.get(f, 0) for f in graph.flows},
    )
    title = f"{graph.key} v{version}, the newest {heat.instances} instances"
    return Heatmap(render_svg(graph, marks, title=title), heat)
