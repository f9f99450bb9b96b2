"""The cockpit's instance search at scale: how long one page takes with N instances.

Fills a fresh database with N instances of five processes (bulk, in SQL: 1% FAILED, the rest
COMPLETED or RUNNING, one a second), then times the queries the instances page makes through
the engine's facade (``Engine.find_instance_history``, 51 rows, newest first) and prints each
one's median over 5 runs, with the top of its PostgreSQL plan:

- the first page, unfiltered, by process key, by business key, by state FAILED;
- a page 90% deep by key (what the cockpit's Next link does) and, for contrast, by offset;
- the processes page's counts (instances by state of every version: ``Engine.instance_counts``,
  one grouped scan), and the same as one count per version and state.

    python -m bench.cockpit_search [--instances 1000000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import event, text

from bench.engine_throughput import fresh_database
from bpm.api import DefinitionQuery
from bpm.clock import SYSTEM_CLOCK
from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.states import InstanceState
from bpm.store import Database
from bpm.store.history_queries import InstanceHistoryQuery
from bpm.store.migrate import upgrade
from bpm.store.paging import Page

URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_cockpit_bench"
KEYS = [f"search_bench_{n}" for n in range(5)]
PAGE = 51
NEWEST = (("started", True),)

FILL = """
INSERT INTO process_instances
    (id, process_def_id, process_key, business_key, state, version, started_at, updated_at,
     ended_at)
SELECT gen_random_uuid(), d.id, d.key, 'order-' || i,
       CASE WHEN i % 100 = 0 THEN 'FAILED' WHEN i % 10 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END,
       1, :start + make_interval(secs => i), :start + make_interval(secs => i),
       CASE WHEN i % 10 = 0 THEN NULL ELSE :start + make_interval(secs => i + 5) END
FROM generate_series(1, :n) AS i
JOIN process_definitions d ON d.key = 'search_bench_' || (i % 5)
"""


@contextmanager
def captured(db: Database) -> Iterator[list[tuple[str, Any]]]:
    """The statements run meanwhile (to EXPLAIN the last one)."""
    seen: list[tuple[str, Any]] = []

    def remember(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        seen.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", remember)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", remember)


def timed(db: Database, run: Callable[[], object]) -> tuple[float, str]:
    """Median milliseconds of 5 runs, and the first lines of the query's plan."""
    run()  # warm the caches
    times = []
    for _ in range(5):
        began = time.perf_counter()
        run()
        times.append((time.perf_counter() - began) * 1000)
    with captured(db) as seen:
        run()
    statement, params = next(s for s in reversed(seen) if "process_instances" in s[0])
    with db.engine.connect() as conn:
        plan = conn.exec_driver_sql("EXPLAIN (ANALYZE, COSTS OFF) " + statement, params).all()
    top = " | ".join(row[0].strip() for row in plan[:3])
    return statistics.median(times), top


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--url", default=URL, help="a database this bench drops and re-creates")
    args = parser.parse_args()
    fresh_database(args.url)
    db = Database(args.url)
    upgrade(db)
    engine = Engine(db, InProcessDispatcher(), worker_id="bench")
    for key in KEYS:
        engine.deploy(ProcessBuilder(key).start().end().sequence("start", "end").build())
    began = time.perf_counter()
    start = SYSTEM_CLOCK.now() - timedelta(seconds=args.instances + 60)
    with db.transaction() as conn:
        conn.execute(text(FILL), {"n": args.instances, "start": start})
        conn.execute(text("ANALYZE process_instances"))
    print(f"{args.instances:,} instances written in {time.perf_counter() - began:.1f} s")
    deep = int(args.instances * 0.9)
    deep_at = start + timedelta(seconds=args.instances - deep)

    def page(q: InstanceHistoryQuery, offset: int = 0) -> Callable[[], object]:
        return lambda: engine.find_instance_history(q, Page(offset, PAGE, NEWEST))

    cases = {
        "first page": page(InstanceHistoryQuery()),
        "by process key": page(InstanceHistoryQuery(process_keys=[KEYS[1]])),
        "by business key": page(InstanceHistoryQuery(business_key=f"order-{deep}")),
        "state FAILED": page(InstanceHistoryQuery(states=["FAILED"])),
        "90% deep, by key": page(InstanceHistoryQuery(started_before=deep_at)),
        "90% deep, by offset": page(InstanceHistoryQuery(), deep),
    }
    for name, run in cases.items():
        ms, plan = timed(db, run)
        print(f"{name:22} {ms:8.1f} ms   {plan}")
    ids = [d.id for d in engine.find_process_definitions(DefinitionQuery(keys=KEYS))]
    began = time.perf_counter()
    for def_id in ids:  # a count per version and state, as a first version of the page did
        for state in InstanceState:
            engine.count_instance_history(
                InstanceHistoryQuery(definition_ids=[def_id], states=[state])
            )
    took = (time.perf_counter() - began) * 1000
    print(f"{'counts, one by one':22} {took:8.1f} ms   ({len(ids)} versions x 5 states)")
    ms, plan = timed(db, lambda: engine.instance_counts(ids))
    print(f"{'processes page counts':22} {ms:8.1f} ms   {plan}")
    db.dispose()


if __name__ == "__main__":
    main()
