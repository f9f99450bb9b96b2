"""Ids as callers give them: UUIDs or their strings."""

from __future__ import annotations

from uuid import UUID

from bpm.errors import NotFound


def as_id(value: UUID | str, what: str) -> UUID:
    """Accept ids as UUIDs or strings; a malformed one is a clear error, not a driver error."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise NotFound(f"{what} id {value!r} is not a valid id (expected a UUID)") from None


def maybe_id(value: UUID | str | None, what: str) -> UUID | None:
    return None if value is None else as_id(value, what)
