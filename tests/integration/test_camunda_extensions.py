"""Camunda 7 extensions at run time, on PostgreSQL: field injection, result variables, retry
cycles, priorities, input/output mappings, the initiator, and the definition view."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest

from bpm.beans import BeanRegistry
from bpm.engine.operations.external import TopicRequest
from bpm.errors import BpmnError, InvalidDefinition
from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness


def around(task: str) -> str:
    return (
        '    <bpmn:startEvent id="S" camunda:initiator="starter" />\n'
        + task
        + '\n    <bpmn:endEvent id="E" />\n'
        + chain("S", "T", "E")
    )


def deploy(rt: Harness, body: str, key: str = "p") -> None:
    rt.engine.deploy_bpmn(modeler_file(key, body))


def run(rt: Harness, key: str = "p", variables: dict[str, Any] | None = None) -> dict[str, Any]:
    iid = rt.engine.start(key, variables, user="ann").id
    rt.drain()
    return rt.engine.show(iid)


def test_fields_reach_the_handler_evaluated_when_it_runs(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    seen: list[dict[str, Any]] = []

    def mail(ctx: HandlerContext) -> None:
        seen.append(dict(ctx.fields))

    handlers.register("Mail", mail)
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T" camunda:class="org.acme.Mail"><bpmn:extensionElements>'
            '<camunda:field name="to" stringValue="ops@example.com" />'
            '<camunda:field name="subject"><camunda:expression>${subject}</camunda:expression>'
            "</camunda:field></bpmn:extensionElements></bpmn:serviceTask>"
        ),
    )
    shown = run(rt, variables={"subject": "Order 7 shipped"})
    assert shown["state"] == "COMPLETED"
    assert seen == [{"to": "ops@example.com", "subject": "Order 7 shipped"}]


def test_a_field_that_cannot_be_evaluated_is_an_incident_naming_it(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    handlers.register("Mail", lambda ctx: None)
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T" camunda:class="org.acme.Mail"><bpmn:extensionElements>'
            '<camunda:field name="subject"><camunda:expression>${subject}</camunda:expression>'
            "</camunda:field></bpmn:extensionElements></bpmn:serviceTask>"
        ),
    )
    shown = run(rt)
    assert shown["state"] == "FAILED"
    [incident] = shown["incidents"]
    assert "field of task 'T'" in incident["message"] and "subject" in incident["message"]


def test_result_variable_stores_the_whole_result(rt: Harness, beans: BeanRegistry) -> None:
    class Pricing:
        def quote(self, order: str) -> list[Any]:
            return [order, 12.5]

    beans.register("pricing", Pricing())
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T" camunda:expression="${pricing.quote(order)}" '
            'camunda:resultVariable="quote" />'
        ),
    )
    shown = run(rt, variables={"order": "A-1"})
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["quote"] == ["A-1", 12.5]


def test_the_initiator_variable_receives_the_starting_user(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    deploy(rt, around('<bpmn:manualTask id="T" />'))
    assert run(rt)["variables"]["starter"] == "ann"
    iid = rt.engine.start("p").id  # nobody known: the variable exists, empty
    rt.drain()
    assert rt.engine.show(iid)["variables"] == {"starter": None}


def test_a_retry_cycle_runs_the_handler_that_often_that_far_apart(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    runs: list[Any] = []

    def flaky(ctx: HandlerContext) -> None:
        runs.append(rt.clock.now())
        raise RuntimeError("gateway down")

    handlers.register("Charge", flaky)
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
            "<camunda:failedJobRetryTimeCycle>PT1M,PT10M</camunda:failedJobRetryTimeCycle>"
            "</bpmn:extensionElements></bpmn:serviceTask>"
        ),
    )
    shown = run(rt)
    assert shown["state"] == "FAILED"
    waits = [round((b - a).total_seconds()) for a, b in itertools.pairwise(runs)]
    assert waits == [60, 600]


def test_task_priority_orders_the_external_fetch(rt: Harness) -> None:
    body = (
        '    <bpmn:startEvent id="S" />\n'
        '<bpmn:parallelGateway id="G" />'
        '<bpmn:serviceTask id="Low" camunda:type="external" camunda:topic="work" '
        'camunda:taskPriority="1" />'
        '<bpmn:serviceTask id="High" camunda:type="external" camunda:topic="work" '
        'camunda:taskPriority="50" />'
        '<bpmn:parallelGateway id="J" /><bpmn:endEvent id="E" />'
        + chain("S", "G")
        + chain("G", "Low", "J")
        + chain("G", "High", "J").replace("Flow_G_High", "Flow_G_High2")
        + chain("J", "E")
    )
    deploy(rt, body)
    run(rt)
    [first] = rt.engine.fetch_and_lock(
        "w", [TopicRequest("work", timedelta(minutes=1))], max_tasks=1
    )
    assert first.node_id == "High"


def test_input_output_mappings_run_end_to_end(rt: Harness, handlers: HandlerRegistry) -> None:
    seen: list[dict[str, Any]] = []

    def charge(ctx: HandlerContext) -> dict[str, Any]:
        seen.append(dict(ctx.variables))
        return {"receiptId": f"r-{ctx.variables['amount']}"}

    handlers.register("charge", charge)
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T" camunda:delegateExpression="${charge}">'
            "<bpmn:extensionElements><camunda:inputOutput>"
            '<camunda:inputParameter name="amount">${order.total}</camunda:inputParameter>'
            '<camunda:inputParameter name="lines"><camunda:list><camunda:value>${order.id}'
            "</camunda:value><camunda:value>fee</camunda:value></camunda:list>"
            "</camunda:inputParameter>"
            '<camunda:outputParameter name="receipt">${receiptId}</camunda:outputParameter>'
            "</camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>"
        ),
    )
    shown = run(rt, variables={"order": {"id": "A-1", "total": 30}})
    assert shown["state"] == "COMPLETED"
    assert seen[0]["amount"] == 30 and seen[0]["lines"] == ["A-1", "fee"]
    assert shown["variables"]["receipt"] == "r-30"
    assert "amount" not in shown["variables"]


def test_the_definition_view_shows_what_the_model_declares(rt: Harness) -> None:
    rt.engine.deploy_bpmn(
        modeler_file(
            "p",
            around(
                '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="charge">'
                '<bpmn:extensionElements><camunda:properties><camunda:property name="sla" '
                'value="PT1H" /></camunda:properties></bpmn:extensionElements>'
                "</bpmn:serviceTask>"
            ),
            attrs=' camunda:versionTag="2.0" camunda:candidateStarterGroups="sales"',
        )
    )
    view = rt.engine.definition("p")
    assert view["version"] == 1 and view["versionTag"] == "2.0"
    assert view["candidate_starter_groups"] == ["sales"]
    [task] = [n for n in view["nodes"] if n["id"] == "T"]
    assert task["properties"] == {"sla": "PT1H"} and task["topic"] == "charge"


def test_a_null_result_value_is_stored_as_null(rt: Harness, handlers: HandlerRegistry) -> None:
    handlers.register("Clear", lambda ctx: {"reason": None})
    deploy(rt, around('<bpmn:serviceTask id="T" camunda:class="org.acme.Clear" />'))
    assert run(rt, variables={"reason": "x"})["variables"]["reason"] is None


def _branching(default: bool) -> str:
    """Task T forks to A (amount > 10), B (vip) and, as the default, C; A and B join at J."""
    attr = ' default="Flow_T_C"' if default else ""
    return (
        '    <bpmn:startEvent id="S" />\n'
        f'<bpmn:serviceTask id="T" camunda:class="org.acme.Check"{attr} />'
        '<bpmn:serviceTask id="A" camunda:class="org.acme.A" />'
        '<bpmn:serviceTask id="B" camunda:class="org.acme.B" />'
        + ('<bpmn:serviceTask id="C" camunda:class="org.acme.C" />' if default else "")
        + '<bpmn:exclusiveGateway id="M" /><bpmn:endEvent id="E" />'
        + chain("S", "T")
        + '<bpmn:sequenceFlow id="Flow_T_A" sourceRef="T" targetRef="A"><bpmn:conditionExpression '
        'xsi:type="bpmn:tFormalExpression">${amount gt 10}</bpmn:conditionExpression>'
        "</bpmn:sequenceFlow>"
        '<bpmn:sequenceFlow id="Flow_T_B" sourceRef="T" targetRef="B"><bpmn:conditionExpression '
        'xsi:type="bpmn:tFormalExpression">${vip}</bpmn:conditionExpression></bpmn:sequenceFlow>'
        + (chain("T", "C") if default else "")
        + chain("A", "M")
        + chain("B", "M")
        + (chain("C", "M") if default else "")
        + chain("M", "E")
    )


def _recording(handlers: HandlerRegistry) -> list[str]:
    ran: list[str] = []
    for name in ("Check", "A", "B", "C"):
        handlers.register(name, lambda ctx, name=name: ran.append(name))  # type: ignore[misc]
    return ran


def test_conditional_flows_out_of_an_activity_take_each_true_one(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    ran = _recording(handlers)
    deploy(rt, _branching(default=True))
    cases = [
        ({"amount": 50, "vip": False}, ["Check", "A"]),
        ({"amount": 50, "vip": True}, ["Check", "A", "B"]),
        ({"amount": 5, "vip": False}, ["Check", "C"]),
    ]
    for variables, expected in cases:
        ran.clear()
        shown = run(rt, variables=variables)
        assert shown["state"] == "COMPLETED", shown
        assert sorted(ran) == sorted(expected)


def test_no_true_condition_and_no_default_is_an_incident_naming_the_activity(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    _recording(handlers)
    deploy(rt, _branching(default=False))
    shown = run(rt, variables={"amount": 1, "vip": False})
    assert shown["state"] == "FAILED"
    [incident] = shown["incidents"]
    assert incident["message"] == (
        "serviceTask 'T': no outgoing sequence flow can be taken: no flow's condition is true and "
        "there is no default flow"
    )


def test_an_activity_with_two_plain_flows_forks_and_a_join_waits_for_both(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    ran = _recording(handlers)
    body = (
        '    <bpmn:startEvent id="S" />\n'
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Check" />'
        '<bpmn:serviceTask id="A" camunda:class="org.acme.A" />'
        '<bpmn:serviceTask id="B" camunda:class="org.acme.B" />'
        '<bpmn:parallelGateway id="J" /><bpmn:endEvent id="E" />'
        + chain("S", "T")
        + chain("T", "A", "J")
        + chain("T", "B", "J")
        + chain("J", "E")
    )
    deploy(rt, body)
    shown = run(rt)
    assert shown["state"] == "COMPLETED"
    assert sorted(ran) == ["A", "B", "Check"]


def test_a_token_that_found_no_way_out_can_be_retried_and_fails_again_on_its_own(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    ran = _recording(handlers)
    deploy(rt, _branching(default=False))
    shown = run(rt, variables={"amount": 1, "vip": False})
    [incident] = shown["incidents"]
    rt.engine.retry(incident["token_id"])
    rt.drain()
    again = rt.engine.show(shown["id"])
    assert again["state"] == "FAILED" and ran == ["Check"]  # the task did not run again
    first, second = again["incidents"]
    assert first["id"] == incident["id"] and first["state"] == "RESOLVED"
    assert second["state"] == "OPEN" and second["kind"] == "no-path"


def test_a_script_task_runs_its_handler_and_stores_the_result(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    handlers.register("sum-up", lambda ctx: sum(ctx.variables["items"]))
    deploy(
        rt,
        around(
            '<bpmn:scriptTask id="T" scriptFormat="groovy" camunda:resultVariable="total" '
            'camunda:resource="deployment://scripts/sum-up.groovy" />'
        ),
    )
    assert run(rt, variables={"items": [1, 2, 3]})["variables"]["total"] == 6


def test_a_script_task_without_a_handler_is_refused_at_deploy_naming_what_to_register(
    rt: Harness,
) -> None:
    with pytest.raises(InvalidDefinition) as info:
        deploy(rt, around('<bpmn:scriptTask id="T" scriptFormat="javascript" />'))
    assert "register a handler named 'T'" in str(info.value)


def test_a_connector_gets_its_inputs_and_sets_only_its_outputs(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    seen: list[dict[str, Any]] = []

    def http(ctx: HandlerContext) -> dict[str, Any]:
        seen.append(dict(ctx.fields))
        return {"statusCode": 200, "response": "{}"}

    handlers.register("http-connector", http)
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T"><bpmn:extensionElements><camunda:connector>'
            "<camunda:inputOutput>"
            '<camunda:inputParameter name="url">${endpoint}</camunda:inputParameter>'
            '<camunda:inputParameter name="method">GET</camunda:inputParameter>'
            '<camunda:outputParameter name="status">${statusCode}</camunda:outputParameter>'
            "</camunda:inputOutput><camunda:connectorId>http-connector</camunda:connectorId>"
            "</camunda:connector></bpmn:extensionElements></bpmn:serviceTask>"
        ),
    )
    shown = run(rt, variables={"endpoint": "https://api.example.com/orders/1"})
    assert seen == [{"url": "https://api.example.com/orders/1", "method": "GET"}]
    assert shown["variables"]["status"] == 200
    assert "response" not in shown["variables"] and "statusCode" not in shown["variables"]


def test_error_code_and_message_variables_receive_the_caught_error(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    def charge(ctx: HandlerContext) -> None:
        raise BpmnError("CARD_DECLINED", "card 4242 declined")

    handlers.register("Charge", charge)
    body = (
        '    <bpmn:startEvent id="S" />\n'
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge" />'
        '<bpmn:boundaryEvent id="B" attachedToRef="T"><bpmn:errorEventDefinition '
        'errorRef="Error_1" camunda:errorCodeVariable="code" '
        'camunda:errorMessageVariable="why" /></bpmn:boundaryEvent>'
        '<bpmn:endEvent id="E" /><bpmn:endEvent id="Declined" />'
        + chain("S", "T", "E")
        + chain("B", "Declined")
    )
    rt.engine.deploy_bpmn(
        modeler_file(
            "p",
            body,
            declarations='<bpmn:error id="Error_1" name="Declined" errorCode="CARD_DECLINED" />',
        )
    )
    shown = run(rt)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["code"] == "CARD_DECLINED"
    assert shown["variables"]["why"] == "card 4242 declined"


def test_a_compensation_throw_that_does_not_wait_goes_on_while_the_undo_runs(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    handlers.register("Book", lambda ctx: None)
    body = (
        '    <bpmn:startEvent id="S" />\n'
        '<bpmn:serviceTask id="Book" camunda:class="org.acme.Book" />'
        '<bpmn:boundaryEvent id="BookUndo" attachedToRef="Book">'
        "<bpmn:compensateEventDefinition /></bpmn:boundaryEvent>"
        '<bpmn:serviceTask id="Cancel" isForCompensation="true" camunda:type="external" '
        'camunda:topic="cancel-booking" />'
        '<bpmn:association id="A" associationDirection="One" sourceRef="BookUndo" '
        'targetRef="Cancel" />'
        '<bpmn:intermediateThrowEvent id="Undo"><bpmn:compensateEventDefinition '
        'waitForCompletion="false" /></bpmn:intermediateThrowEvent>'
        '<bpmn:userTask id="Apologise" /><bpmn:endEvent id="E" />'
        + chain("S", "Book", "Undo", "Apologise", "E")
    )
    deploy(rt, body)
    iid = rt.engine.start("p").id
    rt.drain()
    # the thrower went on: the apology is open while the cancellation still waits for a worker
    [apology] = rt.engine.user_tasks(instance_id=iid)
    [cancel] = rt.engine.fetch_and_lock("w", [TopicRequest("cancel-booking", timedelta(minutes=1))])
    rt.engine.complete_user_task(apology["id"])
    rt.drain()
    assert rt.engine.show(iid)["state"] == "RUNNING"  # its end waits for the compensation
    rt.engine.complete(cancel.id, "w")
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def test_a_subprocess_with_two_outgoing_flows_forks_once_and_completes(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    ran = _recording(handlers)
    body = (
        '    <bpmn:startEvent id="S" />\n<bpmn:subProcess id="SP"><bpmn:startEvent id="SS" />'
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Check" /><bpmn:endEvent id="SE" />'
        + chain("SS", "T", "SE")
        + '</bpmn:subProcess><bpmn:serviceTask id="A" camunda:class="org.acme.A" />'
        '<bpmn:serviceTask id="B" camunda:class="org.acme.B" />'
        '<bpmn:endEvent id="EA" /><bpmn:endEvent id="EB" />'
        + chain("S", "SP")
        + chain("SP", "A", "EA")
        + chain("SP", "B", "EB")
    )
    deploy(rt, body)
    shown = run(rt)
    assert shown["state"] == "COMPLETED"
    assert sorted(ran) == ["A", "B", "Check"]


def test_execution_get_variable_is_null_for_a_missing_variable(rt: Harness) -> None:
    body = (
        '    <bpmn:startEvent id="S" />\n<bpmn:exclusiveGateway id="G" default="Flow_G_E2" />'
        '<bpmn:endEvent id="E" /><bpmn:endEvent id="E2" />'
        + chain("S", "G")
        + '<bpmn:sequenceFlow id="Flow_G_E" sourceRef="G" targetRef="E"><bpmn:conditionExpression '
        "xsi:type=\"bpmn:tFormalExpression\">${execution.getVariable('coupon') == null}"
        "</bpmn:conditionExpression></bpmn:sequenceFlow>" + chain("G", "E2")
    )
    deploy(rt, body)
    iid = rt.engine.start("p").id
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    assert [
        e["node_id"] for e in rt.engine.history(instance_id=iid) if e["node_id"] in ("E", "E2")
    ][-1] == "E"


def test_an_error_end_event_throws_its_declared_message(rt: Harness) -> None:
    body = (
        '    <bpmn:startEvent id="S" />\n<bpmn:subProcess id="SP"><bpmn:startEvent id="SS" />'
        '<bpmn:endEvent id="Fail"><bpmn:errorEventDefinition errorRef="Err" /></bpmn:endEvent>'
        + chain("SS", "Fail")
        + '</bpmn:subProcess><bpmn:boundaryEvent id="B" attachedToRef="SP">'
        '<bpmn:errorEventDefinition errorRef="Err" camunda:errorCodeVariable="code" '
        'camunda:errorMessageVariable="msg" /></bpmn:boundaryEvent>'
        '<bpmn:endEvent id="E" /><bpmn:endEvent id="Caught" />'
        + chain("S", "SP", "E")
        + chain("B", "Caught")
    )
    rt.engine.deploy_bpmn(
        modeler_file(
            "p",
            body,
            declarations='<bpmn:error id="Err" errorCode="E42" camunda:errorMessage="boom" />',
        )
    )
    shown = run(rt)
    assert shown["state"] == "COMPLETED"
    assert (shown["variables"]["code"], shown["variables"]["msg"]) == ("E42", "boom")


def test_an_expression_topic_is_evaluated_for_each_task(rt: Harness) -> None:
    deploy(
        rt,
        around(
            '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="#{kind}-payments" />'
        ),
    )
    iid = run(rt, variables={"kind": "card"})["id"]
    [task] = rt.engine.fetch_and_lock("w", [TopicRequest("card-payments", timedelta(minutes=1))])
    rt.engine.complete(task.id, "w")
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    missing = run(rt)
    assert missing["state"] == "FAILED"
    [incident] = missing["incidents"]
    assert incident["kind"] == "topic" and "kind" in incident["message"]
