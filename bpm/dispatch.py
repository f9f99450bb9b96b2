"""The small interface through which the engine hands work to whoever executes it.

The engine only ever calls ``dispatch`` after the transaction that made the jobs necessary has
committed. Celery implements it in ``bpm_workers/``; embedded mode implements it
in-process (``bpm.embedded``). A lost job is never fatal: the scans re-derive it from the rows.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class JobName(StrEnum):
    """Every job's name. Other services send jobs by these names, so they never change;
    what each job takes and runs is its entry in ``bpm.engine.jobs.table``."""

    ADVANCE_TOKEN = "bpm.advance_token"
    RUN_HANDLER = "bpm.run_handler"
    RUN_COMPENSATION = "bpm.run_compensation"
    START_INSTANCE = "bpm.start_instance"
    CORRELATE_MESSAGE = "bpm.correlate_message"
    THROW_SIGNAL = "bpm.throw_signal"
    DELIVER_SIGNAL = "bpm.deliver_signal"
    SCAN_TIMERS = "bpm.scan_timers"
    SCAN_LOCKS = "bpm.scan_locks"
    SCAN_STALLED = "bpm.scan_stalled"
    CLEANUP_HISTORY = "bpm.cleanup_history"


ADVANCE_TOKEN = JobName.ADVANCE_TOKEN
RUN_HANDLER = JobName.RUN_HANDLER
RUN_COMPENSATION = JobName.RUN_COMPENSATION
START_INSTANCE = JobName.START_INSTANCE


@dataclass(frozen=True)
class Job:
    """One nudge: a job's name (a ``JobName``) and its JSON arguments (ids only, never
    state)."""

    name: str
    args: dict[str, Any]
    not_before: datetime | None = None


class Dispatcher(Protocol):
    def dispatch(self, jobs: Sequence[Job]) -> None:
        """Send jobs; called after commit. Must not raise for a lost message's sake."""
        ...


@dataclass(order=True)
class _Delayed:
    due: datetime
    seq: int
    job: Job = field(compare=False)


class InProcessDispatcher:
    """Queues jobs in memory for a runner in the same process (embedded mode, tests, bench).

    Jobs with ``not_before`` wait in a heap until due; everything else is FIFO.
    """

    def __init__(self) -> None:
        self._ready: deque[Job] = deque()
        self._delayed: list[_Delayed] = []
        self._seq = itertools.count()

    def dispatch(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            if job.not_before is None:
                self._ready.append(job)
            else:
                heapq.heappush(self._delayed, _Delayed(job.not_before, next(self._seq), job))

    def pop(self, now: datetime) -> Job | None:
        """The next job that may run at ``now``, or None."""
        while self._delayed and self._delayed[0].due <= now:
            self._ready.append(heapq.heappop(self._delayed).job)
        return self._ready.popleft() if self._ready else None

    def next_due(self) -> datetime | None:
        return self._delayed[0].due if self._delayed else None

    def __len__(self) -> int:
        return len(self._ready) + len(self._delayed)


def broker_dispatcher() -> Dispatcher:
    """The Celery dispatcher of ``bpm_workers/``, loaded by name so ``bpm`` never imports Celery."""
    import importlib

    from bpm.errors import ConfigError

    try:
        client = importlib.import_module("bpm_workers.client")
    except ImportError as exc:
        raise ConfigError(
            f"BPM_BROKER_URL is set but the Celery runtime cannot be loaded "
            f"({exc}); install bpm with the 'celery' extra"
        ) from exc
    dispatcher: Dispatcher = client.dispatcher_from_env()
    return dispatcher


class DroppingDispatcher:
    """Loses every job, as a process killed between commit and send would.

    Used to show that the scans recover work whose nudge never arrived.
    """

    def __init__(self) -> None:
        self.dropped: list[Job] = []

    def dispatch(self, jobs: Sequence[Job]) -> None:
        self.dropped.extend(jobs)
