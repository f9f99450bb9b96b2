"""Logging in with an existing API credential (its name and secret) and logging out.

A login makes a new session (a new CSRF token), so a token seen before the login is worth
nothing after it. A wrong name or secret gets the same answer either way.
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from hmac import compare_digest

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from bpm.api import Forbidden, credentials
from bpm_cockpit import sessions
from bpm_cockpit.access import identify
from bpm_cockpit.pages import HEADERS, PageRoute, render_plain
from bpm_cockpit.sessions import Session
from bpm_server.routing import runtime_of

router = APIRouter(route_class=PageRoute)
HOME = "/cockpit"


def _safe_next(target: str | None) -> str:
    """Only a cockpit path: a login never sends the browser to another site."""
    if target and target.startswith("/cockpit/") and "//" not in target and "\\" not in target:
        return target
    return HOME


@router.get("/login")
def login_page(request: Request, next: str | None = None) -> Response:
    session = sessions.read(request) or Session.fresh()
    response = render_plain(request, "login.html", 200, csrf=session.csrf, next=_safe_next(next))
    sessions.write(response, request, session)
    return response


@lru_cache(maxsize=1)
def _stand_in() -> str:
    """What an unknown name's secret is checked against: it costs what a known one costs."""
    return credentials.hash_secret(secrets.token_urlsafe(32))


def _verified(request: Request, name: str, secret: str) -> str | None:
    """The credential's secret hash when ``secret`` is its secret, else None."""
    row = credentials.lookup(runtime_of(request).db, name)
    ok = credentials.verify_secret(secret, row.secret_hash if row else _stand_in())
    return row.secret_hash if ok and row is not None else None


def _token_ok(session: Session | None, token: object) -> bool:
    return session is not None and isinstance(token, str) and compare_digest(token, session.csrf)


@router.post("/login")
async def login(request: Request) -> Response:
    form = await request.form()
    session = sessions.read(request)
    token, name, secret = form.get("csrf"), form.get("name"), form.get("secret")
    if session is None or not _token_ok(session, token):
        raise Forbidden("the login form's CSRF token is missing or wrong; reload the login page")
    target = _safe_next(str(form.get("next") or ""))
    if isinstance(name, str) and isinstance(secret, str) and name and secret:
        secret_hash = await run_in_threadpool(_verified, request, name, secret)
        if secret_hash is not None:
            response = RedirectResponse(target, 303, headers=HEADERS)
            sessions.write(response, request, Session.fresh(name, secret_hash))
            return response
    return render_plain(
        request,
        "login.html",
        401,
        csrf=session.csrf,
        next=target,
        error="No credential of that name, or a wrong secret.",
    )


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = await request.form()
    session = sessions.read(request)
    if not _token_ok(session, form.get("csrf")):
        raise Forbidden("the logout form's CSRF token is missing or wrong; reload the page")
    response = RedirectResponse("/cockpit/login", 303, headers=HEADERS)
    sessions.clear(response)
    return response


@router.get("/whoami")
def whoami(request: Request) -> dict[str, str | None]:
    """Who the session is (for scripts and tests): the name and role, or nulls."""
    caller = identify(request)
    if caller is None:
        return {"name": None, "role": None}
    return {"name": caller.name, "role": caller.principal.role.value}
