"""What beat sends, and how often: every job of the table with a period (``JobSpec.every``).

Each scan claims rows with ``FOR UPDATE SKIP LOCKED`` and only re-sends nudges whose jobs are
version-checked, so two beats (a common accident) or a late tick change nothing. Retention
claims instance rows with SKIP LOCKED and deletes idempotently, so two beats are harmless
there too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bpm.engine.jobs.spec import Period
from bpm.engine.jobs.table import JOBS

if TYPE_CHECKING:  # at run time bpm_workers.app imports this module: no import back
    from bpm_workers.config import Settings


def period(every: Period, settings: Settings) -> tuple[float, float]:
    """Seconds between two sends, and after how long an unclaimed send expires.

    Stalled-work scans run every ``BPM_SCAN_INTERVAL``; timers on their own, shorter period
    (``BPM_TIMER_INTERVAL``, default 1 s), their sends lasting five periods so a busy scans
    queue delays timers rather than dropping every tick; retention on a long one
    (``BPM_CLEANUP_INTERVAL``, default daily). A send expires once the next one is due."""
    if every is Period.TIMERS:
        return settings.timer_interval, settings.timer_interval * 5
    if every is Period.CLEANUP:
        return settings.cleanup_interval, settings.cleanup_interval
    return settings.scan_interval, settings.scan_interval


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    schedule: dict[str, dict[str, Any]] = {}
    for name, spec in JOBS.items():
        if spec.every is None:
            continue
        interval, expires = period(spec.every, settings)
        schedule[str(name)] = {
            "task": str(name),
            "schedule": interval,
            "options": {"queue": settings.route(name), "expires": expires},
        }
    return schedule
