"""FEEL's value rules over plain Python values: which values are of one type, how they compare,
how they add up. Values are ``None`` (FEEL null), ``bool``, ``int``/``float`` (FEEL number),
``str``, ``date``, ``datetime`` (FEEL date and time), ``time``, ``list`` and ``dict``.

Comparing values of two different types is an error here, not the ``null`` of DMN 1.5: a
table that compares a string with a number is wrong, and saying so beats a rule that silently
never matches."""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time, timedelta, timezone
from typing import Any

from bpm.dmn.limits import MAX_INT_BITS

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?")


class FeelError(Exception):
    """An expression could not be evaluated over these values; the message says why."""


def kind(value: Any) -> str:
    """The FEEL type name of ``value``, used in messages and type checks."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, datetime):
        return "date and time"
    if isinstance(value, date):
        return "date"
    if isinstance(value, time):
        return "time"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "context"
    return f"unsupported value ({type(value).__name__})"


def show(value: Any, limit: int = 60) -> str:
    """A short, readable rendering of ``value`` for messages."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif isinstance(value, datetime | date | time):
        text = value.isoformat()
    else:
        try:
            text = repr(value)
        except Exception:  # a caller's object whose repr fails still gets a message
            text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mismatch(left: Any, right: Any, what: str) -> FeelError:
    return FeelError(f"cannot {what} {show(left)} ({kind(left)}) and {show(right)} ({kind(right)})")


def _comparable(left: Any, right: Any) -> bool:
    left_kind, right_kind = kind(left), kind(right)
    if left_kind != right_kind or left_kind.startswith("unsupported"):
        return False
    if left_kind in ("date and time", "time"):
        return (left.tzinfo is None) == (right.tzinfo is None)
    return True


def equal(left: Any, right: Any) -> bool:
    """FEEL ``=``: null equals only null; other values must be of one type."""
    if left is None or right is None:
        return left is None and right is None
    if not _comparable(left, right):
        raise _mismatch(left, right, "compare")
    return bool(left == right)


def compare(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 for an ordered pair, ``None`` when either side is null."""
    if left is None or right is None:
        return None
    if not _comparable(left, right) or kind(left) in ("boolean", "list", "context"):
        raise _mismatch(left, right, "order")
    return -1 if left < right else (1 if left > right else 0)


def _checked(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise FeelError(f"a number computed here has more than {MAX_INT_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise FeelError("a number computed here is too large")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def arithmetic(op: str, left: Any, right: Any) -> Any:
    """``+ - * /`` on numbers (and ``+`` on strings); null in, null out."""
    if left is None or right is None:
        return None
    if op == "+" and isinstance(left, str) and isinstance(right, str):
        return left + right
    if not (_is_number(left) and _is_number(right)):
        raise _mismatch(left, right, {"+": "add", "-": "subtract"}.get(op, "multiply"))
    try:
        if op == "+":
            return _checked(left + right)
        if op == "-":
            return _checked(left - right)
        if op == "*":
            return _checked(left * right)
        if right == 0:
            raise FeelError(f"division by zero ({show(left)} / {show(right)})")
        if isinstance(left, int) and isinstance(right, int) and left % right == 0:
            return _checked(left // right)
        return _checked(left / right)
    except (OverflowError, ValueError):
        raise FeelError("a number computed here is too large") from None


def negate(value: Any) -> Any:
    if value is None:
        return None
    if not _is_number(value):
        raise FeelError(f"cannot negate {show(value)} ({kind(value)})")
    return -value


def parse_date(text: str) -> date:
    match = _DATE.fullmatch(text)
    if match is None:
        raise FeelError(f"{show(text)} is not a date (yyyy-mm-dd)")
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError as exc:
        raise FeelError(f"{show(text)} is not a date: {exc}") from None


def parse_time(text: str) -> time:
    match = _TIME.fullmatch(text)
    if match is None:
        raise FeelError(f"{show(text)} is not a time (hh:mm:ss, optional offset)")
    micros = int((match[4] or "0").ljust(6, "0")[:6])
    zone = _zone(match[5])
    try:
        return time(int(match[1]), int(match[2]), int(match[3]), micros, tzinfo=zone)
    except ValueError as exc:
        raise FeelError(f"{show(text)} is not a time: {exc}") from None


def parse_date_time(text: str) -> datetime:
    day_text, sep, time_text = text.partition("T")
    day = parse_date(day_text)
    if not sep:
        return datetime(day.year, day.month, day.day)
    at = parse_time(time_text)
    return datetime.combine(day, at)


def _zone(text: str | None) -> timezone | None:
    if text is None:
        return None
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    hours, minutes = int(text[1:3]), int(text[4:6])
    if hours > 14 or minutes > 59:
        raise FeelError(f"'{text}' is not a time zone offset")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def call(function: str, argument: Any) -> Any:
    """The built-in functions the subset knows: ``date``, ``date and time``, ``time``, ``not``."""
    if argument is None:
        return None
    if function == "not":
        if not isinstance(argument, bool):
            raise FeelError(f"not() needs a boolean, not {show(argument)} ({kind(argument)})")
        return not argument
    if function == "date":
        if isinstance(argument, str):
            return parse_date(argument)
        if isinstance(argument, date):
            return argument.date() if isinstance(argument, datetime) else argument
    elif function == "date and time":
        if isinstance(argument, str):
            return parse_date_time(argument)
        if isinstance(argument, datetime):
            return argument
        if isinstance(argument, date):
            return datetime(argument.year, argument.month, argument.day)
    elif isinstance(argument, str):
        return parse_time(argument)
    elif isinstance(argument, time):
        return argument
    raise FeelError(f"{function}() cannot take {show(argument)} ({kind(argument)})")
