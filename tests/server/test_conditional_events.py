"""Conditional events through the REST API: ``GET /event-subscription`` lists a waiting
conditional catch with ``eventType: "conditional"``, and ``PUT
/process-instance/{id}/variables/{name}`` makes its condition true, as Camunda's
``runtimeService.setVariable`` does in IntermediateConditionalEventTest.testVariableValue."""

from __future__ import annotations

from tests.server.conftest import Server

XML = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d" targetNamespace="t">
  <bpmn:process id="conditionalEventProcess" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1" />
    <bpmn:sequenceFlow id="f1" sourceRef="StartEvent_1" targetRef="conditionalEvent" />
    <bpmn:intermediateCatchEvent id="conditionalEvent">
      <bpmn:conditionalEventDefinition>
        <bpmn:condition xsi:type="bpmn:tFormalExpression">${variable == 1}</bpmn:condition>
      </bpmn:conditionalEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="conditionalEvent" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_variable_put_through_the_api_passes_a_conditional_catch(server: Server) -> None:
    server.runtime.engine.deploy_bpmn(XML)
    iid = str(server.runtime.engine.start("conditionalEventProcess", {"variable": 0}).id)
    server.runtime.run_until_idle(timeout=5)
    with server.client("operator") as c:
        got = c.get("/event-subscription", params={"processInstanceId": iid})
        assert got.status_code == 200, got.text
        [sub] = got.json()
        assert sub["eventType"] == "conditional" and sub["eventName"] is None
        assert sub["activityId"] == "conditionalEvent"
        put = c.put(f"/process-instance/{iid}/variables/variable", json={"value": 1})
        assert put.status_code == 204, put.text
        server.runtime.run_until_idle(timeout=5)
        assert server.runtime.engine.show(iid)["state"] == "COMPLETED"
        assert c.get("/event-subscription", params={"processInstanceId": iid}).json() == []


START_XML = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d" targetNamespace="t">
  <bpmn:process id="conditionalStart" isExecutable="true">
    <bpmn:startEvent id="start">
      <bpmn:conditionalEventDefinition>
        <bpmn:condition xsi:type="bpmn:tFormalExpression">${temperature > 30}</bpmn:condition>
      </bpmn:conditionalEventDefinition>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="review" />
    <bpmn:userTask id="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_post_condition_starts_the_processes_whose_condition_holds(server: Server) -> None:
    [deployed] = server.runtime.engine.deploy_bpmn(START_XML)
    with server.client("operator") as c:
        cold = {"variables": {"temperature": {"value": 10, "type": "Integer"}}}
        got = c.post("/condition", json=cold)
        assert got.status_code == 200, got.text
        assert got.json() == []
        hot = {
            "variables": {"temperature": {"value": 35, "type": "Integer"}},
            "businessKey": "heat-1",
            "processDefinitionId": str(deployed.id),
        }
        got = c.post("/condition", json=hot)
        assert got.status_code == 200, got.text
        [instance] = got.json()
        assert instance["businessKey"] == "heat-1" and instance["ended"] is False
        assert instance["definitionId"] == str(deployed.id)
        server.runtime.run_until_idle(timeout=5)
        assert server.runtime.engine.user_tasks(instance_id=instance["id"])
