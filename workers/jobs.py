"""Decoding job messages: anything malformed is refused here, before the engine sees it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID


class PoisonMessage(ValueError):
    """A message whose arguments cannot be a job: it is logged and dropped."""


def bind(
    names: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any], required: int
) -> dict[str, Any]:
    """Match positional and keyword arguments to ``names``; refuse extras and missing ones."""
    if len(args) > len(names):
        raise PoisonMessage(f"{len(args)} positional arguments, at most {len(names)} expected")
    out = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names or key in out:
            raise PoisonMessage(f"unexpected argument {key!r}")
        out[key] = value
    missing = [n for n in names[:required] if n not in out]
    if missing:
        raise PoisonMessage(f"missing argument {missing[0]!r}")
    return out


def as_uuid(value: Any, name: str) -> UUID:
    try:
        return UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise PoisonMessage(f"{name} {value!r} is not a UUID") from None


def as_version(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PoisonMessage(f"expected_version {value!r} is not a non-negative integer")
    return value


def as_optional_str(value: Any, name: str) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise PoisonMessage(f"{name} must be a non-empty string or null, got {value!r}")
