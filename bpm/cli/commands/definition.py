"""``bpm definition KEY``: what a deployed definition declares, node by node."""

from __future__ import annotations

import json
from typing import Any

import click

from bpm.cli import render
from bpm.cli.runtime import embedded

#: Shown in the nodes table's "declares" column, in this order.
_SHOWN = (
    *("handler", "topic", "resultVariable", "assignee", "candidate_groups", "candidate_users"),
    *("due_date", "follow_up_date", "form"),
)


@click.command()
@click.argument("key")
@click.option("--version", type=click.IntRange(min=1), help="This version instead of the latest.")
@click.option("--json", "as_json", is_flag=True, help="Print the definition as one JSON object.")
def definition(key: str, version: int | None, as_json: bool) -> None:
    """A deployed definition: its properties, documentation, forms and who may start it, and
    each node's type, implementation and properties (the latest version unless --version)."""
    with embedded() as rt:
        doc = rt.engine.definition(key, version)
    if as_json:
        render.emit_json(doc)
        return
    render.key_values(
        [
            ("process", f"{doc['key']} version {doc['version']}"),
            ("name", doc["name"]),
            ("id", doc["id"]),
            ("deployed", doc["created_at"]),
            *[(k, _text(doc[k])) for k in ("versionTag", "documentation") if k in doc],
            *[
                (k.replace("_", " "), ", ".join(doc[k]))
                for k in ("candidate_starter_groups", "candidate_starter_users")
                if k in doc
            ],
            *[(f"property {k}", v) for k, v in doc.get("properties", {}).items()],
        ]
    )
    render.line()
    render.table(
        ["node", "type", "name", "declares", "properties"],
        [
            [
                n["id"],
                n["type"],
                n.get("name", ""),
                "; ".join(f"{k}={_text(n[k])}" for k in _SHOWN if k in n),
                ", ".join(f"{k}={v}" for k, v in n.get("properties", {}).items()),
            ]
            for n in doc["nodes"]
        ],
        empty="(no nodes)",
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
