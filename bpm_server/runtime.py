"""The engine a server process calls, and what runs the steps a report makes due.

With ``BPM_BROKER_URL`` those steps go to the Celery workers, as from any other process.
Without it the server runs them itself, in the request that caused them, one request at a
time (the in-process queue is not shared between threads); that is for trying bpm out, a
production server has a broker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar
from uuid import UUID

from starlette.requests import Request

from bpm.api import (
    ConfigError,
    Database,
    EmbeddedRuntime,
    Engine,
    broker_dispatcher,
    broker_mode,
    import_handlers,
    require_current,
)
from bpm_metrics.observer import process_observer

T = TypeVar("T")


class ServerRuntime:
    """``engine`` for reads; ``run`` for a call that may make steps due."""

    def __init__(self, url: str, *, demo: bool = False) -> None:
        """``demo``: a SQLite file is served too (``bpm demo --serve``, one process)."""
        import_handlers()
        self._embedded: EmbeddedRuntime | None = None
        self._lock = threading.Lock()
        if broker_mode():
            self.db = Database(url)
            require_current(self.db)
            self.engine = Engine(
                self.db, broker_dispatcher(), worker_id="bpm-server", observer=process_observer()
            )
        else:
            self._embedded = EmbeddedRuntime(url, migrate=False, observer=process_observer())
            self.db, self.engine = self._embedded.db, self._embedded.engine
        if not self.db.is_postgres and not demo:
            self.close()
            raise ConfigError(
                "bpm serve needs PostgreSQL (BPM_DATABASE_URL=postgresql+psycopg://...)"
            )

    def missing(self, def_id: UUID) -> list[str]:
        """What a process calls that this server, which runs the steps itself (no broker),
        cannot: handlers, beans and delegates no module of ``BPM_IMPORTS`` registered. With a
        broker the workers run them, so nothing is checked here."""
        if self._embedded is None:
            return []
        return self.engine.unregistered(def_id)

    def run(self, call: Callable[[], T]) -> T:
        if self._embedded is None:
            return call()
        with self._lock:
            try:
                return call()
            finally:
                self._embedded.run_until_idle(timeout=0)

    def close(self) -> None:
        if self._embedded is not None:
            self._embedded.close()
        else:
            self.db.dispose()


def runtime_of(request: Request) -> ServerRuntime:
    """The runtime of the app serving ``request``."""
    runtime: ServerRuntime = request.app.state.runtime
    return runtime


def base_of(request: Request) -> str:
    """The REST base (``http://host:port/engine-rest``) for the links in answers."""
    return str(request.base_url).rstrip("/") + "/engine-rest"
