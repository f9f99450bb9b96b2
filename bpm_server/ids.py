"""Ids and lists as Camunda's query strings carry them: comma-separated lists, and ids that
may not be bpm ids at all (an id that is not a UUID names nothing, so it matches nothing
rather than failing the request)."""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID


def split(text: str | None) -> list[str] | None:
    """A comma-separated list parameter (``keysIn=a,b``); None when absent."""
    if text is None:
        return None
    return [part for part in (p.strip() for p in text.split(",")) if part]


def uuids(texts: Collection[str]) -> list[UUID]:
    """The ids among ``texts`` that are bpm ids."""
    out = []
    for text in texts:
        found = maybe_uuid(text)
        if found is not None:
            out.append(found)
    return out


def maybe_uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None
