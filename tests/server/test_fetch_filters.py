"""fetchAndLock's filters on a topic: business key, process key(s), definition id, process
variables, tenants (bpm has none); and the locked task's shape, field by field."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.server.conftest import Server
from tests.server.processes import deploy, start

FETCH = "/external-task/fetchAndLock"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000$")


@pytest.fixture(scope="module")
def instances(server: Server) -> dict[str, str]:
    deploy(server.runtime, "filter_a", "filters")
    deploy(server.runtime, "filter_b", "filters")
    rt = server.runtime
    return {
        "a1": start(rt, "filter_a", business_key="k1", colour="red", n=1),
        "a2": start(rt, "filter_a", business_key="k2", colour="blue", n=2),
        "b1": start(rt, "filter_b", business_key="k1", colour="red", n=3),
    }


def _fetch(server: Server, **topic: Any) -> list[dict[str, Any]]:
    body = {
        "workerId": "f",
        "maxTasks": 10,
        "topics": [{"topicName": "filters", "lockDuration": 60000, **topic}],
    }
    with server.client("operator") as c:
        answer = c.post(FETCH, json=body)
        assert answer.status_code == 200, answer.text
        found = list(answer.json())
        for task in found:  # give each back for the next case
            assert c.post(f"/external-task/{task['id']}/unlock").status_code == 204
    return found


def _instances(found: list[dict[str, Any]], instances: dict[str, str]) -> set[str]:
    names = {v: k for k, v in instances.items()}
    return {names[t["processInstanceId"]] for t in found}


def test_each_filter_narrows_the_fetch(server: Server, instances: dict[str, str]) -> None:
    assert _instances(_fetch(server), instances) == {"a1", "a2", "b1"}
    assert _instances(_fetch(server, businessKey="k1"), instances) == {"a1", "b1"}
    assert _instances(_fetch(server, processDefinitionKey="filter_b"), instances) == {"b1"}
    assert _instances(_fetch(server, processDefinitionKeyIn=["filter_a"]), instances) == {
        "a1",
        "a2",
    }
    assert _instances(_fetch(server, processVariables={"colour": "red"}), instances) == {"a1", "b1"}
    assert _instances(_fetch(server, processVariables={"colour": "red", "n": 3}), instances) == {
        "b1"
    }
    assert _fetch(server, processVariables={"colour": "green"}) == []
    assert _fetch(server, tenantIdIn=["t1"]) == []
    assert _instances(_fetch(server, processVariables={}, withoutTenantId=True), instances) == {
        "a1",
        "a2",
        "b1",
    }
    one = _fetch(server, businessKey="k2")[0]
    assert _instances(
        _fetch(server, processDefinitionId=one["processDefinitionId"]), instances
    ) == {"a1", "a2"}
    assert _fetch(server, processDefinitionIdIn=["not-a-bpm-id"]) == []


def test_a_locked_task_has_camundas_shape(server: Server, instances: dict[str, str]) -> None:
    [task] = _fetch(
        server, businessKey="k2", variables=["colour", "n"], includeExtensionProperties=True
    )
    assert set(task) == {
        "id",
        "topicName",
        "workerId",
        "lockExpirationTime",
        "createTime",
        "retries",
        "errorMessage",
        "errorDetails",
        "processInstanceId",
        "executionId",
        "activityId",
        "activityInstanceId",
        "processDefinitionId",
        "processDefinitionKey",
        "processDefinitionVersionTag",
        "tenantId",
        "priority",
        "businessKey",
        "suspended",
        "variables",
        "extensionProperties",
        # bpm's own worker reads these (docs/http-api.md); Camunda's clients ignore them
        "bpmAttempt",
        "bpmRetries",
        "bpmBackoff",
        "bpmVersion",
    }
    assert task["bpmAttempt"] == 1 and task["bpmVersion"] == 1
    assert task["topicName"] == "filters" and task["workerId"] == "f"
    assert DATE.match(task["lockExpirationTime"]) and DATE.match(task["createTime"])
    assert task["retries"] is None and task["errorMessage"] is None and task["tenantId"] is None
    assert task["activityId"] == "work" and task["processDefinitionKey"] == "filter_a"
    assert task["businessKey"] == "k2" and task["suspended"] is False
    assert task["variables"] == {
        "colour": {"type": "String", "value": "blue", "valueInfo": {}},
        "n": {"type": "Integer", "value": 2, "valueInfo": {}},
    }
    assert task["extensionProperties"] == {"owner": "tests"}
    [plain] = _fetch(server, businessKey="k2")
    assert plain["extensionProperties"] == {} and set(plain["variables"]) == {"colour", "n"}


def _scoped_bpmn(key: str, topic: str) -> str:
    """start -> sub (input ``level``) { inner (external, input ``part``) } -> plain (external)
    -> done: one task in a scope of its own, one directly in the process."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d_{key}"
  targetNamespace="http://example.com/bpm">
  <bpmn:process id="{key}" isExecutable="true" camunda:historyTimeToLive="P1D">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="sub"/>
    <bpmn:subProcess id="sub">
      <bpmn:extensionElements>
        <camunda:inputOutput>
          <camunda:inputParameter name="level">outer</camunda:inputParameter>
        </camunda:inputOutput>
      </bpmn:extensionElements>
      <bpmn:startEvent id="sub_start"/>
      <bpmn:sequenceFlow id="s1" sourceRef="sub_start" targetRef="inner"/>
      <bpmn:serviceTask id="inner" camunda:type="external" camunda:topic="{topic}">
        <bpmn:extensionElements>
          <camunda:inputOutput>
            <camunda:inputParameter name="part">${{colour}}-part</camunda:inputParameter>
          </camunda:inputOutput>
        </bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:sequenceFlow id="s2" sourceRef="inner" targetRef="sub_end"/>
      <bpmn:endEvent id="sub_end"/>
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="f2" sourceRef="sub" targetRef="plain"/>
    <bpmn:serviceTask id="plain" camunda:type="external" camunda:topic="{topic}"/>
    <bpmn:sequenceFlow id="f3" sourceRef="plain" targetRef="done"/>
    <bpmn:endEvent id="done"/>
  </bpmn:process>
</bpmn:definitions>"""


def test_local_variables_are_those_of_the_scope_the_task_runs_in(server: Server) -> None:
    """As Camunda's executions: a task with input mappings is a scope of its own; a task
    directly in the process runs in the instance's scope, whose variables are all of them."""
    rt = server.runtime
    rt.engine.deploy_bpmn(_scoped_bpmn("local_vars", "locals"))
    started = rt.engine.start("local_vars", {"colour": "green"})
    rt.run_until_idle(timeout=5)

    def body(local: bool) -> dict[str, Any]:
        topic = {"topicName": "locals", "lockDuration": 60000, "localVariables": local}
        return {"workerId": "lv", "maxTasks": 1, "topics": [topic]}

    with server.client("operator") as c:
        [inner] = c.post(FETCH, json=body(True)).json()
        assert inner["activityId"] == "inner"
        assert {n: v["value"] for n, v in inner["variables"].items()} == {"part": "green-part"}
        assert c.post(f"/external-task/{inner['id']}/unlock").status_code == 204
        [seen] = c.post(FETCH, json=body(False)).json()
        assert set(seen["variables"]) == {"colour", "level", "part"}
        done = c.post(f"/external-task/{seen['id']}/complete", json={"workerId": "lv"})
        assert done.status_code == 204, done.text
        rt.run_until_idle(timeout=5)
        [plain] = c.post(FETCH, json=body(True)).json()
        assert plain["activityId"] == "plain"
        assert plain["processInstanceId"] == str(started.id)
        assert set(plain["variables"]) == {"colour"}


def test_a_version_tag_filter_is_refused_not_ignored(server: Server) -> None:
    body = {
        "workerId": "vt",
        "maxTasks": 1,
        "topics": [
            {"topicName": "filters", "lockDuration": 1000, "processDefinitionVersionTag": "1.0"}
        ],
    }
    with server.client("operator") as c:
        answer = c.post(FETCH, json=body)
    assert answer.status_code == 400
    assert "processDefinitionVersionTag: not supported yet" in answer.json()["message"]
