"""Operator actions: ``retry`` a failed token, ``cancel`` an instance."""

from __future__ import annotations

from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.lookups import instance_of_token
from bpm.cli.parsing import INSTANCE_ID, TOKEN_OR_TASK_ID
from bpm.cli.runtime import embedded, import_handlers, refuse_broker

RETRY_LIMIT = 60.0


@click.command()
@click.argument("token_or_task", type=TOKEN_OR_TASK_ID)
@click.option("--retries", type=click.IntRange(min=1), metavar="N",
              help="Attempts to grant (default: the node's retry policy).")
@click.option("--import", "imports", multiple=True, metavar="MODULE",
              help="Import MODULE first (it registers handlers); adds to BPM_IMPORTS.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {token_id, instance_id, state}.")
def retry(token_or_task: UUID, retries: int | None, imports: tuple[str, ...],
          as_json: bool) -> None:
    """Re-run a FAILED token (given by its id or its task's id) and resolve its incident.

    In embedded mode the retried work runs in this process, as with bpm start.
    """
    refuse_broker("retry a token")
    import_handlers(imports)
    with embedded() as rt:
        token_id = rt.engine.retry(token_or_task, retries)
        rt.run_until_idle(timeout=RETRY_LIMIT)
        instance_id = instance_of_token(rt, token_id)
        state = rt.state(instance_id) if instance_id else "UNKNOWN"
    if as_json:
        render.emit_json({"token_id": str(token_id), "instance_id": str(instance_id),
                          "state": state})
        return
    render.line(f"retried token {token_id} of instance {instance_id}")
    render.line(f"state: {state}", style=render.state_style(state))


@click.command()
@click.argument("instance_id", type=INSTANCE_ID)
def cancel(instance_id: UUID) -> None:
    """Cancel a RUNNING or FAILED instance with all its tokens, tasks and incidents."""
    with embedded() as rt:
        rt.engine.cancel(instance_id)
    render.line(f"cancelled instance {instance_id}")
