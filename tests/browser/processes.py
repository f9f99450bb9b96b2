"""The processes the browser tests run: a charge that fails on its first attempt (an incident
an operator retries), and a review whose generated form has a required number."""

from __future__ import annotations

import json

from bpm.embedded import EmbeddedRuntime
from bpm.engine.operations.deployments import Resource, kind_of
from bpm.handlers import HandlerContext, HandlerResult, handler
from tests.helpers.modeler import chain, modeler_file

#: The charge handler: it fails on the first run of each task and works after a retry.
FLAKY = "cockpitFlaky"
CHARGE = "cockpit_charge"
REVIEW = "cockpit_review"


@handler(FLAKY)
def flaky(ctx: HandlerContext) -> HandlerResult:
    if ctx.attempt == 1:
        raise RuntimeError(f"card declined for {ctx.variables.get('orderId')}")
    return {"charged": True}


def charge_bpmn() -> str:
    """start -> charge (fails once, no automatic retry) -> done."""
    body = f"""    <bpmn:startEvent id="start" name="Order received" />
    <bpmn:serviceTask id="charge" name="Charge card" camunda:class="com.example.{FLAKY}">
      <bpmn:extensionElements>
        <camunda:failedJobRetryTimeCycle>R1/PT1S</camunda:failedJobRetryTimeCycle>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="done" name="Charged" />
{chain("start", "charge", "done")}"""
    return modeler_file(CHARGE, body, attrs=' camunda:historyTimeToLive="P1D"')


def review_bpmn() -> str:
    """start (start form: customer, required) -> review (offered to the user clerk and the
    group reviewers; form: amount, a required number, and approved) -> done."""
    body = """    <bpmn:startEvent id="start">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="customer" label="Customer" type="string">
            <camunda:validation><camunda:constraint name="required" /></camunda:validation>
          </camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:startEvent>
    <bpmn:userTask id="review" name="Review order" camunda:candidateUsers="clerk"
        camunda:candidateGroups="reviewers">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="amount" label="Amount" type="long">
            <camunda:validation><camunda:constraint name="required" /></camunda:validation>
          </camunda:formField>
          <camunda:formField id="approved" label="Approved" type="boolean" />
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="done" />
""" + chain("start", "review", "done")
    return modeler_file(REVIEW, body, attrs=' camunda:historyTimeToLive="P1D"')


SHIP = "cockpit_ship"
#: A Camunda Form as Camunda Modeler saves it (the components the cockpit shows).
SHIP_FORM = {
    "id": "shipForm",
    "type": "default",
    "schemaVersion": 16,
    "components": [
        {"type": "text", "text": "Where does the parcel go?"},
        {
            "type": "textfield",
            "key": "address",
            "label": "Address",
            "validate": {"required": True, "minLength": 5},
        },
        {"type": "number", "key": "parcels", "label": "Parcels", "validate": {"min": 1}},
        {
            "type": "select",
            "key": "carrier",
            "label": "Carrier",
            "values": [
                {"label": "Post", "value": "post"},
                {"label": "Courier", "value": "courier"},
            ],
        },
        {"type": "checkbox", "key": "fragile", "label": "Fragile"},
        {
            "type": "checklist",
            "key": "extras",
            "label": "Extras",
            "values": [
                {"label": "Insurance", "value": "insurance"},
                {"label": "Gift", "value": "gift"},
            ],
        },
        {"type": "textarea", "key": "note", "label": "Note"},
        {"type": "button", "key": "submit", "label": "Submit", "action": "submit"},
    ],
}


def ship_bpmn() -> str:
    """start (its form ship.form, by form key) -> ship (offered to clerk, its form the
    deployment's ship.form, by reference) -> done."""
    body = """    <bpmn:startEvent id="start"
        camunda:formKey="camunda-forms:deployment:ship.form" />
    <bpmn:userTask id="ship" name="Ship parcel" camunda:candidateUsers="clerk"
        camunda:formRef="shipForm" camunda:formRefBinding="deployment" />
    <bpmn:endEvent id="done" />
""" + chain("start", "ship", "done")
    return modeler_file(SHIP, body, attrs=' camunda:historyTimeToLive="P1D"')


def deploy(rt: EmbeddedRuntime) -> None:
    rt.engine.deploy_bpmn(charge_bpmn())
    rt.engine.deploy_bpmn(review_bpmn())
    files = [
        Resource("ship.bpmn", ship_bpmn().encode(), kind_of("ship.bpmn")),
        Resource("ship.form", json.dumps(SHIP_FORM).encode(), kind_of("ship.form")),
    ]
    rt.engine.deploy_files(files)


def failed_charge(rt: EmbeddedRuntime, business_key: str) -> str:
    """An instance whose charge failed into an incident."""
    started = rt.engine.start(CHARGE, {"orderId": business_key}, business_key=business_key)
    rt.run_until_idle(timeout=10)
    assert rt.engine.show(started.id)["state"] == "FAILED"
    return str(started.id)
