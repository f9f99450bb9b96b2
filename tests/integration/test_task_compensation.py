"""A compensation boundary on a plain ``task`` (Camunda Modeler's undecorated task): the task
is recorded as done when the token passes, and a thrown compensation runs its handler, as in
Camunda 7, on PostgreSQL."""

from __future__ import annotations

from typing import Any

from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness

BODY = (
    '<bpmn:startEvent id="S" />'
    '<bpmn:task id="T" name="Reserve room" />'
    '<bpmn:boundaryEvent id="cb" attachedToRef="T">'
    '<bpmn:compensateEventDefinition id="ced" waitForCompletion="false" /></bpmn:boundaryEvent>'
    '<bpmn:serviceTask id="undo" isForCompensation="true" camunda:class="org.acme.Release" />'
    '<bpmn:association id="as" associationDirection="One" sourceRef="cb" targetRef="undo" />'
    '<bpmn:intermediateThrowEvent id="C"><bpmn:compensateEventDefinition id="ced2" />'
    "</bpmn:intermediateThrowEvent>"
    '<bpmn:endEvent id="E" />' + chain("S", "T", "C", "E")
)


def test_a_plain_task_is_compensated_by_its_handler(rt: Harness, handlers: HandlerRegistry) -> None:
    released: list[str] = []

    def release(ctx: HandlerContext) -> dict[str, Any]:
        released.append(ctx.node_id)
        return {"released": True}

    handlers.register("Release", release)
    rt.engine.deploy_bpmn(modeler_file("p", BODY))
    iid = rt.engine.start("p").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert len(released) == 1 and shown["variables"]["released"] is True  # undone once
