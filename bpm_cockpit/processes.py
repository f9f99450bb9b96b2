"""The processes page: every deployed definition and version with how many of its instances
run, failed and ended, and its open incidents."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from bpm.states import InstanceState
from bpm.store.definition_queries import DefinitionFilter
from bpm.store.history_queries import InstanceHistoryQuery
from bpm.store.incident_queries import IncidentQuery
from bpm_cockpit.access import Reader
from bpm_cockpit.pages import render
from bpm_server.routing import runtime_of

router = APIRouter()
#: The definitions one page lists (newest deployments first).
LIMIT = 200


def _counts(request: Request, def_id: Any) -> dict[str, int]:
    engine = runtime_of(request).engine
    out = {}
    for state in InstanceState:
        q = InstanceHistoryQuery(definition_ids=[def_id], states=[state])
        out[state.value] = engine.count_instance_history(q)
    out["incidents"] = engine.count_incidents(IncidentQuery(definition_ids=[def_id]))
    return out


@router.get("/processes")
def processes_page(request: Request, caller: Reader) -> Response:
    engine = runtime_of(request).engine
    rows = engine.process_definitions(DefinitionFilter(), sort="key", limit=LIMIT)
    listed = [{"d": d, "counts": _counts(request, d.id)} for d in rows]
    return render(request, caller, "processes.html", definitions=listed)
