"""A definition drawn with what its instances did: a heatmap of how often each node and flow
was taken over its newest instances (or all of them), and where their tokens are now
(``bpm.store.heatmap`` counts them, ``bpm.diagram_views`` draws them)."""

from __future__ import annotations

from dataclasses import asdict
from uuid import UUID

from bpm import diagram as drawing
from bpm import diagram_views
from bpm.diagram_overlay import HeatCounts
from bpm.engine.core.engine_core import EngineCore
from bpm.errors import UnknownProcess
from bpm.store import definitions, heatmap

#: The newest instances a heatmap reads unless told otherwise.
RECENT = 10_000


def definition_diagram(
    core: EngineCore, def_id: UUID, fmt: str = "svg", recent: int | None = RECENT
) -> str:
    if fmt not in drawing.FORMATS:
        raise ValueError(f"unknown diagram format {fmt!r}; use one of {', '.join(drawing.FORMATS)}")
    with core.db.transaction() as conn:
        if definitions.by_id(conn, def_id) is None:
            raise UnknownProcess(f"no process definition with id {def_id} is deployed")
        graph = core.graph(def_id, conn)
        version = core.definition_version(def_id, conn)
        counts = HeatCounts(**asdict(heatmap.of_definition(conn, def_id, recent)))
        source = definitions.source(conn, def_id) if fmt == "svg" else None
    over = "all of them" if recent is None else f"the newest {recent:,}"
    title = f"{graph.key} v{version}: {counts.instances} instance(s), counts over {over}"
    if fmt == "mermaid":
        marks = diagram_views.heat_marks(graph, counts)
        return drawing.render_mermaid(graph, marks, title=title)
    return diagram_views.definition_svg(graph, source, counts, title=title)
