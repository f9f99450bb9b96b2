"""Escalations: thrown from inside a subprocess, caught by the subprocess's escalation
boundary event (interrupting or not) or by an event subprocess with an escalation start (which
comes first in its own scope), by code before a catch-all; an escalation nobody catches is not
an error."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def order(*, interrupting: bool, code: str = "LATE", throw_at_end: bool = False) -> dict[str, Any]:
    """A subprocess escalates LATE, then works on; a boundary on it catches ``code``."""
    inner = ProcessBuilder("inner").start("s_start")
    if throw_at_end:
        inner._node("s_end", "endEvent", escalation="LATE")
        inner.sequence("s_start", "s_end")
    else:
        inner._node("escalate", "escalationThrow", escalation="LATE")
        inner.service_task("s_work", handler="work").end("s_end")
        inner.sequence("s_start", "escalate", "s_work", "s_end")
    b = ProcessBuilder("escalating").start().sub_process("sub", inner)
    b._node("late", "boundaryEvent", attachedTo="sub", escalation=code, interrupting=interrupting)
    b.service_task("notify", handler="notify").end("notified")
    b.service_task("after", handler="after").end()
    return b.sequence("start", "sub", "after", "end").sequence("late", "notify", "notified").build()


@pytest.fixture
def seen(calls: Calls) -> Calls:
    for name in ("work", "notify", "after", "on_esc"):
        calls.add(name)
    return calls


def test_a_non_interrupting_boundary_catches_and_the_thrower_goes_on(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    iid = rt.run(order(interrupting=False))
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 1]
    assert_finished_cleanly(pg_db, iid)
    (thrown,) = rows.engine_events_of(pg_db, iid, type="EscalationThrown")
    assert thrown["data"]["code"] == "LATE"


def test_an_interrupting_boundary_ends_the_subprocess(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    iid = rt.run(order(interrupting=True, code="*"))
    assert [seen.count(n) for n in ("work", "notify", "after")] == [0, 1, 0]
    assert_finished_cleanly(pg_db, iid)


def test_an_escalation_end_event_and_an_uncaught_escalation_is_no_error(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    iid = rt.run(order(interrupting=False, throw_at_end=True))
    assert [seen.count(n) for n in ("notify", "after")] == [1, 1]
    assert_finished_cleanly(pg_db, iid)
    other = rt.run(order(interrupting=True, code="OTHER"))  # nobody catches LATE
    assert [seen.count(n) for n in ("work", "notify", "after")] == [1, 1, 2]
    assert_finished_cleanly(pg_db, other)


def test_an_escalation_event_subprocess_in_the_scope_comes_before_the_boundary(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    doc = order(interrupting=True)
    sub = next(n for n in doc["nodes"] if n["id"] == "sub")
    esp = (
        ProcessBuilder("esp")
        .trigger_start("esc_start", escalation="LATE", interrupting=False)
        .service_task("on_esc", handler="on_esc")
        .end("esc_end")
        .sequence("esc_start", "on_esc", "esc_end")
        .build()
    )
    sub["nodes"].append(
        {
            "id": "esp",
            "type": "subProcess",
            "triggeredByEvent": True,
            "nodes": esp["nodes"],
            "flows": esp["flows"],
        }
    )
    iid = rt.run(doc)
    assert [seen.count(n) for n in ("on_esc", "notify", "work", "after")] == [1, 0, 1, 1]
    assert_finished_cleanly(pg_db, iid)


BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:escalation id="esc_late" name="Late" escalationCode="LATE" />
  <bpmn:process id="esc_bpmn" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:subProcess id="sub">
      <bpmn:startEvent id="ss" />
      <bpmn:intermediateThrowEvent id="tell">
        <bpmn:escalationEventDefinition escalationRef="esc_late" />
      </bpmn:intermediateThrowEvent>
      <bpmn:endEvent id="se" />
      <bpmn:sequenceFlow id="sf1" sourceRef="ss" targetRef="tell" />
      <bpmn:sequenceFlow id="sf2" sourceRef="tell" targetRef="se" />
    </bpmn:subProcess>
    <bpmn:boundaryEvent id="caught" cancelActivity="false" attachedToRef="sub">
      <bpmn:escalationEventDefinition escalationRef="esc_late"
        camunda:escalationCodeVariable="why" />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="inform" camunda:class="notify" />
    <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="sub" />
    <bpmn:sequenceFlow id="f2" sourceRef="sub" targetRef="e" />
    <bpmn:sequenceFlow id="f3" sourceRef="caught" targetRef="inform" />
    <bpmn:sequenceFlow id="f4" sourceRef="inform" targetRef="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_escalation(rt: Harness, seen: Calls, pg_db: Database) -> None:
    rt.engine.deploy_bpmn(BPMN)
    iid = rt.start("esc_bpmn")
    rt.drain()
    assert seen.count("notify") == 1
    assert rt.engine.show(iid)["variables"]["why"] == "LATE"
    assert_finished_cleanly(pg_db, iid)
    (doc,) = compile_bpmn(BPMN)
    caught = next(n for n in doc["nodes"] if n["id"] == "caught")
    assert caught["escalation"] == "LATE" and caught["interrupting"] is False
