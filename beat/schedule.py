"""What beat sends, and how often.

Each scan claims rows with ``FOR UPDATE SKIP LOCKED`` and only re-sends nudges whose jobs are
version-checked, so two beats (a common accident) or a late tick change nothing.
"""

from __future__ import annotations

from typing import Any

from workers.config import Settings

SCANS = ("bpm.scan_stalled", "bpm.scan_locks")


def beat_schedule(settings: Settings) -> dict[str, dict[str, Any]]:
    return {
        name: {"task": name, "schedule": settings.scan_interval,
               "options": {"queue": settings.route(name), "expires": settings.scan_interval}}
        for name in SCANS
    }
