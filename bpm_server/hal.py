"""Answers in HAL (``application/hal+json``), for the callers that ask for it: Camunda's
Tasklist and its SDK list tasks that way, with the definitions they belong to embedded.

A list in HAL is ``{"_links", "_embedded": {<kind>: [...], ...}, "count"}``: ``count`` is how
many match the query, not how many this page holds. Each embedded resource is its plain JSON
body plus ``_links`` (paths below the engine's base) and ``_embedded``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

HAL_JSON = "application/hal+json"
PLAIN_JSON = "application/json"


def prefers_hal(request: Request) -> bool:
    """Whether ``Accept`` ranks ``application/hal+json`` above ``application/json`` (a tie
    goes to the one listed first, as Camunda's content negotiation picks it)."""
    ranks: dict[str, tuple[float, int]] = {}
    for position, part in enumerate(request.headers.get("accept", "").split(",")):
        kind, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        ranks.setdefault(kind.lower(), (quality, -position))
    hal = ranks.get(HAL_JSON)
    if hal is None or hal[0] <= 0:
        return False
    plain = ranks.get(PLAIN_JSON) or ranks.get("*/*") or ranks.get("application/*")
    return plain is None or hal > plain


def resource(body: Mapping[str, Any], links: Mapping[str, str]) -> dict[str, Any]:
    """``body`` as a HAL resource whose ``links`` name their targets' paths."""
    return {
        "_links": {rel: {"href": href} for rel, href in links.items()},
        "_embedded": None,
        **body,
    }


def collection(
    path: str, count: int, embedded: Mapping[str, Iterable[Mapping[str, Any]]]
) -> JSONResponse:
    """A HAL list answered as ``application/hal+json``."""
    content = {
        "_links": {"self": {"href": path}},
        "_embedded": {kind: list(items) for kind, items in embedded.items()},
        "count": count,
    }
    return JSONResponse(content, media_type=HAL_JSON)
