"""The engine's dispatcher, implemented with Celery: jobs become messages sent by task name."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from celery import Celery

from bpm.dispatch import Job
from bpm_workers.config import Settings

log = logging.getLogger("bpm.dispatch")


class CeleryDispatcher:
    """Sends each job to its queue. Called after commit; a send that fails is only logged.

    A job with ``not_before`` goes out with an ETA as a fast path only: if the message is
    lost or late, the scans find the due row anyway (no ETA is needed for correctness). One
    due later than half the visibility timeout is not sent at all: a worker holds an ETA
    message unacknowledged until it is due, and Redis would hand it out again every
    visibility timeout meanwhile, one more copy each time.
    """

    def __init__(self, app: Celery, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    def dispatch(self, jobs: Sequence[Job]) -> None:
        horizon = timedelta(seconds=self.settings.visibility_timeout / 2)
        for job in jobs:
            eta = _eta(job)
            if eta is not None and eta - datetime.now(UTC) > horizon:
                continue  # the scans send it when it is due
            try:
                name = str(job.name)  # a plain string on the wire, whatever type names it
                self.app.send_task(name, kwargs=job.args, queue=self.settings.route(name), eta=eta)
            except Exception:  # the row is committed; a scan re-sends what was lost
                log.exception("could not send %s %s; the scans will recover it", job.name, job.args)


def _eta(job: Job) -> datetime | None:
    if job.not_before is None or job.not_before <= datetime.now(UTC):
        return None
    return job.not_before
