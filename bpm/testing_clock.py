"""The clock a process test moves: the engine reads time only from its clock, so a test that
moves this one (and runs the scans) sees a day pass in milliseconds. Part of ``bpm.testing``,
which re-exports it."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta


def step_of(delta: timedelta | None, kwargs: Mapping[str, float]) -> timedelta:
    """``delta`` plus ``timedelta`` keywords; refused when it would move time backwards."""
    step = (delta or timedelta(0)) + timedelta(**kwargs)
    if step < timedelta(0):
        raise ValueError(f"time only moves forward; cannot advance by {step}")
    return step


#: Where every fake clock starts unless told otherwise: a fixed instant keeps runs repeatable.
EPOCH = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    """``now()`` returns a settable instant; each call also ticks ``tick`` forward.

    The tick keeps ``updated_at`` values strictly ordered, as a real clock would, so "the
    earliest arrival" and "untouched for longer than the grace period" mean something.
    """

    def __init__(
        self, start: datetime = EPOCH, tick: timedelta = timedelta(milliseconds=1)
    ) -> None:
        if start.tzinfo is None:
            raise ValueError(
                "the clock must start at a timezone-aware instant (the engine stores UTC)"
            )
        self._now = start
        self._tick = tick
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            current = self._now
            self._now += self._tick
            return current

    def peek(self) -> datetime:
        """The current instant, without ticking (reading it in a test changes nothing)."""
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` and/or ``timedelta`` keywords (``hours=24``); returns the
        new instant. Time never runs backwards: the engine's ordering relies on it."""
        step = step_of(delta, kwargs)
        with self._lock:
            self._now += step
            return self._now

    def move_to(self, instant: datetime) -> None:
        """Jump forward to ``instant`` (never backwards)."""
        with self._lock:
            self._now = max(self._now, instant)
