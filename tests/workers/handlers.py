"""Handlers the worker processes of these tests import (through BPM_IMPORTS).

Side effects are rows of a ``test_calls`` table in the test's own database (not in Redis, which
one test empties on purpose), so the test can see how often each handler ran and with which
idempotency keys, across processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

import bpm
from bpm.dispatch import Job
from bpm.handlers import HandlerContext

# ``seq`` numbers the calls in the order they were recorded (across processes).
CREATE = """CREATE TABLE IF NOT EXISTS test_calls (
    business_key text, node text, idempotency_key text, attempt int, pid int,
    seq bigserial)"""

#: Seconds the ``gate`` handler waits for its file before it fails.
GATE_WAIT = 60.0


def _dsn() -> str:
    """Where side effects are written: straight to the test database, even when the
    workers reach it through a proxy that a test cuts (``BPM_TEST_CALLS_URL``)."""
    raw = os.environ.get("BPM_TEST_CALLS_URL") or os.environ["BPM_DATABASE_URL"]
    url = make_url(raw).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def record(ctx: HandlerContext, node: str | None = None) -> None:
    """Write the side effect: one row per call, with its idempotency key, under ``node``
    (the node being run unless given)."""
    with psycopg.connect(_dsn(), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO test_calls (business_key, node, idempotency_key, attempt, pid)"
            " VALUES (%s, %s, %s, %s, %s)",
            (ctx.business_key, node or ctx.node_id, ctx.idempotency_key, ctx.attempt, os.getpid()),
        )


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


@bpm.handler("gate")
def gate(ctx: HandlerContext) -> None:
    """Announce the worker pid, then wait until the file named by ``gate`` exists: the test
    kills the worker while it waits, so the kill lands inside this handler every time. A run
    after the file exists passes straight through; a minute without it fails the handler."""
    record(ctx)
    path = Path(str(ctx.variables["gate"]))
    deadline = time.monotonic() + GATE_WAIT
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {GATE_WAIT} s")
        time.sleep(0.05)


@bpm.handler("suicide")
def suicide(ctx: HandlerContext) -> None:
    """Kill the process running it, every time (like an out-of-memory kill)."""
    record(ctx)
    os._exit(137)


@bpm.handler("set_flag")
def set_flag(ctx: HandlerContext) -> dict[str, int]:
    """Its result sets ``flag``: conditional events of the instance are evaluated again."""
    record(ctx)
    return {"flag": 1}


# --- sagas: a compensation task's ``node_id`` is the node it compensates ----------------------


@bpm.handler("boom")
def boom(ctx: HandlerContext) -> None:
    """Fails every time: the forward step that starts the saga."""
    record(ctx)
    raise RuntimeError(f"{ctx.node_id} always fails")


@bpm.handler("undo")
def undo(ctx: HandlerContext) -> None:
    """A compensation: recorded as ``undo:<node>`` to tell it from the forward call."""
    record(ctx, f"undo:{ctx.node_id}")


@bpm.handler("slow_undo")
def slow_undo(ctx: HandlerContext) -> None:
    """A compensation that takes a while (the test kills its worker meanwhile): ``undo:<node>``
    when it starts, ``undone:<node>`` when it finishes."""
    record(ctx, f"undo:{ctx.node_id}")
    time.sleep(float(ctx.variables.get("undo_seconds", 1.5)))
    record(ctx, f"undone:{ctx.node_id}")


def _send_twice(names: frozenset[str]) -> None:
    """Every job named in ``names`` goes out twice from this process (a duplicate delivery)."""
    from bpm_workers.dispatcher import CeleryDispatcher

    send_once = CeleryDispatcher.dispatch

    def dispatch(self: CeleryDispatcher, jobs: Sequence[Job]) -> None:
        send_once(self, jobs)
        send_once(self, [job for job in jobs if job.name in names])

    CeleryDispatcher.dispatch = dispatch  # type: ignore[method-assign]


def _die_before_send(name: str, marker: Path) -> None:
    """The first job named ``name`` that any process of the worker sends kills that process
    instead (after the commit that made the job, before the send): ``marker`` records that it
    happened, so the process the pool starts next sends as usual."""
    from bpm_workers.dispatcher import CeleryDispatcher

    send = CeleryDispatcher.dispatch

    def dispatch(self: CeleryDispatcher, jobs: Sequence[Job]) -> None:
        if any(job.name == name for job in jobs) and not marker.exists():
            marker.touch()
            os._exit(137)
        send(self, jobs)

    CeleryDispatcher.dispatch = dispatch  # type: ignore[method-assign]


# Set only in the environment of the workers of a test that wants duplicates.
if os.environ.get("BPM_TEST_SEND_TWICE"):
    _send_twice(frozenset(os.environ["BPM_TEST_SEND_TWICE"].split(",")))
# Set only in the environment of the workers of a test that wants a crash before a send.
if os.environ.get("BPM_TEST_DIE_BEFORE_SEND"):
    _die_before_send(
        os.environ["BPM_TEST_DIE_BEFORE_SEND"], Path(os.environ["BPM_TEST_DIE_MARKER"])
    )
