"""Command-line values: ``--var`` text, ``--vars`` documents, ids."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import click
import pytest

from bpm.cli.errors import one_line
from bpm.cli.parsing import (
    INSTANCE_ID,
    IdPrefix,
    collect_variables,
    json_or_string,
    parse_var,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("4.5", 4.5),
        ("true", True),
        ("null", None),
        ('"q"', "q"),
        ("[1]", [1]),
        ('{"a": 1}', {"a": 1}),
        ("hello", "hello"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("", ""),
        ("007", "007"),
        ("1 2", "1 2"),
    ],
)
def test_json_or_string(text: str, value: object) -> None:
    assert json_or_string(text) == value


def test_parse_var__splits_at_the_first_equals_sign() -> None:
    assert parse_var("expr=a=b") == ("expr", "a=b")
    with pytest.raises(click.BadParameter):
        parse_var("novalue")


def test_collect_variables__file_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "vars.json"
    path.write_text('{"a": 1, "b": 2}')
    assert collect_variables(f"@{path}", ["b=3", "c=x"]) == {"a": 1, "b": 3, "c": "x"}


def test_instance_id__a_uuid_or_the_start_of_one() -> None:
    """A whole id is a UUID; a start of one, in the canonical form the tables print, is left
    for the command to resolve against the database (``bpm.cli.lookups.resolve_instance``)."""
    text = "3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77"
    assert INSTANCE_ID.convert(text, None, None) == UUID(text)
    assert INSTANCE_ID.convert("3f2c", None, None) == IdPrefix("3f2c")
    assert INSTANCE_ID.convert(" 3F2C9A4E-7B ", None, None) == IdPrefix("3f2c9a4e-7b")
    assert IdPrefix("3f2c9a4e-7b").digits == "3f2c9a4e7b"
    for bad in ("3f2c-9a4e", "3f2c9a4e7b", "3f2g", "3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77a", ""):
        with pytest.raises(click.BadParameter, match="not an instance id"):
            INSTANCE_ID.convert(bad, None, None)


def test_one_line__joins_lines() -> None:
    assert one_line("first\n  second\n\n") == "first second"
