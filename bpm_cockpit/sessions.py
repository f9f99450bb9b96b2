"""The cockpit's session: a signed cookie naming the credential that logged in and the
session's CSRF token.

The cookie holds no secret of the credential: only its name, a digest of its secret's hash
(a credential made again with a new secret ends the old sessions), the token and when it was
issued, signed with the server's session secret (``BPM_SESSION_SECRET``; without it a random
secret made when the process starts, so sessions end with the process and a server run with
several worker processes needs the variable). A cookie past ``MAX_AGE`` or with a wrong
signature is no session at all. The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Lax``
(another site's form post does not carry it) and ``Secure`` when the request came over https.
"""

from __future__ import annotations

import hashlib
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
    """``user``: the credential's name, None before a login (or when none is needed);
    ``stamp``: a digest of the credential's secret hash when it logged in, so a credential
    made again under the same name (a new secret) does not inherit the old sessions."""

    user: str | None
    csrf: str
    stamp: str = ""

    @classmethod
    def fresh(cls, user: str | None = None, secret_hash: str = "") -> Session:
        return cls(user, secrets.token_urlsafe(24), stamp_of(secret_hash) if user else "")


def stamp_of(secret_hash: str) -> str:
    """A short digest of a stored secret hash (the hash itself never leaves the server)."""
    return hashlib.sha256(secret_hash.encode()).hexdigest()[:16]


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
    user, stamp = data.get("u"), data.get("s")
    return Session(
        user if isinstance(user, str) else None,
        data["c"],
        stamp if isinstance(stamp, str) else "",
    )


def write(response: Response, request: Request, session: Session) -> None:
    response.set_cookie(
        COOKIE,
        _serializer().dumps({"u": session.user, "c": session.csrf, "s": session.stamp}),
        max_age=MAX_AGE,
        path="/cockpit",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def clear(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/cockpit")
