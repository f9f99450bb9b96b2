# ruff: noqa: E501  (the model is as Camunda Modeler writes it: long lines)
"""JUEL method calls and beans at run time, on PostgreSQL, in a model written as Camunda
Modeler writes one: a service task's expression calling a bean with a result variable,
``execution.setVariable`` in a task and in listeners, a delegate expression bean, Spin and
string methods in conditions and input parameters, ``dateTime()`` in a due date, ``#{...}``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bpm.beans import BeanRegistry
from bpm.juel_methods import ExecutionView
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness

MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"
  xmlns:dc="http://www.omg.org/spec/DD/20100524/DC"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" id="Definitions_0k2x9a1"
  targetNamespace="http://bpmn.io/schema/bpmn" exporter="Camunda Modeler"
  exporterVersion="5.17.0" modeler:executionPlatform="Camunda Platform"
  modeler:executionPlatformVersion="7.20.0">
  <bpmn:process id="order_juel" name="Order (JUEL)" isExecutable="true">
    <bpmn:extensionElements>
      <camunda:executionListener expression="${execution.setVariable('startedAt', dateTime().withTimeAtStartOfDay().toString('yyyy-MM-dd'))}" event="start" />
    </bpmn:extensionElements>
    <bpmn:startEvent id="StartEvent_1" name="Order received">
      <bpmn:outgoing>Flow_1</bpmn:outgoing>
    </bpmn:startEvent>
    <bpmn:serviceTask id="Activity_validate" name="Validate order"
      camunda:expression="${orderService.isValid(order)}" camunda:resultVariable="valid">
      <bpmn:extensionElements>
        <camunda:inputOutput>
          <camunda:inputParameter name="customerUpper">${customer.trim().toUpperCase()}</camunda:inputParameter>
        </camunda:inputOutput>
      </bpmn:extensionElements>
      <bpmn:incoming>Flow_1</bpmn:incoming>
      <bpmn:outgoing>Flow_2</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:exclusiveGateway id="Gateway_priority" name="Priority?" default="Flow_standard">
      <bpmn:incoming>Flow_2</bpmn:incoming>
      <bpmn:outgoing>Flow_express</bpmn:outgoing>
      <bpmn:outgoing>Flow_standard</bpmn:outgoing>
    </bpmn:exclusiveGateway>
    <bpmn:serviceTask id="Activity_express" name="Mark express"
      camunda:expression="${execution.setVariable('orderStatus', 'EXPRESS')}">
      <bpmn:incoming>Flow_express</bpmn:incoming>
      <bpmn:outgoing>Flow_3</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:serviceTask id="Activity_standard" name="Ship standard"
      camunda:delegateExpression="${shippingDelegate}">
      <bpmn:incoming>Flow_standard</bpmn:incoming>
      <bpmn:outgoing>Flow_4</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:exclusiveGateway id="Gateway_merge">
      <bpmn:incoming>Flow_3</bpmn:incoming>
      <bpmn:incoming>Flow_4</bpmn:incoming>
      <bpmn:outgoing>Flow_5</bpmn:outgoing>
    </bpmn:exclusiveGateway>
    <bpmn:userTask id="Activity_review" name="Review order"
      camunda:assignee="${execution.getVariable('customer').trim().toLowerCase()}"
      camunda:dueDate="${dateTime().plusDays(2).toDate()}">
      <bpmn:extensionElements>
        <camunda:taskListener expression="${task.setVariable('reviewTaskId', task.getId())}" event="create" />
        <camunda:taskListener expression="${task.setVariable('reviewName', task.getName().toUpperCase())}" event="create" />
      </bpmn:extensionElements>
      <bpmn:incoming>Flow_5</bpmn:incoming>
      <bpmn:outgoing>Flow_6</bpmn:outgoing>
    </bpmn:userTask>
    <bpmn:endEvent id="EndEvent_1" name="Order done">
      <bpmn:incoming>Flow_7</bpmn:incoming>
    </bpmn:endEvent>
    <bpmn:sequenceFlow id="Flow_1" sourceRef="StartEvent_1" targetRef="Activity_validate" />
    <bpmn:sequenceFlow id="Flow_2" sourceRef="Activity_validate" targetRef="Gateway_priority" />
    <bpmn:sequenceFlow id="Flow_express" name="high" sourceRef="Gateway_priority" targetRef="Activity_express">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${valid &amp;&amp; S(payload).prop('priority').stringValue().equalsIgnoreCase('HIGH')}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="Flow_standard" sourceRef="Gateway_priority" targetRef="Activity_standard" />
    <bpmn:sequenceFlow id="Flow_3" sourceRef="Activity_express" targetRef="Gateway_merge" />
    <bpmn:sequenceFlow id="Flow_4" sourceRef="Activity_standard" targetRef="Gateway_merge" />
    <bpmn:sequenceFlow id="Flow_5" sourceRef="Gateway_merge" targetRef="Activity_review" />
    <bpmn:sequenceFlow id="Flow_6" sourceRef="Activity_review" targetRef="Gateway_done" />
    <bpmn:exclusiveGateway id="Gateway_done">
      <bpmn:incoming>Flow_6</bpmn:incoming>
      <bpmn:outgoing>Flow_7</bpmn:outgoing>
    </bpmn:exclusiveGateway>
    <bpmn:sequenceFlow id="Flow_7" sourceRef="Gateway_done" targetRef="EndEvent_1">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">#{true}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
  </bpmn:process>
</bpmn:definitions>
"""


class OrderService:
    def isValid(self, order: dict[str, Any]) -> bool:
        return bool(order.get("items"))


class ShippingDelegate:
    """A JavaDelegate's Python stand-in: ``execute(execution)``."""

    def execute(self, execution: ExecutionView) -> None:
        execution.set("orderStatus", "STANDARD")


def _start(rt: Harness, priority: str) -> Any:
    variables = {
        "order": {"items": ["book"]},
        "customer": "  Ann ",
        "payload": f'{{"priority": "{priority}"}}',
    }
    iid = rt.engine.start("order_juel", variables).id
    rt.drain()
    return iid


def test_a_modeler_model_with_juel_methods_and_beans_runs_to_its_end(
    rt: Harness, beans: BeanRegistry
) -> None:
    beans.register("orderService", OrderService())
    beans.register("shippingDelegate", ShippingDelegate())
    rt.engine.deploy_bpmn(MODEL)
    express, standard = _start(rt, "high"), _start(rt, "low")
    for iid, status in ((express, "EXPRESS"), (standard, "STANDARD")):
        [task] = rt.engine.user_tasks(instance_id=iid)
        assert task["assignee"] == "ann"
        due = rt.clock.now() + timedelta(days=2)
        assert task["due_date"][:16] == due.isoformat()[:16]
        shown = rt.engine.show(iid)
        assert shown["variables"]["orderStatus"] == status
        assert shown["variables"]["valid"] is True
        assert shown["variables"]["reviewTaskId"]  # the task that ran the create listener
        assert shown["variables"]["reviewName"] == "REVIEW ORDER"
        assert shown["variables"]["startedAt"] == rt.clock.now().date().isoformat()
        rt.engine.complete_user_task(task["id"], {}, user="ann")
        rt.drain()
        assert rt.engine.show(iid)["state"] == "COMPLETED"
    written = [
        row
        for row in rt.engine.history(instance_id=express)
        if "orderStatus" in str(row.get("data", ""))
    ]
    assert written, "the expression's variable write has its history row"


def test_a_missing_bean_is_an_incident_naming_it(rt: Harness, beans: BeanRegistry) -> None:
    beans.register("orderService", OrderService())
    rt.engine.deploy_bpmn(MODEL)
    iid = _start(rt, "low")
    shown = rt.engine.show(iid)
    [incident] = shown["incidents"]
    assert "shippingDelegate" in incident["message"]


class OrderApproval:
    """A Spring bean whose methods give the delegates (``${orderApproval.loadOrder()}``)."""

    def load_order(self) -> Any:
        def run(execution: ExecutionView) -> None:
            execution.set("order", {"id": "A-1"})

        return run

    def calculateOrderPositions(self) -> ShippingDelegate:
        return ShippingDelegate()


def test_a_delegate_expression_may_call_the_bean_method_that_gives_the_delegate(
    rt: Harness, beans: BeanRegistry
) -> None:
    beans.register("orderApproval", OrderApproval())
    rt.engine.deploy_bpmn(
        modeler_file(
            "approval",
            '    <bpmn:startEvent id="S" />\n'
            '    <bpmn:serviceTask id="Load" camunda:delegateExpression="${ orderApproval.loadOrder() }" />\n'
            '    <bpmn:serviceTask id="Calc" '
            'camunda:delegateExpression="${orderApproval.calculateOrderPositions()}" />\n'
            '    <bpmn:endEvent id="E" />\n' + chain("S", "Load", "Calc", "E"),
        )
    )
    iid = rt.engine.start("approval").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"] == {"order": {"id": "A-1"}, "orderStatus": "STANDARD"}
