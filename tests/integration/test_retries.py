"""Handler failures: retries with backoff, incidents, operator retry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from bpm.definitions import ProcessBuilder
from bpm.errors import BpmnError, InvalidOperation, NotFound
from bpm.handlers import HandlerContext
from tests.helpers import db as rows
from tests.helpers.invariants import (
    assert_finished_cleanly,
    assert_history_consistent,
    snapshot,
)
from tests.helpers.processes import exclusive, single_task
from tests.helpers.runtime import (
    ALL_JOBS,
    ONLY_ADVANCE,
    Calls,
    EngineFactory,
    Harness,
    failing,
)

RETRY = {"max_attempts": 5, "backoff": "PT2S", "factor": 3, "max_backoff": "PT10S"}


def always_fails(ctx: HandlerContext) -> None:
    raise RuntimeError(f"boom on attempt {ctx.attempt}")


def start_single(
    rt: Harness, retry: dict[str, Any] | None, *, follow_delays: bool = True, key: str = "single"
) -> UUID:
    rt.deploy(single_task(key, retry=retry))
    iid = rt.start(key)
    rt.drain(follow_delays=follow_delays)
    return iid


def test_handler_failing_n_minus_one_times_succeeds(rt: Harness, calls: Calls) -> None:
    calls.add("work", failing(3, then={"done": True}))
    iid = start_single(rt, {"max_attempts": 4, "backoff": "PT1S"})
    db = rt.engine.db

    assert_finished_cleanly(db, iid)
    assert [c.attempt for c in calls.seen["work"]] == [1, 2, 3, 4]
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts, task.retries) == ("DONE", 4, 0)
    types = [(e["type"], e["to_state"]) for e in rows.task_events_of(db, iid)]
    assert types == [("CREATED", "READY")] + [("LOCKED", "LOCKED"), ("FAILED", "READY")] * 3 + [
        ("LOCKED", "LOCKED"),
        ("COMPLETED", "DONE"),
    ]
    assert rows.incidents_of(db, iid) == []
    assert rt.engine.show(iid)["variables"] == {"done": True}


def test_backoff_follows_the_policy(rt: Harness, calls: Calls) -> None:
    """retry_at - failure time == backoff * factor^(attempt-1), capped at max_backoff."""
    calls.add("work", failing(4))
    iid = start_single(rt, RETRY, follow_delays=False)
    db = rt.engine.db
    expected = [timedelta(seconds=s) for s in (2, 6, 10, 10)]

    for attempt, delay in enumerate(expected, start=1):
        task = rows.only_task(db, iid, "work")
        failure = rows.task_events_of(db, iid, type="FAILED")[-1]
        assert (task.state, task.attempts, failure["data"]["attempt"]) == (
            "READY",
            attempt,
            attempt,
        )
        assert task.retry_at is not None
        assert task.retry_at - failure["at"] == delay, f"attempt {attempt}"
        assert failure["data"]["retry_at"] == task.retry_at.isoformat()
        assert task.error_message is not None and f"attempt {attempt}" in task.error_message

        # Not due yet: a run now is a no-op and does not use up an attempt.
        assert rt.engine.run_handler(task.id) == "stale"
        assert rows.only_task(db, iid, "work").attempts == attempt

        rt.clock.move_to(task.retry_at)
        rt.drain(follow_delays=False)

    assert_finished_cleanly(db, iid)
    assert rows.only_task(db, iid, "work").attempts == 5


def test_exhausted_retries_fail_token_and_instance_with_an_incident(
    rt: Harness, calls: Calls
) -> None:
    calls.add("work", always_fails)
    iid = start_single(rt, {"max_attempts": 3, "backoff": "PT1S"})
    db = rt.engine.db

    assert calls.count("work") == 3
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts, task.retries, task.lock_owner) == ("FAILED", 3, 0, None)
    (tok,) = rows.tokens_of(db, iid)
    assert (tok.state, tok.node_id) == ("FAILED", "work")
    assert rows.state(db, iid) == "FAILED"

    (incident,) = rows.incidents_of(db, iid)
    assert (incident.state, incident.kind) == ("OPEN", "handler")
    assert (incident.token_id, incident.task_id, incident.node_id) == (tok.id, task.id, "work")
    assert "'work'" in incident.message and "3 attempts" in incident.message
    assert "RuntimeError: boom on attempt 3" in incident.message
    assert incident.details is not None
    assert "Traceback" in incident.details and "always_fails" in incident.details

    (failed,) = rows.engine_events_of(db, iid, type="TokenFailed")
    assert (failed["token_id"], failed["node_id"]) == (tok.id, "work")
    assert rows.engine_event_types(db, iid) == [
        "InstanceStarted",
        "TokenFailed",
        "IncidentOpened",
        "InstanceFailed",
    ]
    (listed,) = rt.engine.incidents()
    assert (listed["id"], listed["instance_id"]) == (str(incident.id), str(iid))
    assert_history_consistent(db, iid)


@pytest.mark.parametrize("by", ["token", "task"])
def test_operator_retry_resolves_the_incident_and_the_instance_completes(
    rt: Harness, calls: Calls, by: str
) -> None:
    broken = {"yes": True}

    def work(ctx: HandlerContext) -> dict[str, Any]:
        if broken["yes"]:
            raise RuntimeError("database is down")
        return {"attempt_seen": ctx.attempt}

    calls.add("work", work)
    iid = start_single(rt, {"max_attempts": 2, "backoff": "PT1S"})
    db = rt.engine.db
    (tok,) = rows.tokens_of(db, iid)
    task = rows.only_task(db, iid, "work")
    assert rows.state(db, iid) == "FAILED"

    assert rt.engine.retry(tok.id if by == "token" else task.id) == tok.id
    retried = rows.only_task(db, iid, "work")
    assert (retried.state, retried.retries, retried.retry_at) == ("READY", 2, None)
    assert retried.error_message == task.error_message  # the last error stays readable
    assert rows.token(db, tok.id).state == "WAITING"
    assert rows.state(db, iid) == "RUNNING"
    (incident,) = rows.incidents_of(db, iid)
    assert incident.state == "RESOLVED" and incident.resolved_at is not None
    assert rows.engine_event_types(db, iid)[-3:] == [
        "IncidentResolved",
        "OperatorRetry",
        "InstanceResumed",
    ]

    broken["yes"] = False
    rt.drain()
    assert_finished_cleanly(db, iid)
    assert rt.engine.show(iid)["variables"] == {"attempt_seen": 3}
    assert rows.only_task(db, iid, "work").attempts == 3


def test_operator_retry_can_set_the_number_of_retries(rt: Harness, calls: Calls) -> None:
    calls.add("work", always_fails)
    iid = start_single(rt, {"max_attempts": 2})
    (tok,) = rows.tokens_of(rt.engine.db, iid)
    rt.engine.retry(tok.id, retries=4)
    assert rows.only_task(rt.engine.db, iid, "work").retries == 4
    rt.drain()
    assert calls.count("work") == 2 + 4
    assert rows.state(rt.engine.db, iid) == "FAILED"
    assert len(rows.incidents_of(rt.engine.db, iid, only_open=True)) == 1
    assert_history_consistent(rt.engine.db, iid)


def test_instance_stays_failed_while_another_incident_is_open(rt: Harness, calls: Calls) -> None:
    calls.add("work", always_fails)
    doc = (
        ProcessBuilder("two_fail")
        .start()
        .parallel_gateway("fork")
        .service_task("a", handler="work")
        .service_task("b", handler="work")
        .end("ea")
        .end("eb")
        .sequence("start", "fork", "a", "ea")
        .sequence("fork", "b", "eb")
        .build()
    )
    iid = rt.run(doc)
    db = rt.engine.db
    failed = [t for t in rows.tokens_of(db, iid) if t.state == "FAILED"]
    assert len(failed) == 2 and rows.state(db, iid) == "FAILED"

    rt.engine.retry(failed[0].id)
    assert rows.state(db, iid) == "FAILED"  # b's incident is still open
    rt.engine.retry(failed[1].id)
    assert rows.state(db, iid) == "RUNNING"
    assert_history_consistent(db, iid)


@pytest.mark.parametrize("situation", ["waiting", "completed"])
def test_retry_of_a_token_that_is_not_failed_is_refused(
    engine_factory: EngineFactory, calls: Calls, situation: str
) -> None:
    calls.add("work")
    rt = engine_factory(run_handlers_inline=situation == "completed")
    rt.deploy(single_task())
    iid = rt.start("single")
    rt.drain(ALL_JOBS if situation == "completed" else ONLY_ADVANCE)
    db = rt.engine.db
    (tok,) = rows.tokens_of(db, iid)
    assert tok.state == ("COMPLETED" if situation == "completed" else "WAITING")
    before = snapshot(db)

    with pytest.raises(InvalidOperation, match="only FAILED tokens can be retried"):
        rt.engine.retry(tok.id)
    task = rows.only_task(db, iid, "work")
    with pytest.raises(InvalidOperation):
        rt.engine.retry(task.id)
    assert snapshot(db) == before


def test_retry_of_an_unknown_id_is_not_found(rt: Harness) -> None:
    with pytest.raises(NotFound):
        rt.engine.retry(UUID(int=7))
    with pytest.raises(InvalidOperation):
        rt.engine.retry(UUID(int=7), retries=0)


def test_retry_of_a_failed_gateway_evaluates_again(rt: Harness) -> None:
    rt.deploy(exclusive())
    iid = rt.engine.start("route", {"nothing": 0}).id
    rt.drain()
    db = rt.engine.db
    (tok,) = rows.tokens_of(db, iid)
    rt.engine.retry(tok.id)
    rt.drain()  # the variable is still missing: a new incident, the old one resolved
    assert [i.state for i in rows.incidents_of(db, iid)] == ["RESOLVED", "OPEN"]
    assert rows.state(db, iid) == "FAILED"
    assert_history_consistent(db, iid)


def test_bpmn_error_fails_at_once_without_retries(rt: Harness, calls: Calls) -> None:
    def declined(ctx: HandlerContext) -> None:
        raise BpmnError("CARD_DECLINED", "insufficient funds")

    calls.add("work", declined)
    iid = start_single(rt, {"max_attempts": 5, "backoff": "PT1S"})
    db = rt.engine.db

    assert calls.count("work") == 1
    task = rows.only_task(db, iid, "work")
    assert (task.state, task.attempts) == ("FAILED", 1)
    (incident,) = rows.incidents_of(db, iid)
    assert incident.kind == "bpmn-error"
    assert "CARD_DECLINED" in incident.message and "insufficient funds" in incident.message
    (failure,) = rows.task_events_of(db, iid, type="FAILED")
    assert failure["data"]["bpmn_error"] == "CARD_DECLINED"
    assert rows.state(db, iid) == "FAILED"
    assert_history_consistent(db, iid)


def test_unknown_handler_is_an_incident_naming_it(rt: Harness, calls: Calls) -> None:
    calls.add("known")
    doc = single_task("ghostly", handler="ghost_handler", retry={"max_attempts": 3})
    iid = rt.run(doc)
    db = rt.engine.db

    assert rows.state(db, iid) == "FAILED"
    (incident,) = rows.incidents_of(db, iid)
    assert "'ghost_handler'" in incident.message and "known" in incident.message
    assert rows.only_task(db, iid, "work").attempts == 1  # not retried: no worker knows it
    assert_history_consistent(db, iid)


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([1, 2], "returned list"),
        ("done", "returned str"),
        (42, "returned int"),
        ({"when": {1, 2}}, "'when' is not JSON"),
        ({"ratio": float("nan")}, "'ratio' is not JSON"),
        ({3: "x"}, "variable name 3"),
    ],
)
def test_handler_result_that_is_not_json_variables_fails_clearly(
    rt: Harness, calls: Calls, result: object, message: str
) -> None:
    calls.add("work", lambda ctx: result)  # type: ignore[arg-type,return-value]
    iid = start_single(rt, {"max_attempts": 3})
    db = rt.engine.db

    assert rows.state(db, iid) == "FAILED"
    assert calls.count("work") == 1
    (incident,) = rows.incidents_of(db, iid)
    assert message in incident.message and "'work'" in incident.message
    assert rt.engine.show(iid)["variables"] == {}
    assert_history_consistent(db, iid)
