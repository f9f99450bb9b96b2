"""``bpm db upgrade``: the schema is changed on purpose, never as a side effect on PostgreSQL."""

from __future__ import annotations

import click

from bpm.cli import render
from bpm.store import Database
from bpm.store.migrate import current_revision, head_revision, upgrade


@click.group()
def db() -> None:
    """Manage the database schema."""


@db.command("upgrade")
def upgrade_command() -> None:
    """Apply the migrations to BPM_DATABASE_URL (idempotent)."""
    database = Database()
    try:
        database.check_reachable()
        before = current_revision(database)
        upgrade(database)
        after = current_revision(database)
    finally:
        database.dispose()
    if before == after:
        render.line(f"{database.safe_url} is already at revision {after} (head)")
    else:
        render.line(
            f"{database.safe_url} upgraded from {before or 'an empty schema'} to "
            f"revision {after} (head {head_revision(database)})"
        )
