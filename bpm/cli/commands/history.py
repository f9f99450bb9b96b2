"""``bpm history``: history rows across instances, filtered like ``bpm instances``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.lookups import resolve_instance
from bpm.cli.parsing import INSTANCE_ID, IdPrefix
from bpm.cli.runtime import embedded
from bpm.errors import InvalidOperation
from bpm.states import InstanceState

STATES = tuple(state.value for state in InstanceState)


def parse_time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidOperation(
            f"{option} {value!r} is not an ISO 8601 time (for example "
            f"2027-01-31 or 2027-01-31T09:00:00Z)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@click.command()
@click.option(
    "--instance",
    "instance_id",
    type=INSTANCE_ID,
    help="Only this instance (its id, or a unique start of it).",
)
@click.option("--business-key", help="Only instances with this business key.")
@click.option("--key", help="Only instances of this process key.")
@click.option("--version", type=click.IntRange(min=1), help="Only this definition version.")
@click.option(
    "--state",
    type=click.Choice(STATES, case_sensitive=False),
    help="Only instances now in this state.",
)
@click.option("--since", metavar="TIME", help="Only events at or after TIME (ISO 8601).")
@click.option("--until", metavar="TIME", help="Only events at or before TIME.")
@click.option(
    "--type",
    "types",
    multiple=True,
    metavar="TYPE",
    help="Only events of this type (repeatable), e.g. TokenFailed.",
)
@click.option("--limit", type=click.IntRange(1, 100_000), default=1000, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def history(
    instance_id: UUID | IdPrefix | None,
    business_key: str | None,
    key: str | None,
    version: int | None,
    state: str | None,
    since: str | None,
    until: str | None,
    types: tuple[str, ...],
    limit: int,
    as_json: bool,
) -> None:
    """History rows of the matching instances, in the order they were written."""
    with embedded() as rt:
        events = rt.engine.history(
            instance_id=resolve_instance(rt.engine, instance_id) if instance_id else None,
            business_key=business_key,
            key=key,
            version=version,
            state=state.upper() if state else None,
            since=parse_time(since, "--since"),
            until=parse_time(until, "--until"),
            types=types,
            limit=limit,
        )
    if as_json:
        render.emit_json(events)
        return
    render.table(
        ["at", "instance", "type", "node", "detail"],
        [
            [
                e["at"].replace("T", " ")[:23],
                e["instance_id"][:8],
                e["type"],
                e["node_id"] or "-",
                json.dumps(e.get("data"))[:60] if e.get("data") else "",
            ]
            for e in events
        ],
        empty="(no events)",
    )
