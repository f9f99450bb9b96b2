"""Saga compensation.

Handlers record the order they ran in; every test checks that exactly the succeeded activities
in scope are compensated, once each, latest success first, and what the instance ends as.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.parse.document import compile_definition
from bpm.errors import BpmnError, InvalidDefinition
from bpm.handlers import HandlerContext
from bpm.store import Database, compensation
from tests.helpers import db as rows
from tests.helpers import processes
from tests.helpers.invariants import assert_history_consistent
from tests.helpers.journal import Journal
from tests.helpers.runtime import Calls, Harness, failing


@pytest.fixture
def journal() -> Journal:
    return Journal()


def comp(handler: str) -> dict[str, Any]:
    return {"handler": handler}


def abc(saga: str = "global", *, fail_at: str = "c") -> dict[str, Any]:
    """A -> B -> C, each with an undo handler; ``fail_at`` has a handler that always fails."""
    b = ProcessBuilder("abc", saga=saga).start()
    for step in ("a", "b", "c"):
        b._node(
            step,
            "serviceTask",
            handler="boom" if step == fail_at else f"do_{step}",
            compensation=comp(f"undo_{step}"),
        )
    return b.end().sequence("start", "a", "b", "c", "end").build()


def register(journal: Journal, calls: Calls, *names: str) -> None:
    for name in names:
        journal.add(calls, name)
    journal.add(calls, "boom", failing(1000, "boom"))


def records(db: Database, iid: UUID) -> list[tuple[str, int, str]]:
    with db.transaction() as conn:
        return [(r.node_id, r.seq, r.status) for r in compensation.of_instance(conn, iid)]


def saga_events(db: Database, iid: UUID) -> list[str]:
    wanted = {
        "TokenFailed",
        "SagaStarted",
        "CompensationTokenCreated",
        "CompensationCompleted",
        "CompensationFailed",
        "SagaCompleted",
        "InstanceTerminated",
    }
    return [e for e in rows.engine_event_types(db, iid) if e in wanted]


def test_a_b_c_failing_at_c_compensates_b_then_a_and_terminates(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_b", "undo_a", "undo_b", "undo_c")
    iid = rt.run(abc())
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_b", "boom", "undo_b", "undo_a"]
    assert rows.state(db, iid) == "TERMINATED"
    assert [(n, s) for n, _, s in records(db, iid)] == [("a", "COMPLETED"), ("b", "COMPLETED")]
    seqs = [q for _, q, _ in records(db, iid)]
    assert seqs == sorted(seqs) and len(set(seqs)) == 2
    assert saga_events(db, iid) == [
        "TokenFailed",
        "SagaStarted",
        "CompensationTokenCreated",
        "CompensationCompleted",
        "CompensationTokenCreated",
        "CompensationCompleted",
        "SagaCompleted",
        "InstanceTerminated",
    ]
    assert rows.incidents_of(db, iid) == []
    compensation_tokens = [t for t in rows.tokens_of(db, iid) if t.mode == "COMPENSATION"]
    assert {t.state for t in compensation_tokens} == {"COMPLETED"}
    assert_history_consistent(db, iid)


def test_a_step_that_succeeds_after_retries_is_compensated_once(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "undo_a", "undo_b")
    journal.add(calls, "do_b", failing(2))
    doc = abc()
    doc["nodes"][2]["retry"] = {"max_attempts": 3, "backoff": "PT1S"}
    iid = rt.run(doc)
    assert journal.lines == ["do_a", "do_b", "do_b", "do_b", "boom", "undo_b", "undo_a"]
    assert [n for n, _, _ in records(rt.engine.db, iid)] == ["a", "b"]


def test_without_a_saga_scope_a_failure_is_an_incident(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_b", "undo_a", "undo_b")
    iid = rt.run(abc("none"))
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_b", "boom"]
    assert rows.state(db, iid) == "FAILED"
    assert len(rows.incidents_of(db, iid)) == 1
    assert [s for _, _, s in records(db, iid)] == ["PENDING", "PENDING"]  # kept, not run


def test_a_bpmn_error_from_a_compensation_is_not_caught_by_the_activitys_boundary(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """The error boundary on B belongs to B's forward run: undoing B and failing with the
    code it catches is a failed compensation (an incident), not a jump to its path."""
    register(journal, calls, "do_a", "do_b", "undo_a")

    def refuse(ctx: HandlerContext) -> None:
        raise BpmnError("NOPE", "cannot undo")

    journal.add(calls, "undo_b", refuse)
    doc = abc()
    doc["nodes"] += [
        {"id": "eb", "type": "boundaryEvent", "attachedTo": "b", "error": "NOPE"},
        {"id": "eb_end", "type": "endEvent"},
    ]
    doc["flows"].append({"id": "eb_flow", "source": "eb", "target": "eb_end"})
    iid = rt.run(doc)
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_b", "boom", "undo_b", "undo_a"]
    assert rows.state(db, iid) == "TERMINATED"
    (incident,) = rows.incidents_of(db, iid, only_open=True)
    assert incident.kind == "compensation" and "NOPE" in incident.message
    assert "eb_end" not in {t.node_id for t in rows.tokens_of(db, iid)}
    assert_history_consistent(db, iid)


def test_a_failing_compensation_opens_an_incident_and_the_saga_goes_on(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_b", "undo_a")
    journal.add(calls, "undo_b", failing(1, "cannot undo"))
    iid = rt.run(abc())
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_b", "boom", "undo_b", "undo_a"]
    assert rows.state(db, iid) == "TERMINATED"
    assert [(n, s) for n, _, s in records(db, iid)] == [("a", "COMPLETED"), ("b", "FAILED")]
    (incident,) = rows.incidents_of(db, iid, only_open=True)
    assert incident.kind == "compensation" and "cannot undo" in incident.message
    assert "CompensationFailed" in saga_events(db, iid)

    assert incident.token_id is not None
    rt.engine.retry(incident.token_id)  # the operator retries it; now it works
    rt.drain()
    assert journal.lines[-1] == "undo_b"
    assert [(n, s) for n, _, s in records(db, iid)] == [("a", "COMPLETED"), ("b", "COMPLETED")]
    assert rows.incidents_of(db, iid, only_open=True) == []
    assert rows.state(db, iid) == "TERMINATED"
    assert_history_consistent(db, iid)


def test_an_operator_can_mark_a_failed_compensation_resolved(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_b", "undo_a")
    journal.add(calls, "undo_b", failing(1000, "cannot undo"))
    iid = rt.run(abc())
    db = rt.engine.db
    (incident,) = rows.incidents_of(db, iid, only_open=True)
    rt.engine.resolve(incident.id, note="refunded by hand")
    assert rows.incidents_of(db, iid, only_open=True) == []
    assert "OperatorResolved" in rows.engine_event_types(db, iid)
    assert rows.state(db, iid) == "TERMINATED"


def test_parallel_branches_compensate_what_they_completed_interleaved_by_seq(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """Branch x does x1 then x2; branch y does y1 then fails; x2 is still waiting on a worker,
    so it is cancelled and only x1 and y1 are compensated, latest success first."""
    register(journal, calls, "do_x1", "do_y1", "undo_x1", "undo_y1", "undo_x2")
    b = ProcessBuilder("par", saga="global").start().parallel_gateway("fork")
    b._node("x1", "serviceTask", handler="do_x1", compensation=comp("undo_x1"))
    b._node("x2", "serviceTask", topic="slow", compensation=comp("undo_x2"))
    b._node("y1", "serviceTask", handler="do_y1", compensation=comp("undo_y1"))
    b._node("y2", "serviceTask", handler="boom")
    doc = (
        b.parallel_gateway("join")
        .end()
        .sequence("start", "fork", "x1", "x2", "join")
        .sequence("fork", "y1", "y2", "join")
        .sequence("join", "end")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db
    order = [n for n, _, _ in records(db, iid)]
    assert sorted(order) == ["x1", "y1"]
    undo = [line for line in journal.lines if line.startswith("undo_")]
    assert undo == [f"undo_{n}" for n in reversed(order)]
    assert rows.state(db, iid) == "TERMINATED"
    x2 = rows.only_task(db, iid, "x2")
    assert x2.state == "CANCELLED"


def local_doc(*, boundary: bool) -> dict[str, Any]:
    inner = ProcessBuilder("inner", saga="local").start("s_start")
    inner._node("s1", "serviceTask", handler="do_s1", compensation=comp("undo_s1"))
    inner._node("s2", "serviceTask", handler="boom")
    inner.end("s_end").sequence("s_start", "s1", "s2", "s_end")
    b = ProcessBuilder("local").start()
    b._node("a", "serviceTask", handler="do_a", compensation=comp("undo_a"))
    b._node(
        "sub",
        "subProcess",
        saga="local",
        nodes=inner.build()["nodes"],
        flows=inner.build()["flows"],
    )
    b.end()
    if boundary:
        b.error_boundary("compensated", attached_to="sub", error="SAGA_COMPENSATED")
        b._node("apologise", "serviceTask", handler="apologise")
        b.end("sorry").sequence("compensated", "apologise", "sorry")
    return b.sequence("start", "a", "sub", "end").build()


def test_a_local_saga_compensates_its_subprocess_then_the_boundary_takes_over(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_s1", "undo_s1", "undo_a", "apologise")
    iid = rt.run(local_doc(boundary=True))
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_s1", "boom", "undo_s1", "apologise"]
    assert rows.state(db, iid) == "COMPLETED"
    assert [(n, s) for n, _, s in records(db, iid)] == [("a", "PENDING"), ("s1", "COMPLETED")]
    assert_history_consistent(db, iid)


def test_a_local_saga_without_a_boundary_fails_outward_to_the_process_policy(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_s1", "undo_s1", "undo_a")
    iid = rt.run(local_doc(boundary=False))  # the process has saga none: an incident
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_s1", "boom", "undo_s1"]
    assert rows.state(db, iid) == "FAILED"
    (incident,) = rows.incidents_of(db, iid, only_open=True)
    assert incident.node_id == "sub" and incident.kind == "saga"


def test_nested_scopes_local_inside_global(rt: Harness, calls: Calls, journal: Journal) -> None:
    register(journal, calls, "do_a", "do_s1", "undo_s1", "undo_a")
    doc = local_doc(boundary=False)
    doc["saga"] = "global"
    iid = rt.run(doc)
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_s1", "boom", "undo_s1", "undo_a"]
    assert rows.state(db, iid) == "TERMINATED"
    assert saga_events(db, iid).count("SagaStarted") == 2
    assert saga_events(db, iid).count("SagaCompleted") == 2


def test_a_duplicate_run_compensation_is_a_no_op(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "do_a", "do_b", "undo_a", "undo_b")
    rt.deploy(abc())
    iid = rt.start("abc")
    outcomes = []
    from bpm.dispatch import RUN_COMPENSATION

    for _ in range(100):
        job = rt.queue.pop(rt.clock.peek())
        if job is None:
            break
        outcomes.append(rt.engine.run_job(job))
        if job.name == RUN_COMPENSATION:
            outcomes.append(rt.engine.run_job(job))  # delivered twice
    assert journal.lines == ["do_a", "do_b", "boom", "undo_b", "undo_a"]
    assert outcomes.count("stale") == 2
    assert rows.state(rt.engine.db, iid) == "TERMINATED"


# --- thrown compensation ---------------------------------------------------------------------


def thrown(kind: str, activity: str | None = None) -> dict[str, Any]:
    b = ProcessBuilder("thrown").start()
    b._node("a", "serviceTask", handler="do_a", compensation=comp("undo_a"))
    b._node("b", "serviceTask", handler="do_b", compensation=comp("undo_b"))
    if kind == "intermediate":
        b._node("undo", "compensationThrow", activity=activity)
        b._node("after", "serviceTask", handler="after")
        b.end()
        b.sequence("start", "a", "b", "undo", "after", "end")
    else:
        b._node("end", "endEvent", compensate=True, activity=activity)
        b.sequence("start", "a", "b", "end")
    return b.build()


@pytest.mark.parametrize(
    ("kind", "activity", "undone"),
    [
        ("intermediate", None, ["undo_b", "undo_a", "after"]),
        ("intermediate", "a", ["undo_a", "after"]),
        ("end", None, ["undo_b", "undo_a"]),
        ("end", "b", ["undo_b"]),
    ],
)
def test_thrown_compensation_compensates_then_goes_on(
    rt: Harness, calls: Calls, journal: Journal, kind: str, activity: str | None, undone: list[str]
) -> None:
    register(journal, calls, "do_a", "do_b", "undo_a", "undo_b", "after")
    iid = rt.run(thrown(kind, activity))
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_b", *undone]
    assert rows.state(db, iid) == "COMPLETED"
    assert "SagaStarted" not in rows.engine_event_types(db, iid)
    assert_history_consistent(db, iid)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"saga": "partial"}, "'saga' must be none, local or global"),
    ],
)
def test_bad_saga_definitions_are_refused(change: dict[str, Any], message: str) -> None:
    doc = abc()
    doc.update(change)
    with pytest.raises(InvalidDefinition, match=message):
        compile_definition(doc)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            {"id": "a", "type": "serviceTask", "handler": "x", "compensation": {}},
            "exactly one of 'handler', 'topic' or 'node'",
        ),
        (
            {"id": "a", "type": "serviceTask", "handler": "x", "compensation": {"node": "nowhere"}},
            "must be a serviceTask, userTask, task or manualTask of the same scope",
        ),
        (
            {
                "id": "a",
                "type": "serviceTask",
                "handler": "x",
                "compensation": {"handler": "y", "retry": {"max_attempt": 2}},
            },
            "unknown key",
        ),
    ],
)
def test_bad_compensations_are_refused_naming_the_node(node: dict[str, Any], message: str) -> None:
    doc = abc()
    doc["nodes"][1] = node
    with pytest.raises(InvalidDefinition, match=message) as caught:
        compile_definition(doc)
    assert caught.value.element == "a"


# --- other compensation forms, listeners ---------------------------------------------------


def test_compensation_by_topic_and_by_a_user_task_handler_activity(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    from datetime import timedelta

    from bpm.engine.operations.external import TopicRequest

    register(journal, calls, "do_a")
    b = ProcessBuilder("forms", saga="global").start()
    b._node("a", "serviceTask", handler="do_a", compensation={"node": "undo_a_by_hand"})
    b._node("undo_a_by_hand", "userTask", candidate_groups=["ops"])
    b._node("charge", "serviceTask", topic="payments", compensation={"topic": "refunds"})
    b._node("ship", "serviceTask", handler="boom")
    iid = rt.run(b.end().sequence("start", "a", "charge", "ship", "end").build())
    (charge,) = rt.engine.fetch_and_lock("pay", [TopicRequest("payments", timedelta(minutes=1))])
    rt.engine.complete(charge.id, "pay", {"charged": 10})
    rt.drain()
    (refund,) = rt.engine.fetch_and_lock("pay", [TopicRequest("refunds", timedelta(minutes=1))])
    assert refund.node_id == "charge"
    assert rt.engine.user_tasks(group="ops") == []  # one at a time: the refund comes first
    rt.engine.complete(refund.id, "pay", {})
    rt.drain()
    (by_hand,) = rt.engine.user_tasks(group="ops")
    assert by_hand["node_id"] == "a"
    rt.engine.complete_user_task(by_hand["id"], {"undone": True})
    rt.drain()
    db = rt.engine.db
    assert rows.state(db, iid) == "TERMINATED"
    assert [(n, s) for n, _, s in records(db, iid)] == [("a", "COMPLETED"), ("charge", "COMPLETED")]
    assert_history_consistent(db, iid)


def test_listeners_get_the_saga_events_after_commit(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    from bpm.events import SAGA_EVENTS, EventListeners

    register(journal, calls, "do_a", "do_b", "undo_a", "undo_b")
    seen: list[tuple[str, str | None]] = []
    listeners = EventListeners()
    for kind in SAGA_EVENTS:
        listeners.add(kind, lambda e: seen.append((e["type"], e["node_id"])))

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError(f"listener bug on {event['type']}")

    listeners.add("SagaCompleted", broken)  # a broken listener changes nothing
    rt.engine.core.listeners = listeners
    iid = rt.run(abc())
    assert seen == [
        ("TokenFailed", "c"),
        ("SagaStarted", "c"),
        ("CompensationTokenCreated", "b"),
        ("CompensationCompleted", "b"),
        ("CompensationTokenCreated", "a"),
        ("CompensationCompleted", "a"),
        ("SagaCompleted", "c"),
    ]
    assert rows.state(rt.engine.db, iid) == "TERMINATED"


# --- processes the tests have never seen -------------------------------------------------------


def random_saga(seed: int) -> tuple[dict[str, Any], str]:
    """A global saga over a random mix of steps and parallel branches, failing at one step;
    each step has its own handler ``do_NAME`` and most an ``undo_NAME``."""

    def step(name: str, undoable: bool) -> dict[str, Any]:
        return {
            "handler": f"do_{name}",
            **({"compensation": comp(f"undo_{name}")} if undoable else {}),
        }

    return processes.random_saga(seed, f"rnd{seed}", step)


@pytest.mark.parametrize("seed", range(12))
def test_random_sagas_compensate_exactly_the_succeeded_steps_in_reverse_order(
    rt: Harness, calls: Calls, journal: Journal, seed: int
) -> None:
    doc, failing_step = random_saga(seed)
    for node in doc["nodes"]:
        if node["type"] != "serviceTask":
            continue
        if node["id"] == failing_step:
            node["handler"] = "boom"
        journal.add(calls, node["handler"])
        if "compensation" in node:
            journal.add(calls, node["compensation"]["handler"])
    journal.add(calls, "boom", failing(1000))
    iid = rt.run(doc)
    db = rt.engine.db
    compensable = {n["id"] for n in doc["nodes"] if "compensation" in n}
    succeeded = [line[3:] for line in journal.lines if line.startswith("do_")]
    recorded = records(db, iid)
    assert sorted(n for n, _, _ in recorded) == sorted(s for s in succeeded if s in compensable)
    assert all(status == "COMPLETED" for _, _, status in recorded)
    undone = [line[5:] for line in journal.lines if line.startswith("undo_")]
    assert undone == [n for n, _, _ in sorted(recorded, key=lambda r: -r[1])]
    assert rows.state(db, iid) == "TERMINATED"
    assert_history_consistent(db, iid)


def test_a_lost_nudge_between_compensations_is_recovered_by_the_scan(
    rt: Harness, calls: Calls, journal: Journal, engine_factory: Any
) -> None:
    """A worker dies right after a compensation committed, before the saga went on."""
    from datetime import timedelta

    from bpm.dispatch import RUN_COMPENSATION, DroppingDispatcher

    register(journal, calls, "do_a", "do_b", "undo_a", "undo_b")
    rt.deploy(abc())
    iid = rt.start("abc")
    rt.drain(only=frozenset({"bpm.advance_token", "bpm.run_handler"}))
    (job,) = [j for j in rt.queued() if j.name == RUN_COMPENSATION]
    dying = engine_factory(DroppingDispatcher(), chain_limit=2)  # stops after undo_b commits
    dying.engine.run_job(job)
    assert journal.lines[-1] == "undo_b"
    rt.queue.pop(rt.clock.peek())  # that job is gone with its worker
    rt.clock.advance(timedelta(minutes=1))
    assert rt.engine.run_scans()["waiting_parents"] == 1
    rt.drain()
    assert journal.lines[-2:] == ["undo_b", "undo_a"]
    assert rows.state(rt.engine.db, iid) == "TERMINATED"


def test_a_completed_user_task_is_compensated_by_its_handler(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    register(journal, calls, "undo_review")
    b = ProcessBuilder("review_saga", saga="global").start()
    b._node("review", "userTask", compensation=comp("undo_review"))
    b._node("ship", "serviceTask", handler="boom")
    iid = rt.run(b.end().sequence("start", "review", "ship", "end").build())
    (task,) = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {"approved": True})
    rt.drain()
    assert journal.lines == ["boom", "undo_review"]
    assert rt.engine.user_tasks(instance_id=iid) == []  # no second user task was created
    assert rows.state(rt.engine.db, iid) == "TERMINATED"


def test_a_subprocess_with_its_own_compensation_is_undone_by_it_alone(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """BPMN: the subprocess's handler replaces the handlers of the activities inside it."""
    register(journal, calls, "do_a", "do_s1", "undo_a", "undo_s1", "undo_sub")
    inner = ProcessBuilder("inner").start("s_start")
    inner._node("s1", "serviceTask", handler="do_s1", compensation=comp("undo_s1"))
    inner.end("s_end").sequence("s_start", "s1", "s_end")
    built = inner.build()
    b = ProcessBuilder("covered", saga="global").start()
    b._node("a", "serviceTask", handler="do_a", compensation=comp("undo_a"))
    b._node(
        "sub",
        "subProcess",
        nodes=built["nodes"],
        flows=built["flows"],
        compensation=comp("undo_sub"),
    )
    b._node("ship", "serviceTask", handler="boom")
    iid = rt.run(b.end().sequence("start", "a", "sub", "ship", "end").build())
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_s1", "boom", "undo_sub", "undo_a"]
    assert rows.state(db, iid) == "TERMINATED"
    statuses = {n: s for n, _, s in records(db, iid)}
    assert statuses == {"a": "COMPLETED", "s1": "PENDING", "sub": "COMPLETED"}
    assert_history_consistent(db, iid)


def _nested_body() -> dict[str, Any]:
    """sub: s1 -> inner (subprocess: s2) -> s_end, no compensation of their own but s1, s2."""
    deep = ProcessBuilder("deep").start("d_start")
    deep._node("s2", "serviceTask", handler="do_s2", compensation=comp("undo_s2"))
    deep.end("d_end").sequence("d_start", "s2", "d_end")
    body = ProcessBuilder("body").start("s_start")
    body._node("s1", "serviceTask", handler="do_s1", compensation=comp("undo_s1"))
    built = deep.build()
    body._node("inner", "subProcess", nodes=built["nodes"], flows=built["flows"])
    body.end("s_end").sequence("s_start", "s1", "inner", "s_end")
    return body.build()


def test_compensating_a_subprocess_without_a_handler_undoes_what_ran_inside_it(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """BPMN 2.0 13.5.5: activity outside the subprocess stays, inner ones (any depth) are
    undone latest first."""
    register(journal, calls, "do_a", "do_s1", "do_s2", "undo_a", "undo_s1", "undo_s2", "after")
    body = _nested_body()
    b = ProcessBuilder("inside").start()
    b._node("a", "serviceTask", handler="do_a", compensation=comp("undo_a"))
    b._node("sub", "subProcess", nodes=body["nodes"], flows=body["flows"])
    b._node("undo", "compensationThrow", activity="sub")
    b._node("after", "serviceTask", handler="after")
    iid = rt.run(b.end().sequence("start", "a", "sub", "undo", "after", "end").build())
    db = rt.engine.db
    assert journal.lines == ["do_a", "do_s1", "do_s2", "undo_s2", "undo_s1", "after"]
    assert rows.state(db, iid) == "COMPLETED"
    assert {n: s for n, _, s in records(db, iid)} == {
        "a": "PENDING",
        "s1": "COMPLETED",
        "s2": "COMPLETED",
    }
    assert_history_consistent(db, iid)


def test_a_throw_naming_a_subprocess_with_nothing_to_undo_inside_is_refused() -> None:
    inner = ProcessBuilder("inner").start("s_start")
    inner._node("s1", "serviceTask", handler="do_s1")
    built = inner.end("s_end").sequence("s_start", "s1", "s_end").build()
    b = ProcessBuilder("nothing").start()
    b._node("sub", "subProcess", nodes=built["nodes"], flows=built["flows"])
    b._node("undo", "compensationThrow", activity="sub")
    with pytest.raises(InvalidDefinition, match="or a subProcess with such an activity inside"):
        compile_definition(b.end().sequence("start", "sub", "undo", "end").build())


def local_saga_with_a_reminder(key: str, *, first_fails: bool = False) -> dict[str, Any]:
    """A local-saga subprocess: s1 (undone by undo_s1) then s2, an external task the test
    fails; a non-interrupting timer on the subprocess starts a reminder path outside it."""
    inner = ProcessBuilder("inner", saga="local").start("s_start")
    if first_fails:
        inner.service_task("s2", topic="t_s2").end("s_end").sequence("s_start", "s2", "s_end")
    else:
        inner._node("s1", "serviceTask", handler="do_s1", compensation=comp("undo_s1"))
        inner.service_task("s2", topic="t_s2").end("s_end")
        inner.sequence("s_start", "s1", "s2", "s_end")
    body = inner.build()
    b = ProcessBuilder(key).start()
    b._node("sub", "subProcess", saga="local", nodes=body["nodes"], flows=body["flows"])
    b.timer_boundary("remind_t", attached_to="sub", duration="PT1M", interrupting=False)
    b.error_boundary("compensated", attached_to="sub", error="SAGA_COMPENSATED")
    return (
        b.user_task("remind")
        .end("reminded")
        .end()
        .end("sorry")
        .sequence("start", "sub", "end")
        .sequence("remind_t", "remind", "reminded")
        .flow("compensated", "sorry")
        .build()
    )


def test_a_local_saga_leaves_the_path_of_its_subprocess_non_interrupting_boundary_alone(
    rt: Harness, calls: Calls, journal: Journal
) -> None:
    """The reminder runs outside the subprocess: the saga neither cancels it nor undoes what
    it did."""
    from datetime import timedelta

    from bpm.engine.operations.external import TopicRequest

    register(journal, calls, "do_s1", "undo_s1")
    iid = rt.run(local_saga_with_a_reminder("saga_reminder"))
    db = rt.engine.db
    rt.pass_time(timedelta(minutes=2))
    [t2] = rt.engine.fetch_and_lock("w", [TopicRequest("t_s2", timedelta(minutes=5))])
    rt.engine.fail(t2.id, "w", "broken", retries=0)
    rt.drain()
    assert journal.lines == ["do_s1", "undo_s1"]
    live = {t.node_id: t.state for t in rows.live_tokens(db, iid) if t.mode == "FORWARD"}
    assert live.get("remind") == "WAITING"
    [remind] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(remind["id"])
    rt.drain()
    assert rows.state(db, iid) == "COMPLETED"
    assert_history_consistent(db, iid)


def test_a_local_saga_with_nothing_to_undo_goes_on_at_once(rt: Harness) -> None:
    """No scan needed: the subprocess's boundary path is sent on in the same transaction."""
    from datetime import timedelta

    from bpm.engine.operations.external import TopicRequest

    iid = rt.run(local_saga_with_a_reminder("saga_nothing", first_fails=True))
    [t2] = rt.engine.fetch_and_lock("w", [TopicRequest("t_s2", timedelta(minutes=5))])
    rt.engine.fail(t2.id, "w", "broken", retries=0)
    rt.drain()  # jobs only: no scans run
    assert rows.state(rt.engine.db, iid) == "COMPLETED"
    ends = {t.node_id for t in rows.tokens_of(rt.engine.db, iid) if t.state == "COMPLETED"}
    assert "sorry" in ends


def test_a_local_saga_over_a_failed_branch_leaves_no_failed_token_behind(rt: Harness) -> None:
    """The branch that failed is not a direct child of the subprocess (it hangs from the
    fork's scope token); once the saga is over it is CANCELLED, not FAILED forever."""
    from datetime import timedelta

    from bpm.engine.operations.external import TopicRequest

    inner = ProcessBuilder("inner", saga="local").start("s_start").parallel_gateway("f")
    inner.service_task("a", topic="ta").user_task("b").parallel_gateway("j").end("s_end")
    inner.sequence("s_start", "f").sequence("f", "a", "j").sequence("f", "b", "j")
    body = inner.sequence("j", "s_end").build()
    b = ProcessBuilder("saga_branch").start()
    b._node("sub", "subProcess", saga="local", nodes=body["nodes"], flows=body["flows"])
    b.error_boundary("compensated", attached_to="sub", error="SAGA_COMPENSATED")
    doc = b.end().end("sorry").sequence("start", "sub", "end").flow("compensated", "sorry").build()
    iid = rt.run(doc)
    [task] = rt.engine.fetch_and_lock("w", [TopicRequest("ta", timedelta(minutes=5))])
    rt.engine.fail(task.id, "w", "broken", retries=0)
    rt.drain()
    db = rt.engine.db
    assert rows.state(db, iid) == "COMPLETED"
    assert [t.node_id for t in rows.tokens_of(db, iid) if t.state == "FAILED"] == []
    assert not rows.incidents_of(db, iid, only_open=True)
    assert_history_consistent(db, iid)
