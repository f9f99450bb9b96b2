"""Request paths as Camunda's clients write them, made into the one form the routers serve.

- ``/engine-rest/engine/default/...`` is ``/engine-rest/...``: the server has one engine,
  named ``default``, and Camunda's webapps and their SDK address it by name. Another engine
  name is a 404 that says which one exists.
- One trailing slash is dropped (``/engine-rest/task/``): a redirect would turn a POST into a
  second request that some clients send as a GET, or not at all.
- A ``.../count`` path ignores ``sortBy``, ``sortOrder``, ``firstResult`` and ``maxResults``:
  a count has no order and no page, and clients send the list's parameters with it.

It is a plain ASGI middleware (no ``BaseHTTPMiddleware``), so a long poll's request is passed
on untouched and costs no extra task.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bpm_server.problems import body

BASE = "/engine-rest"
ENGINE = "default"
_NAMED = f"{BASE}/engine/"
#: What a count ignores: they order and page a list, and a count is neither.
COUNT_IGNORES = frozenset({"sortBy", "sortOrder", "firstResult", "maxResults"})


class CamundaPaths:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        if path.startswith(_NAMED):
            name = path[len(_NAMED) :].partition("/")[0]
            if name != ENGINE:
                message = (
                    f"path: no process engine is named {name!r}; this server has one engine,"
                    f" {ENGINE!r} ({BASE}/engine/{ENGINE}/... or {BASE}/...)"
                )
                await JSONResponse(body("RestException", message), 404)(scope, receive, send)
                return
        plain = _plain(path)
        query: bytes = scope.get("query_string", b"")
        if plain.endswith("/count") and query:
            query = _without(query, COUNT_IGNORES)
        if plain != path or query != scope.get("query_string", b""):
            scope = {**scope, "path": plain, "query_string": query}
            raw = scope.get("raw_path")
            if isinstance(raw, bytes):
                scope["raw_path"] = _plain(raw.decode("latin-1")).encode("latin-1")
        await self.app(scope, receive, send)


def _plain(path: str) -> str:
    """``path`` without the default engine's name and without one trailing slash."""
    if path.startswith(f"{_NAMED}{ENGINE}/") or path == f"{_NAMED}{ENGINE}":
        path = BASE + path[len(_NAMED) + len(ENGINE) :]
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def _without(query: bytes, names: frozenset[str]) -> bytes:
    """``query`` without the parameters ``names``; unchanged when it has none of them."""
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k not in names]
    if len(kept) == len(pairs):
        return query
    return urlencode(kept).encode("latin-1")
