"""camunda:in and camunda:out as Camunda 7 reads them: a ``sourceExpression`` without
``${...}`` is that text (JUEL literal text), and a target may be any name."""

from __future__ import annotations

from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness


def test_a_source_expression_without_dollar_braces_is_its_text(rt: Harness) -> None:
    rt.engine.deploy_bpmn(
        modeler_file(
            "child",
            '    <bpmn:startEvent id="CS" /><bpmn:userTask id="CT" /><bpmn:endEvent id="CE" />\n'
            + chain("CS", "CT", "CE"),
        )
    )
    rt.engine.deploy_bpmn(
        modeler_file(
            "parent",
            '    <bpmn:startEvent id="S" />\n'
            '    <bpmn:callActivity id="Call" calledElement="child"><bpmn:extensionElements>'
            '<camunda:in sourceExpression="hello" target="startVariable" />'
            '<camunda:in source="order" target="order-copy" />'
            "</bpmn:extensionElements></bpmn:callActivity>\n"
            '    <bpmn:endEvent id="E" />\n' + chain("S", "Call", "E"),
        )
    )
    iid = rt.engine.start("parent", {"order": 7}).id
    rt.drain()
    [task] = rt.engine.user_tasks()
    child = rt.engine.show(task["instance_id"])
    assert child["variables"] == {"startVariable": "hello", "order-copy": 7}
    rt.engine.complete_user_task(task["id"])
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
