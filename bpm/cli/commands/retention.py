"""``bpm cleanup``: delete ended instances past their history time to live, by hand."""

from __future__ import annotations

import click

from bpm.cli import render
from bpm.cli.runtime import embedded
from bpm.engine.operations import retention


@click.command()
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"dry_run", "instances", "default_ttl_days", "rows"}.',
)
def cleanup(dry_run: bool, as_json: bool) -> None:
    """Delete ended instances past their time to live, with their history.

    An instance that is COMPLETED, TERMINATED or CANCELLED is deleted, with every row of it,
    once its definition's historyTimeToLive has passed since it ended; definitions without
    one use BPM_HISTORY_TTL_DAYS, and without that their instances are kept. RUNNING and
    FAILED instances are never touched. Deletes in small batches, each its own transaction,
    until nothing is due; beat runs the same job daily.
    """
    default_ttl = retention.ttl_from_env()
    rows: dict[str, int] = {}
    with embedded() as rt:
        now = rt.engine.clock.now()
        if dry_run:
            count = retention.due(rt.engine.core, now, default_ttl=default_ttl)
        else:
            count = 0
            while True:
                swept = retention.sweep(rt.engine.core, now, default_ttl=default_ttl)
                count += swept.deleted
                for table, n in swept.rows.items():
                    rows[table] = rows.get(table, 0) + n
                if not swept.more or not swept.deleted:
                    break
    if as_json:
        days = None if default_ttl is None else default_ttl.total_seconds() / 86400
        render.emit_json(
            {"dry_run": dry_run, "instances": count, "default_ttl_days": days, "rows": rows}
        )
        return
    noun = "instance" if count == 1 else "instances"
    if dry_run:
        render.line(
            f"would delete {count} ended {noun} past their time to live (dry run: nothing deleted)"
        )
    else:
        render.line(
            f"deleted {count} ended {noun} past their time to live"
            + (f" ({sum(rows.values())} rows)" if rows else "")
        )
