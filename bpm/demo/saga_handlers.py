"""Handlers for ``order_saga.json`` and ``order_saga.bpmn`` (the same saga drawn in BPMN):
importing this module registers them.

The saga reserves stock (``reserve_stock``, the same handler ``order_fulfilment`` uses), has an
external worker charge the card (topic ``payments``), then ships (``ship_order``). When shipping
fails, the engine undoes what succeeded, latest success first: the charge (an external worker
refunds it, topic ``refunds``), then the reservation (``release_stock``), and the instance ends
TERMINATED. ``bpm demo`` runs exactly that, acting as the external worker itself.

By hand, in embedded mode (``worker`` below serves both topics)::

    bpm deploy bpm/demo/order_saga.json    # or bpm/demo/order_saga.bpmn
    BPM_IMPORTS=bpm.demo.saga_handlers bpm start order_saga \\
        --var 'items=["lamp"]' --var total=40 --var ship_fails=true
    bpm external-worker --import bpm.demo.saga_handlers   # Ctrl-C once the order is TERMINATED

A compensation handler sees the instance's variables as they are when it runs, so
``release_stock`` finds the ``reservation`` that ``reserve_stock`` returned.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bpm import HandlerContext, handler
from bpm.demo.order_handlers import reserve_stock
from bpm.sdk import ExternalTask, Worker

__all__ = [
    "ShippingFailed",
    "charge_card",
    "refund_card",
    "release_stock",
    "reserve_stock",
    "ship_order",
    "worker",
]


class ShippingFailed(RuntimeError):
    """The simulated carrier refused the parcel."""


@handler("release_stock")
def release_stock(ctx: HandlerContext) -> dict[str, Any]:
    """Undo ``reserve_stock``: give the reserved items back."""
    return {"released": ctx.variables.get("reservation")}


@handler("ship_order")
def ship_order(ctx: HandlerContext) -> dict[str, Any]:
    """Fails, on every attempt, when ``ship_fails`` is true: the saga has to compensate."""
    if ctx.variables.get("ship_fails") is True:
        raise ShippingFailed("the carrier refused the parcel (simulated: ship_fails is true)")
    return {"tracking": f"TRK-{ctx.idempotency_key[:8]}"}


#: The external worker for the card: ``bpm external-worker --import bpm.demo.saga_handlers``.
worker = Worker("order-saga-worker")


@worker.subscribe("payments", lock_duration=timedelta(minutes=1))
def charge_card(task: ExternalTask) -> dict[str, Any]:
    """Charge the order's total (simulated); the task id is the idempotency key."""
    return {"payment_ref": f"PAY-{str(task.id)[:8]}", "charged": task.variables.get("total")}


@worker.subscribe("refunds", lock_duration=timedelta(minutes=1))
def refund_card(task: ExternalTask) -> dict[str, Any]:
    """Undo ``charge_card``: refund what was charged, against its payment reference."""
    return {
        "refunded": task.variables.get("charged"),
        "refund_of": task.variables.get("payment_ref"),
    }
