"""The chaos process's external worker: ``bpm external-worker --import tests.chaos.ext_worker``.

It takes the payment (topic ``chaos.pay``) and its refund (``chaos.refund``, the compensation
of ``pay``), writing each side effect to the same ledger as the in-process handlers. Each
process gets its own worker id (``BPM_CHAOS_EXT_ID``): a replacement started after a kill
must not pass for the dead one.
"""

from __future__ import annotations

import os
from datetime import timedelta

from bpm.sdk import ExternalTask, Worker
from tests.chaos.handlers import COMPENSATION, FORWARD, record

#: A dead worker's tasks come back this long after it was killed.
LOCK = timedelta(seconds=6)

worker = Worker(
    os.environ.get("BPM_CHAOS_EXT_ID", "chaos-ext"), threads=2, long_poll=5.0, shutdown_grace=5.0
)


def _record(task: ExternalTask, kind: str) -> None:
    record(
        instance_id=task.instance_id,
        business_key=task.business_key,
        node=task.node_id,
        kind=kind,
        idempotency_key=str(task.id),
        attempt=task.attempt,
    )


@worker.subscribe("chaos.pay", lock_duration=LOCK, variables=["i"])
def pay(task: ExternalTask) -> dict[str, int]:
    _record(task, FORWARD)
    return {"paid": int(task.variables["i"])}


@worker.subscribe("chaos.refund", lock_duration=LOCK, variables=["i"])
def refund(task: ExternalTask) -> None:
    _record(task, COMPENSATION)
