"""A job's arguments as its message carries them: matched to their names and decoded.

Anything malformed is refused here, before the engine sees it, with a ``PoisonMessage`` that
names the argument: a message sent by another service must never reach the engine half-read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID


class PoisonMessage(ValueError):
    """A message whose arguments cannot be a job: it is logged and dropped (and a sender
    waiting for the answer hears why)."""


#: Turns one argument as sent into the value the job runs with; given the argument's name
#: for the message of the ``PoisonMessage`` it raises.
Decoder = Callable[[Any, str], Any]


@dataclass(frozen=True)
class Arg:
    """One argument of a job: its name, how it is decoded, whether a message must carry
    it, and whether the job's log line shows it (ids, never variables)."""

    name: str
    decode: Decoder
    required: bool = True
    logged: bool = False


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


def decode(spec: Sequence[Arg], args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Every argument of ``spec`` decoded; one a message left out is decoded from None."""
    required = sum(1 for a in spec if a.required)
    bound = bind([a.name for a in spec], args, kwargs, required)
    return {a.name: a.decode(bound.get(a.name), a.name) for a in spec}


def as_uuid(value: Any, name: str) -> UUID:
    try:
        return UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise PoisonMessage(f"{name} {value!r} is not a UUID") from None


def as_optional_uuid(value: Any, name: str) -> UUID | None:
    """A UUID, or None when the message leaves it out (or sends it empty)."""
    return None if value is None or value == "" else as_uuid(value, name)


def as_version(value: Any, name: str = "expected_version") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PoisonMessage(f"{name} {value!r} is not a non-negative integer")
    return value


def as_str(value: Any, name: str) -> str:
    if isinstance(value, str) and value:
        return value
    raise PoisonMessage(f"{name} must be a non-empty string, got {value!r}")


def as_optional_str(value: Any, name: str) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise PoisonMessage(f"{name} must be a non-empty string or null, got {value!r}")


def as_sent(value: Any, name: str) -> Any:
    """Passed on as sent: the engine checks it as it checks the same argument of an API
    call (process variables), so both refuse it with one message."""
    return value


def as_flag(value: Any, name: str) -> bool:
    """``true`` or ``false``; left out (or null) means no. Anything else is refused: the
    string ``"false"`` would read as yes."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    raise PoisonMessage(f"{name} must be true or false, got {value!r}")
