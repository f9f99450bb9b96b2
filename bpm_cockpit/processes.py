"""The processes page: every deployed definition and version with how many of its instances
run, failed and ended, and its open incidents (two grouped counts for the whole page)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from bpm.api import DefinitionQuery, InstanceState, Page
from bpm_cockpit.access import Reader
from bpm_cockpit.pages import PageRoute, render, svg
from bpm_server.routing import runtime_of

router = APIRouter(route_class=PageRoute)
#: The definitions one page lists (by key, then version).
LIMIT = 200
#: The newest instances a version's heatmap counts (its page stays fast at any size).
RECENT = 10_000


@router.get("/processes")
def processes_page(request: Request, caller: Reader) -> Response:
    engine = runtime_of(request).engine
    rows = engine.find_process_definitions(
        DefinitionQuery(), Page(limit=LIMIT, order=(("key", False),))
    )
    found = engine.instance_counts([d.id for d in rows])
    listed = [
        {
            "d": d,
            "counts": {
                **{s.value: found.by_state.get(d.id, {}).get(s.value, 0) for s in InstanceState},
                "incidents": found.open_incidents.get(d.id, 0),
            },
        }
        for d in rows
    ]
    return render(request, caller, "processes.html", definitions=listed)


@router.get("/processes/{definition_id}")
def process_page(request: Request, caller: Reader, definition_id: str) -> Response:
    engine = runtime_of(request).engine
    definition = engine.process_definition(definition_id)
    drawn = engine.definition_diagram(definition.id, recent=RECENT)
    now = [
        ((s.node_id, state), count)
        for s in engine.node_statistics(definition.id)
        for state, count in (("LIVE", s.instances - s.failed), ("FAILED", s.failed))
        if count
    ]
    return render(
        request, caller, "process.html", d=definition, diagram=svg(drawn), now=now, instances=RECENT
    )
