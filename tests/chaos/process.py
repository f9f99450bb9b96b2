"""The process the chaos test runs, and what each of its instances must end up doing.

```
start -> reserve -> (+fork) -+-> [pay: external topic] --------------+-> (+join) -> <route>
                             +-> pack -> (wait 1 s) -----------------+
<route> -+- express --> express_ship -+-> <merge> -> confirm -> end
         +- default --> ship ---------+
```

A global saga over the whole process: every step up to the shipping is undone by a
compensation (``chaos.undo``, or the external topic ``chaos.refund`` for ``pay``). ``confirm``
fails for good in every fifth instance (``doomed``), so the saga undoes the shipping, the
packing, the payment and the reservation, latest success first, and the instance ends
``TERMINATED`` (docs/concepts.md, "When no record is left"). Every third instance's ``pack``
fails its first attempt on purpose; every second one ships express.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEY = "chaos_order"
TIMER = "wait"
#: Steps that a saga undoes, and the step whose failure starts it.
UNDOABLE = ("reserve", "pay", "pack", "express_ship", "ship")
FAILING = "confirm"
#: ``a`` succeeds strictly before ``b`` whenever both run: the flows order them. ``pay`` and
#: ``pack`` run side by side, so only the engine's records order them.
BEFORE = frozenset(
    {
        ("reserve", "pay"),
        ("reserve", "pack"),
        ("reserve", "ship"),
        ("reserve", "express_ship"),
        ("pay", "ship"),
        ("pay", "express_ship"),
        ("pack", "ship"),
        ("pack", "express_ship"),
    }
)


def retry(max_attempts: int) -> dict[str, Any]:
    return {"max_attempts": max_attempts, "backoff": "PT0.3S", "factor": 2.0, "max_backoff": "PT2S"}


def definition(max_attempts: int) -> dict[str, Any]:
    """The JSON document (docs/definition-format.md). ``max_attempts`` is every step's and
    every compensation's budget: room for the attempts the faults use up (a run whose worker
    was killed, or whose result could not be written, counts as one)."""
    policy = retry(max_attempts)

    def step(node_id: str, **how: Any) -> dict[str, Any]:
        undo: dict[str, Any] = (
            {"topic": "chaos.refund"} if node_id == "pay" else {"handler": "chaos.undo"}
        )
        return {
            "id": node_id,
            "type": "serviceTask",
            "timeout": "PT6S",
            "retry": policy,
            "compensation": {**undo, "retry": policy},
            **how,
        }

    nodes = [
        {"id": "start", "type": "startEvent"},
        step("reserve", handler="chaos.step"),
        {"id": "fork", "type": "parallelGateway"},
        step("pay", topic="chaos.pay"),
        step("pack", handler="chaos.step"),
        {"id": TIMER, "type": "timerEvent", "duration": "PT1S"},
        {"id": "join", "type": "parallelGateway"},
        {"id": "route", "type": "exclusiveGateway", "default": "f_standard"},
        step("express_ship", handler="chaos.step"),
        step("ship", handler="chaos.step"),
        {"id": "merge", "type": "exclusiveGateway"},
        {
            "id": FAILING,
            "type": "serviceTask",
            "handler": "chaos.confirm",
            "timeout": "PT6S",
            "retry": policy,
        },
        {"id": "end", "type": "endEvent"},
    ]
    flows = [
        ("start", "reserve"),
        ("reserve", "fork"),
        ("fork", "pay"),
        ("fork", "pack"),
        ("pack", TIMER),
        ("pay", "join"),
        (TIMER, "join"),
        ("join", "route"),
    ]
    doc_flows: list[dict[str, Any]] = [
        {"id": f"f_{a}_{b}", "source": a, "target": b} for a, b in flows
    ]
    doc_flows += [
        {
            "id": "f_express",
            "source": "route",
            "target": "express_ship",
            "condition": "express == true",
        },
        {"id": "f_standard", "source": "route", "target": "ship"},
        {"id": "f_express_merge", "source": "express_ship", "target": "merge"},
        {"id": "f_ship_merge", "source": "ship", "target": "merge"},
        {"id": "f_merge_confirm", "source": "merge", "target": FAILING},
        {"id": "f_confirm_end", "source": FAILING, "target": "end"},
    ]
    return {"key": KEY, "name": "Chaos order", "saga": "global", "nodes": nodes, "flows": doc_flows}


@dataclass(frozen=True)
class Order:
    """One instance the test starts, and what it must do."""

    i: int
    business_key: str

    @property
    def express(self) -> bool:
        return self.i % 2 == 1

    @property
    def doomed(self) -> bool:
        return self.i % 5 == 4

    def variables(self) -> dict[str, Any]:
        return {"i": self.i, "express": self.express, "doomed": self.doomed}

    @property
    def shipping(self) -> str:
        return "express_ship" if self.express else "ship"

    @property
    def skipped(self) -> str:
        """The shipping step the exclusive gateway does not take."""
        return "ship" if self.express else "express_ship"

    @property
    def succeeding(self) -> tuple[str, ...]:
        """The forward steps that must succeed once each."""
        steps = ("reserve", "pay", "pack", self.shipping)
        return steps if self.doomed else (*steps, FAILING)

    @property
    def undone(self) -> tuple[str, ...]:
        """The steps the saga must undo (doomed orders only), in any order."""
        return ("reserve", "pay", "pack", self.shipping) if self.doomed else ()

    @property
    def end_state(self) -> str:
        return "TERMINATED" if self.doomed else "COMPLETED"


def orders(count: int) -> list[Order]:
    return [Order(i, f"order-{i:05d}") for i in range(count)]
