"""Handlers for ``order_fulfilment.json``: importing this module registers them.

Run the example with ``BPM_IMPORTS=bpm.demo.order_handlers bpm start order_fulfilment ...``.
The side effects are simulated, but each handler shows a habit worth copying: it reads only the
variables it needs, returns the variables it produces, and is safe to run twice for one task
(``ctx.idempotency_key`` is what a real payment or shipping API would deduplicate on).
"""

from __future__ import annotations

from typing import Any

from bpm import BpmnError, HandlerContext, handler

#: Items the simulated warehouse does not have; ordering one raises a BPMN error.
OUT_OF_STOCK = frozenset({"unobtainium"})


def _items(ctx: HandlerContext) -> list[str]:
    items = ctx.variables.get("items", [])
    return [str(item) for item in items] if isinstance(items, list) else []


@handler("validate_order")
def validate_order(ctx: HandlerContext) -> dict[str, Any]:
    """Reject orders the rest of the process cannot handle, before anything is reserved."""
    total = ctx.variables.get("total")
    if not isinstance(total, int | float) or isinstance(total, bool) or total < 0:
        raise BpmnError("INVALID_ORDER", f"'total' must be a non-negative number, got {total!r}")
    items = _items(ctx)
    if not items:
        raise BpmnError("INVALID_ORDER", "the order has no 'items'")
    return {"item_count": len(items)}


@handler("reserve_stock")
def reserve_stock(ctx: HandlerContext) -> dict[str, Any]:
    """A business error, not a crash: retrying cannot make stock appear."""
    missing = sorted(set(_items(ctx)) & OUT_OF_STOCK)
    if missing:
        raise BpmnError("OUT_OF_STOCK", f"no stock for {', '.join(missing)}")
    return {"reservation": f"R-{ctx.idempotency_key[:8]}"}


@handler("charge_payment")
def charge_payment(ctx: HandlerContext) -> dict[str, Any]:
    """Fails its first attempt when ``payment_glitch`` is set, to show the retry policy.

    The node retries with a 0.2 s backoff, so the second attempt succeeds almost at once.
    """
    if ctx.variables.get("payment_glitch") and ctx.attempt == 1:
        raise ConnectionError("payment gateway timed out (simulated)")
    return {"payment_ref": f"PAY-{ctx.idempotency_key[:8]}", "charged": ctx.variables["total"]}


@handler("pick_items")
def pick_items(ctx: HandlerContext) -> dict[str, Any]:
    return {"picked": _items(ctx)}


@handler("wrap_parcel")
def wrap_parcel(ctx: HandlerContext) -> dict[str, Any]:
    return {"parcel_weight_kg": round(0.4 * len(_items(ctx)) + 0.2, 1)}


@handler("ship_express")
def ship_express(ctx: HandlerContext) -> dict[str, Any]:
    return {"carrier": "courier", "eta_days": 1}


@handler("ship_standard")
def ship_standard(ctx: HandlerContext) -> dict[str, Any]:
    return {"carrier": "post", "eta_days": 3}
