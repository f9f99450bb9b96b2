"""Durable timers: intermediate timers and boundary timers.

Time is a fake clock; a timer fires when a scan runs at or after its due time, exactly as the
beat-triggered scan does in production. Every test also checks the history against the rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.engine.operations.external import TopicRequest
from bpm.errors import NoMatchingWait, TaskLockError, TaskNotLocked
from bpm.store import Database, timers
from tests.helpers import db as rows
from tests.helpers.clock import FakeClock
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.race import run_together
from tests.helpers.runtime import Calls, EngineFactory, Harness


def timers_of(db: Database, iid: UUID) -> list[dict[str, Any]]:
    with db.transaction() as conn:
        return [
            {"node": t.node_id, "state": t.state, "fire_at": t.fire_at}
            for t in timers.of_instance(conn, iid)
        ]


def waiting_doc(**timer: str) -> dict[str, Any]:
    return (
        ProcessBuilder("wait")
        .start()
        .timer("pause", **timer)
        .service_task("after", handler="after")
        .end()
        .sequence("start", "pause", "after", "end")
        .build()
    )


def test_an_intermediate_timer_waits_then_fires_once_on_time(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("after")
    iid = rt.run(waiting_doc(duration="PT10M"))
    db = rt.engine.db
    (timer,) = timers_of(db, iid)
    assert timer["state"] == "SCHEDULED" and timer["fire_at"].tzinfo is not None
    assert rt.engine.fire_due_timers() == 0  # not due yet
    assert calls.count("after") == 0

    clock.advance(timedelta(minutes=10))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert rt.engine.fire_due_timers() == 0  # fired once
    assert calls.count("after") == 1
    assert_finished_cleanly(db, iid)
    (fired,) = rows.engine_events_of(db, iid, type="TimerFired")
    assert fired["data"]["lateness_ms"] >= 0
    assert [t["state"] for t in timers_of(db, iid)] == ["FIRED"]


def test_a_date_in_the_past_fires_at_the_next_scan(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    iid = rt.run(waiting_doc(date="2001-01-01T00:00:00Z"))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert_finished_cleanly(rt.engine.db, iid)


def test_dates_are_stored_in_utc(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    iid = rt.run(waiting_doc(date="2030-06-01T12:00:00+02:00"))
    (timer,) = timers_of(rt.engine.db, iid)
    assert timer["fire_at"] == datetime(2030, 6, 1, 10, 0, tzinfo=UTC)
    assert timer["fire_at"].utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("timer", "variables", "due_in"),
    [
        ({"duration": "${wait}"}, {"wait": "PT2H"}, timedelta(hours=2)),
        ({"duration": "${'PT' + str(minutes) + 'M'}"}, {"minutes": 3}, timedelta(minutes=3)),
    ],
)
def test_timer_expressions_read_the_variables(
    rt: Harness,
    calls: Calls,
    clock: FakeClock,
    timer: dict[str, str],
    variables: dict[str, Any],
    due_in: timedelta,
) -> None:
    calls.add("after")
    rt.deploy(waiting_doc(**timer))
    started = clock.peek()
    iid = rt.start("wait", variables)
    rt.drain()
    (row,) = timers_of(rt.engine.db, iid)
    assert due_in <= row["fire_at"] - started < due_in + timedelta(seconds=1)


def test_a_timer_expression_with_a_bad_value_fails_the_token_naming_the_node(
    rt: Harness, calls: Calls
) -> None:
    calls.add("after")
    rt.deploy(waiting_doc(date="${when}"))
    iid = rt.start("wait", {"when": "someday"})
    rt.drain()
    db = rt.engine.db
    assert rows.state(db, iid) == "FAILED"
    (incident,) = rows.incidents_of(db, iid)
    assert incident.kind == "timer" and "'pause'" in incident.message
    assert "someday" in incident.message
    assert timers_of(db, iid) == []
    assert_history_consistent(db, iid)


def test_timers_survive_a_restart(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("after")
    first = engine_factory()
    iids = [first.run(waiting_doc(duration="PT1H")) for _ in range(3)]
    del first  # the process that scheduled them is gone
    clock.advance(timedelta(hours=1))
    restarted = engine_factory()
    assert restarted.engine.run_scans()["timers"] == 3
    restarted.drain()
    for iid in iids:
        assert_finished_cleanly(restarted.engine.db, iid)
    assert calls.count("after") == 3


def test_two_scanners_at_once_fire_every_timer_exactly_once(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("after")
    setup = engine_factory()
    setup.deploy(waiting_doc(duration="PT1M"))
    iids = [setup.start("wait") for _ in range(40)]
    setup.drain()
    clock.advance(timedelta(minutes=1))
    scanners = [engine_factory() for _ in range(3)]
    counts = run_together([s.engine.fire_due_timers for s in scanners])
    assert sum(counts) == 40
    for s in scanners:
        s.drain()
    assert calls.count("after") == 40
    db = setup.engine.db
    for iid in iids:
        assert len(rows.engine_events_of(db, iid, type="TimerFired")) == 1
        assert_finished_cleanly(db, iid)


# --- boundary timers -------------------------------------------------------------------------


def boundary_doc(host: str, *, interrupting: bool = True) -> dict[str, Any]:
    b = ProcessBuilder("bnd").start()
    if host == "service":
        b.service_task("act", topic="slow")
    elif host == "user":
        b.user_task("act")
    elif host == "receive":
        b.receive_task("act", message="go")
    else:
        inner = (
            ProcessBuilder("inner")
            .start("s_start")
            .parallel_gateway("s_fork")
            .service_task("s_a", topic="slow")
            .user_task("s_b")
            .parallel_gateway("s_join")
            .end("s_end")
            .sequence("s_start", "s_fork", "s_a", "s_join", "s_end")
            .sequence("s_fork", "s_b", "s_join")
        )
        b.sub_process("act", inner)
    return (
        b.timer_boundary("late", attached_to="act", duration="PT1H", interrupting=interrupting)
        .service_task("escalate", handler="escalate")
        .end("late_end")
        .service_task("normal", handler="normal")
        .end()
        .sequence("start", "act", "normal", "end")
        .sequence("late", "escalate", "late_end")
        .build()
    )


@pytest.mark.parametrize("host", ["service", "user", "receive", "subprocess"])
def test_an_interrupting_boundary_timer_leaves_the_activity(
    rt: Harness, calls: Calls, clock: FakeClock, host: str
) -> None:
    calls.add("escalate")
    calls.add("normal")
    iid = rt.run(boundary_doc(host))
    db = rt.engine.db
    locked = rt.engine.fetch_and_lock("w1", [TopicRequest("slow", timedelta(hours=2))])
    clock.advance(timedelta(hours=1))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert calls.count("escalate") == 1 and calls.count("normal") == 0
    assert_finished_cleanly(db, iid)
    activity_tasks = {t.state for t in rows.tasks_of(db, iid) if t.node_id != "escalate"}
    assert activity_tasks == (set() if host == "receive" else {"CANCELLED"})
    if host == "subprocess":  # both inner branches were cancelled with the subprocess
        inner = [t for t in rows.tokens_of(db, iid) if t.scope_id == "act"]
        assert {t.state for t in inner} == {"CANCELLED"} and len(inner) >= 2
    for task in locked:  # the worker that held it is told it is gone
        with pytest.raises(TaskNotLocked, match="CANCELLED"):
            rt.engine.complete(task.id, "w1", {})
    if host == "receive":  # the message comes too late: nothing waits for it any more
        with pytest.raises(NoMatchingWait):
            rt.engine.correlate("go", instance_id=iid)


def test_a_boundary_timer_is_disarmed_when_the_activity_completes(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("escalate")
    calls.add("normal")
    iid = rt.run(boundary_doc("user"))
    (task,) = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {"ok": True})
    rt.drain()
    db = rt.engine.db
    assert [t["state"] for t in timers_of(db, iid)] == ["CANCELLED"]
    clock.advance(timedelta(hours=2))
    assert rt.engine.fire_due_timers() == 0
    assert calls.count("escalate") == 0 and calls.count("normal") == 1
    assert_finished_cleanly(db, iid)


@pytest.mark.parametrize("host", ["service", "user"])
def test_a_non_interrupting_boundary_timer_spawns_a_path_and_keeps_the_task(
    rt: Harness, calls: Calls, clock: FakeClock, host: str
) -> None:
    calls.add("escalate")
    calls.add("normal")
    iid = rt.run(boundary_doc(host, interrupting=False))
    db = rt.engine.db
    clock.advance(timedelta(hours=1))
    assert rt.engine.fire_due_timers() == 1
    rt.drain()
    assert calls.count("escalate") == 1
    assert rows.state(db, iid) == "RUNNING"  # the task is still open
    if host == "service":
        (task,) = rt.engine.fetch_and_lock("w1", [TopicRequest("slow", timedelta(minutes=5))])
        rt.engine.complete(task.id, "w1", {})
    else:
        (task_view,) = rt.engine.user_tasks(instance_id=iid)
        rt.engine.complete_user_task(task_view["id"])
    rt.drain()
    assert calls.count("normal") == 1
    assert_finished_cleanly(db, iid)


def test_the_main_path_ending_first_waits_for_the_spawned_path(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    """The instance completes only when the spawned token is done too."""
    held: list[str] = []
    calls.add("normal")
    calls.add("escalate")
    doc = (
        ProcessBuilder("spawn")
        .start()
        .user_task("act")
        .timer_boundary("late", attached_to="act", duration="PT1H", interrupting=False)
        .user_task("follow_up")
        .end("late_end")
        .end()
        .sequence("start", "act", "end")
        .sequence("late", "follow_up", "late_end")
        .build()
    )
    iid = rt.run(doc)
    clock.advance(timedelta(hours=1))
    rt.engine.fire_due_timers()
    rt.drain()
    db = rt.engine.db
    tasks = {t["node_id"]: t["id"] for t in rt.engine.user_tasks(instance_id=iid)}
    assert set(tasks) == {"act", "follow_up"}
    rt.engine.complete_user_task(tasks["act"])
    rt.drain()
    assert rows.state(db, iid) == "RUNNING", held
    rt.engine.complete_user_task(tasks["follow_up"])
    rt.drain()
    assert_finished_cleanly(db, iid)


# --- the race between completion and an interrupting timer ----------------------------------


def test_completion_first_wins_and_the_timer_is_a_no_op(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("escalate")
    calls.add("normal")
    iid = rt.run(boundary_doc("service"))
    (task,) = rt.engine.fetch_and_lock("w1", [TopicRequest("slow", timedelta(hours=2))])
    clock.advance(timedelta(hours=1))  # the timer is due, but the worker reports first
    rt.engine.complete(task.id, "w1", {"done": 1})
    assert rt.engine.fire_due_timers() == 0
    rt.drain()
    assert calls.count("normal") == 1 and calls.count("escalate") == 0
    assert_finished_cleanly(rt.engine.db, iid)


def test_timer_first_wins_and_the_late_completion_is_rejected(
    rt: Harness, calls: Calls, clock: FakeClock
) -> None:
    calls.add("escalate")
    calls.add("normal")
    iid = rt.run(boundary_doc("service"))
    (task,) = rt.engine.fetch_and_lock("w1", [TopicRequest("slow", timedelta(hours=2))])
    clock.advance(timedelta(hours=1))
    assert rt.engine.fire_due_timers() == 1
    with pytest.raises(TaskNotLocked):
        rt.engine.complete(task.id, "w1", {"done": 1})
    rt.drain()
    assert calls.count("normal") == 0 and calls.count("escalate") == 1
    assert_finished_cleanly(rt.engine.db, iid)


def test_completion_and_timer_at_the_same_instant_have_exactly_one_winner(
    engine_factory: EngineFactory, calls: Calls, clock: FakeClock
) -> None:
    calls.add("escalate")
    calls.add("normal")
    setup = engine_factory()
    setup.deploy(boundary_doc("service"))
    iids = [setup.start("bnd") for _ in range(15)]
    setup.drain()
    locked = setup.engine.fetch_and_lock(
        "w1", [TopicRequest("slow", timedelta(hours=2))], max_tasks=15
    )
    assert len(locked) == 15
    clock.advance(timedelta(hours=1))
    worker, scanner = engine_factory(), engine_factory()

    def complete_all() -> int:
        won = 0
        for task in locked:
            try:
                worker.engine.complete(task.id, "w1", {})
                won += 1
            except TaskLockError:  # the timer won: the task is gone (cancelled or changed)
                pass
        return won

    completed, fired = run_together([complete_all, scanner.engine.fire_due_timers])
    worker.drain()
    scanner.drain()
    assert completed + fired == 15
    assert calls.count("normal") == completed and calls.count("escalate") == fired
    for iid in iids:
        assert_finished_cleanly(setup.engine.db, iid)


@pytest.mark.parametrize("first", ["main", "escalation"])
def test_a_spawned_path_and_the_main_path_meet_at_a_parallel_join(
    rt: Harness, calls: Calls, clock: FakeClock, first: str
) -> None:
    """As Camunda's testJoin: the task's own token becomes the scope when it reaches the join,
    so the join counts it with the token its non-interrupting boundary spawned."""
    doc = (
        ProcessBuilder("nij")
        .start()
        .user_task("main")
        .timer_boundary("late", attached_to="main", duration="PT1H", interrupting=False)
        .user_task("escalation")
        .parallel_gateway("join")
        .end()
        .sequence("start", "main", "join", "end")
        .sequence("late", "escalation", "join")
        .build()
    )
    iid = rt.run(doc)
    clock.advance(timedelta(hours=1))
    rt.engine.fire_due_timers()
    rt.drain()
    tasks = {t["node_id"]: t["id"] for t in rt.engine.user_tasks(instance_id=iid)}
    second = "escalation" if first == "main" else "main"
    rt.engine.complete_user_task(tasks[first])
    rt.drain()
    assert rows.state(rt.engine.db, iid) == "RUNNING"
    rt.engine.complete_user_task(tasks[second])
    rt.drain()
    assert_finished_cleanly(rt.engine.db, iid)
    assert len(rows.engine_events_of(rt.engine.db, iid, type="JoinFired")) == 1


def test_an_interrupting_timer_on_a_subprocess_leaves_its_non_interrupting_path_alone(
    rt: Harness, pg_db: Database
) -> None:
    """The reminder path started at the subprocess's boundary and runs outside it: leaving the
    subprocess (the deadline firing) cancels only what runs inside."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .service_task("a", topic="ta")
        .end("i_end")
        .sequence("i_start", "a", "i_end")
    )
    doc = (
        ProcessBuilder("deadline")
        .start()
        .sub_process("sub", inner)
        .timer_boundary("remind_t", attached_to="sub", duration="PT1M", interrupting=False)
        .timer_boundary("deadline_t", attached_to="sub", duration="PT5M")
        .user_task("remind")
        .end("done")
        .end("late")
        .end("reminded")
        .sequence("start", "sub", "done")
        .flow("deadline_t", "late")
        .sequence("remind_t", "remind", "reminded")
        .build()
    )
    iid = rt.run(doc)
    for minutes in (2, 4):
        rt.pass_time(timedelta(minutes=minutes))
    assert rows.only_task(pg_db, iid, "a").state == "CANCELLED"
    assert "remind" in {t.node_id for t in rows.live_tokens(pg_db, iid)}
    [review] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(review["id"])
    rt.drain()
    assert_finished_cleanly(pg_db, iid)


def test_a_subprocess_goes_on_when_its_body_ends_while_its_boundary_path_still_runs(
    rt: Harness, pg_db: Database
) -> None:
    """The reminder path runs outside the subprocess: the outer path does not wait for it,
    and the instance completes once both are done."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .user_task("inside")
        .end("i_end")
        .sequence("i_start", "inside", "i_end")
    )
    doc = (
        ProcessBuilder("sub_goes_on")
        .start()
        .sub_process("sub", inner)
        .timer_boundary("remind_t", attached_to="sub", duration="PT1M", interrupting=False)
        .user_task("after")
        .user_task("remind")
        .end()
        .end("reminded")
        .sequence("start", "sub", "after", "end")
        .sequence("remind_t", "remind", "reminded")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=2))
    [inside] = [t for t in rt.engine.user_tasks(instance_id=iid) if t["node_id"] == "inside"]
    rt.engine.complete_user_task(inside["id"])
    rt.drain()
    open_tasks = sorted(t["node_id"] for t in rt.engine.user_tasks(instance_id=iid))
    assert open_tasks == ["after", "remind"]
    for node in ("after", "remind"):
        [task] = [t for t in rt.engine.user_tasks(instance_id=iid) if t["node_id"] == node]
        rt.engine.complete_user_task(task["id"])
        rt.drain()
    assert_finished_cleanly(pg_db, iid)


@pytest.mark.parametrize("order", [("inside", "remind"), ("remind", "inside")])
def test_a_subprocess_boundary_path_that_joins_the_outer_path_does_not_deadlock(
    rt: Harness, pg_db: Database, order: tuple[str, str]
) -> None:
    """The reminder path waits at the join for the subprocess; the subprocess must not wait
    for the reminder path (it did: neither ever moved again)."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .user_task("inside")
        .end("i_end")
        .sequence("i_start", "inside", "i_end")
    )
    doc = (
        ProcessBuilder("sub_join")
        .start()
        .sub_process("sub", inner)
        .timer_boundary("remind_t", attached_to="sub", duration="PT1M", interrupting=False)
        .user_task("remind")
        .parallel_gateway("join")
        .end()
        .sequence("start", "sub", "join", "end")
        .sequence("remind_t", "remind", "join")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=2))
    for node in order:
        [task] = [t for t in rt.engine.user_tasks(instance_id=iid) if t["node_id"] == node]
        rt.engine.complete_user_task(task["id"])
        rt.drain()
    assert_finished_cleanly(pg_db, iid)
    assert len(rows.engine_events_of(pg_db, iid, type="JoinFired")) == 1
