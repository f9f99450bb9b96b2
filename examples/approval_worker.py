"""The external worker of ``approval.bpmn``: it pays approved expenses (topic ``expense-payouts``).

It runs in its own process, next to the payment system rather than next to the engine::

    bpm external-worker --import examples.approval_worker

``bpm external-worker`` runs every ``bpm.sdk.Worker`` defined at module level in the modules it
imports. With ``BPM_BROKER_URL`` set, the steps after a completed payout go to the Celery
workers. See docs/tutorial.md and docs/external-tasks.md.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from typing import Any

from bpm.sdk import ExternalTask, Worker

__all__ = ["pay_expense", "worker"]

#: Each worker process locks tasks under its own name (``lock_owner`` in ``bpm show``).
worker = Worker(f"payouts@{socket.gethostname()}:{os.getpid()}", threads=2)


@worker.subscribe(
    "expense-payouts", lock_duration=timedelta(minutes=1), variables=["amount", "employee"]
)
def pay_expense(task: ExternalTask) -> dict[str, Any]:
    """Pay the claim (simulated). The task id is the same for every attempt: a real payment
    API would be given it as the idempotency key, so a retried payout is never paid twice."""
    return {
        "payout_ref": f"PAYOUT-{str(task.id)[:8]}",
        "paid": task.variables["amount"],
        "paid_to": task.variables.get("employee"),
    }
