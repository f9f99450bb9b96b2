"""In-process handlers for ``approval.bpmn``, the expense approval of docs/tutorial.md:
importing this module registers them.

The Celery workers import it (``BPM_IMPORTS=examples.approval_handlers``) and run the two
service tasks that carry ``bpm:handler``: ``check_expense`` decides whether a manager has to
approve the claim, ``notify_rejection`` tells the employee when one turned it down. The third
service task, ``pay``, is done by the external worker in ``approval_worker.py``.
"""

from __future__ import annotations

from typing import Any

from bpm import HandlerContext, handler

#: Claims above this amount wait for a manager (the user task ``approve``); others are paid.
APPROVAL_LIMIT = 100


@handler("check_expense")
def check_expense(ctx: HandlerContext) -> dict[str, Any]:
    """Refuse a claim without a usable amount; say whether it needs a manager's approval.

    A claim whose ``amount`` is not a positive number raises, so the task fails and an incident
    names the problem (``bpm incidents``): nobody can approve or pay it as it is.
    """
    amount = ctx.variables.get("amount")
    if not isinstance(amount, int | float) or isinstance(amount, bool) or amount <= 0:
        raise ValueError(f"'amount' must be a positive number, got {amount!r}")
    return {"needs_approval": amount > APPROVAL_LIMIT}


@handler("notify_rejection")
def notify_rejection(ctx: HandlerContext) -> dict[str, Any]:
    """Tell the employee (simulated); the idempotency key keeps a second run from sending twice."""
    return {
        "notice": f"NOTICE-{ctx.idempotency_key[:8]}",
        "notified": ctx.variables.get("employee"),
    }
