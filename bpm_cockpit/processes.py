"""The processes page: every deployed definition and version with how many of its instances
run, failed and ended, and its open incidents (two grouped counts for the whole page)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from bpm.states import InstanceState
from bpm.store.definition_queries import DefinitionFilter
from bpm_cockpit.access import Reader
from bpm_cockpit.pages import PageRoute, render, svg
from bpm_server.routing import runtime_of

router = APIRouter(route_class=PageRoute)
#: The definitions one page lists (by key, then version).
LIMIT = 200


@router.get("/processes")
def processes_page(request: Request, caller: Reader) -> Response:
    engine = runtime_of(request).engine
    rows = engine.process_definitions(DefinitionFilter(), sort="key", limit=LIMIT)
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
    found = engine.definition_heatmap(definition.id)
    now = sorted(found.heat.now.items())
    return render(
        request,
        caller,
        "process.html",
        d=definition,
        diagram=svg(found.svg),
        now=now,
        instances=found.heat.instances,
    )
