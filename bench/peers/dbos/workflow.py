"""Run inside DBOS's own virtualenv (never bpm's): the same 10 no-op steps workflow as bpm's
sequential shape, one workflow at a time on PostgreSQL, printing one JSON line of figures.

    <dbos venv>/bin/python bench/peers/dbos/workflow.py URL INSTANCES
"""

from __future__ import annotations

import json
import sys
import time

from dbos import DBOS

STEPS = 10


@DBOS.step()
def noop(index: int) -> int:
    return index


@DBOS.workflow()
def ten_steps() -> int:
    total = 0
    for i in range(STEPS):
        total += noop(i)
    return total


def main() -> None:
    url, instances = sys.argv[1], int(sys.argv[2])
    DBOS(config={"name": "bpm_bench_peer", "system_database_url": url, "log_level": "WARNING"})
    DBOS.launch()
    for _ in range(max(1, instances // 10)):  # warm the pool and the caches, as bpm's runs do
        ten_steps()
    started = time.perf_counter()
    for _ in range(instances):
        ten_steps()
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {"instances_per_s": instances / seconds, "steps_per_s": instances * STEPS / seconds}
        )
    )
    DBOS.destroy()


if __name__ == "__main__":
    main()
