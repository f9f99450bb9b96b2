"""Rendering a page: the Jinja templates (autoescaped: every value put into the HTML is
escaped, only the engine's SVG diagram is marked safe, and it escapes its own text), the
session cookie of a fresh session, and the headers every page carries."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from bpm.api import AccessDenied, BpmError
from bpm_cockpit import sessions
from bpm_cockpit.access import Caller
from bpm_server.auth import Permission
from bpm_server.problems import status_of

log = logging.getLogger("bpm.server")
_ENV = Environment(
    loader=PackageLoader("bpm_cockpit", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
#: Pages are never framed by another site, and run only the cockpit's own script.
HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline';"
        " frame-ancestors 'none'; form-action 'self'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
}


def _when(value: datetime | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("T", " ")[:19]
    return value.strftime("%Y-%m-%d %H:%M:%S")


_ENV.filters["when"] = _when


def svg(text: str) -> Markup:
    """The engine's diagram, trusted: its renderer escapes every name and label it writes."""
    return Markup(text)


def render(
    request: Request, caller: Caller, template: str, status: int = 200, **values: Any
) -> HTMLResponse:
    html = _ENV.get_template(template).render(
        request=request,
        caller=caller,
        csrf=caller.session.csrf,
        operator=caller.can(Permission.OPERATE),
        task_worker=caller.can(Permission.WORK_USER_TASKS),
        reader=caller.can(Permission.READ),
        **values,
    )
    response = HTMLResponse(html, status, headers=HEADERS)
    if caller.fresh:
        sessions.write(response, request, caller.session)
    return response


def back_to(path: str, **notice: str | int) -> RedirectResponse:
    """After a POST: see the page again (303), with what happened in its query."""
    query = urlencode(notice)
    return RedirectResponse(f"{path}?{query}" if query else path, 303)


def render_plain(request: Request, template: str, response_status: int, **values: Any) -> Response:
    """A page for someone not logged in (the login page)."""
    html = _ENV.get_template(template).render(request=request, caller=None, **values)
    return HTMLResponse(html, response_status, headers=HEADERS)


class PageRoute(APIRoute):
    """A cockpit route: a refusal or a bad input (a bpm error) is answered with an HTML page
    saying what was wrong, with the API's status for it (400, 403, 404, 409); a fault is
    left to the app's handler (500, logged with a reference)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except BpmError as exc:
                status, _ = status_of(exc)
                if status >= 500:
                    raise
                if isinstance(exc, AccessDenied):
                    log.warning(
                        "refused %s %s: %s",
                        request.method,
                        request.url.path,
                        exc,
                        extra={"action": "refused", "status": status},
                    )
                return render_plain(request, "error.html", status, status=status, message=str(exc))

        return handle
