"""ISO 8601 durations, parsed once at deploy time so a typo never reaches run time."""

from __future__ import annotations

from datetime import timedelta

import isodate

from bpm.errors import InvalidDefinition

MAX_YEARS = 100
#: Longer delays overflow the date arithmetic of a timer (year 9999) or are typos.
MAX_DURATION = timedelta(days=365 * MAX_YEARS)


def parse_duration(value: object, *, where: str, element: str | None) -> timedelta:
    """Parse a fixed-length ISO 8601 duration such as ``PT1S`` or ``P1DT2H``.

    Years and months have no fixed length, so they are refused where a delay is computed.
    """
    if not isinstance(value, str):
        raise InvalidDefinition(
            f"{where}: expected an ISO 8601 duration string, got {value!r}", element
        )
    if not value.strip("PT"):  # isodate reads a bare "P" or "PT" as zero
        raise InvalidDefinition(
            f"{where}: {value!r} is not an ISO 8601 duration (for example PT5S or P1DT2H)", element
        )
    try:
        parsed = isodate.parse_duration(value)
    except OverflowError as exc:
        raise InvalidDefinition(
            f"{where}: {value!r} is too long (at most {MAX_YEARS} years)", element
        ) from exc
    except (isodate.ISO8601Error, ValueError) as exc:
        raise InvalidDefinition(
            f"{where}: {value!r} is not an ISO 8601 duration (for example PT5S or P1DT2H)", element
        ) from exc
    if not isinstance(parsed, timedelta):
        raise InvalidDefinition(
            f"{where}: {value!r} uses years or months, which have no fixed length here", element
        )
    if parsed < timedelta(0):
        raise InvalidDefinition(f"{where}: {value!r} is negative", element)
    if parsed > MAX_DURATION:
        raise InvalidDefinition(
            f"{where}: {value!r} is too long (at most {MAX_YEARS} years)", element
        )
    return parsed


def format_duration(value: timedelta) -> str:
    """Render a timedelta back as ISO 8601, for documents the builder emits."""
    return str(isodate.duration_isoformat(value))
