"""Read-only commands: ``instances``, ``show``, ``trace``, ``incidents``.

``--json`` prints the engine's read models unchanged (``bpm.engine.operations.views``), so
scripts see the same field names as the Python API. ``trace --diagram`` draws the
definition with the path taken (``bpm.diagram``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import click

from bpm.cli import paths, render
from bpm.cli.commands.history import parse_time
from bpm.cli.errors import fail
from bpm.cli.lookups import resolve_instance
from bpm.cli.parsing import INSTANCE_ID, IdPrefix
from bpm.cli.runtime import embedded
from bpm.states import InstanceState

STATES = tuple(state.value for state in InstanceState)
DETAIL_WIDTH = 90
#: ``trace --out``: the diagram format by file suffix.
DIAGRAM_SUFFIXES = {
    ".svg": ("svg", "SVG"),
    ".mmd": ("mermaid", "Mermaid"),
    ".mermaid": ("mermaid", "Mermaid"),
}


def _state(value: str | None) -> str | None:
    if value is None or value.upper() in STATES:
        return value.upper() if value else None
    raise click.BadParameter(
        f"{value!r} is not a state; use one of {', '.join(STATES)}", param_hint="'--state'"
    )


def when(iso: str | None) -> str:
    """An ISO timestamp shortened for a table (UTC, milliseconds)."""
    return iso.replace("T", " ")[:23] if iso else "-"


#: The user task table of ``bpm show``.
USER_TASK_COLUMNS = [
    *("id", "node", "state", "assignee", "candidate groups", "candidate users"),
    *("priority", "due", "form"),
]


def names(values: list[str] | None) -> str | None:
    return ", ".join(values or []) or None


def form_summary(form: dict[str, Any] | None) -> str | None:
    """A form in one cell: its key or reference, and its field ids."""
    if not form:
        return None
    ref = form.get("ref")
    parts = [form["key"]] if "key" in form else [f"ref {ref['id']}"] if ref else []
    fields = [
        f["id"] + ("*" if "required" in f.get("validation", {}) else "")
        for f in form.get("fields", [])
    ]
    if fields:
        parts.append(f"fields {', '.join(fields)}")
    return "; ".join(parts) or None


@click.command()
@click.option(
    "--state",
    callback=lambda _c, _p, v: _state(v),
    metavar="STATE",
    help=f"Only this state: {', '.join(STATES)}.",
)
@click.option("--key", help="Only instances of this process key.")
@click.option("--version", type=click.IntRange(min=1), help="Only this definition version.")
@click.option("--business-key", help="Only the instance with this business key.")
@click.option("--since", metavar="TIME", help="Only instances alive at or after TIME.")
@click.option("--until", metavar="TIME", help="Only instances started at or before TIME.")
@click.option("--with-incidents", is_flag=True, help="Only instances with open incidents.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def instances(
    state: str | None,
    key: str | None,
    version: int | None,
    business_key: str | None,
    since: str | None,
    until: str | None,
    with_incidents: bool,
    limit: int,
    as_json: bool,
) -> None:
    """List instances, newest first."""
    with embedded() as rt:
        found = rt.engine.find_instances(
            state=state,
            key=key,
            version=version,
            business_key=business_key,
            since=parse_time(since, "--since"),
            until=parse_time(until, "--until"),
            with_open_incidents=with_incidents,
            limit=limit,
        )
    if as_json:
        render.emit_json(found)
        return
    render.table(
        ["id", "key", "business key", "state", "started", "ended"],
        [
            [
                i["id"],
                i["key"],
                i["business_key"],
                i["state"],
                when(i["started_at"]),
                when(i["ended_at"]),
            ]
            for i in found
        ],
        empty="(no instances)",
    )


@click.command()
@click.argument("instance_id", type=INSTANCE_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the instance as one JSON object.")
def show(instance_id: UUID | IdPrefix, as_json: bool) -> None:
    """An instance: its tokens, tasks, user tasks, timers, variables, incidents and its path.

    INSTANCE_ID may be shortened to any unique start of it (the 8 characters tables print).
    """
    with embedded() as rt:
        iid = resolve_instance(rt.engine, instance_id)
        doc = rt.engine.show(iid)
        events = [] if as_json else rt.engine.trace(iid)
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
    render.key_values(
        [
            ("instance", doc["id"]),
            ("process", f"{doc['key']} version {version}" if version else doc["key"]),
            ("business key", doc["business_key"]),
            ("state", doc["state"]),
            ("started", when(doc["started_at"])),
            ("ended", when(doc["ended_at"])),
            *_calls(doc),
        ]
    )


def _calls(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """The links a call activity made: who called this instance, whom it called."""
    out: list[tuple[str, Any]] = []
    if (caller := doc.get("called_by")) is not None:
        out.append(("called by", f"{caller['instance']} (root {caller['root']})"))
    for called in doc.get("called", []):
        out.append(("called", f"{called['instance']} {called['key']} {called['state']}"))
    for sub in doc.get("subscriptions", []):  # what can start or interrupt now
        trigger = (
            sub.get("message")
            or sub.get("error")
            or sub.get("condition")
            or sub.get("timer", {}).get("fire_at")
        )
        out.append(("listens", f"{sub.get('event_subprocess') or sub['boundary']} ({trigger})"))
    return out


def _show_parts(doc: dict[str, Any]) -> None:
    _section("tokens")
    render.table(
        ["id", "node", "state", "waits for", "mode", "parent"],
        [
            [
                t["id"],
                t["node_id"],
                t["state"],
                t["wait_kind"],
                t["mode"],
                (t["parent_token_id"] or "-")[:8],
            ]
            for t in doc["tokens"]
        ],
    )
    work = [t for t in doc["tasks"] if t["kind"] != "USER"]
    people = [t for t in doc["tasks"] if t["kind"] == "USER"]
    _section("tasks")
    _work_table(work)
    _section("user tasks")
    render.table(
        USER_TASK_COLUMNS,
        [
            [
                t["id"],
                t["node_id"],
                t["state"],
                t["assignee"],
                names(t["candidate_groups"]),
                names(t["candidate_users"]),
                t["priority"],
                when(t["due_date"]) if t["due_date"] else None,
                form_summary(t["form"]),
            ]
            for t in people
        ],
    )
    _section("timers")
    render.table(
        ["node", "fire at", "state", "token"],
        [[t["node_id"], when(t["fire_at"]), t["state"], t["token_id"]] for t in doc["timers"]],
    )
    _section("variables")
    render.table(["name", "value"], [[k, json.dumps(v)] for k, v in doc["variables"].items()])
    if doc.get("local_variables"):
        _section("local variables")
        render.table(
            ["scope", "token", "name", "value"],
            [
                [scope["node_id"], scope["token_id"], name, json.dumps(value)]
                for scope in doc["local_variables"]
                for name, value in scope["variables"].items()
            ],
        )
    _section("incidents")
    render.table(
        ["token", "node", "kind", "state", "message"],
        [
            [i["token_id"], i["node_id"], i["kind"], i["state"], i["message"]]
            for i in doc["incidents"]
        ],
    )


def _work_table(work: list[dict[str, Any]]) -> None:
    """Handler and external tasks. A handler runs in a bpm process, an external task waits for
    a worker of its topic: two different things to look for when a task is stuck, so each
    has its own column, shown when some task has one (an instance of handler tasks only keeps
    the table it always had)."""
    columns = [name for name in ("handler", "topic") if any(t[name] for t in work)]
    render.table(
        ["id", "node", *columns, "state", "attempts", "retries left", "error"],
        [
            [
                t["id"],
                t["node_id"],
                *(t[name] for name in columns),
                t["state"],
                t["attempts"],
                t["retries"],
                t["error_message"],
            ]
            for t in work
        ],
    )


def _section(title: str) -> None:
    render.line()
    render.line(title, style="bold")


@click.command()
@click.argument("instance_id", type=INSTANCE_ID)
@click.option("--json", "as_json", is_flag=True, help="Print the events as a JSON list.")
@click.option(
    "--diagram",
    is_flag=True,
    help="Draw the definition with the path taken (visited, active, failed, "
    "compensated nodes and how often each was taken) as Mermaid text.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write the diagram to FILE instead: SVG for .svg, Mermaid for .mmd or "
    ".mermaid (implies --diagram).",
)
def trace(instance_id: UUID | IdPrefix, as_json: bool, diagram: bool, out: Path | None) -> None:
    """The instance's history, in the order it happened; or, with --diagram, a picture of
    the path it took.

    INSTANCE_ID may be shortened to any unique start of it (the 8 characters tables print).
    """
    if diagram or out is not None:
        _diagram(instance_id, as_json, out)
        return
    with embedded() as rt:
        events = rt.engine.trace(resolve_instance(rt.engine, instance_id))
    if as_json:
        render.emit_json(events)
        return
    render.table(
        ["at", "type", "node", "token", "detail"],
        [
            [when(e["at"]), e["type"], e["node_id"], (e.get("token_id") or "-")[:8], _detail(e)]
            for e in events
        ],
        empty="(no events)",
    )


def _diagram(instance_id: UUID | IdPrefix, as_json: bool, out: Path | None) -> None:
    if as_json:
        raise click.UsageError("--json prints the events, --diagram draws them: use one of them")
    fmt, label = "mermaid", "Mermaid"
    if out is not None:
        if out.suffix.lower() not in DIAGRAM_SUFFIXES:
            raise click.BadParameter(
                f"{str(out)!r}: name an .svg file (SVG) or an .mmd or .mermaid file (Mermaid text)",
                param_hint="'--out'",
            )
        fmt, label = DIAGRAM_SUFFIXES[out.suffix.lower()]
    with embedded() as rt:
        iid = resolve_instance(rt.engine, instance_id)
        text = rt.engine.diagram(iid, fmt)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    click.echo(f"wrote the diagram of instance {iid} to {out} ({label})")


def _detail(event: dict[str, Any]) -> str:
    parts = []
    if event.get("from_state") or event.get("to_state"):
        parts.append(f"{event.get('from_state') or '-'}>{event.get('to_state') or '-'}")
    if event.get("data"):
        parts.append(json.dumps(event["data"], separators=(",", ":")))
    text = " ".join(parts)
    return text if len(text) <= DETAIL_WIDTH else text[: DETAIL_WIDTH - 3] + "..."


@click.command()
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.option(
    "--details",
    "with_details",
    is_flag=True,
    help="Also print each incident's details (a worker's error_details, a traceback).",
)
def incidents(limit: int, as_json: bool, with_details: bool) -> None:
    """Open incidents: failed tokens waiting for an operator (bpm retry, or bpm cancel)."""
    with embedded() as rt:
        found = rt.engine.incidents(limit)
    if as_json:
        render.emit_json(found)
        return
    render.table(
        ["instance", "token", "node", "kind", "message"],
        [[i["instance_id"], i["token_id"], i["node_id"], i["kind"], i["message"]] for i in found],
        empty="(no open incidents)",
    )
    for i in found if with_details else ():
        render.line(f"\nincident {i['id']} (token {i['token_id']}):")
        render.line(i["details"] or "(no details)")
    if found:
        render.line(
            "retry a failed token with: bpm retry TOKEN_ID; or cancel its instance with: "
            "bpm cancel INSTANCE_ID"
        )
