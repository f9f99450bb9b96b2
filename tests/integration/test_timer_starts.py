"""Timer start events: the timer scan starts an instance at each due tick of the latest
version's timer start event, once per tick whatever the scanners; a date fires once, a cycle
until its repetitions run out; after an outage the missed ticks start one instance; a
redeploy replaces the schedule."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.store import Database
from bpm.store.schema import process_instances
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def nightly(
    timer: dict[str, str], *, key: str = "nightly", none_start: bool = False
) -> dict[str, Any]:
    b = ProcessBuilder(key)
    if none_start:
        b.start()
    b._node("tick", "startEvent", timer=timer)
    b.service_task("report", handler="report").end()
    if none_start:
        b.flow("start", "report")
    return b.sequence("tick", "report", "end").build()


def started(db: Database, key: str = "nightly") -> list[Any]:
    t = process_instances
    with db.transaction() as conn:
        return list(
            conn.execute(select(t).where(t.c.process_key == key).order_by(t.c.started_at)).all()
        )


def test_a_date_starts_one_instance_when_it_is_due(
    rt: Harness, calls: Calls, clock: FakeClock, pg_db: Database
) -> None:
    calls.add("report")
    due = clock.now() + timedelta(hours=2)
    rt.deploy(nightly({"date": due.isoformat()}))
    rt.pass_time(timedelta(hours=1))
    assert started(pg_db) == []
    rt.pass_time(timedelta(hours=1))
    rt.pass_time(timedelta(days=3))
    (inst,) = started(pg_db)
    assert calls.count("report") == 1
    assert_finished_cleanly(pg_db, inst.id)


def test_a_cycle_starts_one_instance_per_tick_until_its_repetitions_run_out(
    rt: Harness, calls: Calls, clock: FakeClock, pg_db: Database
) -> None:
    calls.add("report")
    rt.deploy(nightly({"cycle": "R2/PT1H"}))
    for _ in range(4):
        rt.pass_time(timedelta(hours=1))
    assert len(started(pg_db)) == 2 and calls.count("report") == 2


def test_after_an_outage_the_missed_ticks_start_one_instance(
    rt: Harness, calls: Calls, clock: FakeClock, pg_db: Database
) -> None:
    calls.add("report")
    rt.deploy(nightly({"cycle": "R/PT10M"}))
    rt.pass_time(timedelta(minutes=55))
    assert len(started(pg_db)) == 1
    rt.pass_time(timedelta(minutes=5))  # the next tick keeps the 10-minute grid: 60
    assert len(started(pg_db)) == 2


def test_two_scanners_start_one_instance_per_tick(
    rt: Harness, calls: Calls, clock: FakeClock, pg_db: Database, engine_factory: Any
) -> None:
    calls.add("report")
    rt.deploy(nightly({"cycle": "R/PT1M"}))
    clock.advance(timedelta(minutes=1))
    engines = [engine_factory() for _ in range(3)]
    barrier = threading.Barrier(len(engines))

    def scan(h: Harness) -> None:
        barrier.wait()
        h.engine.run_scans()

    threads = [threading.Thread(target=scan, args=(h,)) for h in engines]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(started(pg_db)) == 1


def test_a_redeploy_replaces_the_schedule_and_bpm_start_uses_the_none_start(
    rt: Harness, calls: Calls, clock: FakeClock, pg_db: Database
) -> None:
    calls.add("report")
    rt.deploy(nightly({"cycle": "R/PT1H"}, none_start=True))
    rt.deploy(nightly({"cycle": "R/PT3H"}, none_start=True))
    rt.pass_time(timedelta(hours=1))
    rt.pass_time(timedelta(hours=1))
    assert started(pg_db) == []  # the first version's hourly tick is gone
    rt.pass_time(timedelta(hours=1))
    assert len(started(pg_db)) == 1
    iid = rt.start("nightly")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


CRON = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="fee_check" isExecutable="true">
    <bpmn:startEvent id="every_morning">
      <bpmn:timerEventDefinition>
        <bpmn:timeCycle xsi:type="bpmn:tFormalExpression"
          xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">0 0 6 * * ?</bpmn:timeCycle>
      </bpmn:timerEventDefinition>
    </bpmn:startEvent>
    <bpmn:serviceTask id="check" camunda:type="external" camunda:topic="fees" />
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="every_morning" targetRef="check" />
    <bpmn:sequenceFlow id="f2" sourceRef="check" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_cron_timer_start_event(rt: Harness, clock: FakeClock, pg_db: Database) -> None:
    clock.move_to(datetime(2026, 5, 1, 5, 0, tzinfo=UTC))
    rt.engine.deploy_bpmn(CRON)
    rt.pass_time(timedelta(hours=1))
    assert len(started(pg_db, "fee_check")) == 1
    rt.pass_time(timedelta(hours=23))
    assert len(started(pg_db, "fee_check")) == 1  # 05:00: tomorrow's tick is not due yet
    rt.pass_time(timedelta(hours=1))
    assert len(started(pg_db, "fee_check")) == 2
    (doc,) = compile_bpmn(CRON)
    assert doc["nodes"][0]["timer"] == {"cycle": "0 0 6 * * ?"}
