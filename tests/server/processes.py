"""The BPMN the server tests run: an external task with an error boundary event, a
receive task, a subprocess beside a user task."""

from __future__ import annotations

from bpm.embedded import EmbeddedRuntime
from tests.helpers.modeler import modeler_file


def error_boundary_bpmn(key: str, topic: str) -> str:
    """start -> work (external, ``topic``) -> done; work's error boundary (code E1) -> caught"""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d_{key}"
  targetNamespace="http://example.com/bpm">
  <bpmn:error id="E1" errorCode="E1"/>
  <bpmn:process id="{key}" isExecutable="true" camunda:historyTimeToLive="P1D">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="{topic}">
      <bpmn:extensionElements>
        <camunda:properties><camunda:property name="owner" value="tests"/></camunda:properties>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="done"/>
    <bpmn:endEvent id="done"/>
    <bpmn:boundaryEvent id="on_error" attachedToRef="work">
      <bpmn:errorEventDefinition errorRef="E1"/>
    </bpmn:boundaryEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="on_error" targetRef="caught"/>
    <bpmn:endEvent id="caught"/>
  </bpmn:process>
</bpmn:definitions>"""


def deploy(rt: EmbeddedRuntime, key: str, topic: str) -> None:
    rt.engine.deploy_bpmn(error_boundary_bpmn(key, topic))


def start(
    rt: EmbeddedRuntime, key: str, business_key: str | None = None, **variables: object
) -> str:
    started = rt.engine.start(key, dict(variables), business_key=business_key)
    rt.run_until_idle(timeout=5)
    return str(started.id)


def ended_at(rt: EmbeddedRuntime, instance_id: str) -> tuple[str, set[str]]:
    """The instance's state and the end events its tokens reached."""
    shown = rt.engine.show(instance_id)
    ends = {t["node_id"] for t in shown["tokens"] if t["node_id"] in ("done", "caught")}
    return str(shown["state"]), ends


def message_bpmn(key: str, message: str = "paid") -> str:
    """start -> wait (receive task for ``message``) -> done, as Camunda Modeler saves it."""
    body = f"""    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait"/>
    <bpmn:receiveTask id="wait" name="Wait for payment" messageRef="Message_{key}"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done"/>
    <bpmn:endEvent id="done"/>"""
    declarations = f'  <bpmn:message id="Message_{key}" name="{message}"/>\n'
    return modeler_file(
        key, body, declarations=declarations, attrs=' camunda:historyTimeToLive="P1D"'
    )


def nested_bpmn(key: str) -> str:
    """start -> fork -> (review: user task | sub: subprocess holding inner: user task) ->
    join -> done."""
    body = """    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="fork"/>
    <bpmn:parallelGateway id="fork"/>
    <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="review"/>
    <bpmn:sequenceFlow id="f3" sourceRef="fork" targetRef="sub"/>
    <bpmn:userTask id="review" name="Review"/>
    <bpmn:subProcess id="sub" name="Sub">
      <bpmn:startEvent id="sub_start"/>
      <bpmn:sequenceFlow id="s1" sourceRef="sub_start" targetRef="inner"/>
      <bpmn:userTask id="inner" name="Inner"/>
      <bpmn:sequenceFlow id="s2" sourceRef="inner" targetRef="sub_end"/>
      <bpmn:endEvent id="sub_end"/>
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="f4" sourceRef="review" targetRef="join"/>
    <bpmn:sequenceFlow id="f5" sourceRef="sub" targetRef="join"/>
    <bpmn:parallelGateway id="join"/>
    <bpmn:sequenceFlow id="f6" sourceRef="join" targetRef="done"/>
    <bpmn:endEvent id="done"/>"""
    return modeler_file(key, body, attrs=' camunda:historyTimeToLive="P1D"')
