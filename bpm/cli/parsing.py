"""Turning command-line text into values: variables, ids.

Problems become ``click.BadParameter`` so they print as one ``error:`` line naming the option.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click

if TYPE_CHECKING:  # click >= 8.2 types ParamType as a generic; older versions are not subscriptable
    _UuidParam = click.ParamType[UUID]
else:
    _UuidParam = click.ParamType


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_or_string(text: str) -> Any:
    """``--var`` values: JSON when the text is valid JSON (``42``, ``true``, ``[1]``), else text.

    ``NaN`` and ``Infinity`` are not JSON, so they stay strings.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return text


def parse_var(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise click.BadParameter(f"{text!r} must look like NAME=VALUE", param_hint="'--var'")
    return name.strip(), json_or_string(value)


def parse_vars_document(text: str) -> dict[str, Any]:
    """``--vars``: a JSON object, given inline or as ``@FILE``."""
    source = "--vars"
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise click.BadParameter(f"cannot read {path}: {exc.strerror}",
                                     param_hint="'--vars'") from exc
        source = str(path)
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise click.BadParameter(f"{source} is not valid JSON: {exc}",
                                 param_hint="'--vars'") from exc
    if not isinstance(doc, dict):
        raise click.BadParameter(f"must be a JSON object, got {type(doc).__name__}",
                                 param_hint="'--vars'")
    return doc


def collect_variables(vars_json: str | None, var_items: Sequence[str]) -> dict[str, Any]:
    """``--vars`` first, then each ``--var`` on top of it (later wins)."""
    values = parse_vars_document(vars_json) if vars_json is not None else {}
    for item in var_items:
        name, value = parse_var(item)
        values[name] = value
    return values


class IdType(_UuidParam):
    """A UUID argument, with an error that says which kind of id was expected."""

    name = "ID"

    def __init__(self, what: str) -> None:
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> UUID:
        if isinstance(value, UUID):
            return value
        try:
            return UUID(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not {self.what} (a UUID such as "
                      f"3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77)", param, ctx)


INSTANCE_ID = IdType("an instance id")
TOKEN_OR_TASK_ID = IdType("a token or task id")
INCIDENT_OR_TOKEN_ID = IdType("an incident or token id")
