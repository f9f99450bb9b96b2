"""An example of testing your own processes with ``bpm.testing`` (see docs/testing.md).

Copy it next to your tests and add one line to your top-level ``conftest.py``::

    pytest_plugins = ["bpm.testing"]

It needs a PostgreSQL server: ``BPM_TEST_DATABASE_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/bpm_user_tests``, created if missing).
The project's own test run does not collect this file (its testpaths are ``tests/``);
tests/testing/test_kit.py runs it the way a user would.
"""

from __future__ import annotations

from typing import Any

from bpm import HandlerContext
from bpm.definitions import ProcessBuilder
from bpm.testing import ProcessTestKit

# An invoice: if it is still unpaid 24 hours after it was sent, remind the customer.
INVOICE = (
    ProcessBuilder("invoice")
    .start()
    .service_task("send", handler="send_invoice")
    .receive_task("paid", message="payment_received")
    .timer_boundary("overdue", attached_to="paid", duration="PT24H", interrupting=False)
    .service_task("remind", handler="send_reminder")
    .end("reminded")
    .end()
    .sequence("start", "send", "paid", "end")
    .sequence("overdue", "remind", "reminded")
    .build()
)

# An expense claim: a manager approves it; after two days unanswered it goes to finance.
EXPENSE = (
    ProcessBuilder("expense")
    .start()
    .user_task("approve", candidate_groups=["managers"])
    .timer_boundary("too_slow", attached_to="approve", duration="P2D")
    .service_task("book", handler="book_expense")
    .service_task("escalate", handler="escalate_to_finance")
    .end()
    .end("escalated")
    .sequence("start", "approve", "book", "end")
    .sequence("too_slow", "escalate", "escalated")
    .build()
)


def register_handlers(kit: ProcessTestKit, sent: list[str]) -> None:
    """Test doubles under the names the processes call; they record instead of emailing."""

    @kit.handler("send_invoice")
    def send_invoice(ctx: HandlerContext) -> dict[str, Any]:
        sent.append(f"invoice to {ctx.business_key}")
        return {"sent": True}

    @kit.handler("send_reminder")
    def send_reminder(ctx: HandlerContext) -> None:
        sent.append(f"reminder to {ctx.business_key}")

    @kit.handler("book_expense")
    def book(ctx: HandlerContext) -> dict[str, Any]:
        return {"booked": ctx.variables["amount"]}

    @kit.handler("escalate_to_finance")
    def escalate(ctx: HandlerContext) -> None:
        sent.append(f"escalation of {ctx.business_key}")


def test_an_unpaid_invoice_gets_a_reminder_after_24_hours(bpm_kit: ProcessTestKit) -> None:
    sent: list[str] = []
    register_handlers(bpm_kit, sent)
    bpm_kit.deploy(INVOICE)

    invoice = bpm_kit.start("invoice", {"amount": 120}, business_key="INV-1")
    assert bpm_kit.state(invoice.id) == "RUNNING"  # waiting for the payment
    assert sent == ["invoice to INV-1"]

    bpm_kit.advance(hours=23)
    assert sent == ["invoice to INV-1"]  # not yet

    bpm_kit.advance(hours=1)  # 24 hours after sending: the boundary timer fires
    assert sent == ["invoice to INV-1", "reminder to INV-1"]
    assert bpm_kit.state(invoice.id) == "RUNNING"  # non-interrupting: still waiting to be paid

    bpm_kit.correlate("payment_received", business_key="INV-1", variables={"paid": 120})
    assert bpm_kit.state(invoice.id) == "COMPLETED"
    assert bpm_kit.variables(invoice.id)["paid"] == 120


def test_an_invoice_paid_in_time_gets_no_reminder(bpm_kit: ProcessTestKit) -> None:
    sent: list[str] = []
    register_handlers(bpm_kit, sent)
    bpm_kit.deploy(INVOICE)
    invoice = bpm_kit.start("invoice", {"amount": 80}, business_key="INV-2")

    bpm_kit.advance(hours=3)
    bpm_kit.correlate("payment_received", business_key="INV-2")
    bpm_kit.advance(days=7)  # the timer was disarmed when the task was left
    assert sent == ["invoice to INV-2"]
    assert bpm_kit.state(invoice.id) == "COMPLETED"


def test_a_manager_approves_an_expense(bpm_kit: ProcessTestKit) -> None:
    sent: list[str] = []
    register_handlers(bpm_kit, sent)
    bpm_kit.deploy(EXPENSE)
    claim = bpm_kit.start("expense", {"amount": 45}, business_key="EXP-1")

    [task] = bpm_kit.user_tasks(group="managers")
    assert task["node_id"] == "approve"
    bpm_kit.complete_user_task(task["id"], {"approved": True})

    assert bpm_kit.state(claim.id) == "COMPLETED"
    assert bpm_kit.variables(claim.id) == {"amount": 45, "approved": True, "booked": 45}
    assert sent == []


def test_an_unanswered_expense_goes_to_finance_after_two_days(bpm_kit: ProcessTestKit) -> None:
    sent: list[str] = []
    register_handlers(bpm_kit, sent)
    bpm_kit.deploy(EXPENSE)
    claim = bpm_kit.start("expense", {"amount": 900}, business_key="EXP-2")

    bpm_kit.advance(days=2)

    assert sent == ["escalation of EXP-2"]
    assert bpm_kit.user_tasks() == []  # the interrupting timer cancelled the approval
    assert bpm_kit.state(claim.id) == "COMPLETED"
