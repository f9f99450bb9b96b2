"""Who a user task is for, when it is due and how urgent it is.

Each value is literal text or a ``${...}`` expression; expressions are compiled at deploy and
evaluated over the variables the token sees when the task is created, so the task holds
names, instants and a number, never an expression. A candidate list's expression may give a
list of names or one text of comma-separated names. A date is an ISO 8601 date-time or an
ISO 8601 duration counted from the task's creation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bpm.definitions.durations import parse_duration
from bpm.errors import ExpressionEvalError, InvalidDefinition, InvalidExpression
from bpm.expressions import Expression, compile_expression

if TYPE_CHECKING:
    from bpm.definitions.model import Node

#: Literal text, or an expression evaluated when the task is created.
Text = str | Expression
#: A user task's priority when its definition gives none.
DEFAULT_PRIORITY = 50
_WRAPPED = re.compile(r"\s*\$\{.*\}\s*", re.DOTALL)
_DATE_HINT = (
    "write an ISO 8601 date-time (2027-01-31T09:00:00Z) or duration (P2D, PT4H), or "
    "${name} of a variable holding one"
)


@dataclass(frozen=True)
class Assigned:
    """A user task's people, dates and priority as evaluated when it is created."""

    assignee: str | None
    candidate_users: list[str]
    candidate_groups: list[str]
    due_date: datetime | None
    follow_up_date: datetime | None
    priority: int


def is_expression(raw: str) -> bool:
    return _WRAPPED.fullmatch(raw) is not None


def parse_text(raw: Any, key: str, where: str, node_id: str) -> Text:
    """A name, or one ``${...}`` expression."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidDefinition(f"{where}: {key!r} must be a non-empty string", node_id)
    if not is_expression(raw):
        return raw.strip()
    try:
        return compile_expression(raw.strip(), where=where, kind=f"{key} expression")
    except InvalidExpression as exc:
        raise InvalidDefinition(str(exc), node_id) from exc


def parse_people(raw: Any, key: str, where: str, node_id: str) -> tuple[Text, ...]:
    """A list of names and ``${...}`` expressions."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(g, str) and g.strip() for g in raw):
        raise InvalidDefinition(
            f"{where}: {key!r} must be a list of names (or ${{...}} expressions)", node_id
        )
    return tuple(parse_text(item, key, where, node_id) for item in raw)


def parse_date(raw: Any, key: str, where: str, node_id: str) -> Text | None:
    """An ISO 8601 date-time or duration, checked now; or an expression giving one."""
    if raw is None:
        return None
    if isinstance(raw, str) and is_expression(raw):
        try:
            return compile_expression(raw.strip(), where=where, kind=f"{key} expression")
        except InvalidExpression as exc:
            raise InvalidDefinition(f"{exc}; {_DATE_HINT}", node_id) from exc
    if not isinstance(raw, str):
        raise InvalidDefinition(f"{where}: {key!r} must be a string; {_DATE_HINT}", node_id)
    try:
        _instant(raw, datetime.now(UTC), f"{where}: {key!r}")
    except ExpressionEvalError as exc:
        raise InvalidDefinition(str(exc), node_id) from exc
    return raw.strip()


def parse_priority(raw: Any, where: str, node_id: str) -> int | Expression:
    if raw is None:
        return DEFAULT_PRIORITY
    if isinstance(raw, str) and is_expression(raw):
        try:
            return compile_expression(raw.strip(), where=where, kind="priority expression")
        except InvalidExpression as exc:
            raise InvalidDefinition(str(exc), node_id) from exc
    if isinstance(raw, str) and re.fullmatch(r"-?[0-9]{1,10}", raw.strip()):
        raw = int(raw)
    if not isinstance(raw, int) or isinstance(raw, bool) or abs(raw) > 2**31 - 1:
        raise InvalidDefinition(
            f"{where}: 'priority' must be a whole number (32-bit) or a ${{...}} expression",
            node_id,
        )
    return raw


def resolve(node: Node, view: Mapping[str, Any], now: datetime) -> Assigned:
    """Evaluate ``node``'s assignment over ``view``; raises ``ExpressionEvalError`` naming
    the node and the attribute."""
    where = f"node {node.id!r} (userTask)"
    assignee = _value(node.assignee, view) if node.assignee is not None else None
    if assignee is not None and not isinstance(assignee, str):
        raise ExpressionEvalError(f"{where}: 'assignee' gave {assignee!r}, not a user name")
    due = _date(node.due_date, view, now, f"{where}: 'due_date'")
    follow_up = _date(node.follow_up_date, view, now, f"{where}: 'follow_up_date'")
    priority: Any = node.priority
    if node.priority_expression is not None:
        priority = node.priority_expression.evaluate(view)
        if isinstance(priority, str) and re.fullmatch(r"-?\d+", priority.strip()):
            priority = int(priority)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise ExpressionEvalError(f"{where}: 'priority' gave {priority!r}, not a whole number")
    return Assigned(
        assignee.strip() or None if assignee is not None else None,
        _names(node.candidate_users, view, f"{where}: 'candidate_users'"),
        _names(node.candidate_groups, view, f"{where}: 'candidate_groups'"),
        due,
        follow_up,
        priority,
    )


def _value(text: Text, view: Mapping[str, Any]) -> Any:
    return text.evaluate(view) if isinstance(text, Expression) else text


def _names(items: tuple[Text, ...], view: Mapping[str, Any], what: str) -> list[str]:
    """Each item's names, in order, each once; a text is split at its commas."""
    out: list[str] = []
    for item in items:
        value = _value(item, view)
        if value is None:
            continue
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ExpressionEvalError(f"{what} gave {value!r}, not a list of names")
        out += [v.strip() for v in value if v.strip() and v.strip() not in out]
    return out


def _date(text: Text | None, view: Mapping[str, Any], now: datetime, what: str) -> datetime | None:
    if text is None:
        return None
    value = _value(text, view)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ExpressionEvalError(f"{what} gave {value!r}; {_DATE_HINT}")
    return _instant(value, now, what)


def _instant(value: str, now: datetime, what: str) -> datetime:
    """An ISO 8601 date-time (UTC when it has no offset), or ``now`` plus a duration."""
    text = value.strip()
    if text.startswith("P"):
        try:
            return now + parse_duration(text, where=what, element=None)
        except InvalidDefinition as exc:
            raise ExpressionEvalError(str(exc)) from None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ExpressionEvalError(f"{what}: {value!r} is not a date; {_DATE_HINT}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
