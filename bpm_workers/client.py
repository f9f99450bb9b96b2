"""What a process that only sends jobs needs (the ``bpm`` CLI in distributed mode).

A producer-only Celery app with the same routes as the workers, and the engine's dispatcher on
top of it. ``bpm`` loads this module by name, so the engine library never imports Celery.
"""

from __future__ import annotations

from celery import Celery

from bpm.engine.jobs.table import RECOVERY_SCANS
from bpm_workers.config import celery_config, settings_from_env
from bpm_workers.dispatcher import CeleryDispatcher


def dispatcher_from_env() -> CeleryDispatcher:
    settings = settings_from_env()
    app = Celery("bpm-client", set_as_current=False)
    app.conf.update(celery_config(settings))
    return CeleryDispatcher(app, settings)


def send_scans() -> list[str]:
    """Ask the workers to run every scan once (what a starting worker does)."""
    dispatcher = dispatcher_from_env()
    names = [str(name) for name in RECOVERY_SCANS]
    for name in names:
        dispatcher.app.send_task(name, queue=dispatcher.settings.route(name))
    return names
