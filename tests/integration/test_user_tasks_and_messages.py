"""User tasks and message correlation: wait states that people and other
services end. A refused call names what is wrong and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.errors import (
    AmbiguousCorrelation,
    BadVariables,
    InvalidOperation,
    NoMatchingWait,
    TaskClaimed,
    TaskNotFound,
)
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly, snapshot
from tests.helpers.runtime import Calls, Harness

APPROVAL = (
    ProcessBuilder("approval")
    .start()
    .user_task("review", candidate_groups=["managers", "ops"])
    .user_task("sign", assignee="carol")
    .service_task("after", handler="after")
    .end()
    .sequence("start", "review", "sign", "after", "end")
    .build()
)


def only(rt: Harness, **filters: Any) -> dict[str, Any]:
    (task,) = rt.engine.user_tasks(**filters)
    return task


def test_a_user_task_waits_until_completed_with_variables(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    iid = rt.run(APPROVAL)
    db = rt.engine.db
    review = only(rt, instance_id=iid)
    assert review["node_id"] == "review" and review["candidate_groups"] == ["managers", "ops"]
    assert rows.state(db, iid) == "RUNNING" and calls.count("after") == 0

    rt.engine.complete_user_task(review["id"], {"approved": True, "comment": "fine"})
    rt.drain()
    sign = only(rt, instance_id=iid)
    assert (sign["node_id"], sign["assignee"]) == ("sign", "carol")
    rt.engine.complete_user_task(sign["id"], user="carol")
    rt.drain()
    assert calls.count("after") == 1
    assert calls.seen["after"][0].variables["approved"] is True
    assert_finished_cleanly(db, iid)
    types = [e["type"] for e in rows.task_events_of(db, iid) if e["node_id"] in ("review", "sign")]
    assert types == ["CREATED", "COMPLETED", "CREATED", "COMPLETED"]


def test_listing_by_assignee_and_candidate_group(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    iid = rt.run(APPROVAL)
    assert [t["node_id"] for t in rt.engine.user_tasks(group="ops")] == ["review"]
    assert rt.engine.user_tasks(group="sales") == []
    assert rt.engine.user_tasks(assignee="carol") == []
    review = only(rt, instance_id=iid)
    rt.engine.complete_user_task(review["id"])
    rt.drain()
    assert [t["node_id"] for t in rt.engine.user_tasks(assignee="carol")] == ["sign"]


def test_claim_rules(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    iid = rt.run(APPROVAL)
    db = rt.engine.db
    task = only(rt, instance_id=iid)["id"]
    rt.engine.claim(task, "alice")
    rt.engine.claim(task, "alice")  # claiming what you hold is fine
    before = snapshot(db)
    with pytest.raises(TaskClaimed, match="claimed by 'alice'"):
        rt.engine.claim(task, "bob")
    with pytest.raises(TaskClaimed, match="'alice', not 'bob'"):
        rt.engine.complete_user_task(task, {"x": 1}, user="bob")
    assert snapshot(db) == before
    rt.engine.unclaim(task)
    rt.engine.claim(task, "bob")
    assert only(rt, assignee="bob")["id"] == task
    rt.engine.complete_user_task(task, user="bob")
    rt.drain()
    events = [e["type"] for e in rows.task_events_of(db, iid) if e["node_id"] == "review"]
    assert events == ["CREATED", "CLAIMED", "UNCLAIMED", "CLAIMED", "COMPLETED"]


def test_bad_user_task_calls_change_nothing(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    iid = rt.run(APPROVAL)
    db = rt.engine.db
    task = only(rt, instance_id=iid)["id"]
    before = snapshot(db)
    with pytest.raises(TaskNotFound):
        rt.engine.complete_user_task("6f1c2d4e-0000-4000-8000-000000000000")
    with pytest.raises(BadVariables):
        rt.engine.complete_user_task(task, {"when": object()})
    with pytest.raises(InvalidOperation, match="user name"):
        rt.engine.claim(task, " ")
    assert snapshot(db) == before
    rt.engine.complete_user_task(task)
    with pytest.raises(InvalidOperation, match="DONE"):
        rt.engine.complete_user_task(task)


# --- messages -------------------------------------------------------------------------------

PAYMENT = (
    ProcessBuilder("payment")
    .start()
    .receive_task("await_payment", message="paid")
    .message_event("await_receipt", message="receipt")
    .service_task("after", handler="after")
    .end()
    .sequence("start", "await_payment", "await_receipt", "after", "end")
    .build()
)


def test_correlation_by_business_key_and_by_instance(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    rt.deploy(PAYMENT)
    iid = rt.engine.start("payment", business_key="order-7").id
    rt.drain()
    woken = rt.engine.correlate("paid", business_key="order-7", variables={"amount": 12})
    rt.drain()
    assert len(woken) == 1
    rt.engine.correlate("receipt", instance_id=iid)
    rt.drain()
    assert calls.count("after") == 1 and calls.seen["after"][0].variables["amount"] == 12
    assert_finished_cleanly(rt.engine.db, iid)
    assert [
        e["data"]["message"]
        for e in rows.engine_events_of(rt.engine.db, iid, type="MessageCorrelated")
    ] == ["paid", "receipt"]


def test_a_message_nobody_waits_for_is_an_error_and_changes_nothing(
    rt: Harness, calls: Calls
) -> None:
    calls.add("after")
    rt.deploy(PAYMENT)
    iid = rt.engine.start("payment", business_key="order-8").id
    rt.drain()
    db = rt.engine.db
    before = snapshot(db)
    with pytest.raises(NoMatchingWait, match="'receipt'"):
        rt.engine.correlate("receipt", business_key="order-8")  # not waiting for that yet
    with pytest.raises(NoMatchingWait, match="order-9"):
        rt.engine.correlate("paid", business_key="order-9")
    with pytest.raises(NoMatchingWait, match="no process starts with message 'refund'"):
        rt.engine.correlate("refund")  # nothing waits for it, and no process starts on it
    assert snapshot(db) == before
    assert rows.state(db, iid) == "RUNNING"


def test_several_waiting_tokens_need_all_waiting(rt: Harness, calls: Calls) -> None:
    calls.add("after")
    rt.deploy(PAYMENT)
    iids = [
        rt.engine.start("payment", business_key="batch-1", idempotency_key=f"k{n}").id
        for n in range(2)
    ]
    rt.drain()
    with pytest.raises(AmbiguousCorrelation, match="2 tokens"):
        rt.engine.correlate("paid", business_key="batch-1")
    assert len(rt.engine.correlate("paid", business_key="batch-1", all_waiting=True)) == 2
    rt.drain()
    for iid in iids:
        waiting = [t.node_id for t in rows.live_tokens(rt.engine.db, iid)]
        assert waiting == ["await_receipt"]
