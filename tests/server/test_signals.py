"""``POST /signal`` through the HTTP server: a broadcast to every instance waiting for it
(with its variables), or to one execution; 204; a bad body or an execution that does not
listen is a 400 that throws nothing; a viewer gets 403; a starter limited to some
processes reaches only their instances. ``GET /event-subscription`` lists signal waits
with ``eventType: "signal"``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bpm.states import Role
from tests.helpers.modeler import modeler_file
from tests.server.conftest import Server


def signal_bpmn(key: str, signal: str = "alarm") -> str:
    body = """    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait"/>
    <bpmn:intermediateCatchEvent id="wait">
      <bpmn:signalEventDefinition signalRef="Signal_1"/>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done"/>
    <bpmn:endEvent id="done"/>"""
    declarations = f'  <bpmn:signal id="Signal_1" name="{signal}"/>\n'
    return modeler_file(
        key, body, declarations=declarations, attrs=' camunda:historyTimeToLive="P1D"'
    )


@pytest.fixture(scope="module")
def clients(server: Server) -> Iterator[dict[str, httpx.Client]]:
    server.runtime.engine.deploy_bpmn(signal_bpmn("sig_p", "alarm"))
    server.runtime.engine.deploy_bpmn(signal_bpmn("sig_other", "alarm"))
    server.add("sig-starter", Role.STARTER)
    server.add("sig-only-other", Role.STARTER, processes=("sig_other",))
    server.add("sig-viewer", Role.VIEWER)
    names = ("operator", "sig-starter", "sig-only-other", "sig-viewer")
    made = {n: server.client(n) for n in names}
    yield made
    for c in made.values():
        c.close()


def _start(server: Server, key: str = "sig_p") -> str:
    iid = str(server.runtime.engine.start(key).id)
    server.runtime.run_until_idle(timeout=5)
    return iid


def _state(server: Server, iid: str) -> str:
    server.runtime.run_until_idle(timeout=5)
    return str(server.runtime.engine.show(iid)["state"])


def test_a_signal_reaches_every_waiting_instance_with_its_variables(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    first, second = _start(server), _start(server, "sig_other")
    subs = clients["operator"].get("/event-subscription", params={"processInstanceId": first})
    assert [(s["eventType"], s["eventName"], s["activityId"]) for s in subs.json()] == [
        ("signal", "alarm", "wait")
    ]
    body = {"name": "alarm", "variables": {"level": {"value": 3, "type": "Integer"}}}
    got = clients["sig-starter"].post("/signal", json=body)
    assert got.status_code == 204, got.text
    for iid in (first, second):
        assert _state(server, iid) == "COMPLETED"
        assert server.runtime.engine.show(iid)["variables"] == {"level": 3}


def test_an_execution_id_names_one_recipient(
    server: Server, clients: dict[str, httpx.Client]
) -> None:
    first, second = _start(server), _start(server)
    [sub] = (
        clients["operator"].get("/event-subscription", params={"processInstanceId": first}).json()
    )
    body = {"name": "alarm", "executionId": sub["executionId"]}
    assert clients["operator"].post("/signal", json=body).status_code == 204
    assert _state(server, first) == "COMPLETED" and _state(server, second) == "RUNNING"
    again = clients["operator"].post("/signal", json=body)  # it listens no more
    assert again.status_code == 400 and "does not listen" in again.json()["message"]
    clients["operator"].post("/signal", json={"name": "alarm"})
    assert _state(server, second) == "COMPLETED"


def test_refusals_throw_nothing(server: Server, clients: dict[str, httpx.Client]) -> None:
    iid = _start(server)
    bad: list[dict[str, object]] = [{"name": ""}, {"variables": {}}, {"name": "a", "tenantId": "t"}]
    for body in bad:
        got = clients["operator"].post("/signal", json=body)
        assert got.status_code == 400, (body, got.text)
    assert clients["sig-viewer"].post("/signal", json={"name": "alarm"}).status_code == 403
    assert _state(server, iid) == "RUNNING"
    # a starter limited to another process reaches that process's instances only
    other = _start(server, "sig_other")
    assert clients["sig-only-other"].post("/signal", json={"name": "alarm"}).status_code == 204
    assert _state(server, other) == "COMPLETED" and _state(server, iid) == "RUNNING"
    clients["operator"].post("/signal", json={"name": "alarm"})
    assert _state(server, iid) == "COMPLETED"
