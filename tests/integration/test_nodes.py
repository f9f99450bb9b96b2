"""Node semantics: each node type on real PostgreSQL, run to the end.

Every test finishes with the history check: each token's and task's current state
is where its history chain ends, with one event per version bump.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.dispatch import ADVANCE_TOKEN, RUN_HANDLER
from bpm.handlers import HandlerContext
from bpm.store import Database
from bpm.store.schema import token_links
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, assert_history_consistent
from tests.helpers.processes import exclusive, fork_one_join, nested_fork
from tests.helpers.runtime import ONLY_ADVANCE, Calls, EngineFactory, Harness, failing


def visited(db: Database, iid: UUID) -> list[str]:
    """Nodes tokens moved to along flows, in order (forks and joins included)."""
    return [e["node_id"] for e in rows.token_events_of(db, iid) if e["type"] == "MOVED"]


def links(db: Database) -> list[tuple[UUID, UUID, str]]:
    with db.transaction() as conn:
        return [
            (r.parent_token_id, r.child_token_id, r.link_type)
            for r in conn.execute(token_links.select())
        ]


def events_named(db: Database, iid: UUID, kind: str) -> list[dict[str, Any]]:
    return rows.engine_events_of(db, iid, type=kind)


# --- start / end, pass-through ---------------------------------------------------------------


def test_start_to_end_completes_the_instance(rt: Harness) -> None:
    doc = ProcessBuilder("minimal").start().end().sequence("start", "end").build()
    iid = rt.run(doc)

    assert_finished_cleanly(rt.engine.db, iid)
    (tok,) = rows.tokens_of(rt.engine.db, iid)
    assert (tok.node_id, tok.state, tok.parent_token_id) == ("end", "COMPLETED", None)
    types = [e["type"] for e in rows.token_events_of(rt.engine.db, iid)]
    assert types == ["CREATED", "MOVED", "COMPLETED"]
    assert rows.engine_event_types(rt.engine.db, iid) == ["InstanceStarted", "InstanceCompleted"]
    assert rows.instance(rt.engine.db, iid).ended_at is not None


def test_task_and_manual_task_pass_through(rt: Harness) -> None:
    doc = (
        ProcessBuilder("pass")
        .start()
        .task("abstract")
        .manual_task("by_hand")
        .end()
        .sequence("start", "abstract", "by_hand", "end")
        .build()
    )
    iid = rt.run(doc)

    assert_finished_cleanly(rt.engine.db, iid)
    assert visited(rt.engine.db, iid) == ["abstract", "by_hand", "end"]
    assert rows.tasks_of(rt.engine.db, iid) == []  # nothing for a worker to do


@pytest.mark.parametrize("last", ["task", "serviceTask"])
def test_activity_without_outgoing_flow_ends_its_path(rt: Harness, calls: Calls, last: str) -> None:
    calls.add("work")
    b = ProcessBuilder("implicit_end").start()
    b = b.task("last") if last == "task" else b.service_task("last", handler="work")
    iid = rt.run(b.sequence("start", "last").build())

    assert_finished_cleanly(rt.engine.db, iid)
    (tok,) = rows.tokens_of(rt.engine.db, iid)
    assert (tok.node_id, tok.state) == ("last", "COMPLETED")


def test_implicit_end_inside_a_fork_completes_once_every_branch_ended(rt: Harness) -> None:
    doc = (
        ProcessBuilder("implicit_fork")
        .start()
        .parallel_gateway("fork")
        .task("dead_end")
        .task("other")
        .end()
        .sequence("start", "fork", "dead_end")
        .sequence("fork", "other", "end")
        .build()
    )
    iid = rt.run(doc)

    assert_finished_cleanly(rt.engine.db, iid)
    ended = sorted((t.node_id, t.state) for t in rows.tokens_of(rt.engine.db, iid))
    assert ended == [("dead_end", "COMPLETED"), ("end", "COMPLETED"), ("fork", "COMPLETED")]


# --- service tasks ---------------------------------------------------------------------------


def test_service_task_sees_variables_and_writes_its_result(rt: Harness, calls: Calls) -> None:
    calls.add("price", lambda ctx: {"total": ctx.variables["qty"] * 3, "priced": True})
    rt.deploy(
        ProcessBuilder("pricing")
        .start()
        .service_task("price", handler="price")
        .end()
        .sequence("start", "price", "end")
        .build()
    )
    iid = rt.engine.start("pricing", {"qty": 7, "note": "x"}, business_key="ORDER-1").id
    rt.drain()

    assert_finished_cleanly(rt.engine.db, iid)
    assert rt.engine.show(iid)["variables"] == {"qty": 7, "note": "x", "total": 21, "priced": True}
    (ctx,) = calls.seen["price"]
    task = rows.only_task(rt.engine.db, iid, "price")
    assert ctx.variables == {"qty": 7, "note": "x"}
    assert (ctx.instance_id, ctx.business_key, ctx.process_key, ctx.node_id) == (
        iid,
        "ORDER-1",
        "pricing",
        "price",
    )
    assert (ctx.task_id, ctx.idempotency_key, ctx.attempt) == (task.id, str(task.id), 1)
    assert (task.state, task.attempts, task.lock_owner) == ("DONE", 1, None)
    completed = rows.task_events_of(rt.engine.db, iid, type="COMPLETED")
    assert [e["data"] for e in completed] == [{"variables": {"total": 21, "priced": True}}]


def test_handler_result_overwrites_an_existing_variable(rt: Harness, calls: Calls) -> None:
    calls.add("work", lambda ctx: {"n": ctx.variables["n"] + 1})
    rt.deploy(
        ProcessBuilder("incr")
        .start()
        .service_task("a", handler="work")
        .service_task("b", handler="work")
        .end()
        .sequence("start", "a", "b", "end")
        .build()
    )
    iid = rt.engine.start("incr", {"n": 1}).id
    rt.drain()

    assert rt.engine.show(iid)["variables"] == {"n": 3}
    assert [c.variables["n"] for c in calls.seen["work"]] == [1, 2]


def test_idempotency_key_is_stable_across_attempts(rt: Harness, calls: Calls) -> None:
    calls.add("flaky", failing(2, then={"ok": True}))
    doc = (
        ProcessBuilder("flaky")
        .start()
        .service_task("flaky", handler="flaky", retry={"max_attempts": 3, "backoff": "PT1S"})
        .end()
        .sequence("start", "flaky", "end")
        .build()
    )
    iid = rt.run(doc)

    assert_finished_cleanly(rt.engine.db, iid)
    task = rows.only_task(rt.engine.db, iid, "flaky")
    seen = calls.seen["flaky"]
    assert [c.attempt for c in seen] == [1, 2, 3]
    assert {c.idempotency_key for c in seen} == {str(task.id)}
    assert {c.task_id for c in seen} == {task.id}
    assert (task.attempts, task.state) == (3, "DONE")


def test_handler_does_not_see_its_own_changes_to_the_variables(rt: Harness, calls: Calls) -> None:
    def mutate(ctx: HandlerContext) -> None:
        ctx.variables["qty"] = 999  # a copy: must not be written back

    calls.add("mutate", mutate)
    rt.deploy(
        ProcessBuilder("mut")
        .start()
        .service_task("m", handler="mutate")
        .end()
        .sequence("start", "m", "end")
        .build()
    )
    iid = rt.engine.start("mut", {"qty": 1}).id
    rt.drain()
    assert rt.engine.show(iid)["variables"] == {"qty": 1}


# --- exclusive gateway -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "taken"),
    [(500, "big"), (101, "big"), (50, "medium"), (11, "medium"), (10, "small"), (-3, "small")],
)
def test_exclusive_takes_first_true_condition_in_order_else_default(
    rt: Harness, amount: int, taken: str
) -> None:
    rt.deploy(exclusive())
    iid = rt.engine.start("route", {"amount": amount}).id
    rt.drain()
    assert_finished_cleanly(rt.engine.db, iid)
    assert visited(rt.engine.db, iid) == ["gw", taken, "end"]


def test_exclusive_declared_order_wins_over_a_later_true_condition(rt: Harness) -> None:
    # Both conditions hold; the flow declared first is taken.
    rt.deploy(exclusive("route_order", conditions=("amount > 0", "amount > 100")))
    iid = rt.engine.start("route_order", {"amount": 500}).id
    rt.drain()
    assert visited(rt.engine.db, iid) == ["gw", "big", "end"]


@pytest.mark.parametrize(
    ("variables", "taken"),
    [
        ({"amount": 500, "vip": False}, "big"),
        ({"amount": 500, "vip": True}, "medium"),
        ({"amount": 50, "vip": True}, "medium"),
        ({"amount": 5, "vip": False}, "small"),
    ],
)
def test_exclusive_accepts_camunda_expressions(
    rt: Harness, variables: dict[str, Any], taken: str
) -> None:
    rt.deploy(
        exclusive(
            "camunda", conditions=("${amount > 100 && !vip}", "${vip == true || amount >= 50}")
        )
    )
    iid = rt.engine.start("camunda", variables).id
    rt.drain()
    assert_finished_cleanly(rt.engine.db, iid)
    assert visited(rt.engine.db, iid) == ["gw", taken, "end"]


def test_exclusive_with_no_true_condition_and_no_default_fails_with_incident(rt: Harness) -> None:
    rt.deploy(exclusive("no_way", default=False))
    iid = rt.engine.start("no_way", {"amount": 1}).id
    rt.drain()
    db = rt.engine.db

    assert rows.state(db, iid) == "FAILED"
    (tok,) = rows.tokens_of(db, iid)
    assert (tok.node_id, tok.state) == ("gw", "FAILED")
    (incident,) = rows.incidents_of(db, iid)
    assert (incident.state, incident.node_id, incident.token_id) == ("OPEN", "gw", tok.id)
    assert "'gw'" in incident.message and "no default flow" in incident.message
    assert rows.engine_event_types(db, iid) == [
        "InstanceStarted",
        "TokenFailed",
        "IncidentOpened",
        "InstanceFailed",
    ]
    assert rt.engine.incidents()[0]["id"] == str(incident.id)
    assert_history_consistent(db, iid)


def test_exclusive_over_a_missing_variable_names_gateway_flow_and_variable(rt: Harness) -> None:
    rt.deploy(exclusive())
    iid = rt.engine.start("route", {"other": 1}).id
    rt.drain()
    db = rt.engine.db

    assert rows.state(db, iid) == "FAILED"
    (incident,) = rows.incidents_of(db, iid)
    for name in ("'gw'", "'to_big'", "'amount'"):
        assert name in incident.message, incident.message
    (tok,) = rows.tokens_of(db, iid)
    assert (tok.node_id, tok.state) == ("gw", "FAILED")
    assert_history_consistent(db, iid)


def test_exclusive_condition_that_is_not_a_boolean_fails_with_incident(rt: Harness) -> None:
    rt.deploy(exclusive("not_bool", conditions=("amount", "amount > 10")))
    iid = rt.engine.start("not_bool", {"amount": 5}).id
    rt.drain()
    (incident,) = rows.incidents_of(rt.engine.db, iid)
    assert "'gw'" in incident.message and "'to_big'" in incident.message
    assert rows.state(rt.engine.db, iid) == "FAILED"


# --- parallel gateways -----------------------------------------------------------------------


def test_fork_and_join(rt: Harness, calls: Calls) -> None:
    calls.add("branch")
    calls.add("after")
    iid = rt.run(fork_one_join(branches=3))
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    assert calls.count("branch") == 3 and calls.count("after") == 1
    assert len(events_named(db, iid, "JoinFired")) == 1
    toks = rows.tokens_of(db, iid)
    root = next(t for t in toks if t.parent_token_id is None)
    children = [t for t in toks if t.parent_token_id == root.id]
    assert sorted(c.node_id for c in children) == ["join", "join", "join"]
    assert {c.state for c in children} == {"COMPLETED"}
    assert (root.node_id, root.state) == ("end", "COMPLETED")
    kinds = sorted((p == root.id, c == root.id, k) for p, c, k in links(db))
    assert kinds == [(False, True, "JOIN")] * 3 + [(True, False, "FORK")] * 3


def test_nested_fork(rt: Harness, calls: Calls) -> None:
    for name in ("branch", "mid", "after"):
        calls.add(name)
    iid = rt.run(nested_fork())
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    assert (calls.count("branch"), calls.count("mid"), calls.count("after")) == (3, 1, 1)
    fired = sorted(e["node_id"] for e in events_named(db, iid, "JoinFired"))
    assert fired == ["join1", "join2"]


def test_join_and_fork_on_one_gateway(rt: Harness, calls: Calls) -> None:
    for name in ("a", "b", "c", "d", "after"):
        calls.add(name)
    doc = (
        ProcessBuilder("join_fork")
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join_fork")
        .parallel_gateway("join")
        .end()
        .service_task("a", handler="a")
        .service_task("b", handler="b")
        .service_task("c", handler="c")
        .service_task("d", handler="d")
        .service_task("after", handler="after")
        .sequence("start", "fork", "a", "join_fork")
        .sequence("fork", "b", "join_fork")
        .sequence("join_fork", "c", "join")
        .sequence("join_fork", "d", "join")
        .sequence("join", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    assert [calls.count(n) for n in ("a", "b", "c", "d", "after")] == [1, 1, 1, 1, 1]
    fired = sorted(e["node_id"] for e in events_named(db, iid, "JoinFired"))
    assert fired == ["join", "join_fork"]


def test_join_waits_for_every_incoming_flow(engine_factory: EngineFactory, calls: Calls) -> None:
    calls.add("branch")
    calls.add("after")
    rt = engine_factory(run_handlers_inline=False)
    rt.deploy(fork_one_join(branches=3))
    iid = rt.start("fork3")
    rt.drain(ONLY_ADVANCE)
    db = rt.engine.db
    ready = rows.tasks_of(db, iid)
    assert sorted(t.node_id for t in ready) == ["b0", "b1", "b2"]

    for task in ready[:2]:
        rt.engine.run_handler(task.id)
        rt.drain(ONLY_ADVANCE)
    assert rows.state(db, iid) == "RUNNING"
    assert events_named(db, iid, "JoinFired") == []
    parked = [t for t in rows.tokens_of(db, iid) if t.wait_kind == "JOIN"]
    assert len(parked) == 2 and calls.count("after") == 0

    rt.drain()
    assert_finished_cleanly(db, iid)
    assert len(events_named(db, iid, "JoinFired")) == 1 and calls.count("after") == 1


# --- subprocesses ----------------------------------------------------------------------------


def test_embedded_subprocess(rt: Harness, calls: Calls) -> None:
    calls.add("inner", lambda ctx: {"inner_saw": ctx.variables["x"]})
    calls.add("after")
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .service_task("inner", handler="inner")
        .end("s_end")
        .sequence("s_start", "inner", "s_end")
    )
    doc = (
        ProcessBuilder("with_sub")
        .start()
        .sub_process("sub", body)
        .service_task("after", handler="after")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    rt.deploy(doc)
    iid = rt.engine.start("with_sub", {"x": 5}).id
    rt.drain()
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    assert rt.engine.show(iid)["variables"] == {"x": 5, "inner_saw": 5}
    assert calls.count("after") == 1
    toks = rows.tokens_of(db, iid)
    root = next(t for t in toks if t.parent_token_id is None)
    (child,) = [t for t in toks if t.parent_token_id == root.id]
    assert (child.scope_id, child.node_id, child.state) == ("sub", "s_end", "COMPLETED")
    assert (root.scope_id, root.node_id) == (None, "end")
    assert links(db) == [(root.id, child.id, "SUBPROCESS")]
    (done,) = events_named(db, iid, "SubprocessCompleted")
    assert done["node_id"] == "sub"
    assert visited(db, iid) == ["sub", "inner", "s_end", "after", "end"]


def test_subprocess_with_a_fork_inside(rt: Harness, calls: Calls) -> None:
    calls.add("x")
    calls.add("y")
    calls.add("after")
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .parallel_gateway("s_fork")
        .parallel_gateway("s_join")
        .service_task("x", handler="x")
        .service_task("y", handler="y")
        .end("s_end")
        .sequence("s_start", "s_fork", "x", "s_join")
        .sequence("s_fork", "y", "s_join")
        .sequence("s_join", "s_end")
    )
    doc = (
        ProcessBuilder("sub_fork")
        .start()
        .sub_process("sub", body)
        .service_task("after", handler="after")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    assert [calls.count(n) for n in ("x", "y", "after")] == [1, 1, 1]
    assert [e["node_id"] for e in events_named(db, iid, "JoinFired")] == ["s_join"]
    assert len(events_named(db, iid, "SubprocessCompleted")) == 1
    inner = [t for t in rows.tokens_of(db, iid) if t.scope_id == "sub"]
    assert len(inner) == 3  # the subprocess's own token and its two branches


def test_fork_around_a_subprocess(rt: Harness, calls: Calls) -> None:
    calls.add("inner")
    calls.add("outer")
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .service_task("inner", handler="inner")
        .end("s_end")
        .sequence("s_start", "inner", "s_end")
    )
    doc = (
        ProcessBuilder("fork_sub")
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .sub_process("sub", body)
        .service_task("outer", handler="outer")
        .end()
        .sequence("start", "fork", "sub", "join")
        .sequence("fork", "outer", "join")
        .sequence("join", "end")
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(rt.engine.db, iid)
    assert (calls.count("inner"), calls.count("outer")) == (1, 1)


# --- end events ------------------------------------------------------------------------------


def _queue_handlers(engine_factory: EngineFactory) -> Harness:
    """An engine that never runs a handler inline: tasks stay READY until their job runs."""
    return engine_factory(run_handlers_inline=False)


def test_terminate_end_event_cancels_the_other_branches(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("slow")
    calls.add("slower")
    rt = _queue_handlers(engine_factory)
    doc = (
        ProcessBuilder("terminate")
        .start()
        .parallel_gateway("fork")
        .service_task("slow", handler="slow")
        .service_task("slower", handler="slower")
        .parallel_gateway("join")
        .task("quick")
        .end("stop", terminate=True)
        .end()
        .sequence("start", "fork", "slow", "join")
        .sequence("fork", "slower", "join")
        .sequence("join", "end")
        .sequence("fork", "quick", "stop")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("terminate")
    rt.drain(ONLY_ADVANCE)  # the handler runs stay queued: both tasks are READY
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    tasks = {t.node_id: t.state for t in rows.tasks_of(db, iid)}
    assert tasks == {"slow": "CANCELLED", "slower": "CANCELLED"}
    by_node = {t.node_id: t.state for t in rows.tokens_of(db, iid) if t.parent_token_id}
    assert by_node == {"slow": "CANCELLED", "slower": "CANCELLED", "stop": "COMPLETED"}
    assert len(events_named(db, iid, "ScopeTerminated")) == 1

    outcomes = rt.drain()  # the lost race: queued handler runs find their task cancelled
    assert outcomes == ["stale", "stale"]
    assert (calls.count("slow"), calls.count("slower")) == (0, 0)
    assert_finished_cleanly(db, iid)


def test_terminate_cancels_a_branch_parked_at_a_join(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("a")
    rt = _queue_handlers(engine_factory)
    doc = (
        ProcessBuilder("terminate_join")
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .service_task("a", handler="a")
        .task("b")
        .end()
        .service_task("gate", handler="a")
        .end("stop", terminate=True)
        .sequence("start", "fork", "a", "join")
        .sequence("fork", "b", "join")
        .sequence("join", "end")
        .sequence("fork", "gate", "stop")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("terminate_join")
    rt.drain(ONLY_ADVANCE)
    db = rt.engine.db
    gate = rows.only_task(db, iid, "gate")
    rt.engine.run_handler(gate.id)  # b is parked at the join, a is READY
    rt.drain(ONLY_ADVANCE)

    assert_finished_cleanly(db, iid)
    by_node = {t.node_id: t.state for t in rows.tokens_of(db, iid) if t.parent_token_id}
    assert by_node == {"a": "CANCELLED", "join": "CANCELLED", "stop": "COMPLETED"}
    assert events_named(db, iid, "JoinFired") == []


def test_terminate_inside_a_subprocess_ends_only_that_scope(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("inner")
    calls.add("outer")
    calls.add("after_sub")
    rt = _queue_handlers(engine_factory)
    body = (
        ProcessBuilder("body")
        .start("s_start")
        .parallel_gateway("s_fork")
        .service_task("inner", handler="inner")
        .end("s_end")
        .end("s_stop", terminate=True)
        .sequence("s_start", "s_fork", "inner", "s_end")
        .sequence("s_fork", "s_stop")
    )
    doc = (
        ProcessBuilder("terminate_sub")
        .start()
        .parallel_gateway("fork")
        .parallel_gateway("join")
        .sub_process("sub", body)
        .service_task("after_sub", handler="after_sub")
        .service_task("outer", handler="outer")
        .end()
        .sequence("start", "fork", "sub", "after_sub", "join")
        .sequence("fork", "outer", "join")
        .sequence("join", "end")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("terminate_sub")
    rt.drain(ONLY_ADVANCE)
    db = rt.engine.db

    tasks = {t.node_id: t.state for t in rows.tasks_of(db, iid)}
    assert tasks == {"inner": "CANCELLED", "outer": "READY", "after_sub": "READY"}
    assert rows.state(db, iid) == "RUNNING"
    (terminated,) = events_named(db, iid, "ScopeTerminated")
    assert terminated["node_id"] == "s_stop"

    rt.drain()
    assert_finished_cleanly(db, iid)
    assert [calls.count(n) for n in ("inner", "outer", "after_sub")] == [0, 1, 1]
    assert len(events_named(db, iid, "JoinFired")) == 1


def test_terminate_at_top_level_without_fork(rt: Harness) -> None:
    doc = (
        ProcessBuilder("terminate_plain")
        .start()
        .end("stop", terminate=True)
        .sequence("start", "stop")
        .build()
    )
    iid = rt.run(doc)
    assert_finished_cleanly(rt.engine.db, iid)


def test_error_end_event_fails_token_and_instance(rt: Harness) -> None:
    doc = (
        ProcessBuilder("error_end")
        .start()
        .task("check")
        .end("bad", error="E_BAD")
        .sequence("start", "check", "bad")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db

    assert rows.state(db, iid) == "FAILED"
    (tok,) = rows.tokens_of(db, iid)
    assert (tok.node_id, tok.state) == ("bad", "FAILED")
    (incident,) = rows.incidents_of(db, iid)
    assert incident.state == "OPEN" and incident.node_id == "bad"
    assert "'bad'" in incident.message and "E_BAD" in incident.message
    assert rows.engine_event_types(db, iid) == [
        "InstanceStarted",
        "TokenFailed",
        "IncidentOpened",
        "InstanceFailed",
    ]
    assert_history_consistent(db, iid)


def test_error_end_event_in_one_branch_leaves_the_other_running(
    engine_factory: EngineFactory, calls: Calls
) -> None:
    calls.add("other")
    rt = _queue_handlers(engine_factory)
    doc = (
        ProcessBuilder("error_branch")
        .start()
        .parallel_gateway("fork")
        .end("bad", error="E")
        .service_task("other", handler="other")
        .end()
        .sequence("start", "fork", "bad")
        .sequence("fork", "other", "end")
        .build()
    )
    rt.deploy(doc)
    iid = rt.start("error_branch")
    rt.drain()
    db = rt.engine.db

    assert rows.state(db, iid) == "FAILED"
    assert calls.count("other") == 1
    states = sorted((t.node_id, t.state) for t in rows.tokens_of(db, iid))
    assert states == [("bad", "FAILED"), ("end", "COMPLETED"), ("fork", "WAITING")]
    assert_history_consistent(db, iid)


def test_queued_jobs_are_ids_only(engine_factory: EngineFactory, calls: Calls) -> None:
    """Messages carry ids, never state."""
    calls.add("work")
    rt = _queue_handlers(engine_factory)
    rt.deploy(fork_one_join("ids_only", branches=2))
    rt.start("ids_only")
    for job in rt.queued():
        assert job.name in (ADVANCE_TOKEN, RUN_HANDLER)
        assert set(job.args) <= {"token_id", "expected_version", "task_id"}


def test_a_terminate_that_cancels_a_failed_branch_resumes_the_instance(rt: Harness) -> None:
    """The failed branch's incident goes with it; the instance must not stay FAILED with
    nothing for an operator to retry while it runs on."""

    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .parallel_gateway("fork")
        .service_task("a", topic="ta")
        .user_task("go")
        .end("i_end")
        .end("i_stop", terminate=True)
        .sequence("i_start", "fork")
        .sequence("fork", "a", "i_end")
        .sequence("fork", "go", "i_stop")
    )
    doc = (
        ProcessBuilder("term_failed")
        .start()
        .sub_process("sub", inner)
        .user_task("after")
        .end()
        .sequence("start", "sub", "after", "end")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db
    rt.fail_for_good("ta")
    assert rows.state(db, iid) == "FAILED"
    rt.complete_user_task(iid)  # "go": the terminate
    assert rows.state(db, iid) == "RUNNING"
    assert not rows.incidents_of(db, iid, only_open=True)
    assert [t.node_id for t in rows.live_tokens(db, iid)] == ["after"]
    rt.complete_user_task(iid)  # "after"
    assert_finished_cleanly(db, iid)


def test_a_terminate_on_a_non_interrupting_boundary_path_ends_the_whole_scope(rt: Harness) -> None:
    """The path the boundary started is in the same scope as the activity it is attached
    to: terminating there ends that activity too, and the instance completes."""
    doc = (
        ProcessBuilder("term_spawned")
        .start()
        .user_task("main")
        .timer_boundary("nudge", attached_to="main", duration="PT1M", interrupting=False)
        .end()
        .end("stop", terminate=True)
        .sequence("start", "main", "end")
        .flow("nudge", "stop")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=2))
    db = rt.engine.db
    assert_finished_cleanly(db, iid)
    assert {t.node_id: t.state for t in rows.tasks_of(db, iid)} == {"main": "CANCELLED"}
    assert len(events_named(db, iid, "ScopeTerminated")) == 1


def test_a_terminate_on_a_subprocess_boundary_path_ends_the_outer_scope(rt: Harness) -> None:
    """The boundary's path runs in the scope around the subprocess: terminating there ends
    the subprocess and everything after it, rather than letting it go on as if done."""
    inner = (
        ProcessBuilder("i")
        .start("i_start")
        .user_task("inside")
        .end("i_end")
        .sequence("i_start", "inside", "i_end")
    )
    doc = (
        ProcessBuilder("term_sub_spawned")
        .start()
        .sub_process("sub", inner)
        .timer_boundary("nudge", attached_to="sub", duration="PT1M", interrupting=False)
        .user_task("after")
        .end()
        .end("stop", terminate=True)
        .sequence("start", "sub", "after", "end")
        .flow("nudge", "stop")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=2))
    db = rt.engine.db
    assert_finished_cleanly(db, iid)
    assert {t.node_id: t.state for t in rows.tasks_of(db, iid)} == {"inside": "CANCELLED"}
    assert "after" not in {t.node_id for t in rows.tokens_of(db, iid)}


def test_a_terminate_on_a_boundary_path_of_a_branch_ends_every_branch(rt: Harness) -> None:
    doc = (
        ProcessBuilder("term_branch_spawned")
        .start()
        .parallel_gateway("fork")
        .user_task("a")
        .user_task("b")
        .parallel_gateway("join")
        .end()
        .timer_boundary("nudge", attached_to="a", duration="PT1M", interrupting=False)
        .end("stop", terminate=True)
        .sequence("start", "fork")
        .sequence("fork", "a", "join")
        .sequence("fork", "b", "join")
        .sequence("join", "end")
        .flow("nudge", "stop")
        .build()
    )
    iid = rt.run(doc)
    rt.pass_time(timedelta(minutes=2))
    db = rt.engine.db
    assert_finished_cleanly(db, iid)
    assert {t.node_id: t.state for t in rows.tasks_of(db, iid)} == {
        "a": "CANCELLED",
        "b": "CANCELLED",
    }


def test_a_terminate_on_a_boundary_path_ends_a_failed_activity_with_its_incident(
    rt: Harness,
) -> None:
    """The activity the boundary is attached to had failed (an incident, the instance
    FAILED): terminating the scope ends it, resolves its incident, and completes cleanly."""

    doc = (
        ProcessBuilder("term_failed_root")
        .start()
        .service_task("work", topic="t")
        .timer_boundary("nudge", attached_to="work", duration="PT1M", interrupting=False)
        .user_task("remind")
        .end()
        .end("stop", terminate=True)
        .sequence("start", "work", "end")
        .sequence("nudge", "remind", "stop")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db
    rt.pass_time(timedelta(minutes=2))
    rt.fail_for_good("t")
    assert rows.state(db, iid) == "FAILED"
    rt.complete_user_task(iid)  # "remind": the terminate
    assert_finished_cleanly(db, iid)
    assert not rows.incidents_of(db, iid, only_open=True)
