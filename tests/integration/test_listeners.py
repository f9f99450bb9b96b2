"""Execution and task listeners from Camunda models: each a handler run as a step of its own,
in Camunda's order, with retries and incidents like a handler, on PostgreSQL."""

from __future__ import annotations

from typing import Any

from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness

Log = list[str]


def recording(handlers: HandlerRegistry, *names: str) -> Log:
    log: Log = []
    for name in names:

        def run(ctx: HandlerContext, name: str = name) -> dict[str, Any]:
            log.append(f"{name}@{ctx.event or 'task'}")
            return {f"seen_{name}": ctx.fields or True}

        handlers.register(name, run, replace=True)
    return log


def listener(kind: str, event: str, handler: str, extra: str = "") -> str:
    code = f'delegateExpression="${{{handler}}}"'
    return f'<camunda:{kind} event="{event}" {code}>{extra}</camunda:{kind}>'


def test_start_and_end_listeners_run_around_the_task_in_camunda_order(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "proc", "enter", "charge", "leave", "done")
    body = (
        "<bpmn:extensionElements>"
        + listener("executionListener", "start", "proc")
        + "</bpmn:extensionElements>"
        '<bpmn:startEvent id="S" />'
        '<bpmn:serviceTask id="T" camunda:delegateExpression="${charge}"><bpmn:extensionElements>'
        + listener(
            "executionListener",
            "start",
            "enter",
            '<camunda:field name="step"><camunda:string>one</camunda:string></camunda:field>',
        )
        + listener("executionListener", "end", "leave")
        + "</bpmn:extensionElements></bpmn:serviceTask>"
        '<bpmn:endEvent id="E"><bpmn:extensionElements>'
        + listener("executionListener", "end", "done")
        + "</bpmn:extensionElements></bpmn:endEvent>"
        + chain("S", "T", "E")
    )
    rt.engine.deploy_bpmn(modeler_file("p", body))
    iid = rt.engine.start("p").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert log == ["proc@start", "enter@start", "charge@task", "leave@end", "done@end"]
    assert shown["variables"]["seen_enter"] == {"step": "one"}
    listener_tasks = [t for t in shown["tasks"] if (t["topic"] or "").startswith("listener:")]
    assert len(listener_tasks) == 4  # each ran as a task of its own


def _review(extra: str = "") -> str:
    return (
        '<bpmn:startEvent id="S" />'
        '<bpmn:userTask id="T" camunda:assignee="ann"><bpmn:extensionElements>'
        + listener("taskListener", "create", "created")
        + listener("taskListener", "assignment", "assigned")
        + listener("taskListener", "complete", "completed")
        + listener("executionListener", "end", "left")
        + extra
        + "</bpmn:extensionElements></bpmn:userTask>"
        '<bpmn:endEvent id="E" />' + chain("S", "T", "E")
    )


def test_task_listeners_assignment_then_create_before_the_task_opens_complete_after(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "created", "assigned", "completed", "left")
    rt.engine.deploy_bpmn(modeler_file("p", _review()))
    iid = rt.engine.start("p").id
    rt.drain()
    assert log == ["assigned@assignment", "created@create"]
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {"ok": True}, user="ann")
    rt.drain()
    assert log[2:] == ["completed@complete", "left@end"]
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def test_a_claim_does_not_run_assignment_listeners_and_the_task_stays_open(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    """Only the assignment a user task is created with runs its listeners (docs/bpmn.md):
    a token has one open task at a time, and a claim's listener would be a second one."""
    log = recording(handlers, "assigned")
    body = (
        '<bpmn:startEvent id="S" /><bpmn:userTask id="T"><bpmn:extensionElements>'
        + listener("taskListener", "assignment", "assigned")
        + '</bpmn:extensionElements></bpmn:userTask><bpmn:endEvent id="E" />'
        + chain("S", "T", "E")
    )
    rt.engine.deploy_bpmn(modeler_file("p", body))
    iid = rt.engine.start("p").id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.claim(task["id"], "bob")
    rt.drain()
    assert log == []
    assert [t["id"] for t in rt.engine.user_tasks(instance_id=iid)] == [task["id"]]
    assert [t["kind"] for t in rt.engine.show(iid)["tasks"]] == ["USER"]


def test_a_failing_listener_is_an_incident_and_a_retry_goes_on_from_it(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "charge")
    broken = {"down": True}

    def audit(ctx: HandlerContext) -> None:
        if broken["down"]:
            raise RuntimeError("audit log unreachable")
        log.append("audit@start")

    handlers.register("audit", audit)
    body = (
        '<bpmn:startEvent id="S" />'
        '<bpmn:serviceTask id="T" camunda:delegateExpression="${charge}"><bpmn:extensionElements>'
        + listener("executionListener", "start", "audit")
        + '</bpmn:extensionElements></bpmn:serviceTask><bpmn:endEvent id="E" />'
        + chain("S", "T", "E")
    )
    rt.engine.deploy_bpmn(modeler_file("p", body))
    iid = rt.engine.start("p").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "FAILED" and log == []
    [incident] = shown["incidents"]
    assert "audit log unreachable" in incident["message"]
    broken["down"] = False
    rt.engine.retry(incident["token_id"])
    rt.drain()
    assert log == ["audit@start", "charge@task"]
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def test_a_retried_decision_does_not_run_the_start_listeners_again(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    from tests.helpers.dmn import model

    log = recording(handlers, "enter")
    body = (
        '<bpmn:startEvent id="S" /><bpmn:businessRuleTask id="T" camunda:decisionRef="dish" '
        'camunda:resultVariable="r"><bpmn:extensionElements>'
        + listener("executionListener", "start", "enter")
        + '</bpmn:extensionElements></bpmn:businessRuleTask><bpmn:endEvent id="E" />'
        + chain("S", "T", "E")
    )
    rt.engine.deploy_bpmn(modeler_file("p", body))
    iid = rt.engine.start("p", {"season": "Fall", "guestCount": 4}).id
    rt.drain()
    [incident] = rt.engine.show(iid)["incidents"]
    rt.engine.deploy_dmn(model("dish.dmn"))
    rt.engine.retry(incident["token_id"])
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    assert log == ["enter@start"]


def test_take_listeners_run_when_the_flow_is_taken_before_the_target_starts(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "taken", "again", "enter", "charge")
    body = (
        '<bpmn:startEvent id="S" />'
        '<bpmn:serviceTask id="T" camunda:delegateExpression="${charge}"><bpmn:extensionElements>'
        + listener("executionListener", "start", "enter")
        + "</bpmn:extensionElements></bpmn:serviceTask>"
        '<bpmn:endEvent id="E" />'
        '<bpmn:sequenceFlow id="F1" sourceRef="S" targetRef="T"><bpmn:extensionElements>'
        + listener("executionListener", "take", "taken")
        + listener("executionListener", "take", "again")
        + "</bpmn:extensionElements></bpmn:sequenceFlow>"
        + chain("T", "E")
    )
    rt.engine.deploy_bpmn(modeler_file("p", body))
    iid = rt.engine.start("p").id
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    assert log == ["taken@take", "again@take", "enter@start", "charge@task"]
