"""``bpm start KEY``: start an instance; in embedded mode, run its jobs here.

Embedded mode has no background worker, so ``bpm start`` runs the instance's jobs in this
process until none is left (waiting out retry backoffs), for at most ``--wait`` seconds or
``IDLE_LIMIT`` without it. In distributed mode (``BPM_BROKER_URL``) the instance is written to
the database and its first job sent to the Celery workers; ``--wait`` then watches the database.
With ``--wait`` a non-terminal state at the end is an error; in embedded mode the rest of the
wait, once nothing is left to run here, watches the database (an external worker or a user
does the rest).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import click

from bpm.cli import render
from bpm.cli.errors import fail
from bpm.cli.lookups import missing_handlers
from bpm.cli.parsing import IMPORT_OPTION, VAR_OPTION, VARS_OPTION, collect_variables
from bpm.cli.runtime import broker_mode, distributed, embedded, import_handlers
from bpm.embedded import END_STATES, EmbeddedRuntime
from bpm.engine.engine import Engine
from bpm.engine.operations.lifecycle import Started
from bpm.errors import ConfigError
from bpm.states import InstanceState

IDLE_LIMIT = 60.0
#: The exit status of ``--fail-on-failure`` when the instance ended FAILED: not 1, so a
#: script tells an instance that failed from a start that could not be made or a wait that
#: ran out.
FAILED_EXIT = 3


@click.command()
@click.argument("key")
@VAR_OPTION
@VARS_OPTION
@click.option("--business-key", help="Your id for the instance; starting it twice starts one.")
@click.option(
    "--idempotency-key",
    metavar="KEY",
    help="Deduplicates starts instead of the business key (default: the business key).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Wait up to SECONDS for COMPLETED, FAILED, TERMINATED or CANCELLED.",
)
@click.option(
    "--fail-on-failure",
    is_flag=True,
    help=f"Exit with status {FAILED_EXIT} when the instance ends FAILED (with --wait, or in "
    "embedded mode).",
)
@click.option(
    "--form",
    "submit_form",
    is_flag=True,
    help="The variables submit the start form: checked against it, its defaults filled "
    "(a plain start checks nothing, as in Camunda).",
)
@IMPORT_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print {id, key, business_key, state}.")
def start(
    key: str,
    var_items: tuple[str, ...],
    vars_json: str | None,
    business_key: str | None,
    idempotency_key: str | None,
    wait: float | None,
    fail_on_failure: bool,
    submit_form: bool,
    imports: tuple[str, ...],
    as_json: bool,
) -> None:
    """Start an instance of the latest version of process KEY.

    Embedded mode (no BPM_BROKER_URL) has no background worker, so the instance's jobs run in
    this command until none is left: up to --wait seconds, or 60 s without --wait. With
    BPM_BROKER_URL the Celery workers run them, and --wait watches the instance's state.
    """
    values = collect_variables(vars_json, var_items)
    if broker_mode():
        with distributed() as engine:
            started = engine.start(
                key,
                values,
                business_key=business_key,
                idempotency_key=idempotency_key,
                submit_form=submit_form,
            )
            doc = _doc(started, _watch(engine, started.id, wait))
    else:
        import_handlers(imports)
        with embedded() as rt:
            began = time.monotonic()
            keys = (business_key, idempotency_key)
            doc = _start_and_run(rt, key, values, keys, wait or IDLE_LIMIT, submit_form)
            if wait is not None and doc["state"] not in END_STATES:
                # Nothing left to run here: what is left is another process's (an external
                # worker's, a user's), so watch for the rest of --wait.
                left = wait - (time.monotonic() - began)
                doc["state"] = _watch(
                    rt.engine,
                    UUID(doc["id"]),
                    max(left, 0.0),
                    lambda seconds: rt.run_until_idle(timeout=seconds),
                )
    _print(doc, as_json)
    if fail_on_failure and doc["state"] == InstanceState.FAILED:
        fail(
            f"instance {doc['id']} ended FAILED: `bpm incidents` says why, `bpm show "
            f"{doc['id']}` where",
            code=FAILED_EXIT,
        )
    if wait is not None and doc["state"] not in END_STATES:
        fail(f"instance {doc['id']} is still {doc['state']} after {wait:g} s")


def _watch(
    engine: Engine,
    instance_id: UUID,
    wait: float | None,
    run_due: Callable[[float], object] | None = None,
) -> str:
    """Poll the instance until it ends or ``wait`` runs out. Embedded mode passes
    ``run_due``, which runs here what comes due meanwhile (a timer after an external task,
    a retry) for at most the seconds it is given."""
    deadline = time.monotonic() + (wait or 0)
    while True:
        state = str(engine.show(instance_id)["state"])
        left = deadline - time.monotonic()
        if state in END_STATES or left <= 0:
            return state
        if run_due is not None:
            run_due(min(left, 0.5))
        time.sleep(min(0.1, max(deadline - time.monotonic(), 0.0)))


def _doc(started: Started, state: str) -> dict[str, Any]:
    return {
        "id": str(started.id),
        "key": started.key,
        "business_key": started.business_key,
        "state": state,
        "created": started.created,
    }


def _start_and_run(
    rt: EmbeddedRuntime,
    key: str,
    values: dict[str, Any],
    keys: tuple[str | None, str | None],
    limit: float,
    submit_form: bool,
) -> dict[str, Any]:
    """``keys``: the business key and the idempotency key."""
    business_key, idempotency_key = keys
    missing = missing_handlers(rt, key)
    if missing:
        raise ConfigError(
            f"process {key!r} calls what no imported module registers: "
            f"{', '.join(missing)}; name the module that registers them in "
            f"BPM_IMPORTS or with --import MODULE"
        )
    started = rt.engine.start(
        key,
        values,
        business_key=business_key,
        idempotency_key=idempotency_key,
        submit_form=submit_form,
    )
    rt.run_until_idle(timeout=limit)
    return _doc(started, rt.state(started.id))


def _print(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        render.emit_json(doc)
        return
    who = f" (business key {doc['business_key']})" if doc["business_key"] else ""
    if doc["created"]:
        render.line(f"started {doc['key']} instance {doc['id']}{who}")
    else:
        render.line(f"{doc['key']} instance {doc['id']}{who} already exists; nothing started")
    render.line(f"state: {doc['state']}", style=render.state_style(doc["state"]))
