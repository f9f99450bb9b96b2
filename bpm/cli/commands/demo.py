"""``bpm demo``: the example run and a readable account of what the engine did."""

from __future__ import annotations

from pathlib import Path

import click

from bpm.cli import demo_server, paths, render
from bpm.cli.demo import WORKER_ID, DemoResult, DemoRun, SagaRun, new_database, run_demo
from bpm.cli.demo_server import leave_for_the_cockpit
from bpm.cli.invocation import bpm_invocation
from bpm.demo import ORDER_FULFILMENT, ORDER_SAGA, ORDER_SAGA_BPMN
from bpm.states import InstanceState

OUTLINE = (
    "validate; then in parallel: reserve stock | charge payment (up to 3 attempts) |",
    "pack (a subprocess: pick, wrap); then express or standard shipping; notify",
)
#: The saga files the demo runs the failing order through, in turn, and what each one is.
SAGA_OUTLINES = {
    ORDER_SAGA: (
        "saga global: reserve stock (undone by handler release_stock) -> charge card",
        "(external worker, topic payments; undone by topic refunds) -> ship, which fails",
    ),
    ORDER_SAGA_BPMN: (
        "the same saga as a BPMN diagram: compensation boundary events on reserve and",
        'charge, associated with handler tasks release and refund; bpm:saga="global"',
    ),
}


@click.command()
@click.option(
    "--serve",
    is_flag=True,
    help="Then serve the API and the cockpit on the demo's database (needs bpm[server]).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="With --serve: address.")
@click.option("--port", type=int, default=8080, show_default=True, help="With --serve: port.")
def demo(serve: bool, host: str, port: int) -> None:
    """Run the order fulfilment and order saga examples on a fresh SQLite file and show what
    happened.

    The saga runs twice, from order_saga.json and then from order_saga.bpmn (the same saga
    drawn in BPMN). Needs nothing running: the jobs run in this process. The database is a new
    file in the temp folder, kept so you can explore it afterwards (the command to do so is
    printed). With --serve, an order also waits for a clerk's review, and the API and the
    cockpit serve the database until Ctrl-C; the address and a login are printed.
    """
    database = new_database()
    render.line(
        "bpm demo: order fulfilment and an order saga in embedded mode (jobs run in this process)",
        style="bold",
    )
    render.line(f"database: {database} (a fresh SQLite file)")
    result = run_demo(database, ORDER_FULFILMENT, *SAGA_OUTLINES)
    d = result.deployed
    render.line(f"deployed {d.key} version {d.version} from {result.definition_file}")
    for text in OUTLINE:
        render.line(f"  {text}")
    render.line()
    _summary_table(result)
    for run in result.runs:
        render.line()
        _story(run)
    for saga in result.sagas:
        render.line()
        _saga_story(saga)
    render.line()
    _epilogue(result)
    if serve:
        _serve(database, host, port)


def _serve(database: Path, host: str, port: int) -> None:
    login = leave_for_the_cockpit(database)
    render.line()
    render.line("ORDER-3001 waits for a clerk's review (process order_review)", style="bold")
    render.line(
        f"cockpit: http://{host}:{port}/cockpit/  (the API: http://{host}:{port}/engine-rest)"
    )
    render.line(f"log in as {login.name} with the secret {login.secret}")
    render.line("  (an operator, and a clerk in the tasklist; Ctrl-C stops the server)")
    demo_server.serve(database, host, port)


def _summary_table(result: DemoResult) -> None:
    rows = []
    for run in result.runs:
        inst, values = run.instance, run.instance["variables"]
        rows.append(
            [
                inst["id"][:8],
                inst["business_key"],
                values.get("total"),
                inst["state"],
                f"{run.duration:.2f} s",
                values.get("carrier", "-"),
                run.order.shows,
            ]
        )
    render.table(
        ["instance", "business key", "total", "state", "duration", "shipped by", "what it shows"],
        rows,
    )


def _story(run: DemoRun) -> None:
    inst = run.instance
    render.line(
        f"{inst['business_key']}  {inst['id'][:8]}  {inst['state']}",
        style=render.state_style(inst["state"]),
    )
    g = render.glyphs()
    for text in paths.render(run.tree, g):
        render.line(f"  {text}")
    for step in run.tree.steps():
        if step.attempts > 1:
            failures = "; ".join(step.errors) or "an earlier attempt failed"
            render.line(f"  retried {step.node_id}: {failures}")
    for incident in inst["incidents"]:
        render.line(f"  incident ({incident['state'].lower()}): {incident['message']}", style="red")


def _saga_story(saga: SagaRun) -> None:
    d, inst = saga.deployed, saga.instance
    render.line(f"deployed {d.key} version {d.version} from {saga.definition_file}")
    for text in SAGA_OUTLINES[saga.definition_file]:
        render.line(f"  {text}")
    render.line()
    render.line(
        f"{inst['business_key']}  {inst['id'][:8]}  {inst['state']}",
        style=render.state_style(inst["state"]),
    )
    g = render.glyphs()
    for text in paths.render(saga.forward, g):
        render.line(f"  {text}")
    if saga.worked:
        done = ", then ".join(f"{topic} at {node}" for topic, node in saga.worked)
        render.line(f"  the demo, as external worker {WORKER_ID}, completed {done}")
    if saga.failure:
        render.line(f"  saga started: {saga.failure}")
    undo = saga.undo_handlers
    steps = f" {g.arrow} ".join(
        f"{node} ({undo.get(node, '?').replace(':', ' ')})" for node in saga.compensated
    )
    render.line(f"  compensated, latest success first: {steps or 'nothing'}")
    for incident in inst["incidents"]:
        render.line(f"  incident ({incident['state'].lower()}): {incident['message']}", style="red")


def _epilogue(result: DemoResult) -> None:
    """The outcome, and the commands to explore it, named as this shell can run them: after
    ``make demo`` the virtualenv is not active and plain ``bpm`` is not found."""
    runs = result.runs
    bpm = bpm_invocation()
    done = [r for r in runs if r.instance["state"] == InstanceState.COMPLETED]
    render.line(f"{len(done)} of {len(runs)} orders COMPLETED in {result.seconds:.1f} s")
    for run in runs:
        if run.instance["state"] != InstanceState.COMPLETED:
            render.line(
                f"{run.order.business_key} is {run.instance['state']}: its incident "
                f"waits for an operator ({bpm.command} retry TOKEN_ID, or "
                f"{bpm.command} cancel ID)"
            )
    for saga in result.sagas:
        undone = ", then ".join(saga.compensated) or "nothing"
        render.line(
            f"{saga.order.business_key} is {saga.instance['state']}: "
            f"{saga.failed_at or 'nothing'} failed, its saga compensated {undone}"
        )
    sample = next((r for r in runs if r not in done), runs[0]).instance["id"]
    render.line("explore the run (the database file is kept):")
    render.line(f"  export BPM_DATABASE_URL=sqlite:///{result.database}")
    render.line(f"  {bpm.command} instances")
    render.line(f"  {bpm.command} show {sample}")
    render.line(f"  {bpm.command} trace {sample}")
    for saga in result.sagas:
        render.line(
            f"  {bpm.command} trace {saga.instance['id']}   # the saga, {saga.definition_file.name}"
        )
    render.line(f"  {bpm.command} incidents")
    if bpm.activate is not None:
        render.line(
            f"bpm is not on your PATH: run it as above, or first `{bpm.activate}` to type plain bpm"
        )
