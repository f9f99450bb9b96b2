"""Dates as Camunda's REST API writes and reads them: ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``.

Both official external-task clients read and send this form (an offset of four digits, no
colon, e.g. ``2026-01-02T03:04:05.000+0000``). Reading is lenient about what ISO 8601 allows
besides (``Z``, ``+01:00``, no fraction), so a hand-written request is not refused for that.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from bpm.api import InvalidRequest

_DATE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(Z|[+-]\d{2}:?\d{2})?$"
)


def format_date(when: datetime | None) -> str | None:
    """UTC, milliseconds, ``+0000``; None stays None (Camunda writes null)."""
    if when is None:
        return None
    utc = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}+0000"


def parse_date(text: str) -> datetime:
    """An aware datetime; a string of another form is an ``InvalidRequest`` naming it.
    Without an offset the time is read as UTC (the server's zone would differ by host)."""
    found = _DATE.match(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise InvalidRequest(
            f"cannot read {text!r} as a date: use yyyy-MM-dd'T'HH:mm:ss.SSSZ,"
            " e.g. 2026-01-02T03:04:05.000+0000"
        )
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    micro = int((fraction or "0").ljust(6, "0")[:6])
    try:
        tz = UTC if zone in (None, "Z") else _offset(zone)
        return datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tz
        )
    except ValueError as exc:
        raise InvalidRequest(f"cannot read {text!r} as a date: {exc}") from exc


def _offset(zone: str) -> timezone:
    digits = zone[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return timezone(-delta if zone[0] == "-" else delta)
