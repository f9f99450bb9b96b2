"""Handlers the worker processes of these tests import (through BPM_IMPORTS).

Side effects are rows of a ``test_calls`` table in the test's own database (not in Redis, which
one test empties on purpose), so the test can see how often each handler ran and with which
idempotency keys, across processes.
"""

from __future__ import annotations

import os
import time

import psycopg
from sqlalchemy.engine import make_url

import bpm
from bpm.handlers import HandlerContext

CREATE = """CREATE TABLE IF NOT EXISTS test_calls (
    business_key text, node text, idempotency_key text, attempt int, pid int)"""


def _dsn() -> str:
    url = make_url(os.environ["BPM_DATABASE_URL"]).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def record(ctx: HandlerContext) -> None:
    """Write the side effect: one row per call, with its idempotency key."""
    with psycopg.connect(_dsn(), autocommit=True) as conn:
        conn.execute("INSERT INTO test_calls VALUES (%s, %s, %s, %s, %s)",
                     (ctx.business_key, ctx.node_id, ctx.idempotency_key, ctx.attempt,
                      os.getpid()))


@bpm.handler("noop")
def noop(ctx: HandlerContext) -> None:
    record(ctx)


@bpm.handler("flaky")
def flaky(ctx: HandlerContext) -> dict[str, int]:
    record(ctx)
    if ctx.attempt == 1:
        raise RuntimeError("first attempt always fails")
    return {"flaky_attempts": ctx.attempt}


@bpm.handler("slow")
def slow(ctx: HandlerContext) -> None:
    """Announce the worker pid, then take a while: the test kills the worker meanwhile."""
    record(ctx)
    time.sleep(float(ctx.variables.get("slow_seconds", 3)))


@bpm.handler("suicide")
def suicide(ctx: HandlerContext) -> None:
    """Kill the process running it, every time (like an out-of-memory kill)."""
    record(ctx)
    os._exit(137)
