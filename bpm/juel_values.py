"""The values JUEL functions give: Camunda's ``dateTime()``/``now()`` (a Joda ``DateTime``) and
Spin's ``S(json)``/``JSON(text)`` (and ``S(xml)``'s reads, :mod:`bpm.spin_xml`), each with only
the methods Camunda models call on them.

They live only while an expression runs: :func:`plain` turns what is left at the end into a
JSON value (a date into ISO 8601 text, a Spin node into the JSON it wraps), because variables,
due dates and timers hold JSON, never objects.
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

from bpm.clock import SYSTEM_CLOCK
from bpm.spin_xml import SPIN_XML_METHODS, SpinAttribute, SpinXml
from bpm.spin_xml import parse as parse_xml

#: The time ``dateTime()`` gives inside an engine transaction (its ``now``, from the engine's
#: clock), so expressions evaluated deep in the semantics need no clock passed down to them.
_NOW: ContextVar[datetime | None] = ContextVar("bpm_expression_now", default=None)


@contextmanager
def evaluated_at(now: datetime) -> Iterator[None]:
    reset = _NOW.set(now)
    try:
        yield
    finally:
        _NOW.reset(reset)


_SHIFTS = {
    "Seconds": "seconds",
    "Minutes": "minutes",
    "Hours": "hours",
    "Days": "days",
    "Weeks": "weeks",
    "Months": "months",
    "Years": "years",
}
DATE_METHODS = frozenset(
    {f"{sign}{unit}" for sign in ("plus", "minus") for unit in _SHIFTS}
    | {"withTimeAtStartOfDay", "toDate", "toDateTime", "toDateTimeISO", "toString",
       "isBefore", "isAfter", "isEqual", "getTime", "getMillis", "isBeforeNow", "isAfterNow",
       "getYear", "getMonthOfYear", "getDayOfMonth", "getDayOfWeek", "getHourOfDay",
       "getMinuteOfHour"}
)  # fmt: skip
SPIN_METHODS = frozenset(
    {"prop", "elements", "hasProp", "stringValue", "numberValue", "boolValue", "toString",
     "value", "isNull", "isString", "isNumber", "isBoolean", "isObject", "isArray",
     "fieldNames"}
) | SPIN_XML_METHODS  # fmt: skip
#: Joda-Time pattern letters and the strftime directives they stand for.
_PATTERN = re.compile(r"yyyy|yy|MM|dd|HH|hh|mm|ss|SSS|a|Z+|'[^']*'|.", re.DOTALL)
_DIRECTIVES = {
    "yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "hh": "%I", "mm": "%M",
    "ss": "%S", "a": "%p",
}  # fmt: skip


class DateTime:
    """A Joda ``DateTime`` in UTC: shifts by calendar units, start of day, comparisons."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    @staticmethod
    def now(now: datetime | None = None) -> DateTime:
        return DateTime(now or _NOW.get() or SYSTEM_CLOCK.now())

    def call(self, method: str, args: list[Any]) -> Any:
        for sign in ("plus", "minus"):
            unit = method.removeprefix(sign)
            if method.startswith(sign) and unit in _SHIFTS:
                amount = args[0] if len(args) == 1 else None
                if not isinstance(amount, int) or isinstance(amount, bool):
                    raise ValueError(f"{method} takes one whole number, got {args!r:.60}")
                return self.shift(_SHIFTS[unit], amount if sign == "plus" else -amount)
        fn = _DATE.get(method)
        if fn is None:
            raise ValueError(f"a date has no method '{method}'")
        return fn(self, *args)

    def shift(self, unit: str, amount: int) -> DateTime:
        if unit in ("months", "years"):
            months = self.at.month - 1 + amount * (12 if unit == "years" else 1)
            year, month = self.at.year + months // 12, months % 12 + 1
            day = min(self.at.day, calendar.monthrange(year, month)[1])
            return DateTime(self.at.replace(year=year, month=month, day=day))
        return DateTime(self.at + timedelta(**{unit: amount}))

    def format(self, pattern: str | None = None) -> str:
        if pattern is None:
            return self.iso()
        out = []
        for token in _PATTERN.findall(pattern):
            if token in _DIRECTIVES:
                out.append(self.at.strftime(_DIRECTIVES[token]))
            elif token == "SSS":
                out.append(f"{self.at.microsecond // 1000:03d}")
            elif token.startswith("Z"):
                out.append(self.at.strftime("%z"))
            elif token.startswith("'"):
                out.append(token[1:-1] or "'")
            else:
                out.append(token)
        return "".join(out)

    def iso(self) -> str:
        return self.at.isoformat(timespec="milliseconds")


def _instant(value: Any) -> datetime:
    if isinstance(value, DateTime):
        return value.at
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError(f"expected a date, got {value!r:.60}")


_DATE: Mapping[str, Callable[..., Any]] = {
    "withTimeAtStartOfDay": lambda d: DateTime(
        d.at.replace(hour=0, minute=0, second=0, microsecond=0)
    ),
    "toDate": lambda d: d,
    # Joda's conversions to a DateTime in the ISO chronology: bpm's dates are always that.
    "toDateTime": lambda d: d,
    "toDateTimeISO": lambda d: d,
    "toString": DateTime.format,
    "isBefore": lambda d, o: d.at < _instant(o),
    "isAfter": lambda d, o: d.at > _instant(o),
    "isEqual": lambda d, o: d.at == _instant(o),
    "isBeforeNow": lambda d: d.at < SYSTEM_CLOCK.now(),
    "isAfterNow": lambda d: d.at > SYSTEM_CLOCK.now(),
    "getTime": lambda d: int(d.at.timestamp() * 1000),
    "getMillis": lambda d: int(d.at.timestamp() * 1000),
    "getYear": lambda d: d.at.year,
    "getMonthOfYear": lambda d: d.at.month,
    "getDayOfMonth": lambda d: d.at.day,
    "getDayOfWeek": lambda d: d.at.isoweekday(),
    "getHourOfDay": lambda d: d.at.hour,
    "getMinuteOfHour": lambda d: d.at.minute,
}


class Spin:
    """Spin's JSON node (``S(json)``, ``JSON(text)``) over a JSON value."""

    def __init__(self, value: Any) -> None:
        self.value = value

    @staticmethod
    def of(source: Any) -> Spin | SpinXml:
        if isinstance(source, Spin | SpinXml):
            return source
        if isinstance(source, str):
            if source.lstrip().startswith("<"):
                return parse_xml(source)
            try:
                return Spin(json.loads(source))
            except json.JSONDecodeError as exc:
                raise ValueError(f"S() got text that is not JSON: {exc}") from exc
        if source is None or isinstance(source, bool | int | float | list | dict):
            return Spin(source)
        raise ValueError(f"S() takes JSON text or a JSON value, got {type(source).__name__}")

    @staticmethod
    def json(source: Any) -> Spin:
        """``JSON(text)``: JSON only."""
        node = Spin.of(source)
        if isinstance(node, SpinXml):
            raise ValueError("JSON() got XML; read it with S() or XML()")
        return node

    @staticmethod
    def xml(source: Any) -> SpinXml:
        """``XML(text)``: XML only."""
        if isinstance(source, SpinXml):
            return source
        if not isinstance(source, str):
            raise ValueError(f"XML() takes XML text, got {type(source).__name__}")
        return parse_xml(source)

    def call(self, method: str, args: list[Any]) -> Any:
        fn = _SPIN.get(method)
        if fn is None:
            raise ValueError(f"a Spin JSON node has no method '{method}'")
        return fn(self, *args)

    def prop(self, name: str) -> Spin:
        if not isinstance(self.value, dict) or name not in self.value:
            raise ValueError(f"the JSON node has no property {name!r}")
        return Spin(self.value[name])

    def typed(self, kind: type | tuple[type, ...], what: str) -> Any:
        if not isinstance(self.value, kind) or (isinstance(self.value, bool) and kind is not bool):
            raise ValueError(f"the JSON node is not {what}: {self.value!r:.60}")
        return self.value


_SPIN: Mapping[str, Callable[..., Any]] = {
    "prop": Spin.prop,
    "hasProp": lambda s, name: isinstance(s.value, dict) and name in s.value,
    "elements": lambda s: [Spin(v) for v in s.typed(list, "an array")],
    "stringValue": lambda s: s.typed(str, "a string"),
    "numberValue": lambda s: s.typed((int, float), "a number"),
    "boolValue": lambda s: s.typed(bool, "a boolean"),
    "value": lambda s: s.value,
    "toString": lambda s: json.dumps(s.value, ensure_ascii=False, separators=(",", ":")),
    "isNull": lambda s: s.value is None,
    "isString": lambda s: isinstance(s.value, str),
    "isNumber": lambda s: isinstance(s.value, int | float) and not isinstance(s.value, bool),
    "isBoolean": lambda s: isinstance(s.value, bool),
    "isObject": lambda s: isinstance(s.value, dict),
    "isArray": lambda s: isinstance(s.value, list),
    "fieldNames": lambda s: list(s.typed(dict, "an object")),
}


_SCALARS = frozenset({bool, int, float, str})


def plain(value: Any) -> Any:
    """A JSON value for what an expression gave: dates as ISO 8601 text, Spin as its JSON."""
    if value is None or type(value) in _SCALARS:
        return value
    if isinstance(value, DateTime):
        return value.iso()
    if isinstance(value, Spin):
        return value.value
    if isinstance(value, SpinXml):
        return value.xml()
    if isinstance(value, SpinAttribute):
        return value.value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
