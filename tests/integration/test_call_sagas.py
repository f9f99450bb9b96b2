"""A saga across a call activity: the caller's saga undoes what the called instance did,
with the called instance's own handlers and variables, latest success first across the
call; a call activity with a compensation of its own undoes the call with it instead; a
thrown compensation event does not reach into a called instance (as in Camunda 7)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from bpm.definitions import ProcessBuilder
from bpm.store import Database, compensation
from bpm.store.schema import process_instances
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.journal import Journal
from tests.helpers.runtime import Calls, Harness, failing


@pytest.fixture
def journal(calls: Calls) -> Journal:
    j = Journal()
    for name in ("do_a", "do_x", "do_y", "do_z", "undo_a", "undo_x", "undo_z", "undo_call"):
        j.add(calls, name)
    j.add(calls, "undo_y", lambda ctx: {"undone_with": ctx.variables.get("secret")})
    calls.add("boom", failing(1000, "boom"))
    j.add(calls, "undo_broken", failing(1000, "cannot undo"))
    return j


def task(b: ProcessBuilder, node: str, handler: str, undo: str | None) -> None:
    extra = {"compensation": {"handler": undo}} if undo else {}
    b._node(node, "serviceTask", handler=handler, **extra)


def child(*, undo_y: str = "undo_y", grandchild: bool = False) -> dict[str, Any]:
    """x then y, each undoable; y's undo reads the called instance's own variable."""
    b = ProcessBuilder("child").start()
    task(b, "x", "do_x", "undo_x")
    task(b, "y", "do_y", undo_y)
    order = ["start", "x", "y"]
    if grandchild:
        b.call_activity("deeper", process="grandchild")
        order.append("deeper")
    return b.end().sequence(*order, "end").build()


def grandchild() -> dict[str, Any]:
    b = ProcessBuilder("grandchild").start()
    task(b, "z", "do_z", "undo_z")
    return b.end().sequence("start", "z", "end").build()


def parent(*, call_undo: str | None = None, saga: str = "global") -> dict[str, Any]:
    """a, then the call, then c, which fails for good."""
    b = ProcessBuilder("parent", saga=saga).start()
    task(b, "a", "do_a", "undo_a")
    extra = {"compensation": {"handler": call_undo}} if call_undo else {}
    b._node("call", "callActivity", process="child", **extra)
    task(b, "c", "boom", None)
    return b.end().sequence("start", "a", "call", "c", "end").build()


def called(db: Database, iid: UUID) -> list[UUID]:
    t = process_instances
    with db.transaction() as conn:
        return [
            r.id
            for r in conn.execute(
                select(t.c.id).where(t.c.super_instance_id == iid).order_by(t.c.started_at)
            )
        ]


def statuses(db: Database, iid: UUID) -> list[tuple[str, str]]:
    with db.transaction() as conn:
        return [(r.node_id, r.status) for r in compensation.of_instance(conn, iid)]


def test_the_callers_saga_undoes_the_called_instance_latest_success_first(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(child())
    iid = rt.run(parent(), {"secret": "outer"})
    rt.drain()
    assert journal.lines == ["do_a", "do_x", "do_y", "undo_y", "undo_x", "undo_a"]
    (cid,) = called(pg_db, iid)
    assert rows.state(pg_db, iid) == "TERMINATED"
    assert_finished_cleanly(pg_db, cid)  # it ran again only to undo, and completed again
    assert statuses(pg_db, cid) == [("x", "COMPLETED"), ("y", "COMPLETED")]
    assert statuses(pg_db, iid) == [("a", "COMPLETED"), ("call", "COMPLETED")]
    assert_history_consistent(pg_db, iid)
    assert_history_consistent(pg_db, cid)


def test_the_called_instances_compensation_runs_with_its_own_variables(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(child())
    b = ProcessBuilder("parent_in", saga="global").start()
    task(b, "a", "do_a", "undo_a")
    b.call_activity(
        "call", process="child", inputs=[{"expression": "${'inner'}", "target": "secret"}]
    )
    task(b, "c", "boom", None)
    doc = b.end().sequence("start", "a", "call", "c", "end").build()
    iid = rt.run(doc, {"secret": "outer"})
    (cid,) = called(pg_db, iid)
    from bpm.store import variables

    with pg_db.transaction() as conn:
        assert variables.load(conn, cid)["undone_with"] == "inner"
        assert "undone_with" not in variables.load(conn, iid)


def test_calls_nest_the_grandchild_is_undone_before_the_child(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(grandchild())
    rt.deploy(child(grandchild=True))
    iid = rt.run(parent(), {"secret": "s"})
    assert journal.lines == ["do_a", "do_x", "do_y", "do_z", "undo_z", "undo_y", "undo_x", "undo_a"]
    (cid,) = called(pg_db, iid)
    (gid,) = called(pg_db, cid)
    for each in (iid, cid, gid):
        assert_history_consistent(pg_db, each)


def test_a_call_activity_with_its_own_compensation_undoes_the_call_with_it(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(child())
    iid = rt.run(parent(call_undo="undo_call"), {"secret": "s"})
    assert journal.lines == ["do_a", "do_x", "do_y", "undo_call", "undo_a"]
    (cid,) = called(pg_db, iid)
    assert statuses(pg_db, cid) == [("x", "PENDING"), ("y", "PENDING")]
    assert_history_consistent(pg_db, iid)


def test_a_compensation_that_fails_in_the_called_instance_is_an_incident_on_both(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(child(undo_y="undo_broken"))
    iid = rt.run(parent(), {"secret": "s"})
    (cid,) = called(pg_db, iid)
    assert "undo_x" in journal.lines  # the called instance's saga went on past the failure
    (inner,) = rows.incidents_of(pg_db, cid, only_open=True)
    assert "cannot undo" in inner.message
    (outer,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert outer.kind == "compensation" and str(cid) in outer.message
    assert "undo_a" in journal.lines  # and the caller's saga went on too
    assert_history_consistent(pg_db, iid)
    assert_history_consistent(pg_db, cid)


def test_a_thrown_compensation_does_not_reach_into_the_called_instance(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(child())
    b = ProcessBuilder("thrower").start()
    task(b, "a", "do_a", "undo_a")
    b.call_activity("call", process="child")
    b._node("undo", "compensationThrow")
    doc = b.end().sequence("start", "a", "call", "undo", "end").build()
    iid = rt.run(doc, {"secret": "s"})
    assert journal.lines == ["do_a", "do_x", "do_y", "undo_a"]
    assert_finished_cleanly(pg_db, iid)
    (cid,) = called(pg_db, iid)
    assert statuses(pg_db, cid) == [("x", "PENDING"), ("y", "PENDING")]


def test_a_local_saga_around_the_call_undoes_it_and_not_what_came_before(
    rt: Harness, journal: Journal, calls: Calls, pg_db: Database
) -> None:
    """The caller's local saga covers its subprocess: the call inside it is undone (the
    called instance's records), the activity before the subprocess is not."""
    calls.add("apologise")
    rt.deploy(child())
    inner = ProcessBuilder("inner").start("s_start")
    inner.call_activity("call", process="child")
    task(inner, "c", "boom", None)
    inner.end("s_end").sequence("s_start", "call", "c", "s_end")
    b = ProcessBuilder("local").start()
    task(b, "a", "do_a", "undo_a")
    b._node("sub", "subProcess", saga="local", **{k: inner.build()[k] for k in ("nodes", "flows")})
    b.end()
    b.error_boundary("compensated", attached_to="sub", error="SAGA_COMPENSATED")
    b._node("apologise", "serviceTask", handler="apologise")
    b.end("sorry").sequence("compensated", "apologise", "sorry")
    iid = rt.run(b.sequence("start", "a", "sub", "end").build(), {"secret": "s"})
    assert journal.lines == ["do_a", "do_x", "do_y", "undo_y", "undo_x"]
    assert_finished_cleanly(pg_db, iid)
    assert statuses(pg_db, iid) == [("a", "PENDING"), ("call", "COMPLETED")]


CALL_WITH_UNDO = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="parent_bpmn" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:callActivity id="call" calledElement="child" />
    <bpmn:boundaryEvent id="undoCall" attachedToRef="call">
      <bpmn:compensateEventDefinition />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="refund" isForCompensation="true" camunda:class="undo_call" />
    <bpmn:intermediateThrowEvent id="throw">
      <bpmn:compensateEventDefinition />
    </bpmn:intermediateThrowEvent>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="call" />
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="throw" />
    <bpmn:sequenceFlow id="f3" sourceRef="throw" targetRef="e" />
    <bpmn:association id="a1" associationDirection="One" sourceRef="undoCall" targetRef="refund" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_compensation_boundary_on_a_bpmn_call_activity(
    rt: Harness, journal: Journal, pg_db: Database
) -> None:
    rt.deploy(child())
    rt.engine.deploy_bpmn(CALL_WITH_UNDO)
    iid = rt.start("parent_bpmn", {"secret": "s"})
    rt.drain()
    assert journal.lines == ["do_x", "do_y", "undo_call"]
    assert_finished_cleanly(pg_db, iid)


def test_a_lost_nudge_to_the_callers_compensation_token_is_sent_again_by_the_scan(
    rt: Harness, journal: Journal, pg_db: Database, clock: Any
) -> None:
    """The called instance's saga ends and its job to the caller's waiting compensation
    token is lost: the waiting-parents scan sends it again, and the caller's saga goes on."""
    rt.deploy(child())
    rt.deploy(parent())
    iid = rt.start("parent", {"secret": "s"})
    lost = 0
    while (job := rt.queue.pop(rt.clock.peek())) is not None:
        token_id = job.args.get("token_id")
        token = rows.token(pg_db, UUID(token_id)) if token_id else None
        if token is not None and token.instance_id == iid and token.wait_kind == "CALLED":
            if token.mode == "COMPENSATION":
                lost += 1
                continue  # the nudge is lost
        rt.engine.run_job(job)
    assert lost == 1 and "undo_a" not in journal.lines
    clock.advance(timedelta(minutes=5))
    rt.engine.run_scans()
    rt.drain()
    assert journal.lines[-3:] == ["undo_y", "undo_x", "undo_a"]
    assert rows.state(pg_db, iid) == "TERMINATED"
