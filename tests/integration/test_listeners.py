"""Execution and task listeners from Camunda models: each a handler run as a step of its own,
in Camunda's order, with retries and incidents like a handler, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bpm.errors import BpmnError
from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers.clock import FakeClock
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


def test_task_listeners_create_then_assignment_before_the_task_opens_complete_after(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "created", "assigned", "completed", "left")
    rt.engine.deploy_bpmn(modeler_file("p", _review()))
    iid = rt.engine.start("p").id
    rt.drain()
    assert log == ["created@create", "assigned@assignment"]  # Camunda 7.12+'s order
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {"ok": True}, user="ann")
    rt.drain()
    assert log[2:] == ["completed@complete", "left@end"]
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def _claimable() -> str:
    return (
        '<bpmn:startEvent id="S" /><bpmn:userTask id="T"><bpmn:extensionElements>'
        + listener("taskListener", "assignment", "assigned")
        + listener("taskListener", "update", "updated")
        + '</bpmn:extensionElements></bpmn:userTask><bpmn:endEvent id="E" />'
        + chain("S", "T", "E")
    )


def test_a_claim_runs_update_then_assignment_listeners_beside_the_open_task(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    """A claim's listeners run under a token of their own beside the task's (docs/bpmn.md):
    the task stays open for its assignee meanwhile; an unclaim runs the update ones."""
    log = recording(handlers, "assigned", "updated")
    rt.engine.deploy_bpmn(modeler_file("p", _claimable()))
    iid = rt.engine.start("p").id
    rt.drain()
    assert log == []  # created with no assignee: no assignment yet
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.claim(task["id"], "bob")
    rt.drain()
    assert log == ["updated@update", "assigned@assignment"]
    assert [t["id"] for t in rt.engine.user_tasks(instance_id=iid)] == [task["id"]]
    rt.engine.unclaim(task["id"])
    rt.drain()
    assert log[2:] == ["updated@update"]
    rt.engine.complete_user_task(task["id"], {}, user="ann")
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert [t["state"] for t in shown["tokens"]].count("COMPLETED") == len(shown["tokens"])


def test_a_task_completed_before_its_claim_listeners_ran_ends_after_them(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "updated")
    gate = {"open": False}

    def assigned(ctx: HandlerContext) -> None:
        if not gate["open"]:
            raise RuntimeError("mail server down")
        log.append("assigned@assignment")

    handlers.register("assigned", assigned)
    rt.engine.deploy_bpmn(modeler_file("p", _claimable()))
    iid = rt.engine.start("p").id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.claim(task["id"], "bob")
    rt.drain()
    [incident] = rt.engine.show(iid)["incidents"]  # the claim's listener failed for good
    rt.engine.complete_user_task(task["id"], {}, user="bob")
    rt.drain()
    assert rt.engine.show(iid)["state"] != "COMPLETED"  # its scope waits for that token
    gate["open"] = True
    rt.engine.retry(incident["token_id"])
    rt.drain()
    assert log == ["updated@update", "assigned@assignment"]
    assert rt.engine.show(iid)["state"] == "COMPLETED"


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


def _interrupted_review(boundary: str) -> str:
    return (
        '<bpmn:startEvent id="S" />'
        '<bpmn:userTask id="T" camunda:assignee="ann"><bpmn:extensionElements>'
        + listener("taskListener", "delete", "deleted")
        + listener("taskListener", "complete", "completed")
        + listener("executionListener", "end", "left")
        + listener("executionListener", "end", "audited")
        + "</bpmn:extensionElements></bpmn:userTask>"
        + boundary
        + '<bpmn:serviceTask id="Escalate" camunda:class="org.acme.Escalate" />'
        '<bpmn:endEvent id="E" /><bpmn:endEvent id="Late" />'
        + chain("S", "T", "E")
        + chain("B", "Escalate", "Late")
    )


_TIMER = (
    '<bpmn:boundaryEvent id="B" attachedToRef="T"><bpmn:timerEventDefinition>'
    '<bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT1H</bpmn:timeDuration>'
    "</bpmn:timerEventDefinition></bpmn:boundaryEvent>"
)


def test_an_interrupting_timer_runs_delete_then_end_listeners_before_its_path(
    rt: Harness, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    log = recording(handlers, "deleted", "completed", "left", "audited", "Escalate")
    rt.engine.deploy_bpmn(modeler_file("p", _interrupted_review(_TIMER)))
    iid = rt.engine.start("p").id
    rt.drain()
    clock.advance(timedelta(hours=2))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert log == ["deleted@delete", "left@end", "audited@end", "Escalate@task"]
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert rt.engine.user_tasks(instance_id=iid) == []
    ended = [t["node_id"] for t in shown["tokens"] if t["state"] == "COMPLETED"]
    assert ended == ["Late"]


def test_an_error_boundary_runs_the_end_listeners_and_sets_the_error_variables(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "left", "Handle")

    def charge(ctx: HandlerContext) -> None:
        raise BpmnError("CARD_DECLINED", "card 4242 declined")

    handlers.register("Charge", charge)
    body = (
        '<bpmn:startEvent id="S" />'
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
        + listener("executionListener", "end", "left")
        + "</bpmn:extensionElements></bpmn:serviceTask>"
        '<bpmn:boundaryEvent id="B" attachedToRef="T"><bpmn:errorEventDefinition '
        'errorRef="Error_1" camunda:errorCodeVariable="code" /></bpmn:boundaryEvent>'
        '<bpmn:serviceTask id="Handle" camunda:class="org.acme.Handle" />'
        '<bpmn:endEvent id="E" /><bpmn:endEvent id="Declined" />'
        + chain("S", "T", "E")
        + chain("B", "Handle", "Declined")
    )
    declared = '<bpmn:error id="Error_1" name="Declined" errorCode="CARD_DECLINED" />'
    rt.engine.deploy_bpmn(modeler_file("p", body, declarations=declared))
    iid = rt.engine.start("p").id
    rt.drain()
    assert log == ["left@end", "Handle@task"]
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["code"] == "CARD_DECLINED"


def test_a_failing_delete_listener_is_an_incident_and_a_retry_goes_on_to_the_boundary(
    rt: Harness, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    log = recording(handlers, "completed", "left", "audited", "Escalate")
    broken = {"down": True}

    def deleted(ctx: HandlerContext) -> None:
        if broken["down"]:
            raise BpmnError("NOPE", "a BPMN error here is a failure: the token is leaving")
        log.append("deleted@delete")

    handlers.register("deleted", deleted)
    rt.engine.deploy_bpmn(modeler_file("p", _interrupted_review(_TIMER)))
    iid = rt.engine.start("p").id
    rt.drain()
    clock.advance(timedelta(hours=2))
    rt.engine.fire_due_timers()
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "FAILED" and log == []
    [incident] = shown["incidents"]
    broken["down"] = False
    rt.engine.retry(incident["token_id"])
    rt.drain()
    assert log == ["deleted@delete", "left@end", "audited@end", "Escalate@task"]
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def test_a_task_completed_normally_runs_no_delete_listener(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "deleted", "completed", "left", "audited", "Escalate")
    rt.engine.deploy_bpmn(modeler_file("p", _interrupted_review(_TIMER)))
    iid = rt.engine.start("p").id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {}, user="ann")
    rt.drain()
    assert log == ["completed@complete", "left@end", "audited@end"]
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def _reminded(duration: str = "PT1H") -> str:
    return (
        '<bpmn:startEvent id="S" />'
        '<bpmn:userTask id="T" camunda:assignee="ann"><bpmn:extensionElements>'
        '<camunda:taskListener delegateExpression="${remind}" event="timeout" id="Remind">'
        '<camunda:field name="channel"><camunda:string>mail</camunda:string></camunda:field>'
        '<bpmn:timerEventDefinition id="TimerEventDefinition_1">'
        f'<bpmn:timeDuration xsi:type="bpmn:tFormalExpression">{duration}</bpmn:timeDuration>'
        "</bpmn:timerEventDefinition></camunda:taskListener>"
        "</bpmn:extensionElements></bpmn:userTask>"
        '<bpmn:endEvent id="E" />' + chain("S", "T", "E")
    )


def test_a_timeout_listener_runs_when_its_timer_fires_and_the_task_stays_open(
    rt: Harness, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    log = recording(handlers, "remind")
    rt.engine.deploy_bpmn(modeler_file("p", _reminded()))
    iid = rt.engine.start("p").id
    rt.drain()
    clock.advance(timedelta(minutes=30))
    assert rt.engine.fire_due_timers() == 0
    clock.advance(timedelta(hours=1))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert log == ["remind@timeout"]
    shown = rt.engine.show(iid)
    assert shown["variables"]["seen_remind"] == {"channel": "mail"}
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {}, user="ann")
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"


def test_a_timeout_listener_of_a_task_completed_in_time_never_runs(
    rt: Harness, handlers: HandlerRegistry, clock: FakeClock
) -> None:
    log = recording(handlers, "remind")
    rt.engine.deploy_bpmn(modeler_file("p", _reminded()))
    iid = rt.engine.start("p").id
    rt.drain()
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {}, user="ann")
    rt.drain()
    clock.advance(timedelta(hours=2))
    assert rt.engine.fire_due_timers() == 0
    assert log == [] and rt.engine.show(iid)["state"] == "COMPLETED"
