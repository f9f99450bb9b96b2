"""Where a step's CPU goes, by layer, and what two workers wait on.

``--profile``: one Celery worker (solo pool, as the throughput benches run it) carries N
instances of the 10-step sequential process while py-spy samples it. Only samples taken while
the worker holds the GIL count (time spent in Python, not waiting for PostgreSQL or Redis),
and each is charged to the innermost frame of a known layer (Celery and its broker client,
logging, psycopg, SQLAlchemy, bpm's store, bpm's engine, JSON), so a standard-library helper
counts for the layer that called it. Also prints CPU per step by role, read from ``/proc``.

``--scaling``: the same process with K = 1 and K = 2 workers while a sampler reads
``pg_stat_activity`` every 10 ms: what the bench database's backends were doing (running,
waiting for their client, waiting on a lock another transaction holds, on I/O or on the WAL),
and how busy the machine's cores were (every role's CPU over wall time and cores). A lock
share near zero with the cores busy says the workers do not serialise on rows: they share
the machine.

    python -m bench.step_profile [--profile] [--scaling] [--instances 300]

py-spy (a dev dependency) must be allowed to attach (root, or ptrace permitted).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from uuid import uuid4

import psycopg
import redis
from celery import Celery

from bench import distributed_throughput as dist
from bench.engine_throughput import fresh_database, plain_dsn, sequential, settle
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.store import Database
from bpm.store.migrate import upgrade

DB_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_step_profile"
STEPS = 10

#: Layers, tried in this order against a frame's file: the first that matches names it.
LAYERS = (
    ("logging", r"\(logging/"),
    ("Celery, kombu, redis-py", r"\((celery|kombu|billiard|vine|amqp|redis)/"),
    ("psycopg (driver)", r"\(psycopg/"),
    ("SQLAlchemy", r"\(sqlalchemy/"),
    ("JSON encoding", r"\((json/|orjson)"),
    ("bpm store (SQL, rows)", r"\(bpm/store/"),
    ("bpm engine (semantics, runner)", r"\(bpm/engine/"),
    ("bpm other (definitions, handlers)", r"\(bpm/"),
    ("bpm workers (Celery tasks)", r"\(bpm_workers/"),
    ("bench handler", r"\(bench/"),
)


def layer_of(stack: str) -> str:
    """The layer of the innermost frame that belongs to one (py-spy's raw stacks are
    ``outer;...;inner``, each ``function (file:line)``)."""
    for frame in reversed(stack.split(";")):
        for name, pattern in LAYERS:
            if re.search(pattern, frame):
                return name
    return "Python itself (interpreter, stdlib)"


def shares(raw: str) -> tuple[Counter[str], int]:
    """Samples per layer from py-spy's raw output, and the total."""
    by_layer: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        by_layer[layer_of(stack)] += int(count)
        total += int(count)
    return by_layer, total


def prepared(url: str) -> tuple[Database, redis.Redis, dict[str, str]]:
    fresh_database(url)
    db = Database(url)
    upgrade(db)
    Engine(db, InProcessDispatcher()).deploy(dist.bench_step_doc(sequential()))
    return db, redis.Redis.from_url(dist.REDIS_URL), dist.worker_env(url)


def send_and_wait(db: Database, r: redis.Redis, prefix: str, n: int) -> float:
    """Start ``n`` instances by message; seconds until every one completed."""
    client = Celery(broker=dist.REDIS_URL, set_as_current=False)
    began = time.perf_counter()
    for i in range(n):
        client.send_task(
            "bpm.start_instance",
            queue=f"{prefix}bpm.starts",
            kwargs={
                "process_key": "bench_sequential",
                "variables": {},
                "business_key": f"{prefix}{i}",
            },
        )
    dist.wait_for(lambda: dist.completed(db, prefix) == n, 600, "the instances")
    return time.perf_counter() - began


def workers(k: int, env: dict[str, str], logs: Path) -> tuple[dist.Workers, str]:
    prefix = f"p{uuid4().hex[:6]}."
    queues = ",".join(prefix + q for q in dist.QUEUES)
    return dist.Workers("bpm_workers", queues, k, {**env, "BPM_QUEUE_PREFIX": prefix}, logs), prefix


def per_step_cpu(used: dict[str, float], steps: int) -> str:
    return ", ".join(
        f"{role} {seconds * 1000 / steps:.2f}" for role, seconds in sorted(used.items())
    )


def profile(n: int) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("py-spy is not installed (pip install -e '.[dev]')")
    db, r, env = prepared(DB_URL)
    with tempfile.TemporaryDirectory() as tmp:
        logs, out = Path(tmp), Path(tmp) / "samples.txt"
        pool, prefix = workers(1, env, logs)
        sampler = subprocess.Popen(
            [
                spy,
                "record",
                "--gil",
                "-r",
                "500",
                "-f",
                "raw",
                "-o",
                str(out),
                "--pid",
                str(pool.procs[0].pid),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            seconds = send_and_wait(db, r, prefix, n)
        finally:
            sampler.send_signal(signal.SIGINT)
            sampler.wait(timeout=60)
            pool.stop()
        by_layer, total = shares(out.read_text() if out.exists() else "")
    steps = n * STEPS
    print(f"one worker, {n} instances of {STEPS} steps: {steps / seconds:.0f} steps/s (sampled)")
    print(f"CPU per step, ms: {per_step_cpu(pool.cpu_used, steps)}")
    print(f"the worker's time in Python by layer ({total} samples while it held the GIL):")
    for name, count in by_layer.most_common():
        print(f"  {name:36s} {100 * count / max(total, 1):5.1f}%")


class WaitSampler:
    """``pg_stat_activity`` of one database every ``every`` seconds, in a thread: what its
    other backends were doing, counted."""

    def __init__(self, url: str, every: float = 0.01) -> None:
        self.url, self.every = url, every
        self.seen: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WaitSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with psycopg.connect(plain_dsn(self.url), autocommit=True) as conn:
            while not self._stop.is_set():
                rows = conn.execute(
                    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend'"
                ).fetchall()
                for state, kind, event in rows:
                    self.seen[_activity(state, kind, event)] += 1
                time.sleep(self.every)


def _activity(state: str | None, kind: str | None, event: str | None) -> str:
    if state == "active" and kind is None:
        return "running"
    if state == "active" and kind is not None:
        return f"waiting on {kind} ({event})"
    if state in ("idle", "idle in transaction") and kind == "Client":
        return f"{state}: waiting for its client"
    return f"{state} {kind or ''} {event or ''}".strip()


def scaling(n: int) -> None:
    db, r, env = prepared(DB_URL)
    cores = os.cpu_count() or 1
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in (1, 2):
            settle(DB_URL)
            pool, prefix = workers(k, env, Path(tmp))
            try:
                with WaitSampler(DB_URL) as sampler:
                    seconds = send_and_wait(db, r, prefix, n)
            finally:
                pool.stop()
            steps = n * STEPS
            rates[k] = steps / seconds
            busy = sum(pool.cpu_used.values()) / (seconds * cores)
            total = sum(sampler.seen.values()) or 1
            print(f"K={k}: {rates[k]:.0f} steps/s; cores busy with the bench {100 * busy:.0f}%")
            print(f"  CPU per step, ms: {per_step_cpu(pool.cpu_used, steps)}")
            print("  the database's backends, share of samples:")
            for what, count in sampler.seen.most_common(8):
                print(f"    {what:48s} {100 * count / total:5.1f}%")
    print(f"scaling 1 -> 2 workers: {rates[2] / rates[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--profile", action="store_true", help="CPU by layer of one worker")
    parser.add_argument("--scaling", action="store_true", help="what one and two workers wait on")
    args = parser.parse_args()
    if not (args.profile or args.scaling):
        args.profile = args.scaling = True
    if args.profile:
        profile(args.instances)
    if args.scaling:
        scaling(args.instances)


if __name__ == "__main__":
    main()
