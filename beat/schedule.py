"""What beat sends, and how often.

Each scan claims rows with ``FOR UPDATE SKIP LOCKED`` and only re-sends nudges whose jobs are
version-checked, so two beats (a common accident) or a late tick change nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time workers.app imports this module: no import back
    from workers.config import Settings

SCANS = ("bpm.scan_stalled", "bpm.scan_locks")
#: Timers are scanned on their own, shorter period (BPM_TIMER_INTERVAL, default 1 s).
TIMER_SCAN = "bpm.scan_timers"
#: Retention runs on a long period (BPM_CLEANUP_INTERVAL, default daily); it claims instance
#: rows with SKIP LOCKED and deletes idempotently, so two beats are harmless here too.
CLEANUP = "bpm.cleanup_history"


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    schedule = {
        name: {
            "task": name,
            "schedule": settings.scan_interval,
            "options": {"queue": settings.route(name), "expires": settings.scan_interval},
        }
        for name in SCANS
    }
    schedule[TIMER_SCAN] = {
        "task": TIMER_SCAN,
        "schedule": settings.timer_interval,
        "options": {"queue": settings.route(TIMER_SCAN), "expires": settings.timer_interval * 5},
    }
    schedule[CLEANUP] = {
        "task": CLEANUP,
        "schedule": settings.cleanup_interval,
        "options": {"queue": settings.route(CLEANUP), "expires": settings.cleanup_interval},
    }
    return schedule
