"""``bpm decide KEY``: evaluate a deployed DMN decision from the shell; nothing is stored."""

from __future__ import annotations

import json

import click

from bpm.cli import render
from bpm.cli.parsing import VAR_OPTION, VARS_OPTION, collect_variables
from bpm.cli.runtime import embedded


@click.command()
@click.argument("key")
@VAR_OPTION
@VARS_OPTION
@click.option("--version", type=click.IntRange(min=1), help="This version instead of the latest.")
@click.option("--json", "as_json", is_flag=True, help="Print the evaluation as one JSON object.")
def decide(
    key: str, var_items: tuple[str, ...], vars_json: str | None, version: int | None, as_json: bool
) -> None:
    """Evaluate decision KEY (a DMN decision's id, deployed with bpm deploy FILE.dmn) over
    the variables, and print the matched rules and the result list."""
    values = collect_variables(vars_json, var_items)
    with embedded() as rt:
        doc = rt.engine.decide(key, values, version=version)
    if as_json:
        render.emit_json(doc)
        return
    render.key_values(
        [
            ("decision", f"{doc['decision']} version {doc['version']}"),
            ("hit policy", doc["hit_policy"] or "-"),
            *[(f"input {k}", json.dumps(v)) for k, v in doc["inputs"].items()],
            ("matched rules", ", ".join(doc["matched_rules"]) or "(none)"),
        ]
    )
    render.line()
    render.line(json.dumps(doc["result"], ensure_ascii=False, indent=2))
