"""External tasks: fetch-and-lock + complete throughput, and fetch latency as the table grows.

1. Throughput: N READY tasks of one topic; 1, 4 and 8 worker threads each fetch (up to 10 at a
   time) and complete until none is left. Prints tasks/s. Then the same through the SDK's
   ``Worker`` with 8 handler threads, without and with 8 tasks prefetched (one thread fetches
   for all; each handler reports on its own).
2. Latency: with 10,000 and then 1,000,000 finished tasks in the table, plus 100,000 READY
   tasks of other topics, one new task at a time is fetched; prints fetch p50/p99 (ms). Then
   the same with a backlog of 100,000 READY tasks in the fetched topic itself.

    python -m bench.fetch_and_lock [--tasks 4000] [--finished 10000,1000000]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from uuid import uuid4

from sqlalchemy import text

from bench.engine_throughput import fresh_database
from bench.threads import run_concurrently
from bpm.definitions import ProcessBuilder
from bpm.dispatch import Dispatcher, InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.engine.operations.external import TopicRequest
from bpm.sdk import Worker
from bpm.store import Database
from bpm.store.migrate import upgrade

URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_fbench"
LOCK = timedelta(minutes=5)

# One instance and token per task, as the engine would create them (bulk, in SQL).
CREATE = """
WITH i AS (
  INSERT INTO process_instances (id, process_def_id, process_key, state, version, started_at,
                                 updated_at)
  SELECT gen_random_uuid(), :def_id, 'fetch_bench', 'RUNNING', 0, now(), now()
  FROM generate_series(1, :n) RETURNING id),
k AS (
  INSERT INTO tokens (id, instance_id, node_id, state, mode, concurrent, wait_kind, version,
                      created_at, updated_at)
  SELECT gen_random_uuid(), i.id, 't', 'WAITING', 'FORWARD', false, 'TASK', 1, now(), now()
  FROM i RETURNING id, instance_id)
INSERT INTO external_tasks (id, token_id, instance_id, node_id, topic, kind, state, retries,
                            attempts, priority, version, created_at, updated_at)
SELECT gen_random_uuid(), k.id, k.instance_id, 't', :topic, 'EXTERNAL', :state, 1, 0, 0, 0,
       now() - interval '1 hour', now() - interval '1 hour'
FROM k
"""


def create(db: Database, def_id: object, n: int, topic: str, state: str) -> None:
    with db.transaction() as conn:
        conn.execute(text(CREATE), {"def_id": def_id, "n": n, "topic": topic, "state": state})
        conn.exec_driver_sql("ANALYZE")


def throughput(
    db: Database,
    def_id: object,
    tasks: int,
    threads: int,
    dispatcher: Callable[[], Dispatcher] = InProcessDispatcher,
) -> float:
    """Tasks/s; ``dispatcher`` takes the steps each completion makes due (by default they
    run in the completing thread)."""
    create(db, def_id, tasks, "bench", "READY")
    done = [0]
    lock = threading.Lock()

    def work(n: int) -> None:
        engine = Engine(db, dispatcher(), worker_id=f"bench-{n}")
        while batch := engine.fetch_and_lock(f"w{n}", [TopicRequest("bench", LOCK)], 10):
            for task in batch:
                engine.complete(task.id, f"w{n}")
            with lock:
                done[0] += len(batch)

    seconds = run_concurrently(work, threads)
    return done[0] / seconds


def sdk_throughput(db: Database, def_id: object, tasks: int, threads: int, prefetch: int) -> float:
    create(db, def_id, tasks, "bench", "READY")
    done = threading.Semaphore(0)
    worker = Worker(
        "bench-sdk",
        engine=Engine(db, InProcessDispatcher(), worker_id="sdk"),
        threads=threads,
        long_poll=1.0,
        prefetch=prefetch,
    )
    worker.subscribe("bench", lock_duration=LOCK)(lambda task: None)
    worker.bind(worker.engine, after_report=done.release)
    runner = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    started = time.perf_counter()
    runner.start()
    for _ in range(tasks):
        if not done.acquire(timeout=120):
            worker.stop()
            raise SystemExit("the SDK worker stopped reporting")
    seconds = time.perf_counter() - started
    worker.stop()
    runner.join()
    return tasks / seconds


def latency(db: Database, def_id: object, samples: int) -> tuple[float, float]:
    engine = Engine(db, InProcessDispatcher(), worker_id="latency")
    timings = []
    for _ in range(samples):
        _one(db, def_id)
        started = time.perf_counter()
        [task] = engine.fetch_and_lock("probe", [TopicRequest("probe", LOCK)], 1)
        timings.append((time.perf_counter() - started) * 1000)
        engine.complete(task.id, "probe")
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.99) - 1]


def _one(db: Database, def_id: object) -> None:
    with db.transaction() as conn:
        conn.execute(text(CREATE), {"def_id": def_id, "n": 1, "topic": "probe", "state": "READY"})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--finished", default="10000,1000000")
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args()
    fresh_database(URL)
    db = Database(URL, pool_size=10)
    upgrade(db)
    doc = (
        ProcessBuilder("fetch_bench")
        .start()
        .service_task("t", topic="bench")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    def_id = Engine(db, InProcessDispatcher()).deploy(doc).id
    print(f"fetch-and-lock + complete, {args.tasks} tasks per run, PostgreSQL {db.safe_url}")
    for threads in (1, 4, 8):
        rate = throughput(db, def_id, args.tasks, threads)
        print(f"  {threads} worker thread(s): {rate:8.0f} tasks/s fetched and completed")
    for prefetch in (0, 8):
        rate = sdk_throughput(db, def_id, args.tasks, 8, prefetch)
        print(
            f"  bpm.sdk.Worker, 8 threads, prefetch {prefetch}: {rate:8.0f} tasks/s "
            f"(handlers that return at once)"
        )
    create(db, def_id, 100_000, f"other-{uuid4().hex[:4]}", "READY")
    have = 0
    print("fetch latency, one task at a time (100,000 READY tasks of other topics present):")
    for finished in (int(x) for x in args.finished.split(",")):
        create(db, def_id, finished - have, "bench", "DONE")
        have = finished
        p50, p99 = latency(db, def_id, args.samples)
        print(f"  {finished:>9,} finished tasks: p50 {p50:5.2f} ms  p99 {p99:5.2f} ms")
    create(db, def_id, 100_000, "probe", "READY")  # a backlog in the fetched topic itself
    p50, p99 = latency(db, def_id, args.samples)
    print(f"  and 100,000 READY tasks in the fetched topic: p50 {p50:5.2f} ms  p99 {p99:5.2f} ms")
    db.dispose()


if __name__ == "__main__":
    main()
