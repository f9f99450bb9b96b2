"""Operator actions: ``retry`` a failed token, ``cancel`` an instance."""

from __future__ import annotations

from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.lookups import instance_of_token
from bpm.cli.parsing import INCIDENT_OR_TOKEN_ID, INSTANCE_ID, TOKEN_OR_TASK_ID
from bpm.cli.runtime import broker_mode, distributed, embedded, import_handlers

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

    In embedded mode the retried work runs in this process, as with bpm start; with
    BPM_BROKER_URL it is sent to the Celery workers.
    """
    if broker_mode():
        with distributed() as engine:
            token_id = engine.retry(token_or_task, retries)
            instance_id = instance_of_token(engine, token_id)
            state = engine.show(instance_id)["state"] if instance_id else "UNKNOWN"
    else:
        import_handlers(imports)
        with embedded() as rt:
            token_id = rt.engine.retry(token_or_task, retries)
            rt.run_until_idle(timeout=RETRY_LIMIT)
            instance_id = instance_of_token(rt.engine, token_id)
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


@click.command()
@click.option("--import", "imports", multiple=True, metavar="MODULE",
              help="Import MODULE first (it registers handlers); adds to BPM_IMPORTS.")
@click.option("--json", "as_json", is_flag=True, help="Print what each scan found.")
def recover(imports: tuple[str, ...], as_json: bool) -> None:
    """Run every stalled-work scan once, as a starting worker does.

    Embedded mode: the scans run here and the work they find runs in this process (import the
    handler modules it needs). Distributed mode: the scans are sent to the Celery workers.
    """
    if broker_mode():
        from importlib import import_module

        sent = import_module("workers.client").send_scans()
        render.line(f"asked the workers to run {', '.join(sent)}")
        return
    import_handlers(imports)
    with embedded() as rt:
        found = rt.recover()
        rt.run_until_idle(timeout=RETRY_LIMIT)
    if as_json:
        render.emit_json(found)
        return
    render.line(", ".join(f"{name.replace('_', ' ')}: {n}" for name, n in found.items()))


@click.command()
@click.argument("incident_or_token", type=INCIDENT_OR_TOKEN_ID)
@click.option("--note", metavar="TEXT", help="Why it is resolved (kept in the history).")
def resolve(incident_or_token: UUID, note: str | None) -> None:
    """Mark an open incident resolved without re-running anything.

    For a failure fixed by hand, typically a compensation that failed during a saga: the
    token stays FAILED, the incident is closed, and the history records who did it and why.
    """
    with embedded() as rt:
        token_id = rt.engine.resolve(incident_or_token, note)
    render.line(f"resolved the incident of token {token_id}")
