"""Operator actions: ``retry`` a failed token, ``cancel`` an instance."""

from __future__ import annotations

from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.lookups import handler_of_retry, instance_of_token, resolve_instance
from bpm.cli.parsing import (
    IMPORT_OPTION,
    INCIDENT_OR_TOKEN_ID,
    INSTANCE_ID,
    TOKEN_OR_TASK_ID,
    IdPrefix,
)
from bpm.cli.runtime import (
    IMPORTS_ENV,
    broker_mode,
    distributed,
    embedded,
    handler_modules,
    import_handlers,
)
from bpm.embedded import EmbeddedRuntime
from bpm.errors import ConfigError

RETRY_LIMIT = 60.0


@click.command()
@click.argument("token_or_task", type=TOKEN_OR_TASK_ID)
@click.option(
    "--retries",
    type=click.IntRange(min=1),
    metavar="N",
    help="Attempts to grant (default: the node's retry policy).",
)
@IMPORT_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print {token_id, instance_id, state}.")
def retry(
    token_or_task: UUID, retries: int | None, imports: tuple[str, ...], as_json: bool
) -> None:
    """Re-run a FAILED token (given by its id or its task's id) and resolve its incident.

    In embedded mode the retried work runs in this process, as with bpm start, so the module
    that registers the handler must be imported (BPM_IMPORTS or --import); without it the
    retry is refused. With BPM_BROKER_URL it is sent to the Celery workers.
    """
    if broker_mode():
        with distributed() as engine:
            token_id = engine.retry(token_or_task, retries)
            instance_id = instance_of_token(engine, token_id)
            state = engine.show(instance_id)["state"] if instance_id else "UNKNOWN"
    else:
        import_handlers(imports)
        with embedded() as rt:
            _refuse_unregistered_handler(rt, token_or_task, imports)
            token_id = rt.engine.retry(token_or_task, retries)
            rt.run_until_idle(timeout=RETRY_LIMIT)
            instance_id = instance_of_token(rt.engine, token_id)
            state = rt.state(instance_id) if instance_id else "UNKNOWN"
    if as_json:
        render.emit_json(
            {"token_id": str(token_id), "instance_id": str(instance_id), "state": state}
        )
        return
    render.line(f"retried token {token_id} of instance {instance_id}")
    render.line(f"state: {state}", style=render.state_style(state))


def _refuse_unregistered_handler(
    rt: EmbeddedRuntime, token_or_task: UUID, imports: tuple[str, ...]
) -> None:
    """Refuse, before anything changes, a retry whose handler this process cannot run.

    The retried task would run here and fail at once ("no handler is registered …"), using up
    one of the attempts the retry grants and replacing the incident's message with one about
    the set-up, not the original failure. As ``bpm start`` does, say which module is missing.
    """
    retried = handler_of_retry(rt.engine, token_or_task)
    if retried is None or retried.handler in rt.engine.handlers:
        return
    modules = handler_modules(imports)
    imported = (
        f"the modules imported ({', '.join(modules)}) do not register it"
        if modules
        else f"no handler module is imported ({IMPORTS_ENV} is empty and no --import is given)"
    )
    raise ConfigError(
        f"token {retried.token_id} at {retried.node_id!r} runs handler "
        f"{retried.handler!r}, which is not registered in this process: "
        f"{imported}; name the module that registers it in {IMPORTS_ENV} or with "
        f"--import MODULE (nothing was retried)"
    )


@click.command()
@click.argument("instance_id", type=INSTANCE_ID)
def cancel(instance_id: UUID | IdPrefix) -> None:
    """Cancel a RUNNING or FAILED instance with all its tokens, tasks and incidents.

    INSTANCE_ID may be shortened to any unique start of it (the 8 characters tables print).
    """
    with embedded() as rt:
        iid = resolve_instance(rt.engine, instance_id)
        rt.engine.cancel(iid)
    render.line(f"cancelled instance {iid}")


@click.command()
@IMPORT_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print what each scan found.")
def recover(imports: tuple[str, ...], as_json: bool) -> None:
    """Run every stalled-work scan once, as a starting worker does.

    Embedded mode: the scans run here and the work they find runs in this process (import the
    handler modules it needs). Distributed mode: the scans are sent to the Celery workers.
    """
    if broker_mode():
        from importlib import import_module

        sent = import_module("bpm_workers.client").send_scans()
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
