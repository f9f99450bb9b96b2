"""``bpm credentials``: who may call the HTTP API. A secret is printed once, when it is
made; the database keeps only its hash."""

from __future__ import annotations

import click

from bpm import credentials as creds
from bpm.cli import render
from bpm.clock import SYSTEM_CLOCK
from bpm.states import Role
from bpm.store import Database


@click.group("credentials")
def credentials() -> None:
    """Manage the credentials of the HTTP API (bpm serve)."""


@credentials.command("add")
@click.argument("name")
@click.option(
    "--role",
    required=True,
    type=click.Choice([r.lower() for r in Role]),
    help="worker, starter, viewer or operator.",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="A worker: only these topics (repeat; default all).",
)
@click.option(
    "--process",
    "processes",
    multiple=True,
    metavar="KEY",
    help="A starter: only these process keys (repeat; default all).",
)
@click.option(
    "--user",
    metavar="ID",
    help="The user it acts as on the tasklist (assignee, candidate user; default NAME).",
)
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="ID",
    help="A group of that user: tasks offered to the group are offered to it (repeat).",
)
def add(
    name: str,
    role: str,
    topics: tuple[str, ...],
    processes: tuple[str, ...],
    user: str | None,
    groups: tuple[str, ...],
) -> None:
    """Add a credential and print its secret and bearer token (shown only now)."""
    db = Database()
    try:
        now = SYSTEM_CLOCK.now()
        secret = creds.add(
            db, name, Role(role.upper()), now, topics, processes, user=user, groups=groups
        )
    finally:
        db.dispose()
    render.line(f"credential {name} ({role}) added; its secret is shown only now:")
    render.line(f"  Basic user:   {name}")
    render.line(f"  Basic secret: {secret}")
    render.line(f"  Bearer token: {name}.{secret}")


@credentials.command("list")
def list_command() -> None:
    """The credentials and their limits (never a secret)."""
    db = Database()
    try:
        rows = creds.list_all(db)
    finally:
        db.dispose()
    render.table(
        ["name", "role", "topics", "processes", "user", "groups", "created"],
        [
            [
                r.name,
                r.role.lower(),
                ", ".join(r.topics) if r.topics else "all" if r.role == Role.WORKER else "",
                ", ".join(r.processes) if r.processes else "all" if r.role == Role.STARTER else "",
                r.user,
                ", ".join(r.groups),
                r.created_at.isoformat(timespec="seconds"),
            ]
            for r in rows
        ],
    )


@credentials.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Remove a credential; servers refuse it within their credential TTL (10 s by default)."""
    db = Database()
    try:
        creds.remove(db, name)
    finally:
        db.dispose()
    render.line(f"credential {name} removed")
