"""The one place the engine reads time from.

Engine functions take ``now`` from a ``Clock`` and pass it to SQL as a bound parameter, so tests
can move a fake clock instead of sleeping, and the database's own clock never decides anything.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


SYSTEM_CLOCK = SystemClock()
