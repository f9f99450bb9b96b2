"""Wait states from the command line: user tasks (``tasks``, ``claim``, ``unclaim``,
``complete``) and messages (``correlate``).

Completing a task or correlating a message moves tokens on. Embedded mode has no background
worker, so, as with ``bpm retry``, the work that follows runs in this command; with
``BPM_BROKER_URL`` it goes to the Celery workers and the state printed is the one found at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.commands.inspect import form_summary, names, when
from bpm.cli.lookups import instance_of_token, resolve_instance, token_of_task
from bpm.cli.parsing import (
    IMPORT_OPTION,
    INSTANCE_ID,
    VAR_OPTION,
    VARS_OPTION,
    IdPrefix,
    IdType,
    collect_variables,
)
from bpm.cli.runtime import broker_mode, distributed, embedded, import_handlers
from bpm.engine.engine import Engine
from bpm.store import instances

USER_TASK_ID = IdType("a user task id")
IDLE_LIMIT = 60.0


@click.command()
@click.option("--assignee", metavar="USER", help="Only tasks claimed by USER.")
@click.option("--group", metavar="GROUP", help="Only tasks that GROUP is a candidate group of.")
@click.option(
    "--candidate-user", metavar="USER", help="Only tasks that USER is a candidate user of."
)
@click.option(
    "--instance",
    "instance_id",
    type=INSTANCE_ID,
    metavar="ID",
    help="Only tasks of this instance (its id, or a unique start of it).",
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def tasks(
    assignee: str | None,
    group: str | None,
    candidate_user: str | None,
    instance_id: UUID | IdPrefix | None,
    limit: int,
    as_json: bool,
) -> None:
    """List open user tasks, oldest first (claim with bpm claim, finish with bpm complete).

    --json shows each task's form too (its key or reference, and its fields)."""
    with embedded() as rt:
        iid = resolve_instance(rt.engine, instance_id) if instance_id else None
        found = rt.engine.user_tasks(
            assignee=assignee,
            group=group,
            candidate_user=candidate_user,
            instance_id=iid,
            limit=limit,
        )
    if as_json:
        render.emit_json(found)
        return
    render.table(
        [
            *("id", "instance", "node", "assignee", "candidate groups", "candidate users"),
            *("priority", "due", "form", "created"),
        ],
        [
            [
                t["id"],
                t["instance_id"],
                t["node_id"],
                t["assignee"],
                names(t["candidate_groups"]),
                names(t["candidate_users"]),
                t["priority"],
                when(t["due_date"]) if t["due_date"] else None,
                form_summary(t["form"]),
                when(t["created_at"]),
            ]
            for t in found
        ],
        empty="(no open user tasks)",
    )


@click.command()
@click.argument("task_id", type=USER_TASK_ID)
@click.argument("user")
def claim(task_id: UUID, user: str) -> None:
    """Claim an open user task for USER; a task someone else holds must be unclaimed first."""
    with embedded() as rt:
        rt.engine.claim(task_id, user)
    render.line(f"user task {task_id} claimed by {user}")


@click.command()
@click.argument("task_id", type=USER_TASK_ID)
def unclaim(task_id: UUID) -> None:
    """Release a claimed user task so that anyone in its candidate groups can claim it."""
    with embedded() as rt:
        rt.engine.unclaim(task_id)
    render.line(f"user task {task_id} unclaimed")


@click.command()
@click.argument("task_id", type=USER_TASK_ID)
@VAR_OPTION
@VARS_OPTION
@click.option(
    "--user",
    metavar="USER",
    help="Who completes it; refused when the task is claimed by someone else.",
)
@IMPORT_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print {task_id, instance_id, state}.")
def complete(
    task_id: UUID,
    var_items: tuple[str, ...],
    vars_json: str | None,
    user: str | None,
    imports: tuple[str, ...],
    as_json: bool,
) -> None:
    """Complete an open user task, writing the variables given, and move its token on.

    In embedded mode the work that follows runs in this process (up to 60 s), as with
    bpm retry; with BPM_BROKER_URL it is sent to the Celery workers.
    """
    values = collect_variables(vars_json, var_items)

    def act(engine: Engine) -> list[UUID]:
        engine.complete_user_task(task_id, values, user=user)
        return [token_of_task(engine, task_id)]

    [moved] = _move_on(imports, act)
    if as_json:
        render.emit_json(
            {"task_id": str(task_id), "instance_id": moved["instance_id"], "state": moved["state"]}
        )
        return
    render.line(f"completed user task {task_id} of instance {moved['instance_id']}")
    render.line(f"state: {moved['state']}", style=render.state_style(moved["state"]))


@click.command()
@click.argument("message")
@click.option("--business-key", metavar="BK", help="Deliver to the instance(s) with this key.")
@click.option(
    "--instance",
    "instance_id",
    type=INSTANCE_ID,
    metavar="ID",
    help="Deliver to this instance (its id, or a unique start of it).",
)
@VAR_OPTION
@VARS_OPTION
@click.option(
    "--all",
    "all_waiting",
    is_flag=True,
    help="Wake every token waiting for MESSAGE, not only a single one.",
)
@click.option(
    "--start-only",
    "start_only",
    is_flag=True,
    help="Only start an instance at a message start event; never wake a waiting token.",
)
@click.option(
    "--idempotency-key",
    metavar="KEY",
    help="A message start starts one instance per key (else per business key).",
)
@IMPORT_OPTION
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {message, woken: [{token_id, instance_id, state}]}.",
)
def correlate(
    message: str,
    business_key: str | None,
    instance_id: UUID | IdPrefix | None,
    var_items: tuple[str, ...],
    vars_json: str | None,
    all_waiting: bool,
    start_only: bool,
    idempotency_key: str | None,
    imports: tuple[str, ...],
    as_json: bool,
) -> None:
    """Deliver MESSAGE to the token waiting for it in the instance named by --business-key or
    --instance (naming neither: in whichever instance waits for it), and move that token on;
    when none waits (or with --start-only) and no --instance is given, start an instance at
    the message start event waiting for MESSAGE (with the business key, once per key).

    Nothing taking the message is an error, and so are several waiting tokens unless --all
    is given: in both cases nothing changes. The work that follows runs as with bpm
    complete.
    """
    if business_key is not None and instance_id is not None:
        raise click.UsageError("give at most one of --business-key and --instance")
    values = collect_variables(vars_json, var_items)

    def act(engine: Engine) -> list[UUID]:
        iid = resolve_instance(engine, instance_id) if instance_id is not None else None
        return engine.correlate(
            message,
            business_key=business_key,
            instance_id=iid,
            variables=values,
            all_waiting=all_waiting,
            start_messages_only=start_only,
            idempotency_key=idempotency_key,
        )

    woken = _move_on(imports, act)
    if as_json:
        render.emit_json({"message": message, "woken": woken})
        return
    for item in woken:
        render.line(
            f"message {message!r} woke token {item['token_id']} of instance {item['instance_id']}"
        )
    states = {item["instance_id"]: item["state"] for item in woken}
    for iid, state in states.items():
        label = "state" if len(states) == 1 else f"state of {iid}"
        render.line(f"{label}: {state}", style=render.state_style(state))


def _move_on(imports: Sequence[str], act: Callable[[Engine], list[UUID]]) -> list[dict[str, Any]]:
    """Run ``act`` (which returns the token ids it moved), then, in embedded mode, the work it
    caused, since nothing else will; returns each token with its instance and that state."""
    if broker_mode():
        with distributed() as engine:
            return _states(engine, act(engine))
    import_handlers(imports)
    with embedded() as rt:
        token_ids = act(rt.engine)
        rt.run_until_idle(timeout=IDLE_LIMIT)
        return _states(rt.engine, token_ids)


def _states(engine: Engine, token_ids: Sequence[UUID]) -> list[dict[str, Any]]:
    out = []
    for token_id in token_ids:
        iid = instance_of_token(engine, token_id)
        with engine.db.transaction() as conn:
            row = instances.get(conn, iid) if iid else None
        out.append(
            {
                "token_id": str(token_id),
                "instance_id": str(iid),
                "state": row.state if row else "UNKNOWN",
            }
        )
    return out
