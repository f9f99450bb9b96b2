"""Message intermediate throw and end events send their message as a service task does (a
handler, an external topic, a Java class or expression named as a handler); without an
implementation they send nothing and the token passes, as Camunda 7 runs them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.engine.operations.external import TopicRequest
from bpm.errors import InvalidDefinition
from bpm.store import Database
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def model(throw_attrs: str, end_attrs: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:message id="m_shipped" name="OrderShipped" />
  <bpmn:process id="notify" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:intermediateThrowEvent id="tell">
      <bpmn:messageEventDefinition messageRef="m_shipped" {throw_attrs} />
    </bpmn:intermediateThrowEvent>
    <bpmn:endEvent id="done">
      <bpmn:messageEventDefinition messageRef="m_shipped" {end_attrs} />
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="tell" />
    <bpmn:sequenceFlow id="f2" sourceRef="tell" targetRef="done" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_throw_and_an_end_event_with_a_class_run_their_handlers(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("SendShipped", lambda ctx: {"told": True})
    calls.add("CloseOrder")
    xml = model('camunda:class="com.shop.SendShipped"', 'camunda:class="com.shop.CloseOrder"')
    rt.engine.deploy_bpmn(xml)
    iid = rt.start("notify")
    rt.drain()
    assert (calls.count("SendShipped"), calls.count("CloseOrder")) == (1, 1)
    assert_finished_cleanly(pg_db, iid)


def test_an_external_topic_sends_the_message(rt: Harness, calls: Calls, pg_db: Database) -> None:
    xml = model('camunda:type="external" camunda:topic="mail"', "")
    rt.engine.deploy_bpmn(xml)
    iid = rt.start("notify")
    rt.drain()
    (task,) = rt.engine.fetch_and_lock("w", [TopicRequest("mail", timedelta(minutes=1))])
    rt.engine.complete(task.id, "w", {"sent": 1})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_without_an_implementation_the_events_pass_through(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    rt.engine.deploy_bpmn(model("", ""))
    iid = rt.start("notify")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    (doc,) = compile_bpmn(model("", ""))
    kinds = {n["id"]: n["type"] for n in doc["nodes"]}
    assert kinds == {"s": "startEvent", "tell": "task", "done": "endEvent"}


def test_an_undeclared_message_is_still_refused() -> None:
    xml = model("", "").replace('messageRef="m_shipped" ', 'messageRef="m_nope" ', 1)
    with pytest.raises(InvalidDefinition, match="m_nope"):
        compile_bpmn(xml)


def test_a_message_named_in_words_is_correlated_by_that_name(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    """Camunda's message names are free text: "Order received" is a name like any other."""
    xml = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"
  targetNamespace="t">
  <bpmn:message id="m1" name="Order received" />
  <bpmn:process id="wait_words" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:receiveTask id="r" messageRef="m1" />
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="r" />
    <bpmn:sequenceFlow id="f2" sourceRef="r" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""
    rt.engine.deploy_bpmn(xml)
    iid = rt.start("wait_words")
    rt.drain()
    rt.engine.correlate("Order received", instance_id=iid)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    with pytest.raises(InvalidDefinition, match="rename the message"):
        compile_bpmn(xml.replace('name="Order received"', 'name=" padded"'))
