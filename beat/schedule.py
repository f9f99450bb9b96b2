"""What beat sends, and how often.

Each scan claims rows with ``FOR UPDATE SKIP LOCKED`` and only re-sends nudges whose jobs are
version-checked, so two beats (a common accident) or a late tick change nothing.
"""

from __future__ import annotations

from typing import Any

from workers.config import Settings

SCANS = ("bpm.scan_stalled", "bpm.scan_locks")
#: Timers are scanned on their own, shorter period (BPM_TIMER_INTERVAL, default 1 s).
TIMER_SCAN = "bpm.scan_timers"


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    schedule = {
        name: {"task": name, "schedule": settings.scan_interval,
               "options": {"queue": settings.route(name), "expires": settings.scan_interval}}
        for name in SCANS
    }
    schedule[TIMER_SCAN] = {
        "task": TIMER_SCAN, "schedule": settings.timer_interval,
        "options": {"queue": settings.route(TIMER_SCAN), "expires": settings.timer_interval * 5}}
    return schedule
