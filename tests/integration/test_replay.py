"""Replay: history alone rebuilds every instance's runtime rows.

Every test in this suite that calls ``assert_history_consistent`` also runs the replay check;
these tests cover what that cannot: a planted difference is found and named, ``as_of`` at a
mid-point equals what ``show`` said then, and a mixed population checks clean as a whole.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import update

from bpm.definitions import ProcessBuilder
from bpm.engine.operations import replay
from bpm.engine.operations.external import TopicRequest
from bpm.store import schema
from tests.helpers.clock import FakeClock
from tests.helpers.runtime import Calls, Harness, failing

MIXED = (
    ProcessBuilder("mixed")
    .start()
    .parallel_gateway("fork")
    .service_task("flaky", handler="flaky", retry={"max_attempts": 3, "backoff": "PT1S"})
    .service_task("remote", topic="remote")
    .parallel_gateway("join")
    .user_task("review")
    .timer_boundary("late", attached_to="review", duration="PT1H")
    .timer("pause", duration="PT10M")
    .receive_task("await", message="go")
    .end()
    .end("late_end")
    .sequence("start", "fork", "flaky", "join")
    .sequence("fork", "remote", "join")
    .sequence("join", "review", "pause", "await", "end")
    .sequence("late", "late_end")
    .build()
)


def drive_partway(rt: Harness, calls: Calls, clock: FakeClock) -> Any:
    calls.add("flaky", failing(1, then={"price": 12}))
    iid = rt.run(MIXED, {"order": "o-1"})
    (task,) = rt.engine.fetch_and_lock("w", [TopicRequest("remote", timedelta(minutes=5))])
    rt.engine.complete(task.id, "w", {"remote_ok": True})
    rt.drain()
    return iid


def show_state(view: dict[str, Any]) -> dict[str, Any]:
    """The parts of ``show`` that replay rebuilds, keyed by id."""
    return {
        "state": view["state"],
        "tokens": {t["id"]: (t["node_id"], t["state"]) for t in view["tokens"]},
        "tasks": {t["id"]: (t["node_id"], t["state"]) for t in view["tasks"]},
        "timers": {t["id"]: (t["node_id"], t["state"]) for t in view["timers"]},
        "variables": view["variables"],
        "incidents": {i["id"]: i["state"] for i in view["incidents"]},
    }


def rebuilt_state(state: replay.State) -> dict[str, Any]:
    return {
        "state": state.instance["state"],
        "tokens": {k: (v["node_id"], v["state"]) for k, v in state.tokens.items()},
        "tasks": {k: (v["node_id"], v["state"]) for k, v in state.tasks.items()},
        "timers": {k: (v["node_id"], v["state"]) for k, v in state.timers.items()},
        "variables": state.variables,
        "incidents": {k: v["state"] for k, v in state.incidents.items()},
    }


def test_as_of_a_mid_point_is_what_show_said_then(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    iid = drive_partway(rt, calls, clock)
    then = rt.engine.show(iid)
    last_event = rt.engine.trace(iid)[-1]["id"]
    (review,) = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(review["id"], {"approved": True})
    rt.drain()
    clock.advance(timedelta(minutes=10))
    rt.engine.fire_due_timers()
    rt.drain()
    rt.engine.correlate("go", instance_id=iid, variables={"went": 1})
    rt.drain()
    assert rt.engine.show(iid)["state"] == "COMPLETED"
    assert replay.check(rt.engine.core, iid) == []
    assert rebuilt_state(replay.as_of(rt.engine.core, iid, last_event)) == show_state(then)
    from datetime import datetime

    at_time = replay.as_of(
        rt.engine.core, iid, datetime.fromisoformat(rt.engine.trace(iid)[0]["at"])
    )
    assert at_time.instance["state"] == "RUNNING"


def test_a_planted_difference_is_found_and_named(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    iid = drive_partway(rt, calls, clock)
    assert replay.check(rt.engine.core, iid) == []
    (review,) = rt.engine.user_tasks(instance_id=iid)
    with rt.engine.db.transaction() as conn:
        conn.execute(
            update(schema.external_tasks)
            .where(schema.external_tasks.c.id == review["id"])
            .values(state="DONE")
        )
        conn.execute(
            update(schema.variables)
            .where(schema.variables.c.instance_id == iid, schema.variables.c.name == "price")
            .values(value=99)
        )
    found = replay.check(rt.engine.core, iid)
    assert any(
        review["id"] in line and "state history='READY' table='DONE'" in line for line in found
    ), found
    assert any("variable 'price': history=12 table=99" in line for line in found), found


def test_check_all_finds_no_difference_in_a_mixed_population(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    drive_partway(rt, calls, clock)
    calls.add("boom", failing(10))
    failing_doc = (
        ProcessBuilder("boom")
        .start()
        .service_task("x", handler="boom")
        .end()
        .sequence("start", "x", "end")
        .build()
    )
    for _ in range(3):
        rt.run(failing_doc)
    summary = replay.check_all(rt.engine.core)
    assert summary["checked"] == 4 and summary["with_differences"] == 0, summary


def test_every_history_row_names_its_actor_and_cause(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    iid = drive_partway(rt, calls, clock)
    events = rt.engine.trace(iid)
    assert all(e.get("actor") and e.get("cause") for e in events), [
        (e["type"], e.get("cause")) for e in events if not e.get("cause")
    ]
    causes = {e["cause"].split(" ")[0] + " " + e["cause"].split(" ")[1] for e in events}
    assert "api start" in causes and "api complete" in causes
    assert any(c.startswith("bpm.advance_token") or c.startswith("bpm.run_handler") for c in causes)
    completed = [
        e
        for e in events
        if e["type"] == "COMPLETED" and e["kind"] == "task" and e["node_id"] == "remote"
    ]
    assert completed[0]["actor"] == "w" and completed[0]["cause"].startswith("api complete")


def test_a_trace_shows_variable_changes_old_to_new(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    iid = drive_partway(rt, calls, clock)  # flaky sets price; the worker sets remote_ok
    (review,) = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(review["id"], {"price": 15})
    changes = [e["data"] for e in rt.engine.trace(iid) if e["type"] == "VariablesChanged"]
    assert changes[0] == {"values": {"order": "o-1"}, "old": {}}
    assert changes[-1] == {"values": {"price": 15}, "old": {"price": 12}}


def test_replay_finds_no_difference_over_a_large_random_mix(
    engine_factory: Any, calls: Calls, clock: FakeClock
) -> None:
    """Random block-structured processes (branches, loops of retries, subprocesses), random
    sagas failing anywhere, and the wait-state mix, side by side in one database."""
    from tests.integration.test_random_processes import generate
    from tests.integration.test_sagas import random_saga

    rt = engine_factory()
    calls.add("work")
    calls.add("flaky", failing(1))
    calls.add("boom", failing(1000))
    for seed in range(25):
        document, variables, _ = generate(seed)
        rt.run(document, variables)
    for seed in range(10):
        document, failing_step = random_saga(seed)
        for node in document["nodes"]:
            if node["type"] == "serviceTask":
                node["handler"] = "boom" if node["id"] == failing_step else "work"
                if "compensation" in node:
                    node["compensation"] = {"handler": "work"}
        rt.run(document)
    for _ in range(3):
        drive_partway(rt, calls, clock)
    summary = replay.check_all(rt.engine.core)
    assert summary["checked"] == 38 and summary["with_differences"] == 0, summary
