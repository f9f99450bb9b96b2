"""The cockpit's session: a signed cookie naming the credential that logged in and the
session's CSRF token.

The cookie holds no secret of the credential: only its name, the token and when it was
issued, signed with the server's session secret (``BPM_SESSION_SECRET``; without it a random
secret made when the process starts, so sessions end with the process and a server run with
several worker processes needs the variable). A cookie past ``MAX_AGE`` or with a wrong
signature is no session at all. The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Lax``
(another site's form post does not carry it) and ``Secure`` when the request came over https.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from functools import lru_cache

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

COOKIE = "bpm_cockpit"
#: Seconds a login lasts.
MAX_AGE = 8 * 3600
SECRET_VARIABLE = "BPM_SESSION_SECRET"


@dataclass(frozen=True)
class Session:
    """``user``: the credential's name, None before a login (or when none is needed)."""

    user: str | None
    csrf: str

    @classmethod
    def fresh(cls, user: str | None = None) -> Session:
        return cls(user, secrets.token_urlsafe(24))


@lru_cache(maxsize=1)
def _serializer() -> URLSafeTimedSerializer:
    secret = os.environ.get(SECRET_VARIABLE) or secrets.token_urlsafe(48)
    return URLSafeTimedSerializer(secret, salt="bpm-cockpit-session")


def read(request: Request) -> Session | None:
    """The request's session, or None (no cookie, a forged one, or one too old)."""
    raw = request.cookies.get(COOKIE)
    if not raw:
        return None
    try:
        data = _serializer().loads(raw, max_age=MAX_AGE)
    except BadSignature:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("c"), str):
        return None
    user = data.get("u")
    return Session(user if isinstance(user, str) else None, data["c"])


def write(response: Response, request: Request, session: Session) -> None:
    response.set_cookie(
        COOKIE,
        _serializer().dumps({"u": session.user, "c": session.csrf}),
        max_age=MAX_AGE,
        path="/cockpit",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def clear(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/cockpit")
