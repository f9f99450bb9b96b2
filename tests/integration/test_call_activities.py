"""Call activities on PostgreSQL: the called instance is started once, linked both ways,
its variables cross the call as the mappings say, and the caller goes on when it ends; a
caller that is cancelled or interrupted cancels it; what cannot be called is an incident."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from bpm.definitions import ProcessBuilder
from bpm.definitions.parse import compile_definition
from bpm.errors import InvalidDefinition
from bpm.store import Database, variables
from bpm.store.schema import process_instances
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


def child(key: str = "child", *, version_tag: str | None = None) -> dict[str, Any]:
    """A called process: one handler task that doubles ``n`` into ``doubled``."""
    doc = (
        ProcessBuilder(key)
        .start()
        .service_task("work", handler="double")
        .end()
        .sequence("start", "work", "end")
        .build()
    )
    if version_tag is not None:
        doc["versionTag"] = version_tag
    return doc


def one_step_child(handler: str | None = None) -> dict[str, Any]:
    """A called process of one step: a user task ``approve`` (it waits), or a handler task
    ``charge`` running ``handler``."""
    b = ProcessBuilder("child").start()
    if handler is None:
        return b.user_task("approve").end().sequence("start", "approve", "end").build()
    b.service_task("charge", handler=handler)
    return b.end().sequence("start", "charge", "end").build()


def caller(key: str = "parent", **call: Any) -> dict[str, Any]:
    return (
        ProcessBuilder(key)
        .start()
        .call_activity("call", **{"process": "child", **call})
        .service_task("after", handler="after")
        .end()
        .sequence("start", "call", "after", "end")
        .build()
    )


@pytest.fixture
def doubling(calls: Calls) -> Calls:
    calls.add("double", lambda ctx: {"doubled": ctx.variables["n"] * 2})
    calls.add("after")
    return calls


def called_instances(db: Database, iid: UUID) -> list[Any]:
    t = process_instances
    with db.transaction() as conn:
        return list(conn.execute(select(t).where(t.c.super_instance_id == iid)).all())


def test_the_caller_waits_for_the_called_instance_and_gets_its_outputs(
    rt: Harness, doubling: Calls, pg_db: Database
) -> None:
    rt.deploy(child())
    rt.deploy(
        caller(
            inputs=[{"source": "amount", "target": "n"}],
            outputs=[{"source": "doubled", "target": "total"}],
        )
    )
    iid = rt.start("parent", {"amount": 21, "secret": "s"}, business_key="order-1")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert doubling.count("after") == 1
    with pg_db.transaction() as conn:
        parent_vars = variables.load(conn, iid)
    assert parent_vars["total"] == 42
    assert "doubled" not in parent_vars and "n" not in parent_vars
    (called,) = called_instances(pg_db, iid)
    assert called.state == "COMPLETED"
    assert called.root_instance_id == iid and called.business_key is None
    (event,) = rows.token_events_of(pg_db, iid, type="CALLED")
    assert event["data"]["instance"] == str(called.id)
    assert called.super_token_id == event["token_id"]
    with pg_db.transaction() as conn:
        child_vars = variables.load(conn, called.id)
    assert child_vars == {"n": 21, "doubled": 42}  # only what the mapping passed in
    assert_finished_cleanly(pg_db, called.id)
    mermaid = rt.engine.diagram(iid)
    assert "calls child" in mermaid and f"called {str(called.id)[:8]}" in mermaid
    assert "calls child" in rt.engine.diagram(iid, fmt="svg")
    assert rt.engine.show(called.id)["called_by"]["instance"] == str(iid)
    assert [c["instance"] for c in rt.engine.show(iid)["called"]] == [str(called.id)]


def test_all_variables_and_the_business_key_cross_the_call(
    rt: Harness, doubling: Calls, pg_db: Database
) -> None:
    rt.deploy(child())
    rt.deploy(caller(inputs=[{"all": True}], outputs=[{"all": True}], inherit_business_key=True))
    iid = rt.start("parent", {"n": 5, "note": "x"}, business_key="order-2")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    (called,) = called_instances(pg_db, iid)
    assert called.business_key == "order-2"
    with pg_db.transaction() as conn:
        assert variables.load(conn, iid) == {"n": 5, "note": "x", "doubled": 10}


def test_a_delivered_again_call_starts_one_instance(
    rt: Harness, doubling: Calls, pg_db: Database
) -> None:
    rt.deploy(child())
    rt.deploy(caller(inputs=[{"all": True}]))
    iid = rt.start("parent", {"n": 1})
    jobs = rt.queued()
    rt.queue.dispatch(jobs + jobs)  # the start job delivered twice
    rt.drain()
    assert len(called_instances(pg_db, iid)) == 1
    assert_finished_cleanly(pg_db, iid)


def test_an_unknown_process_is_an_incident_naming_it_and_a_retry_calls_it_once_deployed(
    rt: Harness, doubling: Calls, pg_db: Database
) -> None:
    rt.deploy(caller(inputs=[{"all": True}]))
    iid = rt.start("parent", {"n": 1})
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert "'child'" in incident.message and "deploy it" in incident.message
    assert rows.state(pg_db, iid) == "FAILED"
    rt.deploy(child())
    (token,) = [t for t in rows.tokens_of(pg_db, iid) if t.state == "FAILED"]
    rt.engine.retry(token.id)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_cancelling_the_caller_cancels_the_called_instance(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    waiting_child = one_step_child()
    rt.deploy(waiting_child)
    rt.deploy(caller())
    iid = rt.start("parent")
    rt.drain()
    (called,) = called_instances(pg_db, iid)
    assert called.state == "RUNNING"
    rt.engine.cancel(iid, reason="order withdrawn")
    rt.drain()
    assert rows.state(pg_db, called.id) == "CANCELLED"
    assert {t.state for t in rows.tokens_of(pg_db, called.id)} == {"CANCELLED"}
    assert_history_consistent(pg_db, called.id)
    assert_finished_cleanly(pg_db, iid, "CANCELLED")


def test_a_timer_on_the_call_activity_cancels_the_called_instance(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("late")
    waiting_child = one_step_child()
    doc = (
        ProcessBuilder("parent")
        .start()
        .call_activity("call", process="child")
        .timer_boundary("too_long", attached_to="call", duration="PT1H")
        .service_task("late", handler="late")
        .end()
        .end("e2")
        .sequence("start", "call", "end")
        .sequence("too_long", "late", "e2")
        .build()
    )
    rt.deploy(waiting_child)
    rt.deploy(doc)
    iid = rt.start("parent")
    rt.drain()
    (called,) = called_instances(pg_db, iid)
    rt.pass_time(timedelta(hours=2))
    assert calls.count("late") == 1
    assert rows.state(pg_db, called.id) == "CANCELLED"
    assert_finished_cleanly(pg_db, iid)


def test_a_called_instance_cancelled_by_an_operator_fails_the_call(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    rt.deploy(one_step_child())
    rt.deploy(caller())
    iid = rt.start("parent")
    rt.drain()
    (called,) = called_instances(pg_db, iid)
    rt.engine.cancel(called.id)
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert str(called.id) in incident.message and "cancelled" in incident.message
    assert_history_consistent(pg_db, iid)


def test_calls_nest_only_as_deep_as_allowed(
    rt: Harness, calls: Calls, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_MAX_CALL_DEPTH", "3")
    rt.deploy(
        ProcessBuilder("loop")
        .start()
        .call_activity("again", process="loop")
        .end()
        .sequence("start", "again", "end")
        .build()
    )
    iid = rt.start("loop")
    rt.drain()
    chain = [iid]
    while called := called_instances(pg_db, chain[-1]):
        chain.append(called[0].id)
    assert len(chain) == 4  # the top, then three calls
    (incident,) = rows.incidents_of(pg_db, chain[-1], only_open=True)
    assert "BPM_MAX_CALL_DEPTH" in incident.message
    assert all(rows.instance(pg_db, c).root_instance_id == iid for c in chain[1:])


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ({"binding": "version"}, "needs a 'version'"),
        ({"binding": "newest"}, "'binding' must be one of"),
        ({"version": 2}, 'needs "binding": "version"'),
        ({"inputs": [{"source": "a"}]}, "'target' must be a variable name"),
        ({"inputs": [{"all": True, "target": "x"}]}, "takes no source"),
        ({"business_key": "${a}", "inherit_business_key": True}, "not both"),
    ],
)
def test_a_bad_call_activity_is_refused_naming_it(call: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidDefinition, match="call") as caught:
        compile_definition(caller(**call))
    assert problem in str(caught.value)


def test_version_bindings_pick_the_version_asked_for(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    for tag, handler in (("1.0", "v1"), ("2.0", "v2"), (None, "v3")):
        calls.add(handler)
        doc = child(version_tag=tag)
        doc["nodes"][1]["handler"] = handler
        rt.deploy(doc)
    for key, call in (
        ("by_latest", {}),
        ("by_version", {"binding": "version", "version": "${v}"}),
        ("by_tag", {"binding": "versionTag", "version_tag": "2.0"}),
    ):
        doc = caller(key, **call)
        doc["nodes"][2]["handler"] = "v3"  # "after": reuse a counted handler
        rt.deploy(doc)
        rt.start(key, {"v": 1})
        rt.drain()
    assert (calls.count("v1"), calls.count("v2")) == (1, 1)
    assert calls.count("v3") == 1 + 3  # latest once, and each caller's "after"


MODELER_FILE = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="Definitions_1"
  targetNamespace="http://bpmn.io/schema/bpmn" exporter="Camunda Modeler" exporterVersion="5.17.0">
  <bpmn:process id="order" name="Order" isExecutable="true">
    <bpmn:startEvent id="StartEvent_1"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:callActivity id="Activity_pay" name="Pay" calledElement="payment"
        camunda:calledElementBinding="versionTag" camunda:calledElementVersionTag="v2">
      <bpmn:extensionElements>
        <camunda:in businessKey="#{execution.processBusinessKey}" />
        <camunda:in source="amount" target="total" />
        <camunda:in sourceExpression="${amount * 2}" target="doubled" />
        <camunda:out source="receipt" target="receiptId" />
      </bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
    </bpmn:callActivity>
    <bpmn:endEvent id="EndEvent_1"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="StartEvent_1" targetRef="Activity_pay" />
    <bpmn:sequenceFlow id="f2" sourceRef="Activity_pay" targetRef="EndEvent_1" />
  </bpmn:process>
  <bpmn:process id="payment" name="Payment" isExecutable="true" camunda:versionTag="v2">
    <bpmn:startEvent id="s2"><bpmn:outgoing>g1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="charge" camunda:delegateExpression="${charge}"
      camunda:resultVariable="receipt">
      <bpmn:incoming>g1</bpmn:incoming><bpmn:outgoing>g2</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:endEvent id="e2"><bpmn:incoming>g2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="g1" sourceRef="s2" targetRef="charge" />
    <bpmn:sequenceFlow id="g2" sourceRef="charge" targetRef="e2" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_camunda_modeler_call_activity_runs_with_its_in_and_out(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    seen: list[dict[str, Any]] = []

    def charge(ctx: Any) -> Any:
        seen.append(dict(ctx.variables))
        return "R-1"

    calls.add("charge", charge)
    rt.engine.deploy_bpmn(MODELER_FILE)
    iid = rt.start("order", {"amount": 10, "card": "secret"}, business_key="o-7")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert seen == [{"total": 10, "doubled": 20}]
    (called,) = called_instances(pg_db, iid)
    assert (called.process_key, called.business_key) == ("payment", "o-7")
    with pg_db.transaction() as conn:
        assert variables.load(conn, iid)["receiptId"] == "R-1"


def failing_child(*, by_task: bool) -> dict[str, Any]:
    """A called process that throws NO_FUNDS: from an error end event, or from its task."""
    b = ProcessBuilder("child").start()
    if by_task:
        b.service_task("charge", handler="refuse")
        return b.end().sequence("start", "charge", "end").build()
    return b.end("broke", error="NO_FUNDS").sequence("start", "broke").build()


def catching_caller() -> dict[str, Any]:
    return (
        ProcessBuilder("parent")
        .start()
        .call_activity("call", process="child")
        .error_boundary("no_funds", attached_to="call", error="NO_FUNDS")
        .service_task("after", handler="after")
        .service_task("ask_again", handler="ask_again")
        .end()
        .end("e2")
        .sequence("start", "call", "after", "end")
        .sequence("no_funds", "ask_again", "e2")
        .build()
    )


@pytest.mark.parametrize("by_task", [False, True], ids=["error end event", "handler error"])
def test_an_error_the_called_instance_does_not_catch_reaches_the_call_activity(
    rt: Harness, calls: Calls, pg_db: Database, by_task: bool
) -> None:
    from bpm import BpmnError

    def refuse(ctx: Any) -> None:
        raise BpmnError("NO_FUNDS", "card declined")

    calls.add("refuse", refuse)
    calls.add("after")
    calls.add("ask_again")
    rt.deploy(failing_child(by_task=by_task))
    rt.deploy(catching_caller())
    iid = rt.start("parent")
    rt.drain()
    assert (calls.count("after"), calls.count("ask_again")) == (0, 1)
    assert_finished_cleanly(pg_db, iid)
    (called,) = called_instances(pg_db, iid)
    assert called.state == "CANCELLED"
    (sent,) = rows.engine_events_of(pg_db, called.id, type="BpmnErrorPropagated")
    assert sent["data"]["code"] == "NO_FUNDS"
    (caught,) = rows.engine_events_of(pg_db, iid, type="BpmnErrorCaught")
    assert caught["node_id"] == "no_funds"
    assert_history_consistent(pg_db, called.id)


def test_an_error_nobody_catches_stays_an_incident_in_the_called_instance(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    rt.deploy(failing_child(by_task=False))
    rt.deploy(caller())
    iid = rt.start("parent")
    rt.drain()
    (called,) = called_instances(pg_db, iid)
    assert called.state == "FAILED"
    (incident,) = rows.incidents_of(pg_db, called.id, only_open=True)
    assert "NO_FUNDS" in incident.message
    (mirrored,) = rows.incidents_of(pg_db, iid, only_open=True)  # the caller still waits
    assert mirrored.kind == "call-activity" and "NO_FUNDS" in mirrored.message


def test_a_called_instance_incident_shows_on_its_caller_until_it_is_repaired(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    attempts: list[int] = []

    def flaky(ctx: Any) -> None:
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise RuntimeError("card service down")

    calls.add("flaky", flaky)
    calls.add("after")
    rt.deploy(one_step_child("flaky"))
    rt.deploy(caller())
    iid = rt.start("parent")
    rt.drain()
    (called,) = called_instances(pg_db, iid)
    assert rows.state(pg_db, called.id) == "FAILED"
    (below,) = rows.incidents_of(pg_db, called.id, only_open=True)
    (mirrored,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert mirrored.kind == "call-activity" and str(called.id) in mirrored.message
    assert "card service down" in mirrored.message and mirrored.details == str(below.id)
    assert rows.state(pg_db, iid) == "FAILED"
    assert below.token_id is not None
    rt.engine.retry(below.token_id)
    rt.drain()
    assert rows.incidents_of(pg_db, iid, only_open=True) == []
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("after") == 1


def test_a_lost_nudge_of_the_caller_is_sent_again_by_the_scans(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("broken", failing_handler)
    rt.deploy(one_step_child("broken"))
    rt.deploy(caller())
    iid = rt.start("parent")
    (root,) = rows.tokens_of(pg_db, iid)
    lost = 0
    while (job := rt.queue.pop(rt.clock.peek())) is not None:
        waiting = rows.token(pg_db, root.id).wait_kind == "CALLED"
        if job.name == "bpm.advance_token" and job.args.get("token_id") == str(root.id) and waiting:
            lost += 1  # the nudge the failed called instance sent: lost on the way
            continue
        rt.engine.run_job(job)
    assert lost == 1 and rows.incidents_of(pg_db, iid, only_open=True) == []
    rt.clock.advance(timedelta(minutes=5))
    rt.engine.run_scans()
    rt.drain()
    (mirrored,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert mirrored.token_id == root.id and mirrored.kind == "call-activity"
    assert_history_consistent(pg_db, iid)


def failing_handler(ctx: Any) -> None:
    raise RuntimeError("always down")
