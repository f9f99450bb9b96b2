"""The chaos process's handlers; the Celery workers import them through ``BPM_IMPORTS``.

Every handler writes its side effect to a ledger before it returns (or raises): one row per
call, with the instance and business key, the node, forward or compensation, the idempotency
key (the task id), the attempt, the pid and process group that ran it, the time, and whether
the call fails on purpose. The checks count these rows.

The ledger is a database on the machine's own PostgreSQL (``BPM_CHAOS_LEDGER``, a URL), not
the private server the engine runs on: the side effects stand for a payment provider or a
warehouse, which do not go down when the engine's database does. Had they shared its faults,
a crash right after a handler ran could erase the very row that shows it ran, and a cut
would turn every side effect into an error; here a side effect that happened is always
counted.
"""

from __future__ import annotations

import os
import time
from typing import Any
from uuid import UUID

import psycopg
from sqlalchemy.engine import make_url

import bpm
from bpm.handlers import HandlerContext

FORWARD, COMPENSATION = "forward", "compensation"
#: ``outcome`` of a row: the call went on to succeed, or it raised on purpose.
DONE, FAILS = "done", "fails"

SCHEMA = """CREATE TABLE IF NOT EXISTS side_effects (
    seq bigserial PRIMARY KEY,
    instance_id text NOT NULL, business_key text NOT NULL, node text NOT NULL, kind text NOT NULL,
    idempotency_key text NOT NULL, attempt int NOT NULL, outcome text NOT NULL,
    pid int NOT NULL, pgid int NOT NULL, at double precision NOT NULL)"""


def ledger_url() -> str:
    return os.environ["BPM_CHAOS_LEDGER"]


def connect(url: str | None = None) -> psycopg.Connection[tuple[Any, ...]]:
    dsn = make_url(url or ledger_url()).set(drivername="postgresql")
    return psycopg.connect(dsn.render_as_string(hide_password=False), autocommit=True)


def create(url: str) -> None:
    with connect(url) as conn:
        conn.execute(SCHEMA)


def record(
    *,
    instance_id: UUID,
    business_key: str | None,
    node: str,
    kind: str,
    idempotency_key: str,
    attempt: int,
    outcome: str = DONE,
) -> None:
    """Write one side effect; committed before the handler returns, so a process killed
    right afterwards still shows it."""
    with connect() as conn:
        conn.execute(
            "INSERT INTO side_effects (instance_id, business_key, node, kind, idempotency_key,"
            " attempt, outcome, pid, pgid, at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                str(instance_id),
                business_key or "",
                node,
                kind,
                idempotency_key,
                attempt,
                outcome,
                os.getpid(),
                os.getpgrp(),
                time.time(),
            ),
        )


def flaky(node: str, variables: dict[str, Any], attempt: int) -> bool:
    """Whether this call fails on purpose: ``pack`` of every third instance fails its first
    attempt (an ordinary retry, which the checks must tell from a repeat a fault caused)."""
    return node == "pack" and int(variables["i"]) % 3 == 0 and attempt == 1


def _call(ctx: HandlerContext, kind: str, fails: bool) -> None:
    record(
        instance_id=ctx.instance_id,
        business_key=ctx.business_key,
        node=ctx.node_id,
        kind=kind,
        idempotency_key=ctx.idempotency_key,
        attempt=ctx.attempt,
        outcome=FAILS if fails else DONE,
    )


@bpm.handler("chaos.step")
def step(ctx: HandlerContext) -> dict[str, int]:
    """A forward step (reserve, pack, ship, express_ship)."""
    fails = flaky(ctx.node_id, ctx.variables, ctx.attempt)
    _call(ctx, FORWARD, fails)
    if fails:
        raise RuntimeError(f"{ctx.node_id}: the first attempt fails on purpose")
    return {f"{ctx.node_id}_attempt": ctx.attempt}


@bpm.handler("chaos.confirm")
def confirm(ctx: HandlerContext) -> None:
    """The late step: fails for good (every attempt) when the instance is ``doomed``, which
    starts the global saga."""
    doomed = bool(ctx.variables.get("doomed"))
    _call(ctx, FORWARD, doomed)
    if doomed:
        raise RuntimeError("confirm: this order is doomed; the saga undoes it")


@bpm.handler("chaos.undo")
def undo(ctx: HandlerContext) -> None:
    """A compensation: its ``node_id`` is the step it undoes."""
    _call(ctx, COMPENSATION, False)
