"""PostgreSQL cannot store the NUL character in text, so a request carrying one in its path or
query is refused here with a 400 that says so, before any router sees it (bodies are checked
by ``bpm_server.models.Dto``). Without this such a request fails inside the database driver,
as a 500."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bpm_server.problems import body

MESSAGE = "a text may not contain the NUL character (\\u0000): PostgreSQL cannot store it"


class NulGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _has_nul(scope):
            where = "path" if "\x00" in scope.get("path", "") else "query"
            response = JSONResponse(body("InvalidRequestException", f"{where}: {MESSAGE}"), 400)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _has_nul(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope.get("path", "") or b"%00" in query or b"\x00" in query
