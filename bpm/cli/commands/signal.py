"""``bpm signal NAME``: broadcast a signal to every subscription that exists now (signal
catches, boundaries, event subprocesses, events after a gateway, signal start events).

As with ``bpm correlate``: embedded mode has no background worker, so the deliveries and the
work that follows run in this command; with ``BPM_BROKER_URL`` they go to the workers.
"""

from __future__ import annotations

import click

from bpm.cli import render
from bpm.cli.commands.tasks import IDLE_LIMIT
from bpm.cli.parsing import IMPORT_OPTION, VAR_OPTION, VARS_OPTION, collect_variables
from bpm.cli.runtime import broker_mode, distributed, embedded, import_handlers
from bpm.engine.operations.signals import Thrown


@click.command()
@click.argument("name")
@VAR_OPTION
@VARS_OPTION
@click.option(
    "--key",
    "throw_key",
    metavar="KEY",
    help="Throw once per KEY: the same command run again with it throws nothing more.",
)
@IMPORT_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print {signal, signal_id, recipients}.")
def signal(
    name: str,
    var_items: tuple[str, ...],
    vars_json: str | None,
    throw_key: str | None,
    imports: tuple[str, ...],
    as_json: bool,
) -> None:
    """Throw the signal NAME (with its variables) to every instance listening for it now and
    every process with a signal start event on it; instances started later never get it."""
    values = collect_variables(vars_json, var_items)
    thrown: Thrown
    if broker_mode():
        with distributed() as engine:
            thrown = engine.throw_signal(name, values, throw_key=throw_key)
    else:
        import_handlers(imports)
        with embedded() as rt:
            thrown = rt.engine.throw_signal(name, values, throw_key=throw_key)
            rt.run_until_idle(timeout=IDLE_LIMIT)
    if as_json:
        render.emit_json(
            {"signal": name, "signal_id": str(thrown.signal_id), "recipients": thrown.recipients}
        )
        return
    again = "" if thrown.created else " (thrown before with this key)"
    render.line(f"signal {name!r} thrown to {thrown.recipients} recipient(s){again}")
