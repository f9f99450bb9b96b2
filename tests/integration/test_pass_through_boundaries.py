"""Nodes a token passes at once: a boundary event on a task or manual task deploys and never
fires, whatever its trigger, and a forking parallel gateway's start listener runs once, as in
Camunda 7."""

from __future__ import annotations

from datetime import timedelta

from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness


def test_boundaries_on_a_manual_task_never_fire(rt: Harness) -> None:
    rt.engine.deploy_bpmn(
        modeler_file(
            "pass",
            '    <bpmn:startEvent id="S" />\n'
            '    <bpmn:manualTask id="T" name="Pack the parcel" />\n'
            '    <bpmn:boundaryEvent id="Late" attachedToRef="T"><bpmn:timerEventDefinition>'
            "<bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>"
            "</bpmn:boundaryEvent>\n"
            '    <bpmn:boundaryEvent id="Broken" attachedToRef="T">'
            "<bpmn:errorEventDefinition /></bpmn:boundaryEvent>\n"
            '    <bpmn:userTask id="U" />\n'
            '    <bpmn:endEvent id="E" /><bpmn:endEvent id="E2" />\n'
            + chain("S", "T", "U", "E")
            + chain("Late", "E2")
            + chain("Broken", "E2").replace("Flow_Broken_E2", "Flow_Broken_E2b"),
        )
    )
    iid = rt.engine.start("pass").id
    rt.drain()
    rt.pass_time(timedelta(minutes=5))
    [task] = rt.engine.user_tasks(instance_id=iid)
    assert task["node_id"] == "U"
    rt.complete_user_task(iid)
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    visited = [e["node_id"] for e in rt.engine.history(instance_id=iid) if e.get("node_id")]
    assert "Late" not in visited and "Broken" not in visited and "E2" not in visited


def test_a_forking_parallel_gateway_runs_its_start_listener_once(rt: Harness) -> None:
    listener = (
        '<bpmn:extensionElements><camunda:executionListener event="start" '
        "expression=\"${execution.setVariable('forked', true)}\" /></bpmn:extensionElements>"
    )
    rt.engine.deploy_bpmn(
        modeler_file(
            "fork",
            '    <bpmn:startEvent id="S" />\n'
            f'    <bpmn:parallelGateway id="F">{listener}</bpmn:parallelGateway>\n'
            '    <bpmn:userTask id="A" /><bpmn:userTask id="B" />\n'
            '    <bpmn:endEvent id="EA" /><bpmn:endEvent id="EB" />\n'
            + chain("S", "F", "A", "EA")
            + chain("F", "B", "EB"),
        )
    )
    iid = rt.engine.start("fork").id
    rt.drain()
    assert sorted(t["node_id"] for t in rt.engine.user_tasks(instance_id=iid)) == ["A", "B"]
    assert rt.engine.show(iid)["variables"] == {"forked": True}
