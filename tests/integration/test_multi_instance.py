"""Multi-instance activities on PostgreSQL, as Camunda 7 runs them: parallel and sequential,
by cardinality or collection, Camunda's counters and loop variables, the completion condition
cancelling what still runs, output collections, every kind of activity, boundary events on
the whole activity, bad input as incidents, and history that rebuilds every instance."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm import BpmnError
from bpm.definitions import ProcessBuilder
from bpm.definitions.parse import compile_definition
from bpm.engine.operations.external import TopicRequest
from bpm.engine.operations.history_views import VisitQuery
from bpm.errors import InvalidDefinition
from bpm.store import Database, variables
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.runtime import Calls, Harness


def around(activity: ProcessBuilder, node: str = "mi") -> dict[str, Any]:
    """``start -> node -> after -> end`` where ``activity`` already holds ``node``."""
    return (
        activity.service_task("after", handler="after")
        .end()
        .sequence("start", node, "after", "end")
        .build()
    )


def service(mi: dict[str, Any], handler: str = "work") -> dict[str, Any]:
    return around(
        ProcessBuilder("p").start().service_task("mi", handler=handler, multi_instance=mi)
    )


def user(mi: dict[str, Any]) -> dict[str, Any]:
    return around(ProcessBuilder("p").start().user_task("mi", multi_instance=mi))


@pytest.fixture
def seen(calls: Calls) -> Calls:
    calls.add("work", lambda ctx: {"last": ctx.variables.get("loopCounter")})
    calls.add("after")
    return calls


def instance_vars(db: Database, iid: UUID) -> dict[str, Any]:
    with db.transaction() as conn:
        return variables.load(conn, iid)


def open_tasks(rt: Harness, iid: UUID) -> list[dict[str, Any]]:
    return rt.engine.user_tasks(instance_id=iid)


def test_parallel_cardinality_runs_every_iteration_with_camundas_variables(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(service({"cardinality": "${n}"}))
    iid = rt.start("p", {"n": 4})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    views = seen.seen["work"]
    assert sorted(ctx.variables["loopCounter"] for ctx in views) == [0, 1, 2, 3]
    assert {ctx.variables["nrOfInstances"] for ctx in views} == {4}
    assert seen.count("after") == 1
    after = seen.seen["after"][0].variables
    assert "loopCounter" not in after and "nrOfInstances" not in after


def test_sequential_collection_runs_one_after_another_in_order(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    order: list[tuple[Any, Any, Any, Any]] = []

    def work(ctx: Any) -> None:
        v = ctx.variables
        order.append(
            (v["loopCounter"], v["item"], v["nrOfActiveInstances"], v["nrOfCompletedInstances"])
        )

    calls.add("work", work)
    rt.deploy(service({"sequential": True, "collection": "items", "elementVariable": "item"}))
    iid = rt.start("p", {"items": ["a", "b", "c"]})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert order == [(0, "a", 1, 0), (1, "b", 1, 1), (2, "c", 1, 2)]


def test_user_tasks_in_parallel_see_their_own_loop_counter(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    rt.deploy(user({"collection": "${people}", "elementVariable": "person"}))
    iid = rt.start("p", {"people": ["ann", "bob", "cy"]})
    rt.drain()
    tasks = open_tasks(rt, iid)
    assert len(tasks) == 3
    seen = sorted(
        (
            rt.engine.user_task_variables(t["id"])["loopCounter"],
            rt.engine.user_task_variables(t["id"])["person"],
        )
        for t in tasks
    )
    assert seen == [(0, "ann"), (1, "bob"), (2, "cy")]
    view = rt.engine.user_task_variables(tasks[0]["id"])
    assert view["nrOfInstances"] == 3 and view["nrOfActiveInstances"] == 3
    for task in tasks:
        rt.engine.complete_user_task(task["id"])
        rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert calls.count("after") == 1


def test_the_completion_condition_cancels_the_rest_and_history_shows_them_cancelled(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    rt.deploy(user({"cardinality": 5, "completionCondition": "${nrOfCompletedInstances >= 2}"}))
    iid = rt.start("p")
    rt.drain()
    tasks = open_tasks(rt, iid)
    assert len(tasks) == 5
    rt.engine.complete_user_task(tasks[0]["id"])
    rt.drain()
    assert len(open_tasks(rt, iid)) == 4
    rt.engine.complete_user_task(tasks[1]["id"])
    rt.drain()
    assert open_tasks(rt, iid) == []
    assert_finished_cleanly(pg_db, iid)
    cancelled = rows.token_events_of(pg_db, iid, type="CANCELLED")
    assert len(cancelled) == 3 and all(e["node_id"] == "mi" for e in cancelled)
    assert "completion condition" in cancelled[0]["data"]["reason"]
    assert len([t for t in rows.tasks_of(pg_db, iid, "mi") if t.state == "CANCELLED"]) == 3


def test_the_completion_condition_sees_the_iterations_own_variables(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(
        service(
            {
                "sequential": True,
                "collection": "items",
                "elementVariable": "item",
                "completionCondition": "${item == 'stop'}",
            }
        )
    )
    iid = rt.start("p", {"items": ["go", "stop", "never"]})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert seen.count("work") == 2


def test_camundas_output_pattern_and_zeebes_output_collection(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("work", lambda ctx: {"doubled": ctx.variables["item"] * 2})
    doc = service(
        {
            "collection": "items",
            "elementVariable": "item",
            "outputCollection": "results",
            "outputElement": "${doubled}",
        }
    )
    doc["nodes"][1]["outputs"] = {"seen": "${seen + [item]}"}
    rt.deploy(doc)
    iid = rt.start("p", {"items": [1, 2, 3], "seen": []})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    values = instance_vars(pg_db, iid)
    assert values["results"] == [2, 4, 6]
    assert sorted(values["seen"]) == [1, 2, 3]


def test_zero_iterations_complete_the_activity_at_once(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(service({"collection": "items", "outputCollection": "out", "outputElement": "${x}"}))
    iid = rt.start("p", {"items": []})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert seen.count("work") == 0 and seen.count("after") == 1
    assert instance_vars(pg_db, iid)["out"] == []


@pytest.mark.parametrize(
    ("mi", "values", "expected"),
    [
        ({"collection": "items"}, {"items": "abc"}, "not a list"),
        ({"collection": "items"}, {}, "is not set"),
        ({"cardinality": "${n}"}, {"n": -1}, "not a whole number"),
        ({"cardinality": "${n}"}, {"n": 1.5}, "not a whole number"),
        ({"cardinality": "${n}"}, {"n": 1001}, "the limit is 1000"),
    ],
)
def test_bad_input_is_an_incident_naming_the_activity(
    rt: Harness,
    seen: Calls,
    pg_db: Database,
    mi: dict[str, Any],
    values: dict[str, Any],
    expected: str,
) -> None:
    rt.deploy(service(mi))
    iid = rt.start("p", values)
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert "'mi'" in incident.message and expected in incident.message
    assert incident.kind == "multi-instance"
    assert rows.state(pg_db, iid) == "FAILED"
    assert seen.count("work") == 0
    assert_history_consistent(pg_db, iid)


def test_the_cap_comes_from_the_environment(
    rt: Harness, seen: Calls, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPM_MULTI_INSTANCE_MAX", "3")
    rt.deploy(service({"cardinality": 4}))
    iid = rt.start("p")
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert "would run 4 iterations; the limit is 3" in incident.message


def test_a_subprocess_runs_once_per_element_with_its_own_scope(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    got: list[tuple[Any, Any]] = []
    calls.add("inner", lambda ctx: got.append((ctx.variables["loopCounter"], ctx.variables["x"])))
    body = ProcessBuilder("ignored").start("s").service_task("inner", handler="inner").end("e")
    body.sequence("s", "inner", "e")
    doc = around(
        ProcessBuilder("p")
        .start()
        .sub_process("mi", body, multi_instance={"collection": "xs", "elementVariable": "x"})
    )
    rt.deploy(doc)
    iid = rt.start("p", {"xs": [10, 20]})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert sorted(got) == [(0, 10), (1, 20)]


def test_a_call_activity_starts_one_instance_per_iteration(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("double", lambda ctx: {"doubled": ctx.variables["n"] * 2})
    child = (
        ProcessBuilder("child")
        .start()
        .service_task("work", handler="double")
        .end()
        .sequence("start", "work", "end")
        .build()
    )
    rt.deploy(child)
    rt.deploy(
        around(
            ProcessBuilder("p")
            .start()
            .call_activity(
                "mi",
                process="child",
                inputs=[{"source": "item", "target": "n"}],
                outputs=[{"source": "doubled", "target": "d"}],
                multi_instance={
                    "collection": "items",
                    "elementVariable": "item",
                    "outputCollection": "all",
                    "outputElement": "${d}",
                },
            )
        )
    )
    iid = rt.start("p", {"items": [1, 2, 3]})
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert instance_vars(pg_db, iid)["all"] == [2, 4, 6]
    assert calls.count("double") == 3


def test_a_boundary_timer_sits_on_the_whole_activity(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("late")
    doc = (
        ProcessBuilder("p")
        .start()
        .user_task("mi", multi_instance={"cardinality": 3})
        .timer_boundary("too_long", attached_to="mi", duration="PT1H")
        .service_task("late", handler="late")
        .end()
        .end("e2")
        .sequence("start", "mi", "end")
        .sequence("too_long", "late", "e2")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("p")
    rt.drain()
    timers = [e for e in rows.engine_events_of(pg_db, iid) if e["type"] == "TimerScheduled"]
    assert len(timers) == 1
    rt.engine.complete_user_task(open_tasks(rt, iid)[0]["id"])
    rt.drain()
    rt.pass_time(timedelta(hours=2))
    assert calls.count("late") == 1
    assert open_tasks(rt, iid) == []
    assert_finished_cleanly(pg_db, iid)


def test_an_error_thrown_by_an_iteration_is_caught_on_the_activity(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("handle")
    doc = (
        ProcessBuilder("p")
        .start()
        .service_task("mi", topic="charge", multi_instance={"cardinality": 3})
        .error_boundary("failed", attached_to="mi", error="NO_FUNDS")
        .service_task("handle", handler="handle")
        .end()
        .end("e2")
        .sequence("start", "mi", "end")
        .sequence("failed", "handle", "e2")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("p")
    rt.drain()
    tasks = rt.engine.fetch_and_lock("w", [TopicRequest("charge", timedelta(minutes=5))], 10)
    assert len(tasks) == 3
    rt.engine.complete(tasks[0].id, "w")
    rt.engine.bpmn_error(tasks[1].id, "w", "NO_FUNDS")
    rt.drain()
    assert calls.count("handle") == 1
    assert_finished_cleanly(pg_db, iid)
    assert rows.task(pg_db, tasks[2].id).state == "CANCELLED"


def test_replay_rebuilds_a_finished_and_a_running_instance(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    rt.deploy(user({"sequential": True, "cardinality": 3}))
    iid = rt.start("p")
    rt.drain()
    rt.complete_user_task(iid)
    assert_history_consistent(pg_db, iid)
    rt.complete_user_task(iid)
    rt.complete_user_task(iid)
    assert_finished_cleanly(pg_db, iid)


@pytest.mark.parametrize(
    ("mi", "expected"),
    [
        ({}, "exactly one of 'cardinality' and 'collection'"),
        ({"cardinality": 2, "collection": "x"}, "exactly one of"),
        ({"cardinality": -2}, "must not be negative"),
        ({"cardinality": 2, "elementVariable": "x"}, "needs a 'collection'"),
        ({"collection": "x", "outputCollection": "y"}, "go together"),
        ({"collection": "x", "bogus": 1}, "unknown keys"),
        ({"cardinality": "${1 +}"}, "cardinality"),
    ],
)
def test_a_bad_marker_is_refused_at_deploy_naming_the_node(
    mi: dict[str, Any], expected: str
) -> None:
    with pytest.raises(InvalidDefinition) as err:
        compile_definition(service(mi))
    assert expected in str(err.value) and "'mi'" in str(err.value)


def test_the_diagram_shows_the_marker_and_the_iterations(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("work")
    doc = (
        ProcessBuilder("p")
        .start()
        .service_task("mi", handler="work", multi_instance={"cardinality": 3})
        .user_task("seq", multi_instance={"sequential": True, "cardinality": 2})
        .service_task("after", handler="after")
        .end()
        .sequence("start", "mi", "seq", "after", "end")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("p")
    rt.drain()
    mermaid = rt.engine.diagram(iid)
    assert 'n_mi("mi<br/>|||<br/>1x, 3 runs, 3 iterations")' in mermaid
    assert 'n_seq("seq<br/>≡<br/>1x, 1 iterations")' in mermaid
    svg = rt.engine.diagram(iid, fmt="svg")
    assert svg.count('class="mi"') == 6


def test_a_bad_collection_fixed_by_an_operator_runs_on_retry(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(service({"collection": "items"}))
    iid = rt.start("p", {"items": "oops"})
    rt.drain()
    (failed,) = [t for t in rows.tokens_of(pg_db, iid) if t.state == "FAILED"]
    rt.engine.set_variables(iid, {"items": [1, 2]})
    rt.engine.retry(failed.id)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert seen.count("work") == 2


def test_an_error_end_event_in_an_iteration_leaves_the_whole_subprocess(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("handle")
    body = ProcessBuilder("ignored").start("s").exclusive_gateway("g", default="ok")
    body.user_task("wait").end("e").end("bad", error="BAD")
    body.flow("s", "g").flow("g", "bad", condition="${x == 2}").flow("g", "wait", flow_id="ok")
    body.flow("wait", "e")
    doc = (
        ProcessBuilder("p")
        .start()
        .sub_process("mi", body, multi_instance={"collection": "xs", "elementVariable": "x"})
        .error_boundary("caught", attached_to="mi", error="BAD")
        .service_task("handle", handler="handle")
        .end()
        .end("e2")
        .sequence("start", "mi", "end")
        .sequence("caught", "handle", "e2")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("p", {"xs": [1, 2, 3]})
    rt.drain()
    assert calls.count("handle") == 1
    assert open_tasks(rt, iid) == []
    assert_finished_cleanly(pg_db, iid)


def test_a_terminate_end_event_ends_only_its_iteration(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    body = ProcessBuilder("ignored").start("s").parallel_gateway("fork")
    body.user_task("wait").end("e").end("stop", terminate=True)
    body.flow("s", "fork").flow("fork", "wait").flow("fork", "stop").flow("wait", "e")
    rt.deploy(
        around(
            ProcessBuilder("p").start().sub_process("mi", body, multi_instance={"cardinality": 3})
        )
    )
    iid = rt.start("p")
    rt.drain()
    assert open_tasks(rt, iid) == []
    assert calls.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_non_interrupting_timer_on_the_body_runs_beside_the_iterations(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    calls.add("remind")
    doc = (
        ProcessBuilder("p")
        .start()
        .user_task("mi", multi_instance={"cardinality": 2})
        .timer_boundary("nudge", attached_to="mi", duration="PT1H", interrupting=False)
        .service_task("remind", handler="remind")
        .service_task("after", handler="after")
        .end()
        .end("e2")
        .sequence("start", "mi", "after", "end")
        .sequence("nudge", "remind", "e2")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("p")
    rt.drain()
    rt.pass_time(timedelta(hours=2))
    assert calls.count("remind") == 1
    assert len(open_tasks(rt, iid)) == 2
    for task in open_tasks(rt, iid):
        rt.engine.complete_user_task(task["id"])
        rt.drain()
    assert calls.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_a_receive_task_and_a_nested_multi_instance_see_their_own_scopes(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    got: list[tuple[Any, Any]] = []
    calls.add("inner", lambda ctx: got.append((ctx.variables["row"], ctx.variables["col"])))
    body = ProcessBuilder("ignored").start("s")
    body.service_task(
        "inner", handler="inner", multi_instance={"collection": "cols", "elementVariable": "col"}
    )
    body.receive_task("wait", message="go", multi_instance={"cardinality": 1}).end("e")
    body.sequence("s", "inner", "wait", "e")
    rt.deploy(
        around(
            ProcessBuilder("p")
            .start()
            .sub_process(
                "mi", body, multi_instance={"collection": "rows", "elementVariable": "row"}
            )
        )
    )
    iid = rt.start("p", {"rows": ["a", "b"], "cols": [1, 2]})
    rt.drain()
    assert sorted(got) == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    rt.engine.correlate("go", instance_id=iid, all_waiting=True)
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_a_sequential_call_activity_cancelled_by_a_timer_cancels_the_called_instance(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("late")
    child = ProcessBuilder("child").start().user_task("approve").end()
    rt.deploy(child.sequence("start", "approve", "end").build())
    doc = (
        ProcessBuilder("p")
        .start()
        .call_activity("mi", process="child", multi_instance={"sequential": True, "cardinality": 3})
        .timer_boundary("too_long", attached_to="mi", duration="PT1H")
        .service_task("late", handler="late")
        .end()
        .end("e2")
        .sequence("start", "mi", "end")
        .sequence("too_long", "late", "e2")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("p")
    rt.drain()
    [task] = rt.engine.user_tasks()
    rt.engine.complete_user_task(task["id"])
    rt.drain()
    rt.pass_time(timedelta(hours=2))
    assert calls.count("late") == 1
    assert_finished_cleanly(pg_db, iid)
    states = sorted(i["state"] for i in rt.engine.find_instances(limit=10) if i["key"] == "child")
    assert states == ["CANCELLED", "COMPLETED"]


def test_every_job_delivered_twice_runs_each_iteration_once(
    rt: Harness, seen: Calls, pg_db: Database
) -> None:
    rt.deploy(user({"cardinality": 3}))
    iid = rt.start("p")
    for _ in range(10):  # every queued job goes out twice, as a redelivery would
        jobs = rt.queued()
        if not jobs:
            break
        rt.queue.dispatch(jobs + jobs)
        rt.drain()
    tasks = open_tasks(rt, iid)
    assert len(tasks) == 3
    for task in tasks:
        rt.engine.complete_user_task(task["id"])
    for _ in range(10):
        jobs = rt.queued()
        if not jobs:
            break
        rt.queue.dispatch(jobs + jobs)
        rt.drain()
    assert seen.count("after") == 1
    assert len(rows.tasks_of(pg_db, iid, "mi")) == 3
    assert_finished_cleanly(pg_db, iid)


def test_history_shows_the_body_and_each_iteration_as_camunda_does(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    rt.deploy(user({"cardinality": 3, "completionCondition": "${nrOfCompletedInstances == 1}"}))
    iid = rt.start("p")
    rt.drain()
    rt.engine.complete_user_task(open_tasks(rt, iid)[0]["id"])
    rt.drain()
    visits = rt.engine.find_visits(VisitQuery(instance_id=iid))
    at_mi = [(v.node_id, v.type, v.canceled) for v in visits if v.node_id.startswith("mi")]
    assert at_mi[0] == ("mi#multiInstanceBody", "multiInstanceBody", False)
    assert sorted(at_mi[1:]) == [
        ("mi", "userTask", False),
        ("mi", "userTask", True),
        ("mi", "userTask", True),
    ]
    assert all(v.ended_at is not None for v in visits)


def test_a_multi_instance_task_is_compensated_iteration_by_iteration_latest_first(
    rt: Harness, calls: Calls
) -> None:
    undone: list[Any] = []
    calls.add("work")
    calls.add("after")
    calls.add("undo", lambda ctx: undone.append(ctx.variables.get("loopCounter")))
    doc = service({"cardinality": 3, "sequential": True})
    doc["nodes"][1]["compensation"] = {"handler": "undo"}
    doc["nodes"].insert(2, {"id": "undo_all", "type": "compensationThrow"})
    doc["flows"][1]["target"] = "undo_all"
    doc["flows"].append({"id": "undo_after", "source": "undo_all", "target": "after"})
    iid = rt.run(doc)
    assert rows.state(rt.engine.db, iid) == "COMPLETED"
    records = rows.compensation_records(rt.engine.db, iid)
    assert [(r.node_id, r.status) for r in records] == [("mi", "COMPLETED")] * 3
    assert len(undone) == 3
    assert_history_consistent(rt.engine.db, iid)


def test_compensation_and_multi_instance_subprocesses_do_not_mix_at_deploy() -> None:
    body = ProcessBuilder("b").start("s").end("e").sequence("s", "e")
    doc = around(
        ProcessBuilder("p").start().sub_process("mi", body, multi_instance={"cardinality": 2})
    )
    doc["nodes"][1]["compensation"] = {"handler": "undo"}
    with pytest.raises(InvalidDefinition, match="cannot declare a compensation"):
        compile_definition(doc)
    doc = service({"cardinality": 2})
    del doc["nodes"][1]["multiInstance"]
    doc["nodes"][1]["compensation"] = {"node": "undo"}
    doc["nodes"].append(
        {"id": "undo", "type": "serviceTask", "handler": "u", "multiInstance": {"cardinality": 2}}
    )
    with pytest.raises(InvalidDefinition, match="or be multi-instance"):
        compile_definition(doc)


def test_a_completion_condition_that_fails_is_an_incident_and_a_retry_ends_the_iteration(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add("after")
    rt.deploy(user({"cardinality": 2, "completionCondition": "${limit > nrOfCompletedInstances}"}))
    iid = rt.start("p")
    rt.drain()
    rt.engine.complete_user_task(open_tasks(rt, iid)[0]["id"])
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert incident.kind == "multi-instance" and "'mi'" in incident.message
    (failed,) = [t for t in rows.tokens_of(pg_db, iid) if t.state == "FAILED"]
    rt.engine.set_variables(iid, {"limit": 5})
    rt.engine.retry(failed.id)
    rt.drain()
    assert open_tasks(rt, iid) == []  # 5 > 1: the other iteration is cancelled
    assert calls.count("after") == 1
    assert_finished_cleanly(pg_db, iid)


def test_an_error_event_subprocess_inside_an_iteration_handles_that_iteration_only(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    def charge(ctx: Any) -> None:
        if ctx.variables["x"] == 2:
            raise BpmnError("DECLINED", "no")

    calls.add("charge", charge)
    calls.add("work")
    esp = (
        ProcessBuilder("esp")
        .trigger_start("esp_start", error="DECLINED")
        .service_task("on_event", handler="work")
        .end("esp_end")
        .sequence("esp_start", "on_event", "esp_end")
    )
    body = (
        ProcessBuilder("b")
        .start("s")
        .service_task("charge", handler="charge")
        .end("e")
        .sequence("s", "charge", "e")
        .event_sub_process("esp", esp)
    )
    rt.deploy(
        ProcessBuilder("p")
        .start()
        .sub_process("mi", body, multi_instance={"collection": "xs", "elementVariable": "x"})
        .service_task("after", handler="work")
        .end()
        .sequence("start", "mi", "after", "end")
        .build()
    )
    iid = rt.start("p", {"xs": [1, 2, 3]})
    rt.drain()
    ran = [c.node_id for c in calls.seen["work"]]
    assert ran.count("on_event") == 1 and ran.count("after") == 1
    assert calls.count("charge") == 3
    assert_finished_cleanly(pg_db, iid)
