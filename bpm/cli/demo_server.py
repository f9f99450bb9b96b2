"""``bpm demo --serve``: the demo's database left on a running server, so a newcomer opens the
cockpit on what the demo did (a failed order, a compensated saga) and one order waiting for
a clerk, with Python alone: the server runs in this process on the demo's SQLite file, and
the steps a request makes run in that request (no broker, no worker)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bpm import credentials
from bpm.demo import ORDER_REVIEW_BPMN
from bpm.embedded import EmbeddedRuntime
from bpm.errors import ConfigError
from bpm.states import Role

#: The credential the demo prints; its user reviews orders (the ``clerks`` group).
LOGIN, USER, GROUP = "demo", "demo", "clerks"
#: The handler modules the server imports, so an operator's retry runs the demo's handlers.
HANDLERS = "bpm.demo.order_handlers,bpm.demo.saga_handlers"


@dataclass(frozen=True)
class DemoLogin:
    name: str
    secret: str
    waiting: str


def leave_for_the_cockpit(database: Path) -> DemoLogin:
    """Deploy the order review and start one that waits for a clerk; make the login."""
    rt = EmbeddedRuntime(f"sqlite:///{database}")
    try:
        (deployed,) = rt.engine.deploy_bpmn(ORDER_REVIEW_BPMN.read_text(encoding="utf-8"))
        started = rt.engine.start(
            deployed.key, {"customer": "Ada", "total": 1250}, business_key="ORDER-3001"
        )
        rt.run_until_idle(timeout=10)
        secret = credentials.add(
            rt.db, LOGIN, Role.OPERATOR, datetime.now(UTC), user=USER, groups=(GROUP,)
        )
    finally:
        rt.close()
    return DemoLogin(LOGIN, secret, str(started.id))


def serve(database: Path, host: str, port: int) -> None:
    """Serve the API and the cockpit on the demo's database until Ctrl-C."""
    try:
        import uvicorn

        from bpm_server.app import create_app
        from bpm_server.log_config import FORMAT, log_config
        from bpm_server.settings import ServerSettings
    except ImportError as exc:
        raise ConfigError(
            f"bpm demo --serve needs the 'server' extra: pip install 'bpm[server]' ({exc})"
        ) from exc
    os.environ.setdefault("BPM_IMPORTS", HANDLERS)
    logging.basicConfig(level=logging.INFO, force=True, format=FORMAT)
    settings = ServerSettings(f"sqlite:///{database}", bind_host=host, demo=True)
    uvicorn.run(create_app(settings), host=host, port=port, log_config=log_config())
