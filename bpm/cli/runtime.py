"""Opening the engine for one command: configuration, handler imports, the runtime.

Without ``BPM_BROKER_URL`` (embedded mode) the jobs an action causes run inside the ``bpm``
process. With it (distributed mode) they are sent to the Celery workers, and ``bpm`` only
reads and writes the database.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from bpm.dispatch import broker_dispatcher
from bpm.embedded import EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.errors import ConfigError
from bpm.store.db import Database, database_url
from bpm.store.migrate import require_current

IMPORTS_ENV = "BPM_IMPORTS"
BROKER_ENV = "BPM_BROKER_URL"


def quiet_logging() -> None:
    """Warnings and errors only: Alembic's INFO lines are noise on every command."""
    logging.basicConfig(level=logging.WARNING, format="bpm: %(levelname)s %(name)s: %(message)s")
    for name in ("alembic", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.WARNING)


def handler_modules(extra: Sequence[str] = ()) -> list[str]:
    """Modules named by ``BPM_IMPORTS`` (comma-separated) and then by ``--import``."""
    names = [n.strip() for n in os.environ.get(IMPORTS_ENV, "").split(",")]
    names += [n.strip() for n in extra]
    return list(dict.fromkeys(n for n in names if n))


def import_handlers(extra: Sequence[str] = ()) -> list[str]:
    """Import the handler modules; the working directory is importable, as with ``celery -A``."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    names = handler_modules(extra)
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise ConfigError(
                f"cannot import handler module {name!r} (from {IMPORTS_ENV} or "
                f"--import): {type(exc).__name__}: {exc}"
            ) from exc
    return names


def broker_mode() -> bool:
    return bool(os.environ.get(BROKER_ENV, "").strip())


@contextmanager
def distributed(url: str | None = None) -> Iterator[Engine]:
    """An engine whose jobs go to the Celery workers (the database must be migrated)."""
    try:
        db = Database(url)
        require_current(db)
    except OperationalError as exc:
        raise ConfigError(
            f"cannot use the database {safe_url(url)}: {_first_line(exc.orig or exc)}"
        ) from exc
    try:
        yield Engine(db, broker_dispatcher(), worker_id="bpm-cli")
    finally:
        db.dispose()


def safe_url(url: str | None = None) -> str:
    raw = database_url(url)
    try:
        return make_url(raw).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable database URL>"


def open_runtime(url: str | None = None) -> EmbeddedRuntime:
    """An embedded runtime on ``url`` (default: ``BPM_DATABASE_URL``, else ``./bpm.db``)."""
    try:
        return EmbeddedRuntime(url)
    except OperationalError as exc:
        raise ConfigError(
            f"cannot use the database {safe_url(url)}: {_first_line(exc.orig or exc)}"
        ) from exc


@contextmanager
def embedded(url: str | None = None) -> Iterator[EmbeddedRuntime]:
    rt = open_runtime(url)
    try:
        yield rt
    finally:
        rt.close()


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
