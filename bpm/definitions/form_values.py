"""Submitted variables checked against a form, and the defaults a form shows.

Every field is checked and every problem reported at once, so a person fixing a submission
sees them all; a refused submission changes nothing. Variables the form does not declare pass
unchecked: a form says what it asks for, not everything a completion may carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bpm.definitions.forms import FieldType, FormField, FormSpec, Rule, literal_default
from bpm.definitions.mappings import Composite
from bpm.errors import FormInvalid
from bpm.expressions import Expression


def shown_defaults(spec: FormSpec, view: Mapping[str, Any]) -> dict[str, Any]:
    """Each field's default as the form shows it, expressions evaluated over ``view``; raises
    the evaluator's errors, which name the field."""
    out: dict[str, Any] = {}
    for f in spec.fields:
        if isinstance(f.default, Expression | Composite):
            value = f.default.evaluate(view)
            read = literal_default(value, f.type) if isinstance(value, str) else None
            out[f.id] = value if read is None else read
        elif f.default is not None:
            out[f.id] = f.default
    return out


def shown_form(spec: FormSpec, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The form as a task holds it: the definition's form with each default as evaluated."""
    doc: dict[str, Any] = json.loads(json.dumps(spec.document))
    for raw in doc.get("fields", []):
        if raw["id"] in defaults:
            raw["defaultValue"] = defaults[raw["id"]]
    return doc


def check_submission(
    spec: FormSpec,
    submitted: Mapping[str, Any],
    seen: Mapping[str, Any],
    defaults: Mapping[str, Any],
    where: str,
) -> dict[str, Any]:
    """Raise ``FormInvalid`` naming every field and rule ``submitted`` breaks; otherwise return
    the defaults to write for fields neither submitted nor already set (``seen``: the
    variables the task sees). A required field is met by a value submitted or already set; a
    readonly field may be submitted only with the value the form shows."""
    problems: list[str] = []
    fill: dict[str, Any] = {}
    for f in spec.fields:
        value = submitted.get(f.id)
        shown = seen.get(f.id, defaults.get(f.id))
        if Rule.READONLY in f.rules and f.id in submitted and value != shown:
            problems.append(
                f"field {f.id!r} is readonly (readonly): the form shows {_text(shown)}, "
                f"got {_text(value)}"
            )
            continue
        if value is None or value == "":
            if Rule.REQUIRED in f.rules and seen.get(f.id) is None:
                problems.append(f"field {f.id!r} is required (required)")
            elif value is None and f.id not in seen and f.id in defaults:
                fill[f.id] = defaults[f.id]
            if value is None:
                continue
        problems += _value_problems(f, value)
    if problems:
        lines = "\n".join(f"  {p}" for p in problems)
        raise FormInvalid(f"{where} breaks its form:\n{lines}", _first_field(problems), problems)
    return fill


def _value_problems(f: FormField, value: Any) -> list[str]:
    """What is wrong with a submitted (not null) value: its type first, then its rules."""
    name = f"field {f.id!r}"
    wrong = _type_problem(f, value)
    if wrong is not None:
        return [f"{name} must be {wrong} ({f.type}), got {_text(value)}"]
    out = []
    for rule, config in f.rules.items():
        if rule in (Rule.MINLENGTH, Rule.MAXLENGTH):
            if not isinstance(value, str):
                out.append(f"{name} must be text for {rule}, got {_text(value)}")
            elif rule is Rule.MINLENGTH and len(value) < config:
                out.append(
                    f"{name} must be at least {config} characters ({rule}), got {len(value)}"
                )
            elif rule is Rule.MAXLENGTH and len(value) > config:
                out.append(f"{name} must be at most {config} characters ({rule}), got {len(value)}")
        elif rule in (Rule.MIN, Rule.MAX):
            if not isinstance(value, int | float) or isinstance(value, bool):
                out.append(f"{name} must be a number for {rule}, got {_text(value)}")
            elif rule is Rule.MIN and value < config:
                out.append(f"{name} must be at least {config} ({rule}), got {_text(value)}")
            elif rule is Rule.MAX and value > config:
                out.append(f"{name} must be at most {config} ({rule}), got {_text(value)}")
    return out


def _type_problem(f: FormField, value: Any) -> str | None:
    """What a value of the field's type looks like, when ``value`` is not one."""
    if f.type == FieldType.STRING and not isinstance(value, str):
        return "text"
    if f.type == FieldType.LONG and (not isinstance(value, int) or isinstance(value, bool)):
        return "a whole number"
    if f.type == FieldType.BOOLEAN and not isinstance(value, bool):
        return "true or false"
    if f.type == FieldType.ENUM and value not in f.values:
        return f"one of {', '.join(f.values)}" if f.values else "no value (the enum has none)"
    if f.type == FieldType.DATE:
        assert f.date_format is not None
        wanted = f"a date in the pattern {f.date_pattern}"
        if not isinstance(value, str):
            return wanted
        try:
            datetime.strptime(value, f.date_format)
        except ValueError:
            return wanted
    return None


def _text(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _first_field(problems: list[str]) -> str | None:
    first = problems[0]
    return first.split("'")[1] if first.count("'") >= 2 else None
