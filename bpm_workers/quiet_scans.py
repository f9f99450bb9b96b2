"""Beat's scans stay out of the way unless they find work.

Beat sends a timer scan every second and the other scans every few seconds; almost every run
finds nothing. Left to Celery, each run is a task in Flower's list (a sent, a received and a
succeeded event) and two lines in the worker's log, so the jobs that did something drown in
them. Here:

- a scan task sends no task events of its own (``send_events=False``); one that found work
  reports itself afterwards (``report_found_work``) with a received and a succeeded event, so
  Flower lists exactly the scans that did something;
- beat, and a worker asking for its recovery scans, send them without a sent event;
- Celery's "received" and "succeeded" lines for a scan (and beat's "sending due task") are
  dropped from the logs: the scan's own ``bpm.jobs`` line says what it found, at INFO when it
  found work and at DEBUG when not. With ``BPM_JOB_LOG_LEVEL=DEBUG`` every line is kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from celery import Celery

from bpm_workers.config import SCAN_JOBS

#: The loggers of Celery's per-task lines: a worker's "received", its "succeeded", beat's
#: "sending due task".
CELERY_TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace", "celery.beat")


class ScanLines(logging.Filter):
    """Drops Celery's own lines about a scan task unless ``bpm.jobs`` shows DEBUG lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _names_a_scan(record.args):
            return True
        return logging.getLogger("bpm.jobs").isEnabledFor(logging.DEBUG)


def _names_a_scan(args: Any) -> bool:
    """The worker's lines carry the task in a mapping (``{"name": ...}``); beat's "sending due
    task %s (%s)" carries the entry's name and then the task's."""
    if isinstance(args, Mapping):
        return args.get("name") in SCAN_JOBS
    if isinstance(args, tuple):
        return any(isinstance(arg, str) and arg in SCAN_JOBS for arg in args)
    return False


_FILTER = ScanLines()


def quiet_celery_lines() -> None:
    """Install the filter on Celery's per-task loggers (idempotent)."""
    for name in CELERY_TASK_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


@contextmanager
def without_sent_events(app: Celery) -> Iterator[None]:
    """Sends made inside publish no "task-sent" event. Celery takes that choice from the
    app's configuration on every send, with no per-send option, so it is switched off for
    the block (a monitor only misses the sent event of a job sent meanwhile; the worker's
    events still show it)."""
    before = app.conf.task_send_sent_event
    app.conf.task_send_sent_event = False
    try:
        yield
    finally:
        app.conf.task_send_sent_event = before


def stop_sent_events(app: Celery) -> None:
    """For beat: everything it sends is a scan, so it sends no "task-sent" events at all."""
    app.conf.task_send_sent_event = False


def report_found_work(
    app: Celery,
    name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    outcome: str,
    seconds: float,
) -> None:
    """The events Celery would have sent for a scan that found work, after the fact; for
    monitors only, so a broker that refuses them changes nothing."""
    request = app.current_task.request if app.current_task is not None else None
    if request is None or request.id is None:
        return
    log = logging.getLogger("bpm.jobs")
    try:
        with app.events.default_dispatcher(hostname=request.hostname) as events:
            now = time.time()
            events.send(
                "task-received",
                uuid=request.id,
                name=name,
                args=repr(tuple(args)),
                kwargs=repr(dict(kwargs)),
                retries=request.retries or 0,
                timestamp=now - seconds,
            )
            events.send("task-succeeded", uuid=request.id, result=repr(outcome), runtime=seconds)
    except Exception as exc:  # a monitoring event is never worth failing a job over
        log.debug("job=%s could not send its monitoring events: %s", name, exc)
