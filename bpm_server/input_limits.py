"""The size of a request, checked before any of it is read and before authentication.

A body is refused by its ``Content-Length`` before a byte of it is read (413), and a body
without one (chunked) is counted as it streams in and refused as soon as it passes the
limit, so an unauthenticated caller cannot make the server hold a large body in memory. The
headers together, and the path with its query, have a limit of their own (431, 414). The
refusals close the connection: the rest of a refused body is not worth reading.

A pure ASGI middleware: Starlette's ``BaseHTTPMiddleware`` would cost every request a task
and a stream.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpm_server.problems import body
from bpm_server.settings import InputLimits

#: The one endpoint whose body holds files, and so has the larger limit.
DEPLOYMENT_PATH = "/deployment/create"


class InputLimitGuard:
    def __init__(self, app: ASGIApp, limits: InputLimits) -> None:
        self.app, self.limits = app, limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _answer(send, scope, *refusal)
            return
        limit = self._body_limit(scope)
        state = _Body()

        async def counted_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                state.read += len(message.get("body", b""))
                if state.read > limit:
                    state.too_large = True
                    # Whatever the app makes of a body it cannot finish reading, it is
                    # answered with the 413 below.
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if state.too_large:
                return  # the app's answer to a body cut short: the 413 replaces it
            state.started |= message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not state.too_large:
                raise
        if state.too_large and not state.started:
            message = f"the body exceeds the limit of {limit} bytes"
            await _answer(send, scope, 413, message)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        """What answers the request before its body is read, if anything does."""
        cap = self.limits.header_bytes
        target = len(scope.get("raw_path") or scope["path"].encode()) + len(
            scope.get("query_string", b"")
        )
        if target > cap:
            return 414, f"the path and query ({target} bytes) exceed the limit of {cap} bytes"
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        size = sum(len(name) + len(value) + 4 for name, value in headers)
        if size > cap:
            return 431, f"the request headers ({size} bytes) exceed the limit of {cap} bytes"
        for name, value in headers:
            if name == b"content-length":
                limit = self._body_limit(scope)
                text = value.decode("latin-1").strip()
                if not text.isascii() or not text.isdigit():
                    return 400, f"Content-Length {text[:40]!r} is not a number of bytes"
                if int(text) > limit:
                    return 413, f"the body ({text} bytes) exceeds the limit of {limit} bytes"
        return None

    def _body_limit(self, scope: Scope) -> int:
        if scope["method"] == "POST" and scope["path"].endswith(DEPLOYMENT_PATH):
            return self.limits.deployment_bytes
        return self.limits.body_bytes


class _Body:
    """How much of the body the app has read, and whether it went past the limit."""

    def __init__(self) -> None:
        self.read = 0
        self.too_large = self.started = False


async def _answer(send: Send, scope: Scope, status: int, message: str) -> None:
    kind = "InvalidRequestException" if status == 400 else "RestException"
    response = JSONResponse(body(kind, message), status, headers={"Connection": "close"})

    async def nothing() -> Message:
        return {"type": "http.disconnect"}

    await response(scope, nothing, send)
