"""Conditional events (Camunda 7 semantics): evaluated when the subscription begins (already
true: the catch passes, a boundary or event subprocess start fires) and again on every
variable change of the instance that passes ``variableName`` and ``variableEvents``; a
non-interrupting boundary fires on each true evaluation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.errors import InvalidDefinition
from bpm.states import InstanceState, TokenState, WaitKind
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


def catch(**condition: Any) -> dict[str, Any]:
    return (
        ProcessBuilder("cond")
        .start()
        .conditional_event("wait", condition="${x > 1}", **condition)
        .service_task("after", handler="after")
        .end()
        .sequence("start", "wait", "after", "end")
        .build()
    )


@pytest.fixture
def after(calls: Calls) -> Calls:
    for name in ("after", "flagged", "ship"):
        calls.add(name)
    return calls


def _waiting(rt: Harness, iid: Any) -> list[dict[str, Any]]:
    return rt.engine.event_subscriptions(iid)


def test_a_catch_waits_then_passes_when_the_api_sets_the_variable(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(catch(), {"x": 0})
    [tok] = [t for t in rows.tokens_of(pg_db, iid) if t.state == TokenState.WAITING]
    assert tok.wait_kind == WaitKind.CONDITION and tok.node_id == "wait"
    [sub] = _waiting(rt, iid)
    assert sub["event_type"] == "conditional" and sub["node_id"] == "wait"
    rt.engine.set_variables(iid, {"x": 1})  # still false
    rt.drain()
    assert after.count("after") == 0
    rt.engine.set_variables(iid, {"x": 2})
    rt.drain()
    assert after.count("after") == 1
    assert _waiting(rt, iid) == []
    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)


def test_an_already_true_condition_passes_at_once(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(catch(), {"x": 5})
    assert after.count("after") == 1
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED


def test_a_catch_passes_when_a_task_completion_sets_the_variable(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    inner = (
        ProcessBuilder("p")
        .start()
        .parallel_gateway("fork")
        .user_task("review")
        .conditional_event("wait", condition="${approved == true}")
        .service_task("after", handler="after")
        .parallel_gateway("join")
        .end()
        .sequence("start", "fork", "review", "join")
        .sequence("fork", "wait", "after", "join", "end")
        .build()
    )
    iid = rt.run(inner, {"approved": False})
    assert after.count("after") == 0
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {"approved": True})
    rt.drain()
    assert after.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_variable_name_and_events_filter_the_changes(rt: Harness, after: Calls) -> None:
    iid = rt.run(catch(variable_name="x", variable_events=["update"]), {"x": 0, "y": 0})
    rt.engine.set_variables(iid, {"y": 9})  # another variable: not evaluated
    rt.drain()
    assert after.count("after") == 0
    # x deleted then created true: a create, which the filter does not let through
    rt.engine.set_variables(iid, None, ["x"])
    rt.engine.set_variables(iid, {"x": 3})
    rt.drain()
    assert after.count("after") == 0
    rt.engine.set_variables(iid, {"x": 4})  # an update of x
    rt.drain()
    assert after.count("after") == 1


def test_a_delete_filter_passes_on_the_deletion_only(rt: Harness, after: Calls) -> None:
    doc = (
        ProcessBuilder("gone")
        .start()
        .conditional_event(
            "wait",
            condition='${execution.getVariable("lock") == null}',
            variable_events=["delete"],
        )
        .service_task("after", handler="after")
        .end()
        .sequence("start", "wait", "after", "end")
        .build()
    )
    iid = rt.run(doc, {"lock": 1})
    rt.engine.set_variables(iid, {"lock": None})  # null, but an update: not evaluated
    rt.drain()
    assert after.count("after") == 0
    rt.engine.set_variables(iid, None, ["lock"])
    rt.drain()
    assert after.count("after") == 1


def test_an_output_mapping_passes_a_catch_in_another_branch(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    inner = ProcessBuilder("i").start("s0").user_task("s_task").end("s1")
    doc = (
        ProcessBuilder("mapped")
        .start()
        .parallel_gateway("fork")
        .sub_process("sub", inner.sequence("s0", "s_task", "s1"))
        .mappings("sub", inputs={"local_x": 0}, outputs={"x": "${local_x + 5}"})
        .conditional_event("wait", condition="${x > 1}")
        .service_task("after", handler="after")
        .parallel_gateway("join")
        .end()
        .sequence("start", "fork", "sub", "join")
        .sequence("fork", "wait", "after", "join", "end")
        .build()
    )
    iid = rt.run(doc, {"x": 0})
    assert after.count("after") == 0
    rt.complete_user_task(iid)  # sets nothing itself: the subprocess's output mapping does
    assert after.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_an_unevaluable_condition_fails_the_catch_with_an_incident(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(catch())  # x is missing
    assert rows.state(pg_db, iid) == InstanceState.FAILED
    [incident] = rows.incidents_of(pg_db, iid)
    assert incident.kind == "condition" and "'x'" in incident.message
    rt.engine.set_variables(iid, {"x": 5})  # a failed token holds no subscription
    rt.drain()
    assert after.count("after") == 0
    assert incident.token_id is not None
    rt.engine.retry(incident.token_id)  # the operator's retry evaluates it again
    rt.drain()
    assert after.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def work(*, interrupting: bool, host: str = "user") -> dict[str, Any]:
    b = ProcessBuilder("order").start()
    if host == "user":
        b.user_task("work")
    elif host == "subprocess":
        inner = ProcessBuilder("i").start("s0").user_task("s_task").end("s1")
        b.sub_process("work", inner.sequence("s0", "s_task", "s1"))
    elif host == "multi":
        b.user_task("work", multi_instance={"cardinality": 2})
    elif host == "call":
        b.call_activity("work", process="child")
    b.conditional_boundary(
        "flag", attached_to="work", condition="${risk > 5}", interrupting=interrupting
    )
    b.service_task("flagged", handler="flagged").end("flag_end")
    b.service_task("ship", handler="ship").end()
    return (
        b.sequence("start", "work", "ship", "end").sequence("flag", "flagged", "flag_end").build()
    )


CHILD = ProcessBuilder("child").start().user_task("t").end().sequence("start", "t", "end").build()


@pytest.mark.parametrize("host", ["user", "subprocess", "multi", "call"])
def test_an_interrupting_boundary_fires_on_a_change(
    rt: Harness, after: Calls, pg_db: Database, host: str
) -> None:
    rt.deploy(CHILD)
    iid = rt.run(work(interrupting=True, host=host), {"risk": 0})
    assert [s["node_id"] for s in _waiting(rt, iid)] == ["flag"]
    [shown] = rt.engine.show(iid)["subscriptions"]
    assert shown["boundary"] == "flag" and shown["condition"] == "${risk > 5}"
    rt.engine.set_variables(iid, {"risk": 9})
    rt.drain()
    assert after.count("flagged") == 1 and after.count("ship") == 0
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)


@pytest.mark.parametrize("host", ["user", "subprocess", "multi", "call"])
def test_an_interrupting_boundary_already_true_fires_as_the_activity_begins(
    rt: Harness, after: Calls, pg_db: Database, host: str
) -> None:
    rt.deploy(CHILD)
    iid = rt.run(work(interrupting=True, host=host), {"risk": 7})
    assert rt.engine.show(iid)["called"] == []
    assert after.count("flagged") == 1
    assert rt.engine.user_tasks(instance_id=iid) == []
    assert_finished_cleanly(pg_db, iid)


def test_a_non_interrupting_boundary_fires_on_each_true_evaluation(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(work(interrupting=False), {"risk": 9})  # true as it begins: once
    assert after.count("flagged") == 1
    rt.engine.set_variables(iid, {"risk": 10})
    rt.drain()
    rt.engine.set_variables(iid, {"risk": 1})  # false: nothing
    rt.drain()
    rt.engine.set_variables(iid, {"other": 1})  # any variable re-evaluates: true again
    rt.engine.set_variables(iid, {"risk": 1})
    rt.drain()
    assert after.count("flagged") == 2
    rt.complete_user_task(iid)
    assert after.count("ship") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_boundary_condition_that_fails_on_a_change_opens_an_incident(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(work(interrupting=True), {"risk": 0})
    rt.engine.set_variables(iid, {"risk": "high"})  # "high" > 5: not comparable
    rt.drain()
    [incident] = rows.incidents_of(pg_db, iid)
    assert incident.kind == "condition" and "'flag'" in incident.message
    assert len(rt.engine.user_tasks(instance_id=iid)) == 1  # the activity goes on


def esp(*, interrupting: bool) -> dict[str, Any]:
    body = (
        ProcessBuilder("e")
        .trigger_start("e0", condition="${alarm == true}", interrupting=interrupting)
        .service_task("flagged", handler="flagged")
        .end("e1")
        .sequence("e0", "flagged", "e1")
    )
    return (
        ProcessBuilder("esp")
        .start()
        .user_task("work")
        .service_task("ship", handler="ship")
        .end()
        .event_sub_process("watch", body)
        .sequence("start", "work", "ship", "end")
        .build()
    )


@pytest.mark.parametrize("interrupting", [True, False])
def test_an_event_subprocess_starts_when_its_condition_comes_true(
    rt: Harness, after: Calls, pg_db: Database, interrupting: bool
) -> None:
    iid = rt.run(esp(interrupting=interrupting), {"alarm": False})
    assert [s["node_id"] for s in _waiting(rt, iid)] == ["e0"]
    rt.engine.set_variables(iid, {"alarm": True})
    rt.drain()
    assert after.count("flagged") == 1
    if interrupting:
        assert rt.engine.user_tasks(instance_id=iid) == []
    else:
        rt.engine.set_variables(iid, {"alarm": True})  # true again: starts again
        rt.drain()
        assert after.count("flagged") == 2
        rt.complete_user_task(iid)
        assert after.count("ship") == 1
    assert_finished_cleanly(pg_db, iid)
    assert_history_consistent(pg_db, iid)


def test_an_interrupting_event_subprocess_already_true_starts_at_once(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(esp(interrupting=True), {"alarm": True})
    assert after.count("flagged") == 1 and after.count("ship") == 0
    assert_finished_cleanly(pg_db, iid)


def gateway() -> dict[str, Any]:
    return (
        ProcessBuilder("gw")
        .start()
        ._node("g", "eventBasedGateway")
        .conditional_event("ready", condition="${ready == true}")
        .timer("late", duration="PT1H")
        .service_task("after", handler="after")
        .service_task("ship", handler="ship")
        .end()
        .end("late_end")
        .sequence("start", "g", "ready", "after", "end")
        .sequence("g", "late", "ship", "late_end")
        .build()
    )


def test_an_event_gateway_condition_wins_over_its_timer(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(gateway(), {"ready": False})
    assert [s["node_id"] for s in _waiting(rt, iid)] == ["ready"]
    rt.engine.set_variables(iid, {"ready": True})
    rt.drain()
    assert after.count("after") == 1 and after.count("ship") == 0
    assert_finished_cleanly(pg_db, iid)


def test_an_event_gateway_timer_wins_over_a_false_condition(
    rt: Harness, after: Calls, pg_db: Database
) -> None:
    iid = rt.run(gateway(), {"ready": False})
    rt.pass_time(timedelta(hours=2))
    assert after.count("ship") == 1 and after.count("after") == 0
    assert rows.state(pg_db, iid) == InstanceState.COMPLETED
    assert_finished_cleanly(pg_db, iid)


def test_an_event_gateway_with_a_true_condition_passes_at_once(rt: Harness, after: Calls) -> None:
    rt.run(gateway(), {"ready": True})
    assert after.count("after") == 1


def test_a_condition_that_does_not_parse_is_refused_at_deploy(rt: Harness) -> None:
    with pytest.raises(InvalidDefinition, match="'wait'"):
        rt.engine.deploy(_bad())


def _bad() -> dict[str, Any]:
    doc = catch()
    for node in doc["nodes"]:
        if node["id"] == "wait":
            node["condition"] = "${x >}"
    return doc
