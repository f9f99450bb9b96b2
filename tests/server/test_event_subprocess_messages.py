"""``POST /message`` starts a message event subprocess as it wakes a receive task: an
interrupting one once (a second message finds nothing, 400 as in Camunda), a
non-interrupting one each time."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.modeler import modeler_file
from tests.server.conftest import Server


def esp_bpmn(key: str, interrupting: bool) -> str:
    """start -> wait (receive task 'go') -> done; an event subprocess started by 'poke'."""
    flag = "" if interrupting else ' isInterrupting="false"'
    body = f"""    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait"/>
    <bpmn:receiveTask id="wait" messageRef="Message_go_{key}"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done"/>
    <bpmn:endEvent id="done"/>
    <bpmn:subProcess id="on_poke" triggeredByEvent="true">
      <bpmn:startEvent id="poked"{flag}>
        <bpmn:messageEventDefinition messageRef="Message_poke_{key}"/>
      </bpmn:startEvent>
      <bpmn:sequenceFlow id="f3" sourceRef="poked" targetRef="poke_end"/>
      <bpmn:endEvent id="poke_end"/>
    </bpmn:subProcess>"""
    declarations = (
        f'  <bpmn:message id="Message_go_{key}" name="go_{key}"/>\n'
        f'  <bpmn:message id="Message_poke_{key}" name="poke_{key}"/>\n'
    )
    return modeler_file(
        key, body, declarations=declarations, attrs=' camunda:historyTimeToLive="P1D"'
    )


@pytest.mark.parametrize(("interrupting", "accepted"), [(True, 1), (False, 2)])
def test_post_message_starts_an_event_subprocess(
    server: Server, interrupting: bool, accepted: int
) -> None:
    key = f"esp_http_{'i' if interrupting else 'n'}"
    server.runtime.engine.deploy_bpmn(esp_bpmn(key, interrupting))
    iid = str(server.runtime.engine.start(key, {}, business_key=key).id)
    server.runtime.run_until_idle(timeout=5)
    client: httpx.Client = server.client("operator")
    try:
        codes = [
            client.post("/message", json={"messageName": f"poke_{key}", "businessKey": key})
            for _ in range(2)
        ]
        server.runtime.run_until_idle(timeout=5)
        assert [c.status_code for c in codes].count(204) == accepted, [c.text for c in codes]
        show = server.runtime.engine.show(iid)
        if interrupting:
            assert codes[1].status_code == 400
            assert show["state"] == "COMPLETED"
        else:
            assert show["state"] == "RUNNING"
            go = client.post("/message", json={"messageName": f"go_{key}", "businessKey": key})
            assert go.status_code == 204, go.text
            server.runtime.run_until_idle(timeout=5)
            assert server.runtime.engine.show(iid)["state"] == "COMPLETED"
    finally:
        client.close()
