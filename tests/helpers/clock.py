"""A clock that tests move by hand (style b.11): no test sleeps to make time pass."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

EPOCH = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    """``now()`` returns a settable instant; each call also ticks ``tick`` forward.

    The tick keeps ``updated_at`` values strictly ordered, as a real clock would, so "the
    earliest arrival" and "untouched for longer than the grace period" mean something.
    """

    def __init__(self, start: datetime = EPOCH, tick: timedelta = timedelta(milliseconds=1)):
        self._now = start
        self._tick = tick
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            current = self._now
            self._now += self._tick
            return current

    def peek(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._now += delta
            return self._now

    def move_to(self, instant: datetime) -> None:
        """Jump forward to ``instant`` (never backwards)."""
        with self._lock:
            self._now = max(self._now, instant)
