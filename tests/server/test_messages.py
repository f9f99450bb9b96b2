"""``POST /message``: by business key or instance id, with correlation keys and variables,
``all``, ``resultEnabled``; no match is 400 as in Camunda (``POST /signal``: test_signals)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import message_bpmn


@pytest.fixture(scope="module")
def clients(server: Server) -> Iterator[dict[str, httpx.Client]]:
    server.runtime.engine.deploy_bpmn(message_bpmn("msg_p", "paid"))
    server.runtime.engine.deploy_bpmn(message_bpmn("msg_other", "paid"))
    server.add("msg-starter", Role.STARTER)
    server.add("msg-only-other", Role.STARTER, processes=("msg_other",))
    server.add("msg-viewer", Role.VIEWER)
    names = ("operator", "msg-starter", "msg-only-other", "msg-viewer")
    made = {n: server.client(n) for n in names}
    yield made
    for c in made.values():
        c.close()


def _start(server: Server, business_key: str, key: str = "msg_p", **variables: object) -> str:
    iid = str(server.runtime.engine.start(key, dict(variables), business_key=business_key).id)
    server.runtime.run_until_idle(timeout=5)
    return iid


def _state(server: Server, iid: str) -> str:
    server.runtime.run_until_idle(timeout=5)
    return str(server.runtime.engine.show(iid)["state"])


def test_correlate_by_business_key_sets_variables(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    iid = _start(server, "m-1")
    body = {
        "messageName": "paid",
        "businessKey": "m-1",
        "processVariables": {"amount": {"value": 5, "type": "Integer"}},
    }
    got = clients["msg-starter"].post("/message", json=body)
    assert got.status_code == 204, got.text
    assert _state(server, iid) == "COMPLETED"
    assert server.runtime.engine.show(iid)["variables"] == {"amount": 5}


def test_result_enabled_answers_the_executions(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    iid = _start(server, "m-2", order=7)
    body = {
        "messageName": "paid",
        "processInstanceId": iid,
        "resultEnabled": True,
        "variablesInResultEnabled": True,
    }
    got = clients["operator"].post("/message", json=body)
    assert got.status_code == 200, got.text
    (result,) = got.json()
    assert result["resultType"] == "Execution" and result["processInstance"] is None
    assert result["execution"]["processInstanceId"] == iid
    assert result["variables"]["order"] == {"type": "Integer", "value": 7, "valueInfo": {}}


def test_correlation_keys_pick_the_instance(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    a = _start(server, "m-keys", region="north")
    b = _start(server, "m-keys", key="msg_other", region="south")
    body = {
        "messageName": "paid",
        "businessKey": "m-keys",
        "correlationKeys": {"region": {"value": "south", "type": "String"}},
    }
    assert clients["operator"].post("/message", json=body).status_code == 204
    assert _state(server, b) == "COMPLETED" and _state(server, a) == "RUNNING"
    nobody = {**body, "correlationKeys": {"region": {"value": "east"}}}
    got = clients["operator"].post("/message", json=nobody)
    assert got.status_code == 400
    assert got.json()["message"].startswith("Cannot correlate message 'paid'")
    assert _state(server, a) == "RUNNING"


def test_all_and_ambiguity(server: Server, clients: dict[str, httpx.Client]) -> None:
    a, b = _start(server, "m-all"), _start(server, "m-all", key="msg_other")
    one = clients["operator"].post("/message", json={"messageName": "paid", "businessKey": "m-all"})
    assert one.status_code == 400 and "Cannot correlate message" in one.json()["message"]
    assert _state(server, a) == "RUNNING" and _state(server, b) == "RUNNING"
    body = {"messageName": "paid", "businessKey": "m-all", "all": True, "resultEnabled": True}
    got = clients["operator"].post("/message", json=body)
    assert got.status_code == 200 and len(got.json()) == 2
    assert _state(server, a) == "COMPLETED" and _state(server, b) == "COMPLETED"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"messageName": "paid", "businessKey": "nobody"}, "Cannot correlate message 'paid'"),
        ({"messageName": "refund"}, "no process starts with message 'refund'"),
        ({"messageName": "paid", "processInstanceId": "nope"}, "Cannot correlate"),
        ({"messageName": "paid", "businessKey": "x", "tenantId": "t"}, "tenant"),
        (
            {
                "messageName": "paid",
                "businessKey": "x",
                "localCorrelationKeys": {"a": {"value": 1}},
            },
            "localCorrelationKeys",
        ),
        ({"businessKey": "x"}, "messageName"),
        (
            {
                "messageName": "paid",
                "businessKey": "x",
                "processVariables": {"f": {"type": "File"}},
            },
            "File",
        ),
    ],
)
def test_bad_correlations_are_400(
    clients: dict[str, httpx.Client], body: dict[str, object], needle: str
) -> None:
    got = clients["operator"].post("/message", json=body)
    assert got.status_code == 400, got.text
    assert needle in got.json()["message"]


def test_who_may_correlate(server: Server, clients: dict[str, httpx.Client]) -> None:
    iid = _start(server, "m-auth")
    body = {"messageName": "paid", "businessKey": "m-auth"}
    assert clients["msg-viewer"].post("/message", json=body).status_code == 403
    # Another process's instance is not there for this starter: no match, as if it were not.
    other = clients["msg-only-other"].post("/message", json=body)
    assert other.status_code == 400 and iid not in other.text
    assert _state(server, iid) == "RUNNING"
    assert clients["msg-starter"].post("/message", json=body).status_code == 204


START_BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"
  targetNamespace="t">
  <bpmn:message id="m" name="Invoice received" />
  <bpmn:process id="msg_start" isExecutable="true">
    <bpmn:startEvent id="s"><bpmn:messageEventDefinition messageRef="m" /></bpmn:startEvent>
    <bpmn:userTask id="check" />
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="check" />
    <bpmn:sequenceFlow id="f2" sourceRef="check" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_message_start_event_answers_the_started_instance(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    server.runtime.engine.deploy_bpmn(START_BPMN)
    body = {
        "messageName": "Invoice received",
        "businessKey": "inv-1",
        "resultEnabled": True,
        "startMessagesOnly": True,
        "processVariables": {"amount": {"value": 12, "type": "Integer"}},
    }
    got = clients["msg-starter"].post("/message", json=body)
    assert got.status_code == 200, got.text
    (result,) = got.json()
    assert result["resultType"] == "ProcessDefinition"
    instance = result["processInstance"]
    assert instance["businessKey"] == "inv-1" and not instance["ended"]
    assert server.runtime.engine.show(instance["id"])["variables"] == {"amount": 12}
    again = clients["msg-starter"].post("/message", json=body)  # once per business key
    assert again.json()[0]["processInstance"]["id"] == instance["id"]
    barred = clients["msg-only-other"].post("/message", json={**body, "businessKey": "inv-2"})
    assert barred.status_code == 400  # a starter of other processes starts nothing here


SUBSCRIBING = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"
  targetNamespace="t">
  <bpmn:message id="m_stop" name="Stop" />
  <bpmn:message id="m_go" name="Go" />
  <bpmn:process id="subscribing" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:receiveTask id="wait_go" messageRef="m_go" />
    <bpmn:boundaryEvent id="stop" attachedToRef="wait_go">
      <bpmn:messageEventDefinition messageRef="m_stop" />
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait_go" />
    <bpmn:sequenceFlow id="f2" sourceRef="wait_go" targetRef="e" />
    <bpmn:sequenceFlow id="f3" sourceRef="stop" targetRef="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_event_subscriptions_list_what_the_instance_listens_for(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    server.runtime.engine.deploy_bpmn(SUBSCRIBING)
    iid = _start(server, "subs-1", key="subscribing")
    viewer = clients["msg-viewer"]
    got = viewer.get("/event-subscription", params={"processInstanceId": iid})
    assert got.status_code == 200, got.text
    found = {(s["eventName"], s["activityId"], s["eventType"]) for s in got.json()}
    assert found == {("Go", "wait_go", "message"), ("Stop", "stop", "message")}
    count = viewer.get(
        "/event-subscription/count", params={"processInstanceId": iid, "eventName": "Stop"}
    )
    assert count.json() == {"count": 1}
    clients["operator"].post("/message", json={"messageName": "Go", "processInstanceId": iid})
    assert _state(server, iid) == "COMPLETED"
    after = viewer.get("/event-subscription", params={"processInstanceId": iid})
    assert after.json() == []
    assert viewer.get("/event-subscription").status_code == 400  # names its instance
