"""Who is looking at the cockpit, and may they do what a form asks.

A page is for a logged-in credential whose role has the page's permission (``READ`` for the
cockpit, ``WORK_USER_TASKS`` for the tasklist); with no credential configured the server is
open (loopback only, as the API) and every visitor is the anonymous operator, so no login is
asked for. Every POST carries the session's CSRF token and is checked for the permission of
what it changes before anything changes: a viewer's hand-made POST gets 403.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from hmac import compare_digest
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from starlette.datastructures import FormData

from bpm.api import Forbidden, credentials
from bpm_cockpit import sessions
from bpm_cockpit.sessions import Session, stamp_of
from bpm_server.auth import ANONYMOUS, Authenticator, Permission, Principal
from bpm_server.routing import runtime_of


@dataclass(frozen=True)
class Caller:
    """The principal behind a request and its session. ``fresh``: the session was made for
    this request, so the answer must set its cookie."""

    principal: Principal
    session: Session
    fresh: bool

    @property
    def name(self) -> str:
        return self.principal.name

    @property
    def user(self) -> str:
        """The user id the tasklist works as (assignee, candidate user, history actor)."""
        return self.principal.user or self.principal.name

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(sorted(self.principal.groups))

    @property
    def anonymous(self) -> bool:
        return self.principal is ANONYMOUS

    def can(self, permission: Permission) -> bool:
        return self.principal.can(permission)


def _login_redirect(request: Request) -> HTTPException:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    location = f"/cockpit/login?next={quote(target)}"
    return HTTPException(303, "log in first", headers={"Location": location})


def identify(request: Request) -> Caller | None:
    """The caller, or None when a login is needed."""
    session = sessions.read(request)
    fresh = session is None
    if session is None:
        session = Session.fresh()
    if session.user is not None:
        row = credentials.lookup(runtime_of(request).db, session.user)
        if row is not None and compare_digest(session.stamp, stamp_of(row.secret_hash)):
            return Caller(Principal.of(row), session, fresh)
        # The credential was removed, or made again with a new secret: log in again.
        session, fresh = Session.fresh(), True
    authenticator: Authenticator = request.app.state.authenticator
    if authenticator.is_open():
        return Caller(ANONYMOUS, session, fresh)
    return None


def _needing(permission: Permission) -> Callable[[Request], Caller]:
    def dependency(request: Request) -> Caller:
        caller = identify(request)
        if caller is None:
            raise _login_redirect(request)
        if not caller.can(permission):
            raise Forbidden(
                f"{caller.name} ({caller.principal.role.lower()}) may not {permission}:"
                " log in with a credential whose role may"
            )
        return caller

    return dependency


#: A caller who may read the cockpit's pages (viewer, operator).
Reader = Annotated[Caller, Depends(_needing(Permission.READ))]
#: A caller who may work on user tasks and start processes (starter, operator).
TaskWorker = Annotated[Caller, Depends(_needing(Permission.WORK_USER_TASKS))]


def check_form(caller: Caller, form: FormData, permission: Permission) -> None:
    """Refuse (403) a POST without the session's CSRF token, or from a caller whose role
    lacks ``permission``; nothing has changed yet when this raises."""
    token = form.get("csrf")
    if not isinstance(token, str) or not hmac.compare_digest(token, caller.session.csrf):
        raise Forbidden(
            "the form's CSRF token is missing or does not match this session;"
            " reload the page and send the form again"
        )
    if not caller.can(permission):
        raise Forbidden(f"{caller.name} ({caller.principal.role.lower()}) may not {permission}")
