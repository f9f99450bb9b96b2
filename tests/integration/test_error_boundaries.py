"""Error boundary events: BPMN errors from handlers, external workers and error end events
take the boundary that catches their code (or the catch-all); uncaught ones fail the token."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder, compile_definition
from bpm.engine.operations.external import TopicRequest
from bpm.errors import BpmnError, InvalidDefinition
from bpm.handlers import HandlerContext
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, EngineFactory, Harness


def raising(code: str) -> Any:
    def run(ctx: HandlerContext) -> None:
        raise BpmnError(code, "declined by the bank")

    return run


def charge_with_boundaries(**task: Any) -> dict[str, Any]:
    return (
        ProcessBuilder("charge")
        .start()
        .service_task("charge", **task)
        .error_boundary("declined", attached_to="charge", error="CARD_DECLINED")
        .error_boundary("other", attached_to="charge", error="*")
        .service_task("notify", handler="work")
        .service_task("refund", handler="work")
        .end("done")
        .end("failed")
        .sequence("start", "charge", "done")
        .sequence("declined", "notify", "failed")
        .sequence("other", "refund", "failed")
        .build()
    )


@pytest.mark.parametrize(("code", "path"), [("CARD_DECLINED", "notify"), ("FRAUD", "refund")])
def test_handler_bpmn_error_follows_the_boundary_by_code_then_catch_all(
    rt: Harness, calls: Calls, pg_db: Database, code: str, path: str
) -> None:
    calls.add("charge", raising(code))
    calls.add("work")
    iid = rt.run(charge_with_boundaries(handler="charge"))
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == [path]
    events = [e["type"] for e in rt.engine.trace(iid)]
    assert "BpmnErrorCaught" in events and "TokenFailed" not in events


def test_handler_bpmn_error_variables_are_set_for_the_boundary_path(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
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
    doc = (
        ProcessBuilder("plain")
        .start()
        .service_task("charge", handler="charge")
        .end()
        .sequence("start", "charge", "end")
        .build()
    )
    iid = rt.run(doc)
    assert rows.state(rt.engine.db, iid) == "FAILED"
    assert "CARD_DECLINED" in rt.engine.incidents()[0]["message"]


def test_external_worker_bpmn_error_is_caught(rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("work")
    iid = rt.run(charge_with_boundaries(topic="payments"))
    [task] = rt.engine.fetch_and_lock("w1", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.bpmn_error(task.id, "w1", "CARD_DECLINED", variables={"reason": "funds"})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == ["notify"]
    assert rt.engine.show(iid)["variables"]["reason"] == "funds"


def test_error_end_event_inside_a_subprocess_ends_it_and_takes_its_boundary(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    inner = (
        ProcessBuilder("inner")
        .start("s_start")
        .parallel_gateway("s_fork")
        .service_task("s_slow", topic="never_fetched")
        .end("s_fail", error="OUT_OF_STOCK")
        .end("s_end")
        .sequence("s_start", "s_fork")
        .flow("s_fork", "s_slow")
        .flow("s_fork", "s_fail")
        .flow("s_slow", "s_end")
    )
    outer = (
        ProcessBuilder("nested")
        .start()
        .sub_process("sub", inner)
        .sub_process(
            "outer_sub",
            ProcessBuilder("o").start("o_start").end("o_end").sequence("o_start", "o_end"),
        )
        .error_boundary("oos", attached_to="sub", error="OUT_OF_STOCK")
        .service_task("backorder", handler="work")
        .end("done")
        .end("backordered")
        .sequence("start", "sub", "outer_sub", "done")
        .sequence("oos", "backorder", "backordered")
        .build()
    )
    iid = rt.run(outer)
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == ["backorder"]
    tasks = {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}
    assert tasks["s_slow"] == "CANCELLED"


def test_error_end_bubbles_to_the_outer_subprocess(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    innermost = (
        ProcessBuilder("i").start("i_start").end("i_fail", error="E1").sequence("i_start", "i_fail")
    )
    middle = (
        ProcessBuilder("m")
        .start("m_start")
        .sub_process("inner", innermost)
        .end("m_end")
        .sequence("m_start", "inner", "m_end")
    )
    doc = (
        ProcessBuilder("bubble")
        .start()
        .sub_process("middle", middle)
        .error_boundary("caught", attached_to="middle", error="E1")
        .service_task("handle", handler="work")
        .end("done")
        .end("after_error")
        .sequence("start", "middle", "done")
        .sequence("caught", "handle", "after_error")
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("work") == 1


def in_a_subprocess(**task: Any) -> dict[str, Any]:
    """``charge`` (with a timer boundary of its own) inside ``middle`` inside ``outer``; only
    the subprocesses have error boundaries: by code on the inner one, catch-all outside."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .service_task("charge", **task)
        .timer_boundary("slow", attached_to="charge", duration="PT1H")
        .end("i_end")
        .end("i_late")
        .sequence("i_start", "charge", "i_end")
        .flow("slow", "i_late")
    )
    middle = (
        ProcessBuilder("m")
        .start("m_start")
        .sub_process("inner", inner)
        .error_boundary("declined", attached_to="inner", error="CARD_DECLINED")
        .end("m_end")
        .end("m_declined")
        .sequence("m_start", "inner", "m_end")
        .flow("declined", "m_declined")
    )
    return (
        ProcessBuilder("nested_throw")
        .start()
        .sub_process("middle", middle)
        .error_boundary("other", attached_to="middle", error="*")
        .service_task("handle", handler="work")
        .end("done")
        .end("after_error")
        .sequence("start", "middle", "done")
        .sequence("other", "handle", "after_error")
        .build()
    )


@pytest.mark.parametrize(("code", "handled"), [("CARD_DECLINED", 0), ("FRAUD", 1)])
def test_handler_bpmn_error_inside_subprocesses_is_caught_by_the_innermost_catching_one(
    rt: Harness, calls: Calls, pg_db: Database, code: str, handled: int
) -> None:
    """BPMN 2.0 10.5.3: an error the task itself does not catch propagates to its scope."""
    calls.add("charge", raising(code))
    calls.add("work")
    iid = rt.run(in_a_subprocess(handler="charge"))
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("work") == handled
    caught = rows.engine_events_of(pg_db, iid, type="BpmnErrorCaught")
    assert [(e["node_id"], e["data"]["thrown_at"]) for e in caught] == [
        ("declined" if handled == 0 else "other", "charge")
    ]
    assert rows.engine_events_of(pg_db, iid, type="TimerCancelled")  # charge's own timer
    assert {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}["charge"] == "DONE"
    assert not rows.incidents_of(pg_db, iid)


def test_external_worker_bpmn_error_inside_a_subprocess_takes_its_boundary(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(in_a_subprocess(topic="payments"))
    [task] = rt.engine.fetch_and_lock("w1", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.bpmn_error(
        task.id, "w1", "CARD_DECLINED", "declined by the bank", variables={"reason": "funds"}
    )
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("work") == 0
    ended = {t.node_id for t in rows.tokens_of(pg_db, iid) if t.state == "COMPLETED"}
    assert "m_declined" in ended and "i_end" not in ended
    assert rt.engine.show(iid)["variables"]["reason"] == "funds"


def test_a_caught_error_still_ends_the_subprocess_when_a_sibling_branch_moves_meanwhile(
    engine_factory: EngineFactory, calls: Calls, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catching at the subprocess cancels its other branches; one of them moving on (another
    worker completing it) between the read and the write is a race to try again, not a
    reason to drop the handler's outcome and leave its task locked. (The branches end apart:
    a branch arriving at a parallel join takes the instance's lock, which the catching
    transaction holds, so it could not commit in between; here the other engine's complete
    runs inside that transaction, in this thread.)"""
    from bpm.engine.semantics import bpmn_errors

    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .parallel_gateway("fork")
        .service_task("a", handler="a")
        .service_task("b", topic="tb")
        .end("a_end")
        .end("b_end")
        .sequence("i_start", "fork")
        .sequence("fork", "a", "a_end")
        .sequence("fork", "b", "b_end")
    )
    doc = (
        ProcessBuilder("par_sub_race")
        .start()
        .sub_process("sub", inner)
        .error_boundary("caught", attached_to="sub", error="E1")
        .service_task("handle", handler="work")
        .end("done")
        .end("after")
        .sequence("start", "sub", "done")
        .sequence("caught", "handle", "after")
        .build()
    )
    calls.add("a", raising("E1"))
    calls.add("work")
    rt, other = engine_factory(run_handlers_inline=False), engine_factory()
    rt.deploy(doc)
    iid = rt.start("par_sub_race")
    rt.drain(only=frozenset({"bpm.advance_token"}))  # a's handler job waits; b is READY
    real_end_scope, raced = bpmn_errors._end_scope, list[Any]()

    def sibling_first(*args: Any) -> None:
        if not raced:  # committed by another engine after the read, before the write
            [b] = other.engine.fetch_and_lock("w2", [TopicRequest("tb", timedelta(minutes=1))])
            other.engine.complete(b.id, "w2")
            raced.append(b.id)
        real_end_scope(*args)

    monkeypatch.setattr(bpmn_errors, "_end_scope", sibling_first)
    rt.drain()
    assert raced
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("a") == 1 and calls.count("work") == 1
    assert {t.node_id: t.state for t in rows.tasks_of(pg_db, iid)}["a"] == "DONE"


def test_a_caught_error_leaves_the_path_of_the_subprocess_non_interrupting_timer_alone(
    rt: Harness, pg_db: Database
) -> None:
    """That path starts at the subprocess's boundary and runs outside it (BPMN 10.5.4)."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .service_task("a", topic="ta")
        .end("i_end")
        .sequence("i_start", "a", "i_end")
    )
    doc = (
        ProcessBuilder("ni")
        .start()
        .sub_process("sub", inner)
        .error_boundary("caught", attached_to="sub", error="E1")
        .timer_boundary("remind_t", attached_to="sub", duration="PT1M", interrupting=False)
        .user_task("remind")
        .end("done")
        .end("after")
        .end("reminded")
        .sequence("start", "sub", "done")
        .flow("caught", "after")
        .sequence("remind_t", "remind", "reminded")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=2))
    [ta] = rt.engine.fetch_and_lock("w1", [TopicRequest("ta", timedelta(minutes=1))])
    rt.engine.bpmn_error(ta.id, "w1", "E1")
    rt.drain()
    # the boundary's path has ended and waits for the reminder path, still open
    assert sorted(t.node_id for t in rows.live_tokens(pg_db, iid)) == ["after", "remind"]
    assert rows.state(pg_db, iid) == "RUNNING"
    [review] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(review["id"])
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_a_caught_error_that_cancels_a_failed_branch_resumes_the_instance(
    rt: Harness, pg_db: Database
) -> None:
    """The failed branch's incident goes with it; an instance left FAILED with nothing to
    retry would show an operator nothing to do."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .parallel_gateway("fork")
        .service_task("a", topic="ta")
        .service_task("b", topic="tb")
        .parallel_gateway("join")
        .end("i_end")
        .sequence("i_start", "fork")
        .sequence("fork", "a", "join")
        .sequence("fork", "b", "join")
        .sequence("join", "i_end")
    )
    doc = (
        ProcessBuilder("fs")
        .start()
        .sub_process("sub", inner)
        .error_boundary("caught", attached_to="sub", error="E1")
        .user_task("review")
        .end("done")
        .end("after")
        .sequence("start", "sub", "done")
        .sequence("caught", "review", "after")
        .build()
    )
    iid = rt.run(doc)
    [tb] = rt.engine.fetch_and_lock("w2", [TopicRequest("tb", timedelta(minutes=1))])
    rt.engine.fail(tb.id, "w2", "broken", retries=0)
    assert rows.state(pg_db, iid) == "FAILED"
    [ta] = rt.engine.fetch_and_lock("w1", [TopicRequest("ta", timedelta(minutes=1))])
    rt.engine.bpmn_error(ta.id, "w1", "E1")
    rt.drain()
    assert rows.state(pg_db, iid) == "RUNNING"
    assert not rows.incidents_of(pg_db, iid, only_open=True)
    assert [t.node_id for t in rows.live_tokens(pg_db, iid)] == ["review"]
    resumed = rows.engine_events_of(pg_db, iid, type="InstanceResumed")
    assert [(e["from_state"], e["to_state"]) for e in resumed] == [("FAILED", "RUNNING")]


def test_external_worker_catch_all_boundary_catches_any_code(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("work")
    iid = rt.run(charge_with_boundaries(topic="payments"))
    [task] = rt.engine.fetch_and_lock("w1", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.bpmn_error(task.id, "w1", "SOMETHING_ELSE")
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert [c.node_id for c in calls.seen["work"]] == ["refund"]


def test_uncaught_error_end_event_fails_the_instance_with_an_incident(
    rt: Harness, pg_db: Database
) -> None:
    inner = (
        ProcessBuilder("i").start("i_start").end("i_fail", error="E1").sequence("i_start", "i_fail")
    )
    doc = (
        ProcessBuilder("uncaught_end")
        .start()
        .sub_process("sub", inner)
        .error_boundary("caught", attached_to="sub", error="OTHER")
        .end("done")
        .end("after")
        .sequence("start", "sub", "done")
        .flow("caught", "after")
        .build()
    )
    iid = rt.run(doc)
    assert rows.state(pg_db, iid) == "FAILED"
    [incident] = rows.incidents_of(pg_db, iid, only_open=True)
    assert "E1" in incident.message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attachedTo": "nowhere"}, "is not a node of its scope"),
        ({"attachedTo": "start"}, "only be attached to an activity"),
        ({"timer": {"duration": "PT1H"}}, "exactly one of 'error'"),
        ({"interrupting": False}, "always interrupting"),
        ({"error": ""}, "'error' must be the error code"),
    ],
)
def test_bad_boundaries_are_refused_naming_the_boundary(
    change: dict[str, Any], message: str
) -> None:
    doc = charge_with_boundaries(handler="charge")
    node = next(n for n in doc["nodes"] if n["id"] == "declined")
    node.update(change)
    with pytest.raises(InvalidDefinition, match=message) as caught:
        compile_definition(doc)
    assert caught.value.element == "declined"
