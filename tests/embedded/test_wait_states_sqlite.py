"""Wait states in embedded mode on SQLite: the same engine code as on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from bpm.errors import NoMatchingWait, TaskClaimed
from bpm.handlers import HandlerRegistry
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls

DOC = (
    ProcessBuilder("waits")
    .start()
    .timer("pause", duration="PT1H")
    .user_task("review", candidate_groups=["ops"])
    .timer_boundary("late", attached_to="review", duration="P1D")
    .receive_task("await", message="paid")
    .service_task("after", handler="after")
    .end()
    .end("late_end")
    .sequence("start", "pause", "review", "await", "after", "end")
    .sequence("late", "late_end")
    .build()
)


def test_timer_user_task_and_message_on_sqlite(
    embedded: EmbeddedRuntime, calls: Calls, clock: FakeClock
) -> None:
    calls.add("after")
    engine = embedded.engine
    engine.deploy(DOC)
    iid = engine.start("waits", business_key="o-1").id
    assert embedded.run_until_idle(timeout=1)  # the timer is an hour away: nothing to wait for
    assert embedded.state(iid) == "RUNNING"
    clock.advance(timedelta(hours=1))
    embedded.run_until_idle(timeout=1)
    (task,) = engine.user_tasks(group="ops")
    engine.claim(task["id"], "ann")
    with pytest.raises(TaskClaimed):
        engine.complete_user_task(task["id"], {"ok": True}, user="bob")
    engine.complete_user_task(task["id"], {"ok": True}, user="ann")
    embedded.run_until_idle(timeout=1)
    with pytest.raises(NoMatchingWait):
        engine.correlate("refund", business_key="o-1")
    engine.correlate("paid", business_key="o-1", variables={"amount": 5})
    assert embedded.wait_for(iid, timeout=5) == "COMPLETED"
    assert calls.seen["after"][0].variables == {"ok": True, "amount": 5}
    assert_finished_cleanly(embedded.db, iid)
    show = engine.show(iid)
    assert [t["state"] for t in show["timers"]] == ["FIRED", "CANCELLED"]


def test_a_short_timer_is_waited_for_in_real_time(
    tmp_path: Path, calls: Calls, handlers: HandlerRegistry
) -> None:
    calls.add("after")
    rt = EmbeddedRuntime(f"sqlite:///{tmp_path / 'real.db'}", handlers=handlers)
    try:
        rt.engine.deploy(
            ProcessBuilder("short")
            .start()
            .timer("pause", duration="PT0.3S")
            .service_task("after", handler="after")
            .end()
            .sequence("start", "pause", "after", "end")
            .build()
        )
        iid = rt.engine.start("short").id
        assert rt.wait_for(iid, timeout=10) == "COMPLETED"
        assert len(rows.engine_events_of(rt.db, iid, type="TimerFired")) == 1
    finally:
        rt.close()
