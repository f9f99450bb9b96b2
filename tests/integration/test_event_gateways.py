"""Event-based gateways: the first of the events after the gateway wins (a message or a
timer), the others are gone in the same transaction, and a message and a timer racing in the
same instant still let exactly one win."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.parse import compile_definition
from bpm.errors import InvalidDefinition, NoMatchingWait
from bpm.store import Database, timers
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def payment() -> dict[str, Any]:
    """Wait for "Payment received", or give up after a day."""
    return (
        ProcessBuilder("pay_or_expire")
        .start()
        ._node("which", "eventBasedGateway")
        .message_event("paid", message="Payment received")
        .timer("expired", duration="P1D")
        .service_task("ship", handler="ship")
        .service_task("cancel", handler="cancel")
        .end()
        .end("cancelled")
        .sequence("start", "which")
        .flow("which", "paid")
        .flow("which", "expired")
        .sequence("paid", "ship", "end")
        .sequence("expired", "cancel", "cancelled")
        .build()
    )


@pytest.fixture
def outcome(calls: Calls) -> Calls:
    calls.add("ship")
    calls.add("cancel")
    return calls


def scheduled(db: Database, iid: Any) -> list[Any]:
    with db.transaction() as conn:
        return [t for t in timers.of_instance(conn, iid) if t.state == "SCHEDULED"]


def test_the_message_comes_first_and_the_timer_is_gone(
    rt: Harness, outcome: Calls, pg_db: Database, clock: FakeClock
) -> None:
    iid = rt.run(payment())
    assert len(scheduled(pg_db, iid)) == 1
    rt.engine.correlate("Payment received", instance_id=iid, variables={"amount": 9})
    rt.drain()
    assert scheduled(pg_db, iid) == []
    rt.pass_time(timedelta(days=2))
    assert (outcome.count("ship"), outcome.count("cancel")) == (1, 0)
    assert_finished_cleanly(pg_db, iid)


def test_the_timer_comes_first_and_the_message_finds_nothing(
    rt: Harness, outcome: Calls, pg_db: Database, clock: FakeClock
) -> None:
    iid = rt.run(payment())
    rt.pass_time(timedelta(days=1))
    with pytest.raises(NoMatchingWait):
        rt.engine.correlate("Payment received", instance_id=iid)
    assert (outcome.count("ship"), outcome.count("cancel")) == (0, 1)
    assert_finished_cleanly(pg_db, iid)


def race(rt: Harness, other: Harness, iid: Any) -> None:
    """A correlation and a timer scan let go at the same instant."""
    barrier = threading.Barrier(2)

    def send() -> None:
        barrier.wait()
        try:
            rt.engine.correlate("Payment received", instance_id=iid)
        except NoMatchingWait:
            pass

    def fire() -> None:
        barrier.wait()
        other.engine.fire_due_timers()

    threads = [threading.Thread(target=send), threading.Thread(target=fire)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    rt.drain()
    other.drain()


def test_a_message_and_a_timer_racing_let_exactly_one_win(
    engine_factory: Any, outcome: Calls, pg_db: Database, clock: FakeClock
) -> None:
    for _ in range(5):
        rt = engine_factory()
        iid = rt.run(payment())
        clock.advance(timedelta(days=1))
        race(rt, engine_factory(), iid)
        paths = [e["node_id"] for e in rows.token_events_of(pg_db, iid)]
        assert ("paid" in paths) != ("expired" in paths), paths
        assert_finished_cleanly(pg_db, iid)
    assert outcome.count("ship") + outcome.count("cancel") == 5


def test_an_event_gateway_leads_only_to_events_entered_only_from_it() -> None:
    doc = payment()
    doc["nodes"].append({"id": "t", "type": "task"})
    doc["flows"].append({"id": "to_t", "source": "which", "target": "t"})
    doc["flows"].append({"id": "t_out", "source": "t", "target": "end"})
    with pytest.raises(InvalidDefinition, match="leads to task 't'"):
        compile_definition(doc)


BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:message id="m_ok" name="approved" />
  <bpmn:process id="approval_wait" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:eventBasedGateway id="gw" />
    <bpmn:receiveTask id="ok" messageRef="m_ok" />
    <bpmn:intermediateCatchEvent id="late">
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT2H</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e1" /><bpmn:endEvent id="e2" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gw" />
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="ok" />
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="late" />
    <bpmn:sequenceFlow id="f4" sourceRef="ok" targetRef="e1" />
    <bpmn:sequenceFlow id="f5" sourceRef="late" targetRef="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_event_based_gateway_with_a_receive_task(
    rt: Harness, pg_db: Database, clock: FakeClock
) -> None:
    rt.engine.deploy_bpmn(BPMN)
    iid = rt.engine.start("approval_wait", business_key="req-1").id
    rt.drain()
    assert rt.engine.show(iid)["tokens"][0]["wait_kind"] == "EVENT"
    rt.engine.correlate("approved", business_key="req-1")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    (doc,) = compile_bpmn(BPMN)
    assert next(n for n in doc["nodes"] if n["id"] == "gw") == {
        "id": "gw",
        "type": "eventBasedGateway",
    }
