"""Error boundary events: BPMN errors from handlers, external workers and error end events
take the boundary that catches their code (or the catch-all); uncaught ones fail the token."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder, compile_definition
from bpm.engine.external import TopicRequest
from bpm.errors import BpmnError, InvalidDefinition
from bpm.handlers import HandlerContext
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness


def raising(code: str) -> Any:
    def run(ctx: HandlerContext) -> None:
        raise BpmnError(code, "declined by the bank")

    return run


def charge_with_boundaries(**task: Any) -> dict[str, Any]:
    return (ProcessBuilder("charge").start().service_task("charge", **task)
            .error_boundary("declined", attached_to="charge", error="CARD_DECLINED")
            .error_boundary("other", attached_to="charge", error="*")
            .service_task("notify", handler="work").service_task("refund", handler="work")
            .end("done").end("failed")
            .sequence("start", "charge", "done").sequence("declined", "notify", "failed")
            .sequence("other", "refund", "failed").build())


@pytest.mark.parametrize(("code", "path"), [("CARD_DECLINED", "notify"), ("FRAUD", "refund")])
def test_handler_bpmn_error_follows_the_boundary_by_code_then_catch_all(
        rt: Harness, calls: Calls, pg_db: Database, code: str, path: str) -> None:
    calls.add("charge", raising(code))
    calls.add("work")
    iid = rt.run(charge_with_boundaries(handler="charge"))
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == [path]
    events = [e["type"] for e in rt.engine.trace(iid)]
    assert "BpmnErrorCaught" in events and "TokenFailed" not in events


def test_handler_bpmn_error_variables_are_set_for_the_boundary_path(
        rt: Harness, calls: Calls, pg_db: Database) -> None:
    def declined(ctx: HandlerContext) -> None:
        raise BpmnError("CARD_DECLINED", "declined", variables={"reason": "funds"})

    calls.add("charge", declined)
    seen: list[Any] = []
    calls.add("work", lambda ctx: seen.append(ctx.variables.get("reason")))
    iid = rt.run(charge_with_boundaries(handler="charge"))
    assert_finished_cleanly(pg_db, iid)
    assert seen == ["funds"]


def test_uncaught_handler_bpmn_error_fails_the_token(rt: Harness, calls: Calls) -> None:
    calls.add("charge", raising("CARD_DECLINED"))
    doc = (ProcessBuilder("plain").start().service_task("charge", handler="charge").end()
           .sequence("start", "charge", "end").build())
    iid = rt.run(doc)
    assert rows.state(rt.engine.db, iid) == "FAILED"
    assert "CARD_DECLINED" in rt.engine.incidents()[0]["message"]


def test_external_worker_bpmn_error_is_caught(rt: Harness, calls: Calls,
                                              pg_db: Database) -> None:
    calls.add("work")
    iid = rt.run(charge_with_boundaries(topic="payments"))
    [task] = rt.engine.fetch_and_lock("w1", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.bpmn_error(task.id, "w1", "CARD_DECLINED", variables={"reason": "funds"})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == ["notify"]
    assert rt.engine.show(iid)["variables"]["reason"] == "funds"


def test_error_end_event_inside_a_subprocess_ends_it_and_takes_its_boundary(
        rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("work")
    inner = (ProcessBuilder("inner").start("s_start").parallel_gateway("s_fork")
             .service_task("s_slow", topic="never_fetched").end("s_fail", error="OUT_OF_STOCK")
             .end("s_end").sequence("s_start", "s_fork")
             .flow("s_fork", "s_slow").flow("s_fork", "s_fail").flow("s_slow", "s_end"))
    outer = (ProcessBuilder("nested").start().sub_process("sub", inner)
             .sub_process("outer_sub", ProcessBuilder("o").start("o_start").end("o_end")
                          .sequence("o_start", "o_end"))
             .error_boundary("oos", attached_to="sub", error="OUT_OF_STOCK")
             .service_task("backorder", handler="work").end("done").end("backordered")
             .sequence("start", "sub", "outer_sub", "done")
             .sequence("oos", "backorder", "backordered").build())
    iid = rt.run(outer)
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == ["backorder"]
    tasks = {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}
    assert tasks["s_slow"] == "CANCELLED"


def test_error_end_bubbles_to_the_outer_subprocess(rt: Harness, calls: Calls,
                                                   pg_db: Database) -> None:
    calls.add("work")
    innermost = (ProcessBuilder("i").start("i_start").end("i_fail", error="E1")
                 .sequence("i_start", "i_fail"))
    middle = (ProcessBuilder("m").start("m_start").sub_process("inner", innermost)
              .end("m_end").sequence("m_start", "inner", "m_end"))
    doc = (ProcessBuilder("bubble").start().sub_process("middle", middle)
           .error_boundary("caught", attached_to="middle", error="E1")
           .service_task("handle", handler="work").end("done").end("after_error")
           .sequence("start", "middle", "done").sequence("caught", "handle", "after_error")
           .build())
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("work") == 1


def in_a_subprocess(**task: Any) -> dict[str, Any]:
    """``charge`` (with a timer boundary of its own) inside ``middle`` inside ``outer``; only
    the subprocesses have error boundaries: by code on the inner one, catch-all outside."""
    inner = (ProcessBuilder("i").start("i_start").service_task("charge", **task)
             .timer_boundary("slow", attached_to="charge", duration="PT1H")
             .end("i_end").end("i_late").sequence("i_start", "charge", "i_end")
             .flow("slow", "i_late"))
    middle = (ProcessBuilder("m").start("m_start").sub_process("inner", inner)
              .error_boundary("declined", attached_to="inner", error="CARD_DECLINED")
              .end("m_end").end("m_declined")
              .sequence("m_start", "inner", "m_end").flow("declined", "m_declined"))
    return (ProcessBuilder("nested_throw").start().sub_process("middle", middle)
            .error_boundary("other", attached_to="middle", error="*")
            .service_task("handle", handler="work").end("done").end("after_error")
            .sequence("start", "middle", "done").sequence("other", "handle", "after_error")
            .build())


@pytest.mark.parametrize(("code", "handled"), [("CARD_DECLINED", 0), ("FRAUD", 1)])
def test_handler_bpmn_error_inside_subprocesses_is_caught_by_the_innermost_catching_one(
        rt: Harness, calls: Calls, pg_db: Database, code: str, handled: int) -> None:
    """BPMN 2.0 10.5.3: an error the task itself does not catch propagates to its scope."""
    calls.add("charge", raising(code))
    calls.add("work")
    iid = rt.run(in_a_subprocess(handler="charge"))
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("work") == handled
    caught = rows.engine_events_of(pg_db, iid, type="BpmnErrorCaught")
    assert [(e["node_id"], e["data"]["thrown_at"]) for e in caught] == [
        ("declined" if handled == 0 else "other", "charge")]
    assert rows.engine_events_of(pg_db, iid, type="TimerCancelled")  # charge's own timer
    assert {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}["charge"] == "DONE"
    assert not rows.incidents_of(pg_db, iid)


def test_external_worker_bpmn_error_inside_a_subprocess_takes_its_boundary(
        rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("work")
    iid = rt.run(in_a_subprocess(topic="payments"))
    [task] = rt.engine.fetch_and_lock("w1", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.bpmn_error(task.id, "w1", "CARD_DECLINED", "declined by the bank",
                         variables={"reason": "funds"})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("work") == 0
    ended = {t.node_id for t in rows.tokens_of(pg_db, iid) if t.state == "COMPLETED"}
    assert "m_declined" in ended and "i_end" not in ended
    assert rt.engine.show(iid)["variables"]["reason"] == "funds"


def test_external_worker_catch_all_boundary_catches_any_code(
        rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("work")
    iid = rt.run(charge_with_boundaries(topic="payments"))
    [task] = rt.engine.fetch_and_lock("w1", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.bpmn_error(task.id, "w1", "SOMETHING_ELSE")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == ["refund"]


def test_uncaught_error_end_event_fails_the_instance_with_an_incident(
        rt: Harness, pg_db: Database) -> None:
    inner = (ProcessBuilder("i").start("i_start").end("i_fail", error="E1")
             .sequence("i_start", "i_fail"))
    doc = (ProcessBuilder("uncaught_end").start().sub_process("sub", inner)
           .error_boundary("caught", attached_to="sub", error="OTHER")
           .end("done").end("after").sequence("start", "sub", "done").flow("caught", "after")
           .build())
    iid = rt.run(doc)
    assert rows.state(pg_db, iid) == "FAILED"
    [incident] = rows.incidents_of(pg_db, iid, only_open=True)
    assert "E1" in incident.message


@pytest.mark.parametrize(("change", "message"), [
    ({"attachedTo": "nowhere"}, "is not a node of its scope"),
    ({"attachedTo": "start"}, "only be attached to a serviceTask, userTask"),
    ({"timer": {"duration": "PT1H"}}, "exactly one of 'error'"),
    ({"interrupting": False}, "always interrupting"),
    ({"error": ""}, "'error' must be the error code"),
])
def test_bad_boundaries_are_refused_naming_the_boundary(change: dict[str, Any],
                                                        message: str) -> None:
    doc = charge_with_boundaries(handler="charge")
    node = next(n for n in doc["nodes"] if n["id"] == "declined")
    node.update(change)
    with pytest.raises(InvalidDefinition, match=message) as caught:
        compile_definition(doc)
    assert caught.value.element == "declined"
