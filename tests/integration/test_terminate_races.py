"""A terminate end event racing what would add work to its scope.

The terminating transaction reads its scope's tokens, then cancels them. A non-interrupting
timer that fires in between starts a new path in the same scope; if the terminate did not
notice, that path would run on after the scope ended. The interleaving is forced: the
terminate waits after its read until the timer's transaction has committed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from bpm.engine.core.tx import Tx
from bpm.engine.operations import replay
from bpm.engine.semantics import tree as tree_module
from bpm.engine.semantics.tree import Tree
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import EngineFactory


def _flow(a: str, b: str) -> dict[str, str]:
    return {"id": f"f_{a}_{b}", "source": a, "target": b}


def reminder_and_stop() -> dict[str, Any]:
    """Two branches: ``work`` (a user task) reminds after an hour (a non-interrupting timer
    whose path runs ``notify``); ``stop`` waits for a message, then terminates everything."""

    return {
        "key": "reminder_and_stop",
        "nodes": [
            {"id": "start", "type": "startEvent"},
            {"id": "fork", "type": "parallelGateway"},
            {"id": "work", "type": "userTask"},
            {
                "id": "remind",
                "type": "boundaryEvent",
                "attachedTo": "work",
                "timer": {"duration": "PT1H"},
                "interrupting": False,
            },
            {"id": "notify", "type": "serviceTask", "handler": "notify"},
            {"id": "notified", "type": "endEvent"},
            {"id": "worked", "type": "endEvent"},
            {"id": "stop", "type": "receiveTask", "message": "stop"},
            {"id": "terminate", "type": "endEvent", "terminate": True},
        ],
        "flows": [
            _flow("start", "fork"),
            _flow("fork", "work"),
            _flow("fork", "stop"),
            _flow("work", "worked"),
            _flow("remind", "notify"),
            _flow("notify", "notified"),
            _flow("stop", "terminate"),
        ],
    }


def pause_after_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[threading.Event, threading.Event]:
    """The first ``Tree.read`` made by the thread named ``terminator`` signals ``read``, then
    waits for ``go``: the window in which the timer commits."""
    read, go = threading.Event(), threading.Event()
    original: Callable[[type[Tree], Tx, Any], Tree] = Tree.read.__func__  # type: ignore[attr-defined]
    paused = [False]

    def read_then_wait(cls: type[Tree], tx: Tx, instance_id: Any) -> Tree:
        found = original(cls, tx, instance_id)
        if threading.current_thread().name == "terminator" and not paused[0]:
            paused[0] = True
            read.set()
            assert go.wait(timeout=30), "the timer never fired"
        return found

    monkeypatch.setattr(tree_module.Tree, "read", classmethod(read_then_wait))
    return read, go


def test_a_timer_firing_during_a_terminate_starts_no_path_that_outlives_it(
    engine_factory: EngineFactory,
    handlers: HandlerRegistry,
    pg_db: Database,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notified: list[str] = []

    def notify(ctx: HandlerContext) -> None:
        notified.append(ctx.node_id)

    handlers.register("notify", notify)
    rt = engine_factory()
    iid = rt.run(reminder_and_stop())
    clock.advance(timedelta(hours=2))  # the reminder is due; nobody has fired it yet
    read, go = pause_after_first_read(monkeypatch)
    errors: list[BaseException] = []

    def terminate() -> None:
        try:
            rt.engine.correlate("stop", instance_id=iid)  # queues the step to the terminate
            rt.drain()
        except BaseException as exc:  # reported below
            errors.append(exc)

    terminator = threading.Thread(target=terminate, name="terminator")
    terminator.start()
    assert read.wait(timeout=30), "the terminate never read its scope"
    timer_engine = engine_factory()
    fired = timer_engine.engine.fire_due_timers()
    go.set()
    terminator.join(timeout=60)
    assert not errors, errors
    rt.drain()
    timer_engine.drain()

    assert fired == 1
    assert notified == [], "the reminder's path ran after the terminate ended its scope"
    assert rows.instance(pg_db, iid).state == "COMPLETED"
    live = [t for t in rows.tokens_of(pg_db, iid) if t.state in ("ACTIVE", "WAITING", "FAILED")]
    assert live == []
    assert replay.check(rt.engine.core, iid) == []


def booking_with_stop() -> dict[str, Any]:
    """``book`` succeeds (undone by the user task ``unbook``), then compensation is thrown for
    it; meanwhile the other branch waits for ``stop``, which terminates the instance."""

    return {
        "key": "booking_with_stop",
        "nodes": [
            {"id": "start", "type": "startEvent"},
            {"id": "fork", "type": "parallelGateway"},
            {
                "id": "book",
                "type": "serviceTask",
                "handler": "book",
                "compensation": {"node": "unbook"},
            },
            {
                "id": "book2",
                "type": "serviceTask",
                "handler": "book",
                "compensation": {"node": "unbook"},
            },
            {"id": "unbook", "type": "userTask"},
            {"id": "undo", "type": "compensationThrow"},
            {"id": "undone", "type": "endEvent"},
            {"id": "stop", "type": "receiveTask", "message": "stop"},
            {"id": "terminate", "type": "endEvent", "terminate": True},
        ],
        "flows": [
            _flow("start", "fork"),
            _flow("fork", "book"),
            _flow("book", "book2"),
            _flow("book2", "undo"),
            _flow("undo", "undone"),
            _flow("fork", "stop"),
            _flow("stop", "terminate"),
        ],
    }


def test_a_terminate_during_a_running_compensation_cancels_the_records_it_cut_short(
    engine_factory: EngineFactory, handlers: HandlerRegistry, pg_db: Database
) -> None:
    handlers.register("book", lambda ctx: None)
    rt = engine_factory()
    iid = rt.run(booking_with_stop())
    # The compensation of book2 (the latest success) waits for a person; book's is next.
    [unbook] = rt.engine.user_tasks(instance_id=iid)
    assert unbook["node_id"] == "book2"
    rt.engine.correlate("stop", instance_id=iid)
    rt.drain()

    assert rows.instance(pg_db, iid).state == "COMPLETED"
    live = [t for t in rows.tokens_of(pg_db, iid) if t.state in ("ACTIVE", "WAITING", "FAILED")]
    assert live == []
    records = {r.node_id: r.status for r in rows.compensation_records(pg_db, iid)}
    # Neither was compensated: the one under way was cut short, the other never started.
    assert records == {"book": "CANCELLED", "book2": "CANCELLED"}
    events = [e["type"] for e in rt.engine.trace(iid)]
    assert events.count("CompensationCancelled") == 2  # one row per record
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert replay.check(rt.engine.core, iid) == []
