"""Read-only commands: ``instances``, ``show``, ``trace``, ``incidents``.

``--json`` prints the engine's read models unchanged (``bpm.engine.views``), so scripts see the
same field names as the Python API.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import click

from bpm.cli import paths, render
from bpm.cli.parsing import INSTANCE_ID
from bpm.cli.runtime import embedded

STATES = ("RUNNING", "COMPLETED", "FAILED", "TERMINATED", "CANCELLED")
DETAIL_WIDTH = 90


def _state(value: str | None) -> str | None:
    if value is None or value.upper() in STATES:
        return value.upper() if value else None
    raise click.BadParameter(f"{value!r} is not a state; use one of {', '.join(STATES)}",
                             param_hint="'--state'")


def when(iso: str | None) -> str:
    """An ISO timestamp shortened for a table (UTC, milliseconds)."""
    return iso.replace("T", " ")[:23] if iso else "-"


@click.command()
@click.option("--state", callback=lambda _c, _p, v: _state(v), metavar="STATE",
              help=f"Only this state: {', '.join(STATES)}.")
@click.option("--key", help="Only instances of this process key.")
@click.option("--business-key", help="Only the instance with this business key.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def instances(state: str | None, key: str | None, business_key: str | None, limit: int,
              as_json: bool) -> None:
    """List instances, newest first."""
    with embedded() as rt:
        found = rt.engine.instances(state=state, key=key,
                                    business_key=business_key, limit=limit)
    if as_json:
        render.emit_json(found)
        return
    render.table(["id", "key", "business key", "state", "started", "ended"],
                 [[i["id"], i["key"], i["business_key"], i["state"], when(i["started_at"]),
                   when(i["ended_at"])] for i in found], empty="(no instances)")


@click.command()
@click.argument("instance_id", type=INSTANCE_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the instance as one JSON object.")
def show(instance_id: UUID, as_json: bool) -> None:
    """An instance: its tokens, tasks, user tasks, timers, variables, incidents and its path."""
    with embedded() as rt:
        doc = rt.engine.show(instance_id)
        events = [] if as_json else rt.engine.trace(instance_id)
    if as_json:
        render.emit_json(doc)
        return
    _show_summary(doc)
    _show_parts(doc)
    render.line()
    render.line("path", style="bold")
    for text in paths.render(paths.build(events), render.glyphs()):
        render.line(f"  {text}")


def _show_summary(doc: dict[str, Any]) -> None:
    version = doc.get("definition_version")
    render.key_values([
        ("instance", doc["id"]),
        ("process", f"{doc['key']} version {version}" if version else doc["key"]),
        ("business key", doc["business_key"]), ("state", doc["state"]),
        ("started", when(doc["started_at"])), ("ended", when(doc["ended_at"]))])


def _show_parts(doc: dict[str, Any]) -> None:
    _section("tokens")
    render.table(["id", "node", "state", "waits for", "mode", "parent"],
                 [[t["id"], t["node_id"], t["state"], t["wait_kind"], t["mode"],
                   (t["parent_token_id"] or "-")[:8]] for t in doc["tokens"]])
    work = [t for t in doc["tasks"] if t["kind"] != "USER"]
    people = [t for t in doc["tasks"] if t["kind"] == "USER"]
    _section("tasks")
    render.table(["id", "node", "handler", "state", "attempts", "retries left", "error"],
                 [[t["id"], t["node_id"], t["handler"] or t["topic"], t["state"], t["attempts"],
                   t["retries"], t["error_message"]] for t in work])
    _section("user tasks")
    render.table(["id", "node", "state", "assignee", "candidate groups"],
                 [[t["id"], t["node_id"], t["state"], t["assignee"],
                   ", ".join(t["candidate_groups"] or []) or None] for t in people])
    _section("timers")
    render.table(["node", "fire at", "state", "token"],
                 [[t["node_id"], when(t["fire_at"]), t["state"], t["token_id"]]
                  for t in doc["timers"]])
    _section("variables")
    render.table(["name", "value"], [[k, json.dumps(v)] for k, v in doc["variables"].items()])
    _section("incidents")
    render.table(["token", "node", "kind", "state", "message"],
                 [[i["token_id"], i["node_id"], i["kind"], i["state"], i["message"]]
                  for i in doc["incidents"]])


def _section(title: str) -> None:
    render.line()
    render.line(title, style="bold")


@click.command()
@click.argument("instance_id", type=INSTANCE_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the events as a JSON list.")
def trace(instance_id: UUID, as_json: bool) -> None:
    """The instance's history, in the order it happened."""
    with embedded() as rt:
        events = rt.engine.trace(instance_id)
    if as_json:
        render.emit_json(events)
        return
    render.table(["at", "type", "node", "token", "detail"],
                 [[when(e["at"]), e["type"], e["node_id"], (e.get("token_id") or "-")[:8],
                   _detail(e)] for e in events], empty="(no events)")


def _detail(event: dict[str, Any]) -> str:
    parts = []
    if event.get("from_state") or event.get("to_state"):
        parts.append(f"{event.get('from_state') or '-'}>{event.get('to_state') or '-'}")
    if event.get("data"):
        parts.append(json.dumps(event["data"], separators=(",", ":")))
    text = " ".join(parts)
    return text if len(text) <= DETAIL_WIDTH else text[:DETAIL_WIDTH - 3] + "..."


@click.command()
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def incidents(limit: int, as_json: bool) -> None:
    """Open incidents: failed tokens waiting for an operator (bpm retry, or bpm cancel)."""
    with embedded() as rt:
        found = rt.engine.incidents(limit)
    if as_json:
        render.emit_json(found)
        return
    render.table(["instance", "token", "node", "kind", "message"],
                 [[i["instance_id"], i["token_id"], i["node_id"], i["kind"], i["message"]]
                  for i in found], empty="(no open incidents)")
    if found:
        render.line("retry a failed token with: bpm retry TOKEN_ID; or cancel its instance with: "
                    "bpm cancel INSTANCE_ID")
