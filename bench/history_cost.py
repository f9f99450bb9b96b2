"""What complete history costs: the 10-step process with and without history rows.

Runs N instances of the sequential process of bench/engine_throughput.py whose handlers each
write one variable (so every step records a task CREATED/LOCKED/COMPLETED, token moves and a
VariablesChanged row), first as the engine runs, then with the history buffer switched off
(bench-only: the rows are dropped before they are written), and prints ms per step for both
and history's share of a step's time.

    python -m bench.history_cost [--instances 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any
from unittest import mock

from bench.engine_throughput import DEFAULT_URL, fresh_database, sequential
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import Database
from bpm.store.history import HistoryBuffer
from bpm.store.migrate import upgrade

STEPS = 10


def count(ctx: HandlerContext) -> dict[str, Any]:
    return {"n": int(ctx.variables.get("n", 0)) + 1}


def run(engine: Engine, dispatcher: InProcessDispatcher, instances: int) -> float:
    """Seconds per step."""
    started = time.perf_counter()
    for _ in range(instances):
        engine.start("bench_sequential", {"n": 0})
        while (job := dispatcher.pop(engine.clock.now())) is not None:
            engine.run_job(job)
    return (time.perf_counter() - started) / (instances * STEPS)


def without_history() -> Any:
    """Drop every history row as it is recorded (the runtime writes stay as they are)."""
    return mock.patch.multiple(HistoryBuffer, token=_drop, task=_drop, engine=_drop)


def _drop(self: HistoryBuffer, **_: Any) -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    fresh_database(args.url)
    db = Database(args.url, pool_size=3)
    upgrade(db)
    registry = HandlerRegistry()
    registry.register("noop", count)
    dispatcher = InProcessDispatcher()
    engine = Engine(db, dispatcher, handlers=registry, worker_id="history-bench")
    engine.deploy(sequential())
    run(engine, dispatcher, 20)  # warm up
    full, bare = [], []
    for _ in range(args.rounds):  # interleaved, so drift hits both alike
        full.append(run(engine, dispatcher, args.instances))
        with without_history():
            bare.append(run(engine, dispatcher, args.instances))
    with_ms, without_ms = statistics.median(full) * 1000, statistics.median(bare) * 1000
    print(
        f"history cost: {args.instances} instances x {STEPS} steps, {args.rounds} rounds, "
        f"PostgreSQL {db.safe_url}"
    )
    print(f"  with history     {with_ms:6.2f} ms/step")
    print(f"  without history  {without_ms:6.2f} ms/step")
    print(
        f"  history's share of a step: {(with_ms - without_ms) / with_ms:.0%} "
        f"(adds {(with_ms - without_ms) / without_ms:.0%}; target: at most 25%)"
    )
    db.dispose()


if __name__ == "__main__":
    main()
