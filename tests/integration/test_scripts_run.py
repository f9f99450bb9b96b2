# ruff: noqa: E501  (the model is as Camunda Modeler writes it: long lines)
"""Inline JavaScript at run time, on PostgreSQL, in a model written as Camunda Modeler writes
one: a script task with a result variable, script execution and task listeners, and scripts
that loop, allocate or try to leave the sandbox becoming an incident that names them."""

from __future__ import annotations

import pytest

from bpm.errors import InvalidDefinition
from tests.helpers.runtime import Harness

MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" id="Definitions_1v0s7dz"
  targetNamespace="http://bpmn.io/schema/bpmn" exporter="Camunda Modeler" exporterVersion="5.17.0"
  modeler:executionPlatform="Camunda Platform" modeler:executionPlatformVersion="7.20.0">
  <bpmn:process id="invoice_js" name="Invoice (scripts)" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1">
      <bpmn:extensionElements>
        <camunda:executionListener event="start">
          <camunda:script scriptFormat="javascript">execution.setVariable("currency", "EUR");</camunda:script>
        </camunda:executionListener>
      </bpmn:extensionElements>
      <bpmn:outgoing>Flow_1</bpmn:outgoing>
    </bpmn:startEvent>
    <bpmn:scriptTask id="Activity_total" name="Compute total" scriptFormat="JavaScript" camunda:resultVariable="total">
      <bpmn:incoming>Flow_1</bpmn:incoming>
      <bpmn:outgoing>Flow_2</bpmn:outgoing>
      <bpmn:script>var sum = 0;
for (var i = 0; i &lt; lines.length; i++) {
  sum += lines[i].qty * lines[i].price;
}
execution.setVariable("lineCount", lines.length);
sum;</bpmn:script>
    </bpmn:scriptTask>
    <bpmn:userTask id="Activity_approve" name="Approve invoice" camunda:assignee="demo">
      <bpmn:extensionElements>
        <camunda:taskListener event="create">
          <camunda:script scriptFormat="javascript">task.setVariable("approvalNeeded", total &gt; 100);</camunda:script>
        </camunda:taskListener>
      </bpmn:extensionElements>
      <bpmn:incoming>Flow_2</bpmn:incoming>
      <bpmn:outgoing>Flow_3</bpmn:outgoing>
    </bpmn:userTask>
    <bpmn:endEvent id="EndEvent_1">
      <bpmn:incoming>Flow_3</bpmn:incoming>
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="Flow_1" sourceRef="StartEvent_1" targetRef="Activity_total" />
    <bpmn:sequenceFlow id="Flow_2" sourceRef="Activity_total" targetRef="Activity_approve" />
    <bpmn:sequenceFlow id="Flow_3" sourceRef="Activity_approve" targetRef="EndEvent_1" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_modeler_model_with_scripts_runs_to_its_end(rt: Harness) -> None:
    rt.engine.deploy_bpmn(MODEL)
    lines = [{"qty": 2, "price": 30}, {"qty": 1, "price": 50.5}]
    iid = rt.engine.start("invoice_js", {"lines": lines}).id
    rt.drain()
    variables = rt.engine.show(iid)["variables"]
    assert variables["currency"] == "EUR"
    assert variables["total"] == 110.5 and variables["lineCount"] == 2
    assert variables["approvalNeeded"] is True
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {}, user="demo")
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"


RUNAWAY = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="runaway" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:scriptTask id="Activity_bad" name="Bad script" scriptFormat="javascript">
      <bpmn:script>{source}</bpmn:script>
    </bpmn:scriptTask>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="Activity_bad" />
    <bpmn:sequenceFlow id="f2" sourceRef="Activity_bad" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("while (true) {}", "ran longer than 200 ms"),
        ("var a = []; while (true) { a.push(new Array(100000).fill(1)); }", "more than 64 MB"),
        ("require('fs').readFileSync('/etc/passwd')", "'require' is not defined"),
        ("fetch('http://127.0.0.1:5432/')", "'fetch' is not defined"),
        ("std.popen('id', 'r')", "'std' is not defined"),
        ("java.lang.Runtime.getRuntime().exec('id')", "'java' is not defined"),
    ],
)
def test_a_runaway_or_escaping_script_is_an_incident_naming_it(
    rt: Harness, monkeypatch: pytest.MonkeyPatch, source: str, why: str
) -> None:
    # 200 ms for the loop; the others get time to reach their own limit on a busy machine
    monkeypatch.setenv("BPM_SCRIPT_TIMEOUT_MS", "200" if "200 ms" in why else "20000")
    rt.engine.deploy_bpmn(RUNAWAY.format(source=source))
    iid = rt.engine.start("runaway").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "FAILED"
    [incident] = shown["incidents"]
    assert "Activity_bad" in incident["message"] and why in incident["message"]


ROUTED = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="Definitions_0fa3r2k"
  targetNamespace="http://bpmn.io/schema/bpmn" exporter="Camunda Modeler" exporterVersion="5.17.0">
  <bpmn:process id="routing_js" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1"><bpmn:outgoing>Flow_1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:exclusiveGateway id="Gateway_1" default="Flow_small">
      <bpmn:incoming>Flow_1</bpmn:incoming>
      <bpmn:outgoing>Flow_big</bpmn:outgoing>
      <bpmn:outgoing>Flow_small</bpmn:outgoing>
    </bpmn:exclusiveGateway>
    <bpmn:manualTask id="Activity_big" name="Big">
      <bpmn:extensionElements>
        <camunda:inputOutput>
          <camunda:inputParameter name="label">
            <camunda:script scriptFormat="javascript">"order-" + amount.toFixed(0)</camunda:script>
          </camunda:inputParameter>
          <camunda:outputParameter name="summary">
            <camunda:script scriptFormat="javascript">var s = { label: label, twice: amount * 2 }; s</camunda:script>
          </camunda:outputParameter>
        </camunda:inputOutput>
      </bpmn:extensionElements>
      <bpmn:incoming>Flow_big</bpmn:incoming>
      <bpmn:outgoing>Flow_2</bpmn:outgoing>
    </bpmn:manualTask>
    <bpmn:endEvent id="EndEvent_big"><bpmn:incoming>Flow_2</bpmn:incoming></bpmn:endEvent>
    <bpmn:endEvent id="EndEvent_small"><bpmn:incoming>Flow_small</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="Flow_1" sourceRef="StartEvent_1" targetRef="Gateway_1" />
    <bpmn:sequenceFlow id="Flow_big" sourceRef="Gateway_1" targetRef="Activity_big">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression" language="JavaScript">amount &gt; 1000 &amp;&amp; execution.getVariable("country") !== "DE"</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="Flow_small" sourceRef="Gateway_1" targetRef="EndEvent_small" />
    <bpmn:sequenceFlow id="Flow_2" sourceRef="Activity_big" targetRef="EndEvent_big" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_script_conditions_and_script_parameters(rt: Harness) -> None:
    rt.engine.deploy_bpmn(ROUTED)
    big = rt.engine.start("routing_js", {"amount": 1500, "country": "FR"}).id
    small = rt.engine.start("routing_js", {"amount": 1500, "country": "DE"}).id
    rt.drain()
    shown = rt.engine.show(big)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["summary"] == {"label": "order-1500", "twice": 3000}
    assert "summary" not in rt.engine.show(small)["variables"]
    assert rt.engine.show(small)["state"] == "COMPLETED"


SCRIPTED = {
    "key": "scripted_json",
    "nodes": [
        {"id": "s", "type": "startEvent"},
        {
            "id": "calc",
            "type": "serviceTask",
            "script": {"format": "javascript", "source": "amount * 2"},
            "resultVariable": "doubled",
        },
        {"id": "e", "type": "endEvent"},
    ],
    "flows": [
        {"id": "f1", "source": "s", "target": "calc"},
        {"id": "f2", "source": "calc", "target": "e"},
    ],
}


def test_scripts_off_refuses_a_deploy_and_fails_a_script_deployed_before(
    rt: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt.engine.deploy(SCRIPTED)
    monkeypatch.setenv("BPM_SCRIPTS", "off")
    with pytest.raises(InvalidDefinition, match=r"node 'calc' holds a script.*BPM_SCRIPTS=off"):
        rt.engine.deploy({**SCRIPTED, "key": "scripted_later"})
    iid = rt.engine.start("scripted_json", {"amount": 2}).id
    rt.drain()
    [incident] = rt.engine.show(iid)["incidents"]
    assert "runs no scripts (BPM_SCRIPTS=off)" in incident["message"]
    monkeypatch.setenv("BPM_SCRIPTS", "on")
    iid = rt.engine.start("scripted_json", {"amount": 2}).id
    rt.drain()
    assert rt.engine.show(iid)["variables"]["doubled"] == 4
