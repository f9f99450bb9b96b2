"""Timer cycles on boundary events: a non-interrupting cycle fires again after each tick while
its activity is open, as many times as it repeats; after an outage the missed ticks fire once;
leaving the activity disarms it; an interrupting cycle fires once. Cron cycles tick on the
wall clock of ``BPM_TIMEZONE``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from bpm.store import Database, timers
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


def reminder(cycle: str, *, interrupting: bool = False) -> dict[str, Any]:
    return (
        ProcessBuilder("remind")
        .start()
        .user_task("approve")
        .timer_boundary("tick", attached_to="approve", cycle=cycle, interrupting=interrupting)
        .service_task("nudge", handler="nudge")
        .end("nudged")
        .end()
        .sequence("start", "approve", "end")
        .sequence("tick", "nudge", "nudged")
        .build()
    )


def scheduled(db: Database, iid: UUID) -> list[datetime]:
    with db.transaction() as conn:
        return [t.fire_at for t in timers.of_instance(conn, iid) if t.state == "SCHEDULED"]


@pytest.fixture
def nudges(calls: Calls) -> Calls:
    calls.add("nudge")
    return calls


def test_a_repeating_cycle_fires_as_many_times_as_it_repeats(
    rt: Harness, nudges: Calls, clock: FakeClock, pg_db: Database
) -> None:
    iid = rt.run(reminder("R3/PT10M"))
    for expected in (1, 2, 3, 3):
        rt.pass_time(timedelta(minutes=10))
        assert nudges.count("nudge") == expected
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


def test_a_repeating_interval_written_as_a_duration_fires_once_at_its_first_tick(
    rt: Harness, nudges: Calls, clock: FakeClock, pg_db: Database
) -> None:
    """``timeDuration`` R3/PT10M, as Camunda 7 reads it: the first tick, no repetition."""
    doc = reminder("R3/PT10M")
    tick = next(n for n in doc["nodes"] if n["id"] == "tick")
    tick["timer"] = {"duration": tick["timer"]["cycle"]}
    iid = rt.run(doc)
    for expected in (0, 1, 1, 1):
        assert nudges.count("nudge") == expected
        rt.pass_time(timedelta(minutes=10))
    assert scheduled(pg_db, iid) == []
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


def test_after_an_outage_the_missed_ticks_fire_once(
    rt: Harness, nudges: Calls, clock: FakeClock, pg_db: Database
) -> None:
    iid = rt.run(reminder("R/PT10M"))
    rt.pass_time(timedelta(minutes=55))  # five ticks were due: one fires
    assert nudges.count("nudge") == 1
    rt.pass_time(timedelta(minutes=4))  # the next tick is still on the 10-minute grid (60)
    assert nudges.count("nudge") == 1
    rt.pass_time(timedelta(minutes=1))
    assert nudges.count("nudge") == 2
    rt.complete_user_task(iid)
    rt.pass_time(timedelta(hours=1))
    assert nudges.count("nudge") == 2  # leaving the task disarmed it
    assert_finished_cleanly(pg_db, iid)


def test_an_interrupting_cycle_fires_once_at_its_first_tick(
    rt: Harness, nudges: Calls, clock: FakeClock, pg_db: Database
) -> None:
    iid = rt.run(reminder("R5/PT10M", interrupting=True))
    rt.pass_time(timedelta(minutes=10))
    rt.pass_time(timedelta(minutes=30))
    assert nudges.count("nudge") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_cron_cycle_ticks_on_the_configured_wall_clock(
    rt: Harness, nudges: Calls, clock: FakeClock, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_TIMEZONE", "Europe/Berlin")
    clock.move_to(datetime(2026, 7, 1, 6, 0, tzinfo=UTC))  # 08:00 in Berlin (summer time)
    iid = rt.run(reminder("0 0 9 * * ?"))  # every day at 09:00 in Berlin = 07:00 UTC
    assert scheduled(pg_db, iid) == [datetime(2026, 7, 1, 7, 0, tzinfo=UTC)]
    rt.pass_time(timedelta(hours=1))
    assert nudges.count("nudge") == 1
    assert scheduled(pg_db, iid) == [datetime(2026, 7, 2, 7, 0, tzinfo=UTC)]
    assert_history_consistent(pg_db, iid)


CYCLE_BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="remind_bpmn" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:userTask id="approve" />
    <bpmn:boundaryEvent id="tick" cancelActivity="false" attachedToRef="approve">
      <bpmn:timerEventDefinition><bpmn:timeCycle>CYCLE</bpmn:timeCycle></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="nudge" camunda:class="nudge" />
    <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e" />
    <bpmn:sequenceFlow id="f3" sourceRef="tick" targetRef="nudge" />
    <bpmn:sequenceFlow id="f4" sourceRef="nudge" targetRef="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_bpmn_time_cycle_with_an_expression(
    rt: Harness, nudges: Calls, clock: FakeClock, pg_db: Database
) -> None:
    rt.engine.deploy_bpmn(CYCLE_BPMN.replace("CYCLE", "#{every}"))
    iid = rt.start("remind_bpmn", {"every": "R2/PT1H"})
    rt.drain()
    for _ in range(3):
        rt.pass_time(timedelta(hours=1))
    assert nudges.count("nudge") == 2
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


def test_a_bad_time_cycle_is_refused_at_deploy_naming_the_event() -> None:
    with pytest.raises(InvalidDefinition) as caught:
        compile_bpmn(CYCLE_BPMN.replace("CYCLE", "every five minutes"))
    assert "tick" in str(caught.value) and "every five minutes" in str(caught.value)
