"""Turning command-line text into values: variables, ids.

Problems become ``click.BadParameter`` so they print as one ``error:`` line naming the option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
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
            raise click.BadParameter(
                f"cannot read {path}: {exc.strerror}", param_hint="'--vars'"
            ) from exc
        source = str(path)
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise click.BadParameter(
            f"{source} is not valid JSON: {exc}", param_hint="'--vars'"
        ) from exc
    if not isinstance(doc, dict):
        raise click.BadParameter(
            f"must be a JSON object, got {type(doc).__name__}", param_hint="'--vars'"
        )
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

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> UUID:
        if isinstance(value, UUID):
            return value
        try:
            return UUID(str(value).strip())
        except ValueError:
            self.fail(
                f"{value!r} is not {self.what} (a UUID such as "
                f"3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77)",
                param,
                ctx,
            )


@dataclass(frozen=True)
class IdPrefix:
    """The start of an instance id, as typed (``8a9e554a``, ``8a9e554a-a3d0``).

    Tables print ids shortened to 8 characters (the demo's summary, ``bpm history``), so the
    commands that take an instance id accept any unique start of one. Parsing cannot tell
    whether it is unique: the command resolves it against the database
    (``bpm.cli.lookups.resolve_instance``).
    """

    text: str

    @property
    def digits(self) -> str:
        """The hexadecimal digits, without the dashes."""
        return self.text.replace("-", "")


#: The start of a UUID in its canonical form: hex digits, with dashes where it has them.
_CANONICAL_PREFIX = re.compile(
    r"[0-9a-f]{1,8}|[0-9a-f]{8}-(?:[0-9a-f]{0,4}|[0-9a-f]{4}-(?:[0-9a-f]{0,4}"
    r"|[0-9a-f]{4}-(?:[0-9a-f]{0,4}|[0-9a-f]{4}-[0-9a-f]{0,11})))"
)
_EXAMPLE_UUID = "3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77"

if TYPE_CHECKING:
    _InstanceParam = click.ParamType[UUID | IdPrefix]
else:
    _InstanceParam = click.ParamType


class InstanceIdType(_InstanceParam):
    """An instance id, whole (a ``UUID``) or shortened to a unique start of it (``IdPrefix``).

    A prefix is accepted in the canonical form only (dashes where a UUID has them), so what is
    typed can be compared with the ids the tables print.
    """

    name = "ID"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> UUID | IdPrefix:
        if isinstance(value, UUID | IdPrefix):
            return value
        text = str(value).strip()
        try:
            return UUID(text)
        except ValueError:
            pass
        if _CANONICAL_PREFIX.fullmatch(text.lower()):
            return IdPrefix(text.lower())
        self.fail(
            f"{value!r} is not an instance id (a UUID such as {_EXAMPLE_UUID}, or a "
            f"unique start of one such as {_EXAMPLE_UUID[:8]})",
            param,
            ctx,
        )


INSTANCE_ID = InstanceIdType()
TOKEN_OR_TASK_ID = IdType("a token or task id")
INCIDENT_OR_TOKEN_ID = IdType("an incident or token id")


#: ``--import MODULE``, for every command that may run handlers in this process.
IMPORT_OPTION = click.option(
    "--import",
    "imports",
    multiple=True,
    metavar="MODULE",
    help="Import MODULE first (it registers handlers); adds to BPM_IMPORTS.",
)


#: ``--var NAME=VALUE`` and ``--vars JSON``, for every command that takes variables
#: (``collect_variables`` reads them).
VAR_OPTION = click.option(
    "--var",
    "var_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="A variable; VALUE is parsed as JSON when it is valid JSON, else a string.",
)
VARS_OPTION = click.option(
    "--vars",
    "vars_json",
    metavar="JSON",
    help="Variables as a JSON object (or @FILE); --var entries override it.",
)
