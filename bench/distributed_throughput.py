"""bpm through Celery workers versus a plain Celery chain, on the same Redis and machine.

For K = 1, 2 and 4 worker processes (solo pool, one per process) it runs N instances of the
10-step sequential process of bench/engine_throughput.py through bpm (started by sending
``bpm.start_instance`` by name), then N plain Celery chains of 10 no-op tasks, and prints
instances/s, steps/s and p50/p99 step latency (one handler's end to the next one's start),
plus bpm's share of the plain chain's steps/s. Last, one instance at a time on an idle system,
for bpm's own step latency.

    python -m bench.distributed_throughput [--instances 200] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
import redis
from celery import Celery, chain

from bench import cpu_use
from bench.engine_throughput import fresh_database, plain_dsn, sequential, settle
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import Database, instances
from bpm.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
DB_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_dbench"
REDIS_URL = "redis://127.0.0.1:6379/8"
QUEUES = ("bpm.tokens", "bpm.handlers", "bpm.compensation", "bpm.starts", "bpm.scans")


class Workers:
    """K worker processes of one Celery app, stopped on exit."""

    def __init__(self, app: str, queues: str, count: int, env: dict[str, str], logs: Path):
        self.procs = []
        for n in range(count):
            with (logs / f"{app}-{n}.log").open("ab") as log:
                self.procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "celery",
                            "-A",
                            app,
                            "worker",
                            "-P",
                            "solo",
                            "-Q",
                            queues,
                            "-n",
                            f"w{n}-{uuid4().hex[:6]}@bench",
                            "-l",
                            "warning",
                            "--without-gossip",
                            "--without-mingle",
                            "--without-heartbeat",
                        ],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        time.sleep(3.0)  # let them connect
        # CPU by role from here to stop(): the workers' start-up is not their steps' cost.
        self.database_url = env["BPM_DATABASE_URL"]
        self.cpu_at_start = self._cpu()
        self.cpu_used: dict[str, float] = {}

    def _cpu(self) -> dict[str, dict[int, float]]:
        return cpu_use.by_role([p.pid for p in self.procs], backends(self.database_url))

    def stop(self) -> None:
        self.cpu_used = cpu_use.spent(self.cpu_at_start, self._cpu())
        for p in self.procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            p.wait(timeout=30)


def backends(url: str) -> set[int]:
    """The process ids of the PostgreSQL backends connected to ``url``'s database now."""
    with psycopg.connect(plain_dsn(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        ).fetchall()
    return {int(row[0]) for row in rows}


def latencies(r: redis.Redis, runs: list[str]) -> tuple[list[float], float, float]:
    """Step latencies (s), and the first start and last end over all runs."""
    gaps: list[float] = []
    first, last = float("inf"), 0.0
    for run in runs:
        raw = [
            x.decode() if isinstance(x, bytes) else str(x) for x in r.lrange(f"bench:{run}", 0, -1)
        ]
        steps = sorted(tuple(map(float, x.split(":"))) for x in raw)
        first, last = min(first, steps[0][1]), max(last, steps[-1][2])
        gaps += [b[1] - a[2] for a, b in itertools.pairwise(steps)]
    return gaps, first, last


def wait_for(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def run_bpm(
    k: int,
    n: int,
    env: dict[str, str],
    logs: Path,
    db: Database,
    r: redis.Redis,
    process_key: str = "bench_sequential",
    steps: int = 10,
) -> dict[str, float]:
    """``n`` instances of ``process_key`` (``steps`` recorded steps each) on ``k`` workers;
    rates, step latency and the CPU seconds each role spent (``cpu_<role>_s``)."""
    prefix = f"b{uuid4().hex[:6]}."
    env = {**env, "BPM_QUEUE_PREFIX": prefix}
    workers = Workers("bpm_workers", ",".join(prefix + q for q in QUEUES), k, env, logs)
    client = Celery(broker=REDIS_URL, set_as_current=False)
    runs = [f"{prefix}{i}" for i in range(n)]
    try:
        for run in runs:
            client.send_task(
                "bpm.start_instance",
                queue=f"{prefix}bpm.starts",
                kwargs={"process_key": process_key, "variables": {}, "business_key": run},
            )
        wait_for(
            lambda: (
                all(r.llen(f"bench:{x}") == steps for x in runs[-5:]) and completed(db, prefix) == n
            ),
            600,
            "bpm instances",
        )
    finally:
        workers.stop()
    return summarise(r, runs, n, steps) | cpu_figures(workers)


def cpu_figures(workers: Workers) -> dict[str, float]:
    return {f"cpu_{role}_s": seconds for role, seconds in workers.cpu_used.items()}


def run_bpm_one_at_a_time(
    n: int, env: dict[str, str], logs: Path, db: Database, r: redis.Redis
) -> dict[str, float]:
    prefix = f"s{uuid4().hex[:6]}."
    env = {**env, "BPM_QUEUE_PREFIX": prefix}
    workers = Workers("bpm_workers", ",".join(prefix + q for q in QUEUES), 1, env, logs)
    client = Celery(broker=REDIS_URL, set_as_current=False)
    runs = [f"{prefix}{i}" for i in range(n)]
    try:
        for i, run in enumerate(runs):
            client.send_task(
                "bpm.start_instance",
                queue=f"{prefix}bpm.starts",
                kwargs={"process_key": "bench_sequential", "variables": {}, "business_key": run},
            )
            done = i + 1
            wait_for(lambda done=done: completed(db, prefix) == done, 60, "one instance")
    finally:
        workers.stop()
    return summarise(r, runs, n)


def completed(db: Database, prefix: str) -> int:
    with db.transaction() as conn:
        rows = instances.search(conn, state="COMPLETED", limit=100_000)
    return sum(1 for row in rows if (row.business_key or "").startswith(prefix))


def run_plain(k: int, n: int, env: dict[str, str], logs: Path, r: redis.Redis) -> dict[str, float]:
    queue = f"plain-{uuid4().hex[:6]}"
    env = {**env, "BENCH_QUEUE": queue}
    workers = Workers("bench.plain_chain", queue, k, env, logs)
    from bench.plain_chain import step

    runs = [f"{queue}.{i}" for i in range(n)]
    try:
        for run in runs:
            chain(*(step.si(run, i).set(queue=queue) for i in range(10))).apply_async()
        wait_for(lambda: all(r.llen(f"bench:{x}") == 10 for x in runs), 600, "plain chains")
    finally:
        workers.stop()
    return summarise(r, runs, n) | cpu_figures(workers)


def summarise(r: redis.Redis, runs: list[str], n: int, steps: int = 10) -> dict[str, float]:
    """Rates from the first step's start to the last one's end; step latency (NaN for a
    one-step process, which has no step after a step)."""
    gaps, first, last = latencies(r, runs)
    gaps.sort()
    seconds = last - first
    return {
        "instances_per_s": n / seconds,
        "steps_per_s": n * steps / seconds,
        "p50_ms": statistics.median(gaps) * 1000 if gaps else math.nan,
        "p99_ms": gaps[int(len(gaps) * 0.99) - 1] * 1000 if gaps else math.nan,
    }


def bench_step_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every service task running the recording ``bench_step`` handler."""
    for node in doc["nodes"]:
        if node["type"] == "serviceTask":
            node["handler"] = "bench_step"
    return doc


def worker_env(db_url: str) -> dict[str, str]:
    """The environment both systems' workers run in."""
    return {
        **os.environ,
        "BPM_DATABASE_URL": db_url,
        "BPM_BROKER_URL": REDIS_URL,
        "BPM_IMPORTS": "bench.dist_handlers",
        "PYTHONPATH": str(ROOT),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()

    fresh_database(DB_URL)
    db = Database(DB_URL)
    upgrade(db)
    Engine(db, InProcessDispatcher()).deploy(bench_step_doc(sequential()))
    r = redis.Redis.from_url(REDIS_URL)
    env = worker_env(DB_URL)
    print(
        f"bpm distributed vs plain Celery chain: {args.instances} instances x 10 steps, "
        f"solo pool, Redis {REDIS_URL}, PostgreSQL {db.safe_url}"
    )
    print(
        f"{'system':14} {'K':>2} {'inst/s':>8} {'steps/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'bpm/plain':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        for k in (int(x) for x in args.workers.split(",")):
            settle(DB_URL)
            b = run_bpm(k, args.instances, env, logs, db, r)
            p = run_plain(k, args.instances, env, logs, r)
            for name, res in (("bpm", b), ("plain chain", p)):
                ratio = f"{b['steps_per_s'] / p['steps_per_s']:10.0%}" if name == "bpm" else ""
                print(
                    f"{name:14} {k:2d} {res['instances_per_s']:8.1f} {res['steps_per_s']:9.1f} "
                    f"{res['p50_ms']:8.2f} {res['p99_ms']:8.2f} {ratio}"
                )
        idle = run_bpm_one_at_a_time(20, env, logs, db, r)
        print(
            f"bpm, one instance at a time on 1 idle worker: step latency p50 "
            f"{idle['p50_ms']:.2f} ms, p99 {idle['p99_ms']:.2f} ms (target p50 <= 5 ms)"
        )
    r.flushdb()
    db.dispose()


if __name__ == "__main__":
    main()
