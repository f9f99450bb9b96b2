"""The app factory: the engine, the authenticator and the long-poll signals of one server
process, and the routers, all under ``/engine-rest``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

import bpm_cockpit
from bpm.api import __version__, credentials
from bpm_server import metrics, problems
from bpm_server.auth import Authenticator
from bpm_server.browsers import BrowserGuard
from bpm_server.input_limits import InputLimitGuard
from bpm_server.paths import CamundaPaths
from bpm_server.routers import (
    conditions,
    deployments,
    engine_info,
    event_subscriptions,
    external_task_queries,
    external_tasks,
    filters,
    forms,
    history,
    history_details,
    identity,
    incidents,
    jobs,
    messages,
    process_definitions,
    process_instances,
    statistics,
    task_people,
    tasks,
    variable_instances,
)
from bpm_server.runtime import ServerRuntime
from bpm_server.settings import ServerSettings
from bpm_server.signals import TaskSignals
from bpm_server.text_guard import NulGuard

BASE = "/engine-rest"
log = logging.getLogger("bpm.server")


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """A new app; ``settings`` default to the environment (``ServerSettings.from_env``)."""
    cfg = settings or ServerSettings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = ServerRuntime(cfg.database_url, demo=cfg.demo)
        signals = TaskSignals(cfg.database_url)
        authenticator = Authenticator(
            runtime.db, open_on_loopback=cfg.loopback, ttl=cfg.credential_ttl
        )
        try:
            app.state.runtime = runtime
            app.state.authenticator = authenticator
            app.state.metrics = metrics.scrape_registry_for(runtime.engine)
            if credentials.configured(runtime.db) == 0:
                log.warning(
                    "no API credential is configured: %s",
                    "serving loopback without authentication"
                    if cfg.loopback
                    else "every call is refused (bpm credentials add NAME --role ROLE)",
                )
            await signals.start()
            app.state.signals = signals
            yield
        finally:
            await signals.stop()
            authenticator.close()
            runtime.close()

    app = FastAPI(
        title="bpm REST API",
        version=__version__,
        description="Camunda 7's REST API, as far as bpm serves it (docs/http-api.md).",
        openapi_url=f"{BASE}/openapi.json" if cfg.openapi else None,
        docs_url=f"{BASE}/docs" if cfg.openapi else None,
        redoc_url=None,
        lifespan=lifespan,
    )
    problems.install(app)
    app.add_middleware(metrics.RequestMetrics)  # innermost: it reads the matched route
    app.add_middleware(NulGuard)
    app.add_middleware(CamundaPaths)
    app.add_middleware(BrowserGuard, allowed_origins=cfg.allowed_origins)
    app.add_middleware(InputLimitGuard, limits=cfg.limits)  # outermost: before anything is read
    app.include_router(external_tasks.router, prefix=BASE)
    app.include_router(external_task_queries.router, prefix=BASE)
    for router in (
        tasks.router,
        task_people.router,
        incidents.router,
        jobs.router,
        history.router,
        history_details.router,
        deployments.router,
        statistics.router,  # before /process-definition/{id} takes /statistics as an id
        process_definitions.router,
        process_instances.router,
        messages.router,
        conditions.router,
        event_subscriptions.router,
        variable_instances.router,
        filters.router,
        identity.router,
        forms.router,
    ):
        app.include_router(router, prefix=BASE)
    app.include_router(engine_info.router, prefix=BASE)
    app.include_router(bpm_cockpit.router, prefix="/cockpit")  # docs/cockpit.md
    app.include_router(metrics.router)  # /metrics, where Prometheus looks
    return app
