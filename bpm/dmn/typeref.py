"""``typeRef`` on inputs, outputs and variables: the value is converted to that type the way
Camunda 7's data type transformers do, or the evaluation fails naming the value and the type.

Camunda's names are ``string``, ``boolean``, ``integer``, ``long``, ``double`` and ``date``; any
other name (``number``, ``Any``, an item definition) leaves the value as it is, as Camunda does.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from bpm.dmn.feel_values import FeelError, kind, parse_date_time, show

#: The typeRef names that convert values; the others pass values through.
KNOWN = frozenset({"string", "boolean", "integer", "long", "double", "date"})
_INT_RANGE = {"integer": 2**31, "long": 2**63}
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
_DOUBLE_TEXT = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?[dDfF]?\s*")
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}(?:T.*)?")


def normalise(type_ref: str | None) -> str | None:
    """The typeRef as Camunda looks it up (case-insensitive); ``None`` when there is none."""
    if type_ref is None or not type_ref.strip():
        return None
    return type_ref.strip().lower()


def literal_fits(type_ref: str | None, value: Any) -> bool:
    """Whether a literal written in a cell can ever be compared with values of ``type_ref``."""
    if type_ref not in KNOWN or value is None:
        return True
    expected = {
        "string": ("string",),
        "boolean": ("boolean",),
        "integer": ("number",),
        "long": ("number",),
        "double": ("number",),
        "date": ("date", "date and time"),
    }[type_ref]
    return kind(value) in expected


def convert(type_ref: str | None, value: Any) -> Any:
    """``value`` as ``type_ref``; null stays null; raises ``FeelError`` when it cannot be."""
    if value is None or type_ref not in KNOWN:
        return value
    try:
        converted = _convert(type_ref, value)
    except (OverflowError, ValueError):  # inf or nan where a whole number was needed
        converted = _INVALID
    if converted is _INVALID:
        raise FeelError(f"{show(value)} ({kind(value)}) is not a valid {type_ref}")
    return converted


_INVALID: Any = object()


def _convert(type_ref: str, value: Any) -> Any:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if type_ref == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list | tuple | dict):
            return _INVALID
        return value if isinstance(value, str) else str(value)
    if type_ref == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return _INVALID
    if type_ref in _INT_RANGE:
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
            value, number = int(value), True
        if not number or value != int(value):
            return _INVALID
        whole = int(value)
        limit = _INT_RANGE[type_ref]
        return whole if -limit <= whole < limit else _INVALID
    if type_ref == "double":
        if isinstance(value, str) and _DOUBLE_TEXT.fullmatch(value):
            value, number = float(value.strip().rstrip("dDfF")), True
        if not number:
            return _INVALID
        converted = float(value)
        return converted if converted - converted == 0 else _INVALID
    return _date(value)


def _date(value: Any) -> Any:
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _DATE_TEXT.fullmatch(value):
        if "T" not in value:
            return _date_only(value)
        try:
            return parse_date_time(value)
        except FeelError:
            return _INVALID
    return _INVALID


def _date_only(value: str) -> Any:
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        return _INVALID
