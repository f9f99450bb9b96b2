"""A cancel end event racing what would add work to its transaction.

The cancelling step reads the transaction's tokens, then cancels the others. A
non-interrupting timer that fires in between starts a new path inside the transaction; had
the cancel not noticed, that path would run on while the transaction is compensated and
left. The interleaving is forced as in ``test_terminate_races``: the cancel waits after its
first read until the timer's transaction has committed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest

from bpm.definitions import ProcessBuilder
from bpm.engine.operations import replay
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import EngineFactory
from tests.integration.test_terminate_races import pause_after_first_read


def reminder_and_give_up() -> dict[str, object]:
    """tx [fork -> (book (undone by unbook) -> work: a user task reminding after an hour by a
    non-interrupting timer whose path runs notify) | (give_up: a receive task -> cancel)]."""
    body = ProcessBuilder("body").start("t_start").parallel_gateway("fork")
    body._node("book", "serviceTask", handler="book", compensation={"handler": "unbook"})
    body.user_task("work").timer_boundary(
        "remind", attached_to="work", duration="PT1H", interrupting=False
    )
    body.service_task("notify", handler="notify").end("notified").end("worked")
    body.receive_task("give_up", message="give_up").cancel_end("cancelled")
    body.sequence("t_start", "fork", "book", "work", "worked").sequence("remind", "notify")
    body.sequence("notify", "notified").sequence("fork", "give_up", "cancelled")
    b = ProcessBuilder("reminder_and_give_up").start()
    b.sub_process("tx", body, transaction=True).cancel_boundary("on_cancel", attached_to="tx")
    b.end().end("given_up").sequence("start", "tx", "end").sequence("on_cancel", "given_up")
    return b.build()


def test_a_timer_firing_during_a_cancel_starts_no_path_that_outlives_it(
    engine_factory: EngineFactory,
    handlers: HandlerRegistry,
    pg_db: Database,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []

    def recorder(name: str) -> Callable[[HandlerContext], None]:
        def run(ctx: HandlerContext) -> None:
            ran.append(name)

        return run

    for name in ("book", "unbook", "notify"):
        handlers.register(name, recorder(name))
    rt = engine_factory()
    iid = rt.run(reminder_and_give_up())
    clock.advance(timedelta(hours=2))  # the reminder is due; nobody has fired it yet
    read, go = pause_after_first_read(monkeypatch)
    errors: list[BaseException] = []

    def give_up() -> None:
        try:
            rt.engine.correlate("give_up", instance_id=iid)  # queues the step to the cancel
            rt.drain()
        except BaseException as exc:  # reported below
            errors.append(exc)

    canceller = threading.Thread(target=give_up, name="terminator")
    canceller.start()
    assert read.wait(timeout=30), "the cancel never read its transaction"
    timer_engine = engine_factory()
    fired = timer_engine.engine.fire_due_timers()
    go.set()
    canceller.join(timeout=60)
    assert not errors, errors
    rt.drain()
    timer_engine.drain()

    assert fired == 1
    assert ran == ["book", "unbook"], "the reminder's path ran after the cancel"
    assert rows.instance(pg_db, iid).state == "COMPLETED"
    live = [t for t in rows.tokens_of(pg_db, iid) if t.state in ("ACTIVE", "WAITING", "FAILED")]
    assert live == []
    # the reminder's path did start inside the transaction, and the cancel cancelled it
    assert [t.state for t in rows.tokens_of(pg_db, iid) if t.node_id == "remind"] == ["CANCELLED"]
    assert replay.check(rt.engine.core, iid) == []
