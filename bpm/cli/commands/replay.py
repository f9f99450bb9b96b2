"""``bpm replay``: rebuild instances from history alone, and compare with the tables."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.commands.history import parse_time
from bpm.cli.lookups import resolve_instance
from bpm.cli.parsing import INSTANCE_ID, IdPrefix
from bpm.cli.runtime import embedded
from bpm.engine.operations import replay as replaying
from bpm.errors import InvalidOperation


def _point(value: str | None) -> int | datetime | None:
    """An event id (an integer from ``bpm trace``) or an ISO 8601 instant."""
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    try:
        return parse_time(value, "--as-of")
    except InvalidOperation:
        raise InvalidOperation(
            f"--as-of {value!r} is neither an event id nor an ISO 8601 "
            f"time (for example 2027-01-31T09:00:00Z)"
        ) from None


@click.command()
@click.argument("instance_id", type=INSTANCE_ID, required=False)
@click.option(
    "--check",
    is_flag=True,
    help="Compare the rebuilt state with the runtime tables; exit 1 on differences.",
)
@click.option("--all", "every", is_flag=True, help="With --check: every instance.")
@click.option("--since", metavar="TIME", help="With --all: instances started since TIME.")
@click.option(
    "--as-of",
    "as_of",
    metavar="EVENT_ID|TIME",
    help="Stop the replay at this event id (see bpm trace) or instant.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def replay(
    instance_id: UUID | IdPrefix | None,
    check: bool,
    every: bool,
    since: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Rebuild an instance's tokens, tasks, timers, variables and incidents from its history.

    With --check, print every difference from the runtime tables (there should be none).
    INSTANCE_ID may be shortened to any unique start of it (the 8 characters tables print).
    """
    if every and (instance_id is not None or not check):
        raise click.UsageError("--all goes with --check and no INSTANCE_ID")
    if not every and instance_id is None:
        raise click.UsageError("give an INSTANCE_ID, or --check --all")
    with embedded() as rt:
        if every:
            start = _point(since)
            summary = replaying.check_all(
                rt.engine.core, since=start if isinstance(start, datetime) else None
            )
            _summary(summary, as_json)
            return
        assert instance_id is not None
        iid = resolve_instance(rt.engine, instance_id)
        if check:
            found = replaying.check(rt.engine.core, iid)
            _differences(iid, found, as_json)
            return
        point = _point(as_of)
        state = (
            replaying.as_of(rt.engine.core, iid, point)
            if point is not None
            else replaying.rebuild(replaying.events_of(rt.engine.core, iid))
        )
    if as_json:
        render.emit_json(state.as_dict())
        return
    _print_state(state)


def _differences(instance_id: UUID, found: list[str], as_json: bool) -> None:
    if as_json:
        render.emit_json({"instance_id": str(instance_id), "differences": found})
    elif not found:
        render.line(f"instance {instance_id}: history and tables agree")
    else:
        render.line(f"instance {instance_id}: {len(found)} difference(s)", style="red")
        for line in found:
            render.line(f"  {line}")
    if found:
        raise SystemExit(1)


def _summary(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        render.emit_json(summary)
    else:
        render.line(
            f"checked {summary['checked']} instance(s): "
            f"{summary['with_differences']} with differences"
        )
        for iid, lines in summary["differences"].items():
            render.line(f"instance {iid}:", style="red")
            for line in lines:
                render.line(f"  {line}")
    if summary["with_differences"]:
        raise SystemExit(1)


def _print_state(state: replaying.State) -> None:
    render.line(f"instance: {state.instance.get('state', '(not started)')}")
    render.table(
        ["token", "node", "state", "mode"],
        [[k[:8], v["node_id"], v["state"], v["mode"]] for k, v in state.tokens.items()],
        empty="(no tokens)",
    )
    render.table(
        ["task", "node", "state"],
        [[k[:8], v["node_id"], v["state"]] for k, v in state.tasks.items()],
        empty="(no tasks)",
    )
    if state.timers:
        render.table(
            ["timer", "node", "fire at", "state"],
            [[k[:8], v["node_id"], v["fire_at"], v["state"]] for k, v in state.timers.items()],
        )
    if state.incidents:
        render.table(
            ["incident", "node", "state"],
            [[k[:8], v["node_id"], v["state"]] for k, v in state.incidents.items()],
        )
    render.line(f"variables: {state.variables}")
    if state.local_variables:
        render.table(
            ["scope", "token", "local variables"],
            [
                [scope.split("@", 1)[1], scope.split("@", 1)[0][:8], str(values)]
                for scope, values in state.local_variables.items()
            ],
        )
