"""``GET /metrics``: Prometheus's text format, for a caller that may read (as every read of
the API). It shows the engine's families this server process counted (its own steps, the
instances its calls cancelled), the API's requests by route template and status, and the
families read from the database (``bpm_metrics.snapshot``), read at most once per
``BPM_METRICS_CACHE_SECONDS`` (default 5) however many scrapers ask.

A server run with several worker processes (``bpm serve --workers N``) adds up its
processes' counters when ``PROMETHEUS_MULTIPROC_DIR`` names an empty directory they share.
"""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpm.api import ConfigError, Engine
from bpm_metrics import families
from bpm_metrics.exposition import render, scrape_registry
from bpm_metrics.observer import HANDLER_BUCKETS, counter, histogram
from bpm_metrics.snapshot import SnapshotCollector
from bpm_server.routing import Reader

CACHE_ENV = "BPM_METRICS_CACHE_SECONDS"
DEFAULT_CACHE_SECONDS = 5.0
#: Methods counted by name; any other is counted as "other" (a label must stay bounded).
METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"})
#: The route label of a request no route matched (a 404 names no template).
UNMATCHED = "unmatched"

router = APIRouter()


def cache_seconds() -> float:
    raw = os.environ.get(CACHE_ENV, "").strip()
    try:
        seconds = float(raw) if raw else DEFAULT_CACHE_SECONDS
    except ValueError:
        raise ConfigError(f"{CACHE_ENV}={raw[:20]!r} is not a number of seconds") from None
    if not 0 <= seconds <= 300:
        raise ConfigError(f"{CACHE_ENV} must be between 0 and 300 seconds")
    return seconds


def scrape_registry_for(engine: Engine) -> CollectorRegistry:
    """What ``/metrics`` renders for a server whose engine is ``engine``."""
    return scrape_registry(SnapshotCollector(engine.metrics_snapshot, cache_seconds()))


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, caller: Reader) -> Response:
    registry: CollectorRegistry = request.app.state.metrics
    return Response(render(registry), media_type=CONTENT_TYPE_LATEST)


@cache
def _api_families() -> tuple[Any, Any]:
    return (
        counter(families.API_REQUESTS, REGISTRY),
        histogram(families.API_LATENCY, REGISTRY, HANDLER_BUCKETS),
    )


class RequestMetrics:
    """Counts every HTTP request by method, route template (``/engine-rest/task/{id}``, never
    the path with its ids) and status, and times it. A plain ASGI middleware, innermost, so
    the router has put the matched route in the scope when the answer comes back."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests, self.latency = _api_families()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            method = scope.get("method", "")
            method = method if method in METHODS else "other"
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            self.requests.labels(method, route, str(status[0])).inc()
            self.latency.labels(method, route).observe(time.perf_counter() - started)
