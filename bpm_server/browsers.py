"""What a web page open in a developer's browser may make the server do: nothing.

Any page can send requests to ``http://127.0.0.1:8080``. Reading the answer is blocked by the
browser, but sending is not: a form posted as ``multipart/form-data`` is a deploy, a JSON body
sent as ``text/plain`` is a start. A page can also reach the server under its own name: its
DNS name is made to resolve to 127.0.0.1 (DNS rebinding), and then the browser sends the
page's name as ``Host`` and lets the page read the answers too. So ``BrowserGuard`` refuses
with 403, before any router runs:

- while the server is open (no credential configured, bound to loopback), a request whose
  ``Host`` is not a loopback name (``localhost``, ``*.localhost``, ``127.0.0.1``, ``[::1]``,
  with any port), or whose ``Origin`` is foreign;
- with credentials configured, a request with a foreign ``Origin`` that carries HTTP Basic
  credentials: a browser sends the ones it stored for the server with a page's form post.
  A bearer token is never sent by the browser on its own, and a page that sets one knows it.

An ``Origin`` is not foreign when it is a loopback origin, the server's own (the same host as
``Host``: a page served by the same proxy), ``file://`` (desktop apps whose pages are files,
such as Camunda Modeler, whose Deploy button sends it; no web site can), or one listed in
``BPM_SERVER_ALLOWED_ORIGINS``. ``null`` is foreign: sandboxed frames and ``data:`` pages send
it. Requests without ``Origin`` (command-line clients, SDKs, workers) are not from pages.

Every answer carries ``X-Content-Type-Options: nosniff``, so a browser never runs an answer as
another type than the one it is served as; deployment files, which are whatever the deployer
uploaded, are served with ``UNTRUSTED_CONTENT`` too.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpm_server.auth import Authenticator
from bpm_server.problems import body
from bpm_server.settings import is_loopback

log = logging.getLogger("bpm.server")

#: Headers of a response whose body the server did not write: a browser shows it as an inert
#: document (no scripts, no forms, no same-origin access), whatever its type.
UNTRUSTED_CONTENT = {"Content-Security-Policy": "sandbox"}
_NOSNIFF = (b"x-content-type-options", b"nosniff")
#: The origin of pages loaded from files by a desktop app (Electron).
FILE_ORIGIN = "file://"


class BrowserGuard:
    """Pure ASGI (no per-request task or body copy): most requests pass after one look at
    their headers; only a suspicious one asks the authenticator whether the server is open."""

    def __init__(self, app: ASGIApp, *, allowed_origins: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.allowed_origins = allowed_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_nosniff(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), _NOSNIFF]
            await send(message)

        refusal = await self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send_nosniff)
            return
        client = scope.get("client")
        log.warning(
            "refused %s %s from %s: %s",
            scope.get("method"),
            scope.get("path"),
            client[0] if client else "?",
            refusal,
            extra={"action": "refused", "status": 403},
        )
        response = JSONResponse(body("AuthorizationException", refusal), 403)
        await response(scope, receive, send_nosniff)

    async def _refusal(self, scope: Scope) -> str | None:
        host, origin, authorization = _headers(scope)
        host_ok = host is None or loopback_host(host)
        origin_ok = origin is None or self.trusted_origin(origin, host)
        if host_ok and origin_ok:
            return None
        if await _is_open(scope):
            if not host_ok:
                return (
                    f"header Host: {host!r} is not a loopback name; with no credential "
                    "configured this server answers only requests addressed to localhost, "
                    "127.0.0.1 or [::1] (add one with `bpm credentials add` to serve others)"
                )
            return (
                f"header Origin: {origin!r} is a foreign web page; with no credential "
                "configured this server answers only pages of loopback origins "
                "(or those in BPM_SERVER_ALLOWED_ORIGINS)"
            )
        if not origin_ok and authorization[:6].lower() == "basic ":
            return (
                f"header Origin: {origin!r} is a foreign web page, and a browser sends the "
                "Basic credentials it stored for this server with any page's request; "
                "list the origin in BPM_SERVER_ALLOWED_ORIGINS to allow it"
            )
        return None

    def trusted_origin(self, origin: str, host: str | None) -> bool:
        origin = origin.strip().lower()
        if origin == FILE_ORIGIN or origin in self.allowed_origins:
            return True
        scheme, sep, authority = origin.partition("://")
        if not sep or scheme not in ("http", "https"):
            return False
        return loopback_host(authority) or (host is not None and authority == host.lower())


def _headers(scope: Scope) -> tuple[str | None, str | None, str]:
    """``Host``, ``Origin`` and ``Authorization`` (the first of each), in one pass over the raw
    headers: most requests need nothing else of them here."""
    host = origin = None
    authorization = ""
    for name, value in scope["headers"]:
        if name == b"host" and host is None:
            host = value.decode("latin-1")
        elif name == b"origin" and origin is None:
            origin = value.decode("latin-1")
        elif name == b"authorization" and not authorization:
            authorization = value.decode("latin-1")
    return host, origin, authorization


@lru_cache(maxsize=256)  # a server sees few names; parsing an address is most of the cost
def loopback_host(host: str) -> bool:
    """Whether a ``Host`` header or an origin's ``host[:port]`` names this machine's loopback.
    ``*.localhost`` is loopback too: browsers resolve it so themselves, never by DNS."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return False
        port = port[1:]
    else:
        name, _, port = host.partition(":")
    if port and not port.isdigit():
        return False
    return name == "localhost" or name.endswith(".localhost") or is_loopback(name)


async def _is_open(scope: Scope) -> bool:
    authenticator: Authenticator | None = getattr(scope["app"].state, "authenticator", None)
    if authenticator is None:  # not started: nothing is served openly
        return False
    known = authenticator.known_open()
    return known if known is not None else await run_in_threadpool(authenticator.is_open)
