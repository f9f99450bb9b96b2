"""What model code costs per evaluation: a plain JUEL expression, JUEL method calls
(strings, ``execution``, ``dateTime()``, Spin), a bean call, and JavaScript scripts (a
trivial one, one that sets a variable, one with a loop), each run in this process with the
sandbox already made, as a worker runs them.

    python -m bench.expressions [--rounds 20000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bpm.beans import BeanRegistry
from bpm.expressions import compile_expression
from bpm.juel_methods import CallScope, ExecutionView, Facts, Invocation
from bpm.scripts import run_script

VARIABLES: dict[str, Any] = {
    "amount": 1500,
    "status": "APPROVED",
    "payload": '{"id": "A-1", "items": [1, 2, 3]}',
    "order": {"items": [1, 2, 3]},
}


class Orders:
    def isValid(self, order: dict[str, Any]) -> bool:
        return bool(order["items"])


def _invocation() -> Invocation:
    beans = BeanRegistry()
    beans.register("orders", Orders())
    execution = ExecutionView(VARIABLES, Facts(instance_id="i", business_key="b"), writable=True)
    return Invocation(execution, beans=beans)


def _expression(source: str) -> Callable[[], Any]:
    expr = compile_expression(source, where="bench", scope=CallScope.TASK)
    return lambda: expr.evaluate(VARIABLES, _invocation())


def _script(source: str) -> Callable[[], Any]:
    return lambda: run_script(source, "bench", VARIABLES, _invocation())


CASES: dict[str, Callable[[], Any]] = {
    "juel plain ${amount > 1000}": _expression("${amount > 1000}"),
    "juel string method": _expression("${status.toLowerCase().startsWith('app')}"),
    "juel execution.setVariable": _expression("${execution.setVariable('x', amount * 2)}"),
    "juel dateTime().plusDays(2)": _expression("${dateTime().plusDays(2).toDate()}"),
    "juel Spin S().prop()": _expression("${S(payload).prop('id').stringValue()}"),
    "juel bean call": _expression("${orders.isValid(order)}"),
    "js trivial: amount > 1000": _script("amount > 1000"),
    "js setVariable": _script("execution.setVariable('x', amount * 2); true"),
    "js loop of 1000": _script("var s = 0; for (var i = 0; i < 1000; i++) { s += i; } s"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    print(f"{'case':34} {'µs per evaluation':>18}")
    for name, run in CASES.items():
        run()  # the first call makes the sandbox (once per worker thread)
        started = time.perf_counter()
        for _ in range(args.rounds):
            run()
        elapsed = time.perf_counter() - started
        print(f"{name:34} {elapsed / args.rounds * 1e6:18.1f}")


if __name__ == "__main__":
    main()
