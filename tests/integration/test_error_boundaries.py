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
