"""External tasks over HTTP (``bpm serve``) next to the same work over the database.

N READY tasks of one topic (made in bulk, as in ``bench.fetch_and_lock``), then 8 concurrent
workers each fetch up to 10 and complete them one by one until none is left: first through
the engine's calls on the database (what ``bpm.sdk.Worker(engine=...)`` does), then through
``POST /external-task/fetchAndLock`` and ``/complete`` on one fresh server, with HTTP Basic,
as Camunda's clients do. Prints both rates, their ratio, and fetchAndLock latency p50/p99:
one client fetching one task at a time from a backlog, and under the 8 workers' load.

It also prints the CPU each side spends per task, by role (workers, server, clients,
PostgreSQL), since on a small machine they share the cores and the slower side is the one
that needs more CPU in all.

Both sides run as in production: the steps a completion makes due are sent to the broker
(``--broker``, a Redis database this bench empties afterwards; no Celery worker takes them),
so each figure is the external-task calls' own cost.

    python -m bench.http_external_tasks [--tasks 4000] [--server-workers 2] [--samples 500]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import redis

from bench import cpu_use
from bench.fetch_and_lock import LOCK, create, throughput
from bench.server_long_polls import fresh_database, serve
from bpm import credentials
from bpm.clock import SYSTEM_CLOCK
from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher, broker_dispatcher
from bpm.engine.engine import Engine
from bpm.states import Role
from bpm.store import Database

URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_http"
WORKERS = 8
LOCK_MS = int(LOCK.total_seconds() * 1000)


def _fetch_body(worker: str, max_tasks: int) -> dict[str, Any]:
    return {
        "workerId": worker,
        "maxTasks": max_tasks,
        "usePriority": True,
        "topics": [{"topicName": "bench", "lockDuration": LOCK_MS}],
    }


def http_throughput(
    base: str, auth: tuple[str, str], db: Database, def_id: object, tasks: int, server_pid: int
) -> tuple[float, list[float], dict[str, float]]:
    """Tasks/s fetched and completed by ``WORKERS`` HTTP clients, each a process of its own
    (as separate worker services are: one Python process's threads would share one GIL and
    measure the client); each fetch's ms; CPU ms per task by role."""
    create(db, def_id, tasks, "bench", "READY")
    context = multiprocessing.get_context("spawn")
    with context.Pool(WORKERS) as pool:
        pool.map(_warm, range(WORKERS))  # processes up before the clock starts
        before = cpu_use.snapshot(server_pid)
        started = time.perf_counter()
        results = pool.starmap(_http_worker, [(base, auth, n) for n in range(WORKERS)])
        seconds = time.perf_counter() - started
        after = cpu_use.snapshot(server_pid)
    done = sum(n for n, _ in results)
    cpu = cpu_use.per_task(before, after, done)
    return done / seconds, [ms for _, timings in results for ms in timings], cpu


def _warm(_: int) -> None:
    time.sleep(0.2)


def _http_worker(base: str, auth: tuple[str, str], n: int) -> tuple[int, list[float]]:
    done, fetches = 0, []
    with httpx.Client(base_url=base, auth=auth, timeout=60) as client:
        while True:
            started = time.perf_counter()
            reply = client.post("/external-task/fetchAndLock", json=_fetch_body(f"h{n}", 10))
            fetches.append((time.perf_counter() - started) * 1000)
            reply.raise_for_status()
            batch = reply.json()
            if not batch:
                return done, fetches[:-1]
            for task in batch:
                body = {"workerId": f"h{n}", "variables": {}}
                client.post(f"/external-task/{task['id']}/complete", json=body)
            done += len(batch)


def http_latency(
    base: str, auth: tuple[str, str], db: Database, def_id: object, samples: int
) -> list[float]:
    """One client, one task per fetch, from a backlog of READY tasks."""
    create(db, def_id, samples, "bench", "READY")
    timings = []
    with httpx.Client(base_url=base, auth=auth, timeout=60) as client:
        for _ in range(samples):
            started = time.perf_counter()
            reply = client.post("/external-task/fetchAndLock", json=_fetch_body("probe", 1))
            timings.append((time.perf_counter() - started) * 1000)
            [task] = reply.json()
            client.post(
                f"/external-task/{task['id']}/complete", json={"workerId": "probe"}
            ).raise_for_status()
    return timings


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * q) - 1)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/9")
    args = parser.parse_args()
    os.environ["BPM_BROKER_URL"] = args.broker
    fresh_database(URL)
    db = Database(URL, pool_size=12)
    doc = (
        ProcessBuilder("http_bench")
        .start()
        .service_task("t", topic="bench")
        .end()
        .sequence("start", "t", "end")
        .build()
    )
    def_id = Engine(db, InProcessDispatcher()).deploy(doc).id
    secret = credentials.add(db, "bench", Role.OPERATOR, SYSTEM_CLOCK.now())
    auth = ("bench", secret)
    port = _free_port()
    log = Path(tempfile.mkdtemp()) / "server.log"
    proc = serve(URL, port, log, workers=args.server_workers, broker=args.broker)
    base = f"http://127.0.0.1:{port}/engine-rest"
    try:
        print(
            f"{args.tasks} tasks per run, {WORKERS} concurrent workers, fetch up to 10 and "
            f"complete each; PostgreSQL {db.safe_url}; bpm serve --workers {args.server_workers}"
        )
        before = cpu_use.snapshot()
        direct = throughput(db, def_id, args.tasks, WORKERS, broker_dispatcher)
        db_cpu = cpu_use.per_task(before, cpu_use.snapshot(), args.tasks)
        print(f"  over the database (engine calls):   {direct:8.0f} tasks/s")
        rate, fetches, http_cpu = http_throughput(base, auth, db, def_id, args.tasks, proc.pid)
        print(
            f"  over HTTP (fetchAndLock, complete): {rate:8.0f} tasks/s "
            f"({rate / direct:.0%} of the database figure)"
        )
        print(
            f"  CPU ms per task on {os.cpu_count()} cores: over the database: workers "
            f"{db_cpu['this']:.2f}, PostgreSQL {db_cpu['postgres']:.2f} (with making the "
            f"tasks); over HTTP: server {http_cpu['server']:.2f}, clients "
            f"{http_cpu['clients']:.2f}, PostgreSQL {http_cpu['postgres']:.2f}"
        )
        print(
            f"  fetchAndLock under that load: p50 {statistics.median(fetches):6.2f} ms  "
            f"p99 {_p(fetches, 0.99):6.2f} ms ({len(fetches)} fetches)"
        )
        timings = http_latency(base, auth, db, def_id, args.samples)
        print(
            f"fetchAndLock latency, one client, one task per fetch, tasks available: "
            f"p50 {statistics.median(timings):5.2f} ms  p99 {_p(timings, 0.99):5.2f} ms"
        )
    finally:
        proc.terminate()
        proc.wait(10)
        db.dispose()
        redis.Redis.from_url(args.broker).flushdb()


if __name__ == "__main__":
    main()
