"""Timer cycles: when a repeating timer fires next.

Two notations, as Camunda 7 reads ``timeCycle``:

- ISO 8601 repeating intervals: ``R3/PT10M`` (three times, ten minutes apart, counted from
  when the timer is armed), ``R/2026-01-01T00:00:00Z/P1D`` (for ever, from that instant),
  ``R5/PT1H/2027-01-01T00:00:00Z`` (at most five times, the last before that instant).
- Quartz cron expressions, which have a seconds field first and an optional year last:
  ``0 0/5 * * * ?``. Day-of-week numbers are Quartz's (1 = Sunday ... 7 = Saturday).

Cron ticks are wall-clock times in a time zone (``BPM_TIMEZONE``, UTC by default), and a
daylight-saving change neither skips nor doubles one: a wall-clock time that does not
exist (spring forward) fires at the first instant after the gap, and one that happens twice
(fall back) fires at its first occurrence only.

The next tick is always computed from a given instant (``next_after``), never from the last
due time: a scheduler that was down for a while fires once for the period it missed, then
goes on from now.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from bpm.definitions.durations import parse_duration
from bpm.errors import ConfigError, InvalidDefinition

#: The time zone cron ticks are wall-clock times in (an IANA name; UTC when unset).
ZONE_VARIABLE = "BPM_TIMEZONE"

_REPEAT = re.compile(r"^R(\d*)$")
_QUARTZ_DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
#: How many ticks a cron expression may skip (doubled wall-clock times) before we give up.
_MAX_SKIPS = 8


@dataclass(frozen=True)
class Cycle:
    """A parsed ``timeCycle``: either an ISO repeating interval or a cron expression."""

    source: str
    #: How many times it fires in all; None: for ever (``R/...`` or any cron expression).
    repeat: int | None = None
    interval: timedelta | None = None
    #: ISO: the first tick (without one, the first tick is one interval after arming).
    start: datetime | None = None
    #: ISO: no tick at or after this instant.
    end: datetime | None = None
    #: Cron: the expression in croniter's dialect (seconds first, Sunday = 0).
    cron: str | None = None

    def next_after(
        self, after: datetime, *, armed_at: datetime, fired: int, zone: tzinfo = UTC
    ) -> datetime | None:
        """The first tick strictly after ``after``; None when the cycle has no more
        (``fired``: how many ticks already fired; ``armed_at``: when the timer was armed,
        the origin of an ISO cycle without a start)."""
        if self.repeat is not None and fired >= self.repeat:
            return None
        if self.cron is not None:
            return _next_cron(self.cron, after, zone)
        assert self.interval is not None
        if self.start is not None:
            origin, first = self.start, 0
        else:
            origin, first = armed_at, 1
        steps = max(first, (after - origin) // self.interval + 1)
        tick = origin + steps * self.interval
        if self.end is not None and tick >= self.end:
            return None
        return tick


def parse_cycle(value: str, *, where: str, element: str | None) -> Cycle:
    """Read a ``timeCycle`` at deploy time; a clear error names what is wrong and where."""
    text = value.strip()
    if text.startswith("R"):
        return _parse_iso(text, where, element)
    return _parse_cron(text, where, element)


def _parse_iso(text: str, where: str, element: str | None) -> Cycle:
    parts = text.split("/")
    match = _REPEAT.match(parts[0])
    if match is None or len(parts) not in (2, 3):
        raise InvalidDefinition(
            f"{where}: timeCycle {text!r} is not an ISO 8601 repeating interval "
            "(for example R3/PT10M or R/2026-01-01T00:00:00Z/P1D)",
            element,
        )
    repeat = int(match.group(1)) if match.group(1) else None
    start = end = None
    if len(parts) == 2:
        duration = parts[1]
    elif parts[1].startswith("P"):
        duration, end = parts[1], _instant(parts[2], text, where, element)
    else:
        start, duration = _instant(parts[1], text, where, element), parts[2]
    interval = parse_duration(duration, where=f"{where} timeCycle {text!r}", element=element)
    if interval <= timedelta(0):
        raise InvalidDefinition(f"{where}: timeCycle {text!r} repeats every zero seconds", element)
    return Cycle(text, repeat=repeat, interval=interval, start=start, end=end)


def _instant(value: str, text: str, where: str, element: str | None) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidDefinition(
            f"{where}: timeCycle {text!r}: {value!r} is not an ISO 8601 instant", element
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _parse_cron(text: str, where: str, element: str | None) -> Cycle:
    fields = text.split()
    if len(fields) not in (6, 7):
        raise InvalidDefinition(
            f"{where}: timeCycle {text!r} is neither an ISO 8601 repeating interval (R3/PT10M) "
            "nor a cron expression with seconds first (0 0/5 * * * ?)",
            element,
        )
    fields[3] = "*" if fields[3] == "?" else fields[3]
    fields[5] = "*" if fields[5] == "?" else _quartz_days(fields[5])
    translated = " ".join(fields)
    if not croniter.is_valid(translated, second_at_beginning=True):
        raise InvalidDefinition(
            f"{where}: timeCycle {text!r} is not a cron expression this engine can run "
            "(seconds minutes hours day-of-month month day-of-week [year])",
            element,
        )
    return Cycle(text, cron=translated)


def _quartz_days(field: str) -> str:
    """Quartz numbers days 1 (Sunday) to 7 (Saturday); croniter 0 (Sunday) to 6."""

    def shift(match: re.Match[str]) -> str:
        return str(int(match.group(0)) - 1)

    upper = field.upper()
    for name, number in _QUARTZ_DAYS.items():
        upper = upper.replace(name, str(number + 1))
    # Numbers before '#' and in ranges/lists are days; the one after '#' is a week count.
    head, _, nth = upper.partition("#")
    shifted = re.sub(r"\d+", shift, head)
    return f"{shifted}#{nth}" if nth else shifted


def _next_cron(expression: str, after: datetime, zone: tzinfo) -> datetime:
    """The next wall-clock tick in ``zone`` after ``after``, each wall-clock time once."""
    local = after.astimezone(zone)
    ticks = croniter(expression, local, second_at_beginning=True)
    for _ in range(_MAX_SKIPS):
        tick: datetime = ticks.get_next(datetime)
        if not _second_occurrence(tick, zone):
            return tick.astimezone(UTC)
    return tick.astimezone(UTC)


def _second_occurrence(tick: datetime, zone: tzinfo) -> bool:
    """Whether ``tick`` is the later of two instants with the same wall-clock time (the
    hour a fall-back change repeats): that wall-clock time already had its tick."""
    wall = tick.astimezone(zone).replace(tzinfo=None)
    first = wall.replace(fold=0).replace(tzinfo=zone)
    second = wall.replace(fold=1).replace(tzinfo=zone)
    if first.utcoffset() == second.utcoffset():
        return False
    return tick.astimezone(UTC) == second.astimezone(UTC)


def configured_zone() -> tzinfo:
    """``BPM_TIMEZONE`` (for example Europe/Berlin), UTC when unset."""
    name = os.environ.get(ZONE_VARIABLE, "").strip()
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{ZONE_VARIABLE}={name!r} is not a time zone name (for example Europe/Berlin)"
        ) from None
