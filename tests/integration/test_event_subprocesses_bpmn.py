"""Event subprocesses from BPMN files in the style the Camunda Modeler and Camunda's own tests
write them: ``triggeredByEvent="true"``, ``isInterrupting``, error, message and timer start
events; the triggers bpm does not run yet are refused naming the element."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<definitions id="definitions" xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" targetNamespace="Examples">
  <message id="cancelMessage" name="cancelOrder" />
  <message id="noteMessage" name="addNote" />
  <error id="stockError" errorCode="OUT_OF_STOCK" />
  <signal id="alarm" name="alarm" />
  <escalation id="late" escalationCode="LATE" />
"""

ORDER = (
    HEAD
    + """  <process id="order" isExecutable="true">
    <startEvent id="theStart" />
    <sequenceFlow id="f1" sourceRef="theStart" targetRef="scope" />
    <subProcess id="scope">
      <startEvent id="innerStart" />
      <sequenceFlow id="f2" sourceRef="innerStart" targetRef="pack" />
      <userTask id="pack" name="Pack" />
      <sequenceFlow id="f3" sourceRef="pack" targetRef="innerEnd" />
      <endEvent id="innerEnd" />
      <subProcess id="noteHandler" triggeredByEvent="true">
        <startEvent id="noteStart" isInterrupting="false">
          <messageEventDefinition messageRef="noteMessage" />
        </startEvent>
        <sequenceFlow id="f4" sourceRef="noteStart" targetRef="readNote" />
        <userTask id="readNote" name="Read the note" />
        <sequenceFlow id="f5" sourceRef="readNote" targetRef="noteEnd" />
        <endEvent id="noteEnd" />
      </subProcess>
    </subProcess>
    <sequenceFlow id="f6" sourceRef="scope" targetRef="ship" />
    <userTask id="ship" name="Ship" />
    <sequenceFlow id="f7" sourceRef="ship" targetRef="theEnd" />
    <endEvent id="theEnd" />
    <subProcess id="cancelHandler" triggeredByEvent="true">
      <startEvent id="cancelStart">
        <messageEventDefinition messageRef="cancelMessage" />
      </startEvent>
      <sequenceFlow id="f8" sourceRef="cancelStart" targetRef="refund" />
      <userTask id="refund" name="Refund" />
      <sequenceFlow id="f9" sourceRef="refund" targetRef="cancelEnd" />
      <endEvent id="cancelEnd" />
    </subProcess>
    <subProcess id="stockHandler" triggeredByEvent="true">
      <startEvent id="stockStart">
        <errorEventDefinition errorRef="stockError" camunda:errorCodeVariable="code" />
      </startEvent>
      <sequenceFlow id="f10" sourceRef="stockStart" targetRef="stockEnd" />
      <endEvent id="stockEnd" />
    </subProcess>
    <subProcess id="timeoutHandler" triggeredByEvent="true">
      <startEvent id="timeoutStart" isInterrupting="false">
        <timerEventDefinition><timeDuration>P1D</timeDuration></timerEventDefinition>
      </startEvent>
      <sequenceFlow id="f11" sourceRef="timeoutStart" targetRef="remind" />
      <userTask id="remind" name="Remind" />
      <sequenceFlow id="f12" sourceRef="remind" targetRef="timeoutEnd" />
      <endEvent id="timeoutEnd" />
    </subProcess>
  </process>
</definitions>
"""
)


def open_tasks(rt: Harness, iid: UUID) -> list[str]:
    return sorted(t["node_id"] for t in rt.engine.user_tasks(instance_id=iid))


def complete(rt: Harness, iid: UUID, node: str) -> None:
    task = next(t for t in rt.engine.user_tasks(instance_id=iid) if t["node_id"] == node)
    rt.engine.complete_user_task(task["id"])
    rt.drain()


def test_a_camunda_style_order_runs_its_event_subprocesses(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    [doc] = compile_bpmn(ORDER)
    rt.deploy(doc)
    iid = rt.start("order")
    rt.drain()
    assert open_tasks(rt, iid) == ["pack"]
    rt.engine.correlate("addNote", instance_id=iid)
    rt.engine.correlate("addNote", instance_id=iid)
    rt.drain()
    assert open_tasks(rt, iid) == ["pack", "readNote", "readNote"]
    rt.pass_time(timedelta(days=1))
    assert open_tasks(rt, iid) == ["pack", "readNote", "readNote", "remind"]
    complete(rt, iid, "pack")
    assert open_tasks(rt, iid) == ["readNote", "readNote", "remind"]  # scope waits for notes
    complete(rt, iid, "readNote")
    complete(rt, iid, "readNote")
    assert open_tasks(rt, iid) == ["remind", "ship"]
    with pytest.raises(Exception, match="addNote"):  # the scope ended: no subscription left
        rt.engine.correlate("addNote", instance_id=iid)
    rt.engine.correlate("cancelOrder", instance_id=iid)
    rt.drain()
    assert open_tasks(rt, iid) == ["refund"]  # 'ship' and 'remind' were cancelled
    complete(rt, iid, "refund")
    assert_finished_cleanly(pg_db, iid)
    states = {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}
    assert states["ship"] == "CANCELLED" and states["remind"] == "CANCELLED"


@pytest.mark.parametrize(
    ("start", "problem"),
    [
        (
            '<startEvent id="s"><signalEventDefinition signalRef="nowhere" /></startEvent>',
            "startEvent 's' refers to signal 'nowhere', which the file does not declare",
        ),
        (
            '<startEvent id="s"><compensateEventDefinition /></startEvent>',
            "startEvent 's' starts an event subprocess with compensateEventDefinition, which "
            "is not supported yet",
        ),
        (
            '<startEvent id="s"><timerEventDefinition><timeCycle>soon</timeCycle>'
            "</timerEventDefinition></startEvent>",
            "timeCycle 'soon' is neither an ISO 8601 repeating interval",
        ),
        (
            '<startEvent id="s" isInterrupting="false"><errorEventDefinition /></startEvent>',
            "always interrupts",
        ),
        ('<startEvent id="s" />', "startEvent 's' starts an event subprocess without an event"),
    ],
)
def test_a_trigger_bpm_does_not_run_is_refused_naming_the_element(start: str, problem: str) -> None:
    xml = (
        HEAD
        + f"""  <process id="p" isExecutable="true">
    <startEvent id="theStart" />
    <sequenceFlow id="f1" sourceRef="theStart" targetRef="theEnd" />
    <endEvent id="theEnd" />
    <subProcess id="handler" triggeredByEvent="true">
      {start}
      <sequenceFlow id="f2" sourceRef="s" targetRef="e" />
      <endEvent id="e" />
    </subProcess>
  </process>
</definitions>
"""
    )
    with pytest.raises(InvalidDefinition) as refused:
        compile_bpmn(xml)
    assert problem in str(refused.value)


def test_a_signal_start_of_the_process_without_a_signal_is_refused() -> None:
    xml = (
        HEAD
        + """  <process id="p" isExecutable="true">
    <startEvent id="theStart"><signalEventDefinition /></startEvent>
    <sequenceFlow id="f1" sourceRef="theStart" targetRef="theEnd" />
    <endEvent id="theEnd" />
  </process>
</definitions>
"""
    )
    with pytest.raises(InvalidDefinition, match="has a signalEventDefinition without signalRef"):
        compile_bpmn(xml)
