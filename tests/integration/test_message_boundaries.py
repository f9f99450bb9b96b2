"""Message boundary events: while a token works at the activity, a correlation to its
instance fires the boundary; interrupting, the activity's work is cancelled and the token
takes the boundary's path; non-interrupting, a path starts beside it, once per message; once
the activity is over, the message finds nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.engine.operations.external import TopicRequest
from bpm.errors import NoMatchingWait
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


def order(host: str, *, interrupting: bool) -> dict[str, Any]:
    b = ProcessBuilder("order").start()
    if host == "user":
        b.user_task("work")
    elif host == "external":
        b.service_task("work", topic="slow")
    else:
        inner = (
            ProcessBuilder("inner")
            .start("s_start")
            .user_task("s_task")
            .end("s_end")
            .sequence("s_start", "s_task", "s_end")
        )
        b.sub_process("work", inner)
    b._node(
        "cancelled",
        "boundaryEvent",
        attachedTo="work",
        message="Order cancelled",
        interrupting=interrupting,
    )
    b.service_task("refund", handler="refund").end("refunded")
    b.service_task("ship", handler="ship").end()
    return (
        b.sequence("start", "work", "ship", "end")
        .sequence("cancelled", "refund", "refunded")
        .build()
    )


@pytest.fixture
def paths(calls: Calls) -> Calls:
    calls.add("refund")
    calls.add("ship")
    return calls


@pytest.mark.parametrize("host", ["user", "external", "subprocess"])
def test_an_interrupting_message_boundary_leaves_the_activity(
    rt: Harness, paths: Calls, pg_db: Database, host: str
) -> None:
    iid = rt.run(order(host, interrupting=True), {"amount": 3})
    rt.engine.correlate("Order cancelled", instance_id=iid, variables={"reason": "late"})
    rt.drain()
    assert paths.count("refund") == 1 and paths.count("ship") == 0
    assert rt.engine.show(iid)["variables"]["reason"] == "late"
    assert_finished_cleanly(pg_db, iid)
    with pytest.raises(NoMatchingWait):
        rt.engine.correlate("Order cancelled", instance_id=iid)
    if host == "external":
        assert rt.engine.fetch_and_lock("w", [TopicRequest("slow", timedelta(minutes=1))]) == []


def test_a_non_interrupting_message_boundary_starts_a_path_each_time(
    rt: Harness, paths: Calls, pg_db: Database
) -> None:
    iid = rt.run(order("user", interrupting=False))
    for _ in range(2):
        rt.engine.correlate("Order cancelled", instance_id=iid)
        rt.drain()
    assert paths.count("refund") == 2
    rt.complete_user_task(iid)
    assert paths.count("ship") == 1
    assert_finished_cleanly(pg_db, iid)
    events = [e["type"] for e in rows.engine_events_of(pg_db, iid, type="MessageCorrelated")]
    assert len(events) == 2


def test_a_message_boundary_on_a_multi_instance_activity_interrupts_every_iteration(
    rt: Harness, paths: Calls, pg_db: Database
) -> None:
    doc = order("user", interrupting=True)
    work = next(n for n in doc["nodes"] if n["id"] == "work")
    work["multiInstance"] = {"cardinality": 3}
    iid = rt.run(doc)
    assert len(rt.engine.user_tasks(instance_id=iid)) == 3
    rt.engine.correlate("Order cancelled", instance_id=iid)
    rt.drain()
    assert rt.engine.user_tasks(instance_id=iid) == [] and paths.count("refund") == 1
    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)


BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:message id="m_upd" name="addressChanged" />
  <bpmn:process id="delivery" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:userTask id="deliver" />
    <bpmn:boundaryEvent id="upd" cancelActivity="false" attachedToRef="deliver">
      <bpmn:messageEventDefinition messageRef="m_upd" />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="reroute" camunda:class="com.x.Reroute" />
    <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="deliver" />
    <bpmn:sequenceFlow id="f2" sourceRef="deliver" targetRef="e" />
    <bpmn:sequenceFlow id="f3" sourceRef="upd" targetRef="reroute" />
    <bpmn:sequenceFlow id="f4" sourceRef="reroute" targetRef="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_non_interrupting_message_boundary(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("Reroute")
    rt.engine.deploy_bpmn(BPMN)
    iid = rt.engine.start("delivery", business_key="parcel-1").id
    rt.drain()
    rt.engine.correlate("addressChanged", business_key="parcel-1")
    rt.drain()
    assert calls.count("Reroute") == 1
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)
    (doc,) = compile_bpmn(BPMN)
    upd = next(n for n in doc["nodes"] if n["id"] == "upd")
    assert upd["message"] == "addressChanged" and upd["interrupting"] is False
