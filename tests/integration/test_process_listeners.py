"""A process's own execution listeners, as Camunda Modeler writes them in the process's
``extensionElements``: ``start`` runs as the instance starts, ``end`` as it ends (its last path
done, or a terminate end event), each in the expression, delegate expression, class and
script forms a node's listeners have, as a step of its own, on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.engine.operations import replay
from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers.invariants import assert_history_consistent
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness

Log = list[str]


def recording(handlers: HandlerRegistry, *names: str) -> Log:
    log: Log = []
    for name in names:

        def run(ctx: HandlerContext, name: str = name) -> dict[str, Any]:
            log.append(f"{name}@{ctx.event or 'task'}")
            return {f"seen_{name}": True}

        handlers.register(name, run, replace=True)
    return log


def process_listeners(*listeners: str) -> str:
    return "<bpmn:extensionElements>" + "".join(listeners) + "</bpmn:extensionElements>"


def task_flow(extra: str = "") -> str:
    return (
        '<bpmn:startEvent id="S" />'
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Work" />'
        '<bpmn:endEvent id="E"><bpmn:extensionElements>'
        '<camunda:executionListener event="end" class="org.acme.LastNode" />'
        "</bpmn:extensionElements></bpmn:endEvent>" + extra + chain("S", "T", "E")
    )


@pytest.mark.parametrize(
    ("listener", "seen"),
    [
        ('<camunda:executionListener event="end" class="org.acme.Closed" />', "seen_Closed"),
        ('<camunda:executionListener event="end" delegateExpression="${Closed}" />', "seen_Closed"),
        (
            '<camunda:executionListener event="end" '
            "expression=\"${execution.setVariable('closed', 'yes')}\" />",
            "closed",
        ),
        (
            '<camunda:executionListener event="end"><camunda:script scriptFormat="javascript">'
            'execution.setVariable("closed", "by script");</camunda:script>'
            "</camunda:executionListener>",
            "closed",
        ),
    ],
)
def test_a_process_end_listener_runs_as_the_instance_completes(
    rt: Harness, handlers: HandlerRegistry, listener: str, seen: str
) -> None:
    log = recording(handlers, "Work", "LastNode", "Closed")
    rt.engine.deploy_bpmn(modeler_file("p", process_listeners(listener) + task_flow()))
    iid = rt.engine.start("p").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert seen in shown["variables"]
    assert log[:2] == ["Work@task", "LastNode@end"]  # the end event's own listener first
    process_tasks = [t for t in shown["tasks"] if (t["topic"] or "").endswith(":^process")]
    assert len(process_tasks) == 1


def test_start_and_end_listeners_of_the_process_frame_the_instance(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Work", "LastNode", "Opened", "Closed", "Closed2")
    listeners = process_listeners(
        '<camunda:executionListener event="start" class="org.acme.Opened" />',
        '<camunda:executionListener event="end" class="org.acme.Closed" />',
        '<camunda:executionListener event="end" class="org.acme.Closed2" />',
    )
    rt.engine.deploy_bpmn(modeler_file("p", listeners + task_flow()))
    iid = rt.engine.start("p").id
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    assert log == ["Opened@start", "Work@task", "LastNode@end", "Closed@end", "Closed2@end"]
    assert replay.check(rt.engine.core, iid) == []
    assert_history_consistent(rt.engine.core.db, iid)


def test_the_instance_is_running_while_its_end_listener_waits_to_run(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Work", "LastNode")
    failing: list[int] = []

    def closed(ctx: HandlerContext) -> dict[str, Any]:
        failing.append(1)
        raise RuntimeError("the audit service is down")

    handlers.register("Closed", closed)
    listeners = process_listeners(
        '<camunda:executionListener event="end" class="org.acme.Closed" />'
    )
    rt.engine.deploy_bpmn(modeler_file("p", listeners + task_flow()))
    iid = rt.engine.start("p").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert log == ["Work@task", "LastNode@end"] and failing
    assert shown["state"] != "COMPLETED"  # the failing end listener holds the instance


def test_a_terminate_end_event_runs_the_process_end_listeners(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Work", "Closed", "Other")
    body = process_listeners(
        '<camunda:executionListener event="end" class="org.acme.Closed" />'
    ) + (
        '<bpmn:startEvent id="S" /><bpmn:parallelGateway id="F" />'
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Work" />'
        '<bpmn:userTask id="U" /><bpmn:endEvent id="E" />'
        '<bpmn:endEvent id="X"><bpmn:terminateEventDefinition /></bpmn:endEvent>'
        + chain("S", "F", "T", "X")
        + chain("F", "U", "E").replace("Flow_F_U", "Flow_F_U2")
    )
    rt.engine.deploy_bpmn(modeler_file("p", body))
    iid = rt.engine.start("p").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert log == ["Work@task", "Closed@end"]


WAITING = '<bpmn:startEvent id="S" /><bpmn:userTask id="U" /><bpmn:endEvent id="E" />' + chain(
    "S", "U", "E"
)


def test_a_cancel_runs_the_process_end_listeners_then_the_instance_is_cancelled(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Closed", "Closed2")
    listeners = process_listeners(
        '<camunda:executionListener event="end" class="org.acme.Closed" />',
        '<camunda:executionListener event="end" class="org.acme.Closed2" />',
    )
    rt.engine.deploy_bpmn(modeler_file("p", listeners + WAITING))
    iid = rt.engine.start("p").id
    rt.drain()
    assert rt.engine.show(iid)["state"] == "RUNNING"
    rt.engine.cancel(iid)
    rt.drain()
    shown = rt.engine.show(iid)
    assert log == ["Closed@end", "Closed2@end"]
    assert shown["state"] == "CANCELLED"
    assert replay.check(rt.engine.core, iid) == []
    assert_history_consistent(rt.engine.core.db, iid)
    assert all(t["state"] != "READY" for t in shown["tasks"])  # the user task went with it


def test_a_second_cancel_while_the_end_listener_fails_ends_the_instance_at_once(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    def closed(ctx: HandlerContext) -> dict[str, Any]:
        raise RuntimeError("the audit service is down")

    handlers.register("Closed", closed)
    listeners = process_listeners(
        '<camunda:executionListener event="end" class="org.acme.Closed" />'
    )
    rt.engine.deploy_bpmn(modeler_file("p", listeners + WAITING))
    iid = rt.engine.start("p").id
    rt.drain()
    rt.engine.cancel(iid)
    rt.drain()
    assert rt.engine.show(iid)["state"] != "CANCELLED"  # held by the failing listener
    rt.engine.cancel(iid)
    rt.drain()
    assert rt.engine.show(iid)["state"] == "CANCELLED"


def test_a_cancel_without_process_end_listeners_is_immediate(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    rt.engine.deploy_bpmn(modeler_file("p", WAITING))
    iid = rt.engine.start("p").id
    rt.drain()
    rt.engine.cancel(iid)
    assert rt.engine.show(iid)["state"] == "CANCELLED"


def test_a_process_start_listener_runs_for_a_message_start_too(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Opened")
    listeners = process_listeners(
        '<camunda:executionListener event="start" class="org.acme.Opened" />'
    )
    body = (
        '<bpmn:startEvent id="S" /><bpmn:endEvent id="E" />'
        '<bpmn:startEvent id="M"><bpmn:messageEventDefinition messageRef="Msg" />'
        '</bpmn:startEvent><bpmn:endEvent id="E2" />' + chain("S", "E") + chain("M", "E2")
    )
    rt.engine.deploy_bpmn(
        modeler_file(
            "p", listeners + body, declarations='<bpmn:message id="Msg" name="order placed" />'
        )
    )
    rt.engine.start("p")
    rt.drain()
    rt.engine.correlate("order placed")
    rt.drain()
    assert log == ["Opened@start", "Opened@start"]


def test_a_cancel_that_skips_custom_listeners_is_immediate(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Closed")
    listeners = process_listeners(
        '<camunda:executionListener event="end" class="org.acme.Closed" />'
    )
    rt.engine.deploy_bpmn(modeler_file("p", listeners + WAITING))
    iid = rt.engine.start("p").id
    rt.drain()
    rt.engine.cancel(iid, skip_listeners=True)
    assert rt.engine.show(iid)["state"] == "CANCELLED"
    rt.drain()
    assert log == []


def test_a_cancel_of_a_failed_instance_runs_the_end_listeners_too(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    log = recording(handlers, "Closed", "LastNode")

    def work(ctx: HandlerContext) -> dict[str, Any]:
        raise RuntimeError("the payment service is down")

    handlers.register("Work", work)
    listeners = process_listeners(
        '<camunda:executionListener event="end" class="org.acme.Closed" />'
    )
    rt.engine.deploy_bpmn(modeler_file("p", listeners + task_flow()))
    iid = rt.engine.start("p").id
    rt.drain()
    assert rt.engine.show(iid)["state"] == "FAILED"
    rt.engine.cancel(iid)
    assert rt.engine.show(iid)["state"] == "RUNNING"  # its incident went; its listener runs
    rt.drain()
    assert rt.engine.show(iid)["state"] == "CANCELLED"
    assert log == ["Closed@end"]
    assert replay.check(rt.engine.core, iid) == []
