"""One engine per worker process, created lazily in the process that uses it.

Prefork children must not share the parent's database connections, so the engine is built on
first use in each process (keyed by pid).
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import sys
import threading
from datetime import timedelta

from celery import Celery

from bpm.engine.engine import Engine
from bpm.engine.jobs.spec import JobSettings
from bpm.engine.operations.scans import ScanConfig
from bpm.errors import ConfigError
from bpm.store import Database
from bpm_workers.config import Settings
from bpm_workers.dispatcher import CeleryDispatcher
from bpm_workers.metrics import engine_observer

log = logging.getLogger("bpm.worker")
_lock = threading.Lock()
_engines: dict[int, Engine] = {}


def import_handler_modules(spec: str | None = None) -> list[str]:
    """Import the modules named in ``BPM_IMPORTS`` (they register handlers).

    The working directory is importable, as it is for ``celery -A`` and the ``bpm`` CLI, so
    a module next to the process definitions is found whichever process loads it first.
    """
    names = [m.strip() for m in (spec or os.environ.get("BPM_IMPORTS", "")).split(",") if m.strip()]
    if names and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(
                f"BPM_IMPORTS names {name!r}, which cannot be imported: {exc}"
            ) from exc
    return names


def engine_for(app: Celery, settings: Settings) -> Engine:
    pid = os.getpid()
    engine = _engines.get(pid)
    if engine is None:
        with _lock:
            engine = _engines.get(pid)
            if engine is None:
                engine = Engine(
                    Database(pool_size=2),
                    CeleryDispatcher(app, settings),
                    chain_limit=settings.chain_steps,
                    chain_seconds=settings.chain_seconds,
                    worker_id=f"{socket.gethostname()}:{pid}",
                    observer=engine_observer(),
                )
                _engines[pid] = engine
    return engine


def scan_config(settings: Settings) -> ScanConfig:
    return ScanConfig(grace=timedelta(seconds=settings.stall_grace))


def job_settings(settings: Settings) -> JobSettings:
    """What the jobs read from the worker's configuration: the scans' grace period, and the
    TTL retention applies to definitions without one."""
    return JobSettings(
        scan=scan_config(settings),
        history_ttl=settings.history_ttl,
        signal_batch=settings.signal_batch,
    )
