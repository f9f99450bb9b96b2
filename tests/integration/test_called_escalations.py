"""Escalations from a called instance: what nothing in it catches goes up to the call
activity that started it (its boundary, or an event subprocess of the caller), interrupting
(the called instance is cancelled) or not (it goes on); up a chain of calls; nobody catching
it is no error; a lost or doubled job to the caller neither loses nor repeats a catch."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from bpm.definitions import ProcessBuilder
from bpm.store import Database
from bpm.store.schema import process_instances
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def child(*, at_end: bool = False, wait: bool = False) -> dict[str, Any]:
    """Escalates LATE (a throw event, then ``work`` and maybe a user task; or at its end)."""
    b = ProcessBuilder("child").start()
    if at_end:
        b._node("end", "endEvent", escalation="LATE")
        return b.sequence("start", "end").build()
    b._node("escalate", "escalationThrow", escalation="LATE")
    b.service_task("work", handler="work")
    if wait:
        b.user_task("approve")
        return b.end().sequence("start", "escalate", "work", "approve", "end").build()
    return b.end().sequence("start", "escalate", "work", "end").build()


def caller(*, interrupting: bool, code: str = "LATE", key: str = "parent") -> dict[str, Any]:
    """Calls ``child``; a boundary on the call catches ``code``."""
    b = ProcessBuilder(key).start().call_activity("call", process="child")
    b._node("late", "boundaryEvent", attachedTo="call", escalation=code, interrupting=interrupting)
    b.service_task("notify", handler="notify").end("notified")
    b.service_task("after", handler="after").end()
    b.sequence("start", "call", "after", "end")
    return b.sequence("late", "notify", "notified").build()


@pytest.fixture
def seen(calls: Calls) -> Calls:
    for name in ("work", "notify", "after"):
        calls.add(name)
    return calls


def called_of(db: Database, iid: UUID) -> Any:
    t = process_instances
    with db.transaction() as conn:
        (row,) = conn.execute(select(t).where(t.c.super_instance_id == iid)).all()
    return row


def test_a_non_interrupting_boundary_on_the_call_catches_and_the_called_instance_goes_on(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(child(wait=True))
    rt.deploy(caller(interrupting=False))
    iid = rt.start("parent")
    rt.drain()
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 0]
    called = called_of(pg_db, iid)
    assert called.state == "RUNNING"  # waits at its user task; the caller still waits for it
    rt.complete_user_task(called.id)
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 1]
    assert_finished_cleanly(pg_db, iid)
    assert_finished_cleanly(pg_db, called.id)
    (sent,) = rows.engine_events_of(pg_db, called.id, type="EscalationPropagated")
    assert sent["data"] == {"code": "LATE", "interrupting": False}
    assert len(rows.engine_events_of(pg_db, called.id, type="EscalationReceived")) == 1
    (thrown,) = rows.engine_events_of(pg_db, iid, type="EscalationThrown")
    assert thrown["node_id"] == "call"


def test_an_interrupting_boundary_on_the_call_cancels_the_called_instance(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(child())
    rt.deploy(caller(interrupting=True, code="*"))
    iid = rt.start("parent")
    rt.drain()
    assert [seen.count(n) for n in ("work", "notify", "after")] == [0, 1, 0]
    assert_finished_cleanly(pg_db, iid)
    assert called_of(pg_db, iid).state == "CANCELLED"
    assert rows.state(pg_db, iid) == "COMPLETED"


def test_an_escalation_end_event_of_the_called_process(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(child(at_end=True))
    rt.deploy(caller(interrupting=False))
    iid = rt.start("parent")
    rt.drain()
    assert [seen.count(n) for n in ("notify", "after")] == [1, 1]
    assert_finished_cleanly(pg_db, iid)
    assert called_of(pg_db, iid).state == "COMPLETED"


def test_an_escalation_no_caller_catches_is_no_error(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(child())
    rt.deploy(caller(interrupting=True, code="OTHER"))
    iid = rt.start("parent")
    rt.drain()
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 0, 1]
    assert_finished_cleanly(pg_db, iid)
    called = called_of(pg_db, iid)
    assert not rows.engine_events_of(pg_db, called.id, type="EscalationPropagated")


def test_an_event_subprocess_of_the_caller_catches_it(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(child())
    esp = (
        ProcessBuilder("esp")
        .trigger_start("esc_start", escalation="LATE", interrupting=True)
        .service_task("handle", handler="notify")
        .end("esp_end")
        .sequence("esc_start", "handle", "esp_end")
    )
    doc = (
        ProcessBuilder("parent")
        .start()
        .call_activity("call", process="child")
        .service_task("after", handler="after")
        .end()
        .sequence("start", "call", "after", "end")
        .event_sub_process("on_late", esp)
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("parent")
    rt.drain()
    assert [seen.count(n) for n in ("work", "notify", "after")] == [0, 1, 0]
    assert_finished_cleanly(pg_db, iid)
    assert called_of(pg_db, iid).state == "CANCELLED"


def test_up_a_chain_of_calls_to_the_first_caller_that_catches(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    """grandparent -> parent (no catcher) -> child: the grandparent's boundary catches."""
    rt.deploy(child(wait=True))
    middle = (
        ProcessBuilder("parent")
        .start()
        .call_activity("call", process="child")
        .end()
        .sequence("start", "call", "end")
        .build()
    )
    rt.deploy(middle)
    top = caller(interrupting=False, key="top")
    for node in top["nodes"]:
        if node["id"] == "call":
            node["process"] = "parent"
    rt.deploy(top)
    iid = rt.start("top")
    rt.drain()
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 0]
    mid = called_of(pg_db, iid)
    low = called_of(pg_db, mid.id)
    rt.complete_user_task(low.id)
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 1]
    for instance in (iid, mid.id, low.id):
        assert_finished_cleanly(pg_db, instance)


def test_up_a_chain_an_interrupting_catch_cancels_every_instance_below(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(child(wait=True))
    rt.deploy(
        ProcessBuilder("parent")
        .start()
        .call_activity("call", process="child")
        .end()
        .sequence("start", "call", "end")
        .build()
    )
    top = caller(interrupting=True, key="top")
    next(n for n in top["nodes"] if n["id"] == "call")["process"] = "parent"
    rt.deploy(top)
    iid = rt.start("top")
    rt.drain()
    assert [seen.count(n) for n in ("work", "notify", "after")] == [0, 1, 0]
    mid = called_of(pg_db, iid)
    assert mid.state == "CANCELLED"
    assert called_of(pg_db, mid.id).state == "CANCELLED"
    assert_finished_cleanly(pg_db, iid)


def test_a_lost_job_to_the_caller_is_sent_again_by_the_scan_and_a_doubled_one_catches_once(
    rt: Harness, seen: Calls, pg_db: Database, clock: Any
) -> None:
    rt.deploy(child(wait=True))
    rt.deploy(caller(interrupting=False))
    iid = rt.start("parent")
    lost = 0
    while (job := rt.queue.pop(rt.clock.peek())) is not None:
        token_id = job.args.get("token_id")
        token = rows.token(pg_db, UUID(token_id)) if token_id else None
        if token is not None and token.instance_id == iid and token.wait_kind == "CALLED":
            lost += 1
            continue  # the called instance's job to its caller is lost
        rt.engine.run_job(job)
    assert lost == 1 and seen.count("notify") == 0
    clock.advance(timedelta(minutes=5))
    rt.engine.run_scans()
    jobs = rt.queued()
    rt.queue.dispatch(jobs + jobs)  # and delivered twice
    rt.drain()
    assert seen.count("notify") == 1
    rt.engine.run_scans()  # nothing left to receive: nothing sent
    rt.drain()
    assert seen.count("notify") == 1
    rt.complete_user_task(called_of(pg_db, iid).id)
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 1]
    assert_finished_cleanly(pg_db, iid)


CALLED_BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d1" targetNamespace="t">
  <bpmn:escalation id="Escalation_late" name="late" escalationCode="LATE" />
  <bpmn:process id="review_bpmn" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="too_late" />
    <bpmn:intermediateThrowEvent id="too_late">
      <bpmn:escalationEventDefinition escalationRef="Escalation_late" />
    </bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="too_late" targetRef="review" />
    <bpmn:userTask id="review" />
    <bpmn:sequenceFlow id="f3" sourceRef="review" targetRef="e" />
    <bpmn:endEvent id="e" />
  </bpmn:process>
</bpmn:definitions>
"""

CALLING_BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d2" targetNamespace="t">
  <bpmn:escalation id="Escalation_late" name="late" escalationCode="LATE" />
  <bpmn:process id="order_bpmn" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="call_review" />
    <bpmn:callActivity id="call_review" calledElement="review_bpmn">
      <bpmn:extensionElements>
        <camunda:in variables="all" />
      </bpmn:extensionElements>
    </bpmn:callActivity>
    <bpmn:sequenceFlow id="f2" sourceRef="call_review" targetRef="e" />
    <bpmn:endEvent id="e" />
    <bpmn:boundaryEvent id="late_review" cancelActivity="false" attachedToRef="call_review">
      <bpmn:escalationEventDefinition escalationRef="Escalation_late"
          camunda:escalationCodeVariable="why" />
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="late_review" targetRef="tell_manager" />
    <bpmn:serviceTask id="tell_manager" camunda:class="notify" />
    <bpmn:sequenceFlow id="f4" sourceRef="tell_manager" targetRef="e2" />
    <bpmn:endEvent id="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_camunda_models_escalating_to_a_call_activity(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.engine.deploy_bpmn(CALLED_BPMN)
    rt.engine.deploy_bpmn(CALLING_BPMN)
    iid = rt.start("order_bpmn", {"order": 7})
    rt.drain()
    assert seen.count("notify") == 1
    assert rt.engine.show(iid)["variables"]["why"] == "LATE"
    rt.complete_user_task(called_of(pg_db, iid).id)
    assert_finished_cleanly(pg_db, iid)
