"""Camunda Forms (``.form`` JSON files, as Camunda Modeler saves them) deployed with the
process: found for a task's ``camunda:formRef`` or ``formKey="camunda-forms:deployment:x.form"``,
shown as inputs, and a submission checked against them.

The engine knows such a form only by its reference, so the checks live here: a required
field, a number, ``min``/``max``, ``minLength``/``maxLength``, ``pattern`` and a value among a
select's or radio's options. The common components are shown: textfield, textarea, number,
checkbox, checklist, select, radio, datetime, and text (static); a group's components are
shown in its place; other kinds are left out (their keys are not submitted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from starlette.datastructures import FormData

from bpm.api import Engine, NotFound

DEPLOYMENT_KEY = "camunda-forms:deployment:"
INPUTS = frozenset(
    {"textfield", "textarea", "number", "checkbox", "checklist", "select", "radio", "datetime"}
)
#: A pattern longer than this is not applied (a form's regex runs on the server).
MAX_PATTERN = 200


@dataclass(frozen=True)
class Component:
    """One shown component. ``options``: ``(value, label)`` of a select, radio, checklist."""

    type: str
    key: str
    label: str
    value: Any
    required: bool = False
    options: tuple[tuple[str, str], ...] = ()
    text: str = ""
    subtype: str = ""

    def shows(self, option: str) -> bool:
        if isinstance(self.value, list):
            return option in [str(v) for v in self.value]
        return self.value is not None and str(self.value) == option


def _load(raw: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("components"), list) else None


def find(engine: Engine, form: Mapping[str, Any] | None, definition_id: UUID | str) -> Any:
    """The Camunda Form a task's or start event's ``form`` names, or None when it names
    none (another kind of form key, or no form); ``NotFound`` when it names one that was not
    deployed. The engine finds the file (``Engine.deployed_form``), as ``deployed-form``."""
    if not form:
        return None
    key, ref = form.get("key"), form.get("ref")
    names_one = isinstance(key, str) and key.startswith(DEPLOYMENT_KEY)
    if not names_one and not isinstance(ref, Mapping):
        return None
    found = engine.deployed_form(form, definition_id)
    doc = _load(found.content)
    if doc is None:
        raise NotFound(f"form {found.name!r} is not a Camunda Form (a .form file's JSON)")
    return doc


def _flat(components: Sequence[Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for c in components:
        if not isinstance(c, Mapping):
            continue
        if c.get("type") == "group" and isinstance(c.get("components"), list):
            out.extend(_flat(c["components"]))
        else:
            out.append(c)
    return out


def components(doc: Mapping[str, Any], values: Mapping[str, Any]) -> list[Component]:
    """What the form shows, with ``values`` (the variables) else each default."""
    out = []
    for c in _flat(doc.get("components", [])):
        kind = str(c.get("type", ""))
        if kind == "text":
            out.append(Component("text", "", "", None, text=str(c.get("text", ""))))
            continue
        key = c.get("key")
        if kind not in INPUTS or not isinstance(key, str) or not key:
            continue
        validate = _validate(c)
        options = tuple(
            (str(v.get("value")), str(v.get("label", v.get("value"))))
            for v in c.get("values") or []
            if isinstance(v, Mapping)
        )
        out.append(
            Component(
                kind,
                key,
                str(c.get("label") or key),
                values.get(key, c.get("defaultValue")),
                bool(validate.get("required")),
                options,
                subtype=str(c.get("subtype") or ""),
            )
        )
    return out


def _rules(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(c["key"]): _validate(c)
        for c in _flat(doc.get("components", []))
        if isinstance(c.get("key"), str)
    }


def _validate(component: Mapping[str, Any]) -> Mapping[str, Any]:
    rules = component.get("validate")
    return rules if isinstance(rules, Mapping) else {}


def _number(raw: str) -> int | float | None:
    try:
        return int(raw)
    except ValueError:
        try:
            return float(raw)
        except ValueError:
            return None


def read(doc: Mapping[str, Any], form: FormData) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The variables a submission sets, and the problems by component key (none: valid)."""
    values: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    rules = _rules(doc)
    for c in components(doc, {}):
        if c.type == "text":
            continue
        rule, wrong = rules.get(c.key, {}), problems.setdefault(c.key, [])
        if c.type == "checkbox":
            values[c.key] = form.get(c.key) == "true"
            continue
        if c.type == "checklist":
            picked = [str(v) for v in form.getlist(c.key)]
            wrong += [f"{v!r} is not an option" for v in picked if v not in dict(c.options)]
            if c.required and not picked:
                wrong.append(f"{c.label} is required")
            values[c.key] = picked
            continue
        raw = str(form.get(c.key) or "").strip()
        if not raw:
            if c.required:
                wrong.append(f"{c.label} is required")
            continue
        wrong += _problems(c, rule, raw)
        values[c.key] = _number(raw) if c.type == "number" else raw
    return values, {k: v for k, v in problems.items() if v}


def _problems(c: Component, rule: Mapping[str, Any], raw: str) -> list[str]:
    wrong = []
    if c.options and c.type in ("select", "radio") and raw not in dict(c.options):
        wrong.append(f"{raw!r} is not an option")
    if c.type == "number":
        number = _number(raw)
        if number is None:
            return [f"{c.label} must be a number"]
        if isinstance(rule.get("min"), int | float) and number < rule["min"]:
            wrong.append(f"{c.label} must be at least {rule['min']}")
        if isinstance(rule.get("max"), int | float) and number > rule["max"]:
            wrong.append(f"{c.label} must be at most {rule['max']}")
    if isinstance(rule.get("minLength"), int) and len(raw) < rule["minLength"]:
        wrong.append(f"{c.label} needs at least {rule['minLength']} characters")
    if isinstance(rule.get("maxLength"), int) and len(raw) > rule["maxLength"]:
        wrong.append(f"{c.label} takes at most {rule['maxLength']} characters")
    pattern = rule.get("pattern")
    if isinstance(pattern, str) and len(pattern) <= MAX_PATTERN:
        try:
            if re.fullmatch(pattern, raw) is None:
                wrong.append(f"{c.label} must match {pattern}")
        except re.error:
            pass  # a pattern Python cannot read checks nothing
    return wrong
