"""The chaos process's handlers; the Celery workers import them through ``BPM_IMPORTS``.

Every handler writes its side effect to a ledger before it returns (or raises): one row per
call, with the instance and business key, the node, forward or compensation, the idempotency
key (the task id), the attempt, the pid and process group that ran it, the time, and whether
the call fails on purpose. The checks count these rows.

The ledger is a SQLite file (``BPM_CHAOS_LEDGER``), not a table in the engine's PostgreSQL:
the side effects stand for a payment provider or a warehouse, which do not go down when the
engine's database does. Had they shared PostgreSQL's faults, a crash right after a handler
ran could erase the very row that shows it ran, and a cut would turn every side effect into
an error; here a side effect that happened is always counted. SQLite in WAL mode takes
writes from every worker process at once, waiting its turn on a busy file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Any
from uuid import UUID

import bpm
from bpm.handlers import HandlerContext

FORWARD, COMPENSATION = "forward", "compensation"
#: ``outcome`` of a row: the call went on to succeed, or it raised on purpose.
DONE, FAILS = "done", "fails"

SCHEMA = """CREATE TABLE IF NOT EXISTS side_effects (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL, business_key TEXT NOT NULL, node TEXT NOT NULL, kind TEXT NOT NULL,
    idempotency_key TEXT NOT NULL, attempt INTEGER NOT NULL, outcome TEXT NOT NULL,
    pid INTEGER NOT NULL, pgid INTEGER NOT NULL, at REAL NOT NULL)"""


def ledger_path() -> str:
    return os.environ["BPM_CHAOS_LEDGER"]


def connect(path: str | None = None) -> sqlite3.Connection:
    conn = sqlite3.connect(path or ledger_path(), timeout=60, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    return conn


def create(path: str) -> None:
    conn = connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")  # kept by the file: every writer uses it
        conn.execute(SCHEMA)
    finally:
        conn.close()


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
    conn = connect()
    try:
        conn.execute(
            "INSERT INTO side_effects (instance_id, business_key, node, kind, idempotency_key,"
            " attempt, outcome, pid, pgid, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    finally:
        conn.close()


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
