"""The Celery app: ``celery -A bpm_workers worker`` / ``beat`` / ``flower``."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import (
    after_setup_logger,
    beat_init,
    worker_init,
    worker_process_shutdown,
    worker_ready,
)

from bpm.engine.jobs.table import RECOVERY_SCANS
from bpm.handlers import registry as handlers
from bpm_beat.schedule import beat_schedule
from bpm_workers.config import celery_config, queue_problem, settings_from_env
from bpm_workers.metrics import start_exporter, worker_gone
from bpm_workers.quiet_scans import quiet_celery_lines, stop_sent_events, without_sent_events
from bpm_workers.runtime import import_handler_modules
from bpm_workers.tasks import register

log = logging.getLogger("bpm.worker")

settings = settings_from_env()
app = Celery("bpm")
app.conf.update(celery_config(settings))
app.conf.beat_schedule = beat_schedule(settings)
register(app, settings)
import_handler_modules()


@after_setup_logger.connect
def _job_lines(**_: Any) -> None:
    """One line per job is the worker's record of what it did: shown at Celery's default
    level (WARNING) too, unless ``BPM_JOB_LOG_LEVEL`` says otherwise. So is the line saying
    the worker is ready, which the docs tell a newcomer to wait for."""
    logging.getLogger("bpm.jobs").setLevel(settings.job_log_level)
    worker_log = logging.getLogger("bpm.worker")
    if not worker_log.isEnabledFor(logging.INFO):
        worker_log.setLevel(logging.INFO)
    quiet_celery_lines()


@beat_init.connect
def _beat_sends_quietly(**_: Any) -> None:
    """Beat sends nothing but scans: no "task-sent" event for any (see quiet_scans)."""
    stop_sent_events(app)
    quiet_celery_lines()


@worker_init.connect
def _metrics_port(**_: Any) -> None:
    """The metrics port, in the main process before its pool forks (``bpm_workers.metrics``)."""
    start_exporter()


@worker_process_shutdown.connect
def _metrics_child_gone(pid: int | None = None, **_: Any) -> None:
    worker_gone(pid or os.getpid())


@worker_ready.connect
def _recover_on_start(sender: Any = None, **_: Any) -> None:
    """Recovery is not special code: a starting worker just asks for every scan once."""
    _check_queues(sender)
    if not handlers.names():
        log.warning(
            "no handlers are registered in this worker (BPM_IMPORTS=%r): every "
            "handler task it runs will fail; set BPM_IMPORTS to the modules that "
            "register them",
            os.environ.get("BPM_IMPORTS", ""),
        )
    with without_sent_events(app):
        for name in RECOVERY_SCANS:
            app.send_task(name, queue=settings.route(name))
    log.info("worker ready: recovery scans requested")


def _check_queues(consumer: Any) -> None:
    """A worker started with ``-Q`` names that miss the configured prefix listens where
    nobody sends, and nothing else would ever say so."""
    try:
        consumed = {q.name for q in consumer.task_consumer.queues}
    except AttributeError:  # not a consuming worker
        return
    problem = queue_problem(consumed, settings)
    if problem is not None:
        log.error(problem)
