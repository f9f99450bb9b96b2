"""The cockpit and tasklist: server-rendered pages over the engine's facade, served by
``bpm serve`` at ``/cockpit/`` (docs/cockpit.md)."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from bpm_cockpit import incidents, instances, login, processes, tasklist
from bpm_cockpit.access import identify
from bpm_server.auth import Permission

router = APIRouter(include_in_schema=False)
for _part in (login, processes, instances, incidents, tasklist):
    router.include_router(_part.router)

#: The cockpit's own files, served as they are; nothing else is read from the package.
_STATIC = {"cockpit.css": "text/css", "cockpit.js": "text/javascript"}


@router.get("")  # /cockpit/ is served as /cockpit (bpm_server.paths drops one trailing slash)
def home(request: Request) -> Response:
    """The first page the caller's role may see: the processes, else the tasklist."""
    caller = identify(request)
    if caller is not None and not caller.can(Permission.READ):
        return RedirectResponse("/cockpit/tasks", 303)
    return RedirectResponse("/cockpit/processes", 303)


@router.get("/static/{name}")
def static(name: str) -> Response:
    kind = _STATIC.get(name)
    if kind is None:
        return Response("not found", 404, media_type="text/plain")
    body = files("bpm_cockpit").joinpath("static", name).read_bytes()
    return Response(body, media_type=kind, headers={"Cache-Control": "max-age=300"})
