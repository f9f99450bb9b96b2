"""Timer definitions: a duration, a date or a cycle, literal or ``${expr}`` over the variables.

Literals are checked at deploy time; an expression is compiled at deploy time and its value
checked when the token arrives, where a bad value fails the token with an incident naming the
node. Dates without a UTC offset are taken as UTC: everything is stored in
UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bpm.definitions.cycles import Cycle, configured_zone, parse_cycle
from bpm.definitions.durations import parse_duration
from bpm.definitions.mappings import Composite, composite
from bpm.errors import BpmError, ConfigError, InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression

TIMER_KINDS = ("duration", "date", "cycle")


class TimerValueError(BpmError):
    """A timer expression gave something that is not a duration or date."""


@dataclass(frozen=True)
class TimerSpec:
    kind: str  # "duration", "date" or "cycle"
    source: str
    duration: timedelta | None = None
    date: datetime | None = None
    expression: Expression | Composite | None = None
    #: A cycle: it fires again after each tick while its activity is open (a non-interrupting
    #: boundary event); anywhere else only its first tick counts. A duration or date written
    #: as a repeating interval has one too: only its first tick counts.
    cycle: Cycle | None = None

    def fire_at(self, now: datetime, variables: Mapping[str, Any]) -> datetime:
        """When the timer fires for a token arriving ``now``; raises ``TimerValueError``."""
        if self.cycle is not None or self.kind == "cycle":
            tick = self.next_tick(now, now, 0, variables)
            if tick is None:
                raise TimerValueError(f"timer {self.source!r} has no tick after {now:%Y-%m-%d}")
            return tick
        if self.expression is not None:
            value = self.expression.evaluate(variables)
            if self.kind == "duration" or _is_duration(value):
                return now + _duration(value, self.source)
            return _date(value, self.source)
        if self.duration is not None:
            return now + self.duration
        assert self.date is not None
        return self.date

    def next_tick(
        self, after: datetime, armed_at: datetime, fired: int, variables: Mapping[str, Any]
    ) -> datetime | None:
        """A cycle's next tick after ``after`` (armed at ``armed_at``, ``fired`` ticks
        so far); None when it has no more. Raises ``TimerValueError``."""
        cycle = self.cycle
        if self.expression is not None:
            value = self.expression.evaluate(variables)
            if not isinstance(value, str):
                raise TimerValueError(f"timer {self.source!r} gave {value!r}, not a cycle")
            try:
                cycle = parse_cycle(value, where=f"timer {self.source!r}", element=None)
            except InvalidDefinition as exc:
                raise TimerValueError(str(exc)) from None
        assert cycle is not None
        try:
            zone = configured_zone()
        except ConfigError as exc:
            raise TimerValueError(str(exc)) from None
        return cycle.next_after(after, armed_at=armed_at, fired=fired, zone=zone)


def parse_timer(raw: Mapping[str, Any], where: str, element: str) -> TimerSpec:
    """Exactly one of ``duration`` or ``date``."""
    present = [k for k in TIMER_KINDS if k in raw]
    if len(present) != 1:
        raise InvalidDefinition(
            f"{where}: a timer needs exactly one of 'duration' (ISO 8601, "
            f"e.g. PT5M), 'date' (ISO 8601 instant) or 'cycle' (R3/PT10M, or a cron "
            f"expression such as 0 0/5 * * * ?)",
            element,
        )
    kind = present[0]
    value = raw[kind]
    if not isinstance(value, str) or not value.strip():
        raise InvalidDefinition(f"{where}: timer '{kind}' must be a non-empty string", element)
    if value.strip().startswith("${"):
        try:
            expr = compile_expression(value.strip(), where=where, kind=f"timer {kind} expression")
        except InvalidExpression as exc:
            raise InvalidDefinition(str(exc), element) from exc
        return TimerSpec(kind, value, expression=expr)
    if "${" in value:  # text around ${...} parts (PT${days}D): a JUEL composite, read as text
        try:
            made = composite(value.strip(), where, f"timer {kind} expression")
        except InvalidExpression as exc:
            raise InvalidDefinition(str(exc), element) from exc
        return TimerSpec(kind, value, expression=made)
    if kind == "cycle" or value.strip().startswith("R"):
        # A repeating interval given as a duration or date fires at its first tick and does
        # not repeat, as Camunda 7 reads it (only a cycle repeats).
        return TimerSpec(
            kind, value, cycle=parse_cycle(value, where=f"{where} timer", element=element)
        )
    if kind == "duration" or _is_duration(value):
        return TimerSpec(
            kind,
            value,
            duration=parse_duration(value, where=f"{where} timer 'duration'", element=element),
        )
    try:
        return TimerSpec(kind, value, date=_date(value, value))
    except TimerValueError as exc:
        raise InvalidDefinition(f"{where}: {exc}", element) from exc


def _is_duration(value: object) -> bool:
    """A date that is a duration (``P1D``) is that long from now, as Camunda 7's due-date
    calendar reads a ``timeDate``."""
    return isinstance(value, str) and value.strip().startswith("P")


def _duration(value: object, source: str) -> timedelta:
    try:
        return parse_duration(value, where=f"timer {source!r}", element=None)
    except InvalidDefinition as exc:
        raise TimerValueError(str(exc)) from exc


def _date(value: object, source: str) -> datetime:
    if not isinstance(value, str):
        raise TimerValueError(f"timer {source!r} gave {value!r}, not an ISO 8601 date string")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise TimerValueError(
            f"timer {source!r}: {value!r} is not an ISO 8601 date "
            f"(for example 2027-01-31T09:00:00Z)"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
