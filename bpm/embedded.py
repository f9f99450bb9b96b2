"""Embedded mode: the same engine, with jobs run in this process instead of by Celery.

For trying bpm, for the demo, and for unit tests of a user's own processes. SQLite by default,
PostgreSQL when ``BPM_DATABASE_URL`` names it. It is not a second implementation: every job goes
through ``Engine.run_job``, which decodes and runs it from the same entry of the job table
(``bpm.engine.jobs.table``) that its Celery task is made from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from bpm.beans import BeanRegistry
from bpm.clock import SYSTEM_CLOCK, Clock
from bpm.dispatch import InProcessDispatcher, Job
from bpm.engine.engine import Engine
from bpm.engine.operations.scans import ScanConfig
from bpm.handlers import HandlerRegistry
from bpm.observe import NO_OBSERVER, Observer
from bpm.store import Database, instances
from bpm.store.migrate import require_current, upgrade

log = logging.getLogger("bpm.embedded")
END_STATES = frozenset({"COMPLETED", "FAILED", "TERMINATED", "CANCELLED"})


class EmbeddedRuntime:
    """An engine with an in-process dispatcher and a loop that drains it."""

    def __init__(
        self,
        url: str | None = None,
        *,
        handlers: HandlerRegistry | None = None,
        clock: Clock = SYSTEM_CLOCK,
        migrate: bool | None = None,
        db: Database | None = None,
        beans: BeanRegistry | None = None,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        self.db = db or Database(url)
        if migrate if migrate is not None else not self.db.is_postgres:
            upgrade(self.db)  # SQLite sets itself up; PostgreSQL is migrated on purpose
        else:
            require_current(self.db)
        self.dispatcher = InProcessDispatcher()
        self.engine = Engine(
            self.db, self.dispatcher, handlers=handlers, clock=clock, beans=beans, observer=observer
        )

    def run_until_idle(
        self, *, timeout: float = 60.0, until: Callable[[], bool] | None = None, wait: bool = True
    ) -> bool:
        """Run queued jobs and fire due timers, waiting for delayed retries and timers that come
        due before the deadline, until no work is left or ``until()`` holds.

        Returns True when it stopped because the work ran out or ``until`` held, False on timeout.
        Timers due after the deadline stay scheduled (in the database) for a later call.
        ``wait=False`` never sleeps: work the clock says is not due yet is left for a later call,
        for a test whose fake clock only moves when the test moves it (``bpm.testing``).
        """
        deadline = time.monotonic() + timeout
        while True:
            now = self.engine.clock.now()
            job = self.dispatcher.pop(now)
            if job is not None:
                self._run(job)
                continue
            if self.engine.fire_due_timers(now):
                continue
            if until is not None and until():
                return True
            if not wait:
                return until is None
            due = _earliest(self.dispatcher.next_due(), self.engine.next_timer_due())
            remaining = deadline - time.monotonic()
            if due is None or (due - self.engine.clock.now()).total_seconds() > remaining:
                return until is None or until()  # idle: what is left waits in the database
            if time.monotonic() >= deadline:
                return False
            time.sleep(_seconds_until(due, self.engine.clock.now(), deadline))

    def _run(self, job: Job) -> None:
        try:
            self.engine.run_job(job)
        except Exception:  # a job must never stop the loop: it is logged, the scans recover
            log.exception("job %s %s failed", job.name, job.args)

    def wait_for(self, instance_id: UUID, timeout: float = 60.0) -> str:
        """Run jobs until the instance reaches an end state (or FAILED), return its state."""

        def ended() -> bool:
            return self.state(instance_id) in END_STATES

        self.run_until_idle(timeout=timeout, until=ended)
        return self.state(instance_id)

    def state(self, instance_id: UUID) -> str:
        with self.db.transaction() as conn:
            row = instances.get(conn, instance_id)
        return row.state if row else "UNKNOWN"

    def recover(self, now: datetime | None = None, cfg: ScanConfig | None = None) -> dict[str, int]:
        """Run every scan once, as a starting worker does."""
        return self.engine.run_scans(now, cfg)

    def close(self) -> None:
        self.db.dispose()


def _earliest(*instants: datetime | None) -> datetime | None:
    known = [i for i in instants if i is not None]
    return min(known) if known else None


def _seconds_until(due: datetime, now: datetime, deadline: float) -> float:
    wait = (due - now).total_seconds()
    return max(0.0, min(wait, 0.2, deadline - time.monotonic()))
