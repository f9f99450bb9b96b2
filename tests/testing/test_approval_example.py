"""The tutorial's expense approval (examples/approval*.py, docs/tutorial.md) runs as written:
its BPMN deploys, its handlers and its external worker's subscription take every path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bpm.handlers import registry
from bpm.testing import ProcessTestKit
from examples import approval_handlers, approval_worker

EXAMPLES = Path(approval_handlers.__file__).parent


@pytest.fixture
def kit(pg_url: str) -> Iterator[ProcessTestKit]:
    with ProcessTestKit(pg_url, handlers=registry) as k:  # the handlers register globally
        k.engine.deploy_bpmn((EXAMPLES / "approval.bpmn").read_bytes())
        yield k


def pay(kit: ProcessTestKit) -> None:
    [task] = kit.fetch_and_lock("expense-payouts", variables=["amount", "employee"])
    kit.work(task, approval_worker.pay_expense)


def test_a_small_claim_is_paid_without_a_manager(kit: ProcessTestKit) -> None:
    started = kit.start("expense_approval", {"amount": 30, "employee": "bob"}, business_key="EXP-1")
    pay(kit)
    assert kit.state(started.id) == "COMPLETED"
    assert kit.variables(started.id)["paid_to"] == "bob"
    assert kit.variables(started.id)["needs_approval"] is False


def test_a_large_claim_waits_for_a_manager_and_is_paid_or_rejected(kit: ProcessTestKit) -> None:
    yes = kit.start("expense_approval", {"amount": 500, "employee": "ann"}, business_key="E-2")
    no = kit.start("expense_approval", {"amount": 900, "employee": "cid"}, business_key="E-3")
    for iid, approved in ((yes.id, True), (no.id, False)):
        [task] = kit.user_tasks(group="managers", instance_id=iid)
        kit.claim(task["id"], "maria")
        kit.complete_user_task(task["id"], {"approved": approved}, user="maria")
    pay(kit)
    assert kit.state(yes.id) == kit.state(no.id) == "COMPLETED"
    assert kit.variables(yes.id)["paid"] == 500
    assert kit.variables(no.id)["notified"] == "cid" and "paid" not in kit.variables(no.id)


def test_a_claim_without_an_amount_is_an_incident(kit: ProcessTestKit) -> None:
    started = kit.start("expense_approval", {"employee": "dan"}, business_key="E-4")
    assert kit.state(started.id) == "FAILED"
