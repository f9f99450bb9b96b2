"""The BPMN the server tests run: an external task with an error boundary event."""

from __future__ import annotations

from bpm.embedded import EmbeddedRuntime


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
