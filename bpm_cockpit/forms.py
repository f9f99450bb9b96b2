"""Generated forms: the fields of a user task's or start event's ``camunda:formData`` as HTML
inputs, and a submitted HTML form read back into typed variables for the engine, which
checks them against the form (``FormInvalid``: one problem per field and rule)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData


@dataclass(frozen=True)
class Field:
    """One input of a generated form. ``choices``: an enum's ``(id, name)`` pairs."""

    id: str
    label: str
    type: str
    value: Any
    required: bool
    readonly: bool
    choices: tuple[tuple[str, str], ...] = ()

    @property
    def shown(self) -> str:
        """The value as the input shows it."""
        if self.value is None:
            return ""
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return str(self.value)


def fields_of(form: Mapping[str, Any] | None, values: Mapping[str, Any]) -> list[Field]:
    """The inputs of ``form`` (a task's or node's stored form), showing ``values`` (the
    variables, else each field's default)."""
    out = []
    for f in (form or {}).get("fields", []):
        rules = f.get("validation") or {}
        value = values.get(f["id"], f.get("defaultValue"))
        if isinstance(value, str) and value.startswith("${"):
            value = None  # an expression default the engine evaluates, not a value to show
        choices = tuple((v["id"], v.get("name") or v["id"]) for v in f.get("values", []))
        out.append(
            Field(
                f["id"],
                f.get("label") or f["id"],
                f.get("type", "string"),
                value,
                "required" in rules,
                "readonly" in rules,
                choices,
            )
        )
    return out


def _typed(kind: str, raw: str) -> Any:
    """A submitted text as the field's type; text that is not of the type stays text, so the
    engine's check names the field and what is wrong with it."""
    if raw == "":
        return None
    if kind == "long":
        try:
            return int(raw)
        except ValueError:
            return raw
    return raw


def submitted(fields: Sequence[Field], form: FormData) -> dict[str, Any]:
    """The variables an HTML form submits: an unticked checkbox is false; an empty input is
    not submitted (a required field then fails the engine's check)."""
    out: dict[str, Any] = {}
    for f in fields:
        if f.readonly:
            continue
        if f.type == "boolean":
            out[f.id] = form.get(f.id) == "true"
            continue
        value = _typed(f.type, str(form.get(f.id) or "").strip())
        if value is not None:
            out[f.id] = value
    return out


def problems_by_field(problems: Sequence[str]) -> dict[str, list[str]]:
    """The engine's problem lines (``field 'x' ...``) by field id; others under ``""``."""
    out: dict[str, list[str]] = {}
    for line in problems:
        field = line.split("'")[1] if line.startswith("field '") and line.count("'") >= 2 else ""
        out.setdefault(field, []).append(line)
    return out
