"""The BPMN the user-task, incident, job and history tests run, as Camunda Modeler saves it:
a user task with a form, then a handler task that fails once into an incident."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bpm.embedded import EmbeddedRuntime
from bpm.handlers import HandlerContext, HandlerResult, handler
from tests.helpers.modeler import chain, modeler_file

#: The handler of ``flaky``: it fails on its first run of each task, and works after a retry.
FLAKY = "opsFlaky"


@handler(FLAKY)
def flaky(ctx: HandlerContext) -> HandlerResult:
    if ctx.attempt == 1:
        raise RuntimeError(f"flaky failed for {ctx.variables.get('orderId')}")
    return {"charged": True}


def review_bpmn(key: str) -> str:
    """start -> review (user task, form: orderId, amount, approved) -> charge (handler task,
    fails once, no retries) -> done."""
    body = f"""    <bpmn:startEvent id="start" name="Order received" />
    <bpmn:userTask id="review" name="Review order" camunda:candidateGroups="clerks"
        camunda:priority="60" camunda:dueDate="P2D">
      <bpmn:documentation>Check the order</bpmn:documentation>
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="orderId" label="Order" type="string" />
          <camunda:formField id="amount" label="Amount" type="long" defaultValue="10">
            <camunda:validation><camunda:constraint name="required" /></camunda:validation>
          </camunda:formField>
          <camunda:formField id="approved" label="Approved" type="boolean">
            <camunda:validation><camunda:constraint name="required" /></camunda:validation>
          </camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:serviceTask id="charge" name="Charge card" camunda:class="com.example.{FLAKY}">
      <bpmn:extensionElements>
        <camunda:failedJobRetryTimeCycle>R1/PT1S</camunda:failedJobRetryTimeCycle>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="done" name="Done" />
{chain("start", "review", "charge", "done")}"""
    return modeler_file(key, body, attrs=' camunda:historyTimeToLive="P1D"')


def form_key_bpmn(key: str) -> str:
    """start -> sign (user task with a form key, assigned to ann) -> done."""
    body = """    <bpmn:startEvent id="start" />
    <bpmn:userTask id="sign" name="Sign" camunda:assignee="ann"
        camunda:formKey="embedded:app:forms/sign.html" />
    <bpmn:endEvent id="done" />
""" + chain("start", "sign", "done")
    return modeler_file(key, body, attrs=' camunda:historyTimeToLive="P1D"')


def timer_bpmn(key: str) -> str:
    """start -> wait (a timer of one hour) -> done."""
    body = """    <bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="wait" name="One hour">
      <bpmn:timerEventDefinition id="wait_def">
        <bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT1H</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="done" />
""" + chain("start", "wait", "done")
    return modeler_file(key, body, attrs=' camunda:historyTimeToLive="P1D"')


def start(rt: EmbeddedRuntime, key: str, business_key: str | None = None, **values: Any) -> str:
    started = rt.engine.start(key, {"orderId": "A1", **values}, business_key=business_key)
    rt.run_until_idle(timeout=5)
    return str(started.id)


def review_task(rt: EmbeddedRuntime, instance_id: str) -> str:
    """The id of the instance's open review task."""
    found = rt.engine.user_tasks(instance_id=instance_id)
    assert len(found) == 1, found
    return str(found[0]["id"])


def to_incident(rt: EmbeddedRuntime, key: str, business_key: str | None = None) -> str:
    """An instance whose review was completed and whose charge failed into an incident."""
    instance = start(rt, key, business_key)
    rt.engine.complete_user_task(review_task(rt, instance), {"approved": True, "amount": 5})
    rt.run_until_idle(timeout=5)
    assert rt.engine.show(instance)["state"] == "FAILED"
    return instance


@pytest.fixture(scope="module", autouse=True)
def server_imports_the_handlers() -> Iterator[None]:
    """The server process runs the handler when an operator retries its task (import it in a
    test module to use it; it must come before the server starts)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BPM_IMPORTS", __name__)
        yield


def parallel_bpmn(key: str) -> str:
    """start -> fork -> (a | b: user task with a one-hour timer boundary) -> join -> choose
    (exclusive, default) -> end."""
    body = """    <bpmn:startEvent id="start" />
    <bpmn:parallelGateway id="fork" />
    <bpmn:task id="a" name="A" />
    <bpmn:userTask id="b" name="B" />
    <bpmn:parallelGateway id="join" />
    <bpmn:exclusiveGateway id="choose" default="Flow_choose_end" />
    <bpmn:endEvent id="end" />
    <bpmn:boundaryEvent id="late" attachedToRef="b">
      <bpmn:timerEventDefinition id="late_def">
        <bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT1H</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="late_end" />
""" + "\n".join(
        [
            chain("start", "fork", "a", "join", "choose", "end"),
            chain("fork", "b", "join"),
            chain("late", "late_end"),
        ]
    )
    return modeler_file(key, body, attrs=' camunda:historyTimeToLive="P1D"')
