"""Every throughput benchmark in one run, interleaved round by round, in one table.

Each round runs every part once, the order rotated from round to round, so that all parts
share the same window of a machine whose load drifts: the engine alone (four shapes, one
client, with SQL statements and transactions per step), bpm with K Celery workers and the
plain Celery chain on K workers for each K, the one-service-task process end to end on
workers, and, with ``--peers dbos``, DBOS. The table gives each figure as the median over
the rounds with its spread, the ratios taken within each round, the CPU each role spent
per step and the machine it ran on.

    python -m bench.suite [--rounds 3] [--quick] [--workers 1,2,4] [--peers dbos]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis

from bench import distributed_throughput as dist
from bench import engine_throughput as eng
from bench.engine_throughput import Counters, plain_dsn
from bench.machine import describe
from bench.suite_table import ENGINE_SHAPES, Round, machine_lines, table
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerRegistry
from bpm.store import Database
from bpm.store.migrate import upgrade

ENGINE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_suite"
DIST_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_suite_dist"
DBOS_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_suite_dbos"
ONE_TASK_KEY = "bench_one_task"
STEPS = 10
#: A backend reports its transactions to the statistics at most about once a second, and
#: when it exits: after a part's workers stopped, wait this long before reading them.
STATS_FLUSH_S = 1.5


@dataclass(frozen=True)
class Sizes:
    engine_instances: int
    dist_instances: int
    one_task_instances: int
    peer_instances: int


FULL = Sizes(engine_instances=200, dist_instances=100, one_task_instances=200, peer_instances=200)
QUICK = Sizes(engine_instances=20, dist_instances=10, one_task_instances=20, peer_instances=20)


@dataclass
class Bench:
    """What every part needs: the two databases, Redis, the workers' environment and logs."""

    sizes: Sizes
    workers: list[int]
    engine_db: Database
    registry: HandlerRegistry
    counters: Counters
    dist_db: Database
    dist_counters: Counters
    broker: redis.Redis
    env: dict[str, str]
    logs: Path


Part = tuple[str, Callable[[Bench], Round]]


def engine_part(key: str, name: str, steps: int) -> Part:
    def run(b: Bench) -> Round:
        r = eng.run_shape(
            b.engine_db, b.registry, b.counters, key, steps, b.sizes.engine_instances, 1
        )
        return {f"engine.{name}.{figure}": value for figure, value in r.items()}

    return f"engine {name}", run


def per_step(result: dict[str, float], steps: int) -> Round:
    """Rates and latency as measured, CPU seconds turned into milliseconds per step."""
    out = {k: v for k, v in result.items() if not k.startswith("cpu_")}
    for k, v in result.items():
        if k.startswith("cpu_"):
            out[k.removesuffix("_s") + "_ms"] = v * 1000 / steps
    return out


def server_transactions(url: str) -> int:
    """Transactions PostgreSQL has counted in ``url``'s database, from a fresh connection
    (a session caches the statistics it read)."""
    with psycopg.connect(plain_dsn(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def workers_transactions(b: Bench, run: Callable[[], dict[str, float]]) -> dict[str, float]:
    """``run()``'s figures and ``transactions``: how many the workers made, which is the
    database's count less this process's own (its polls for completion, this count's)."""
    server, mine = server_transactions(DIST_URL), b.dist_counters.commits
    figures = run()
    b.dist_db.dispose()  # this process's sessions end too, and so report what they counted
    time.sleep(STATS_FLUSH_S)
    made = server_transactions(DIST_URL) - server - (b.dist_counters.commits - mine) - 1
    return figures | {"transactions": float(made)}


def bpm_part(k: int) -> Part:
    def run(b: Bench) -> Round:
        n = b.sizes.dist_instances
        r = workers_transactions(b, lambda: dist.run_bpm(k, n, b.env, b.logs, b.dist_db, b.broker))
        r["tx_per_step"] = r.pop("transactions") / (n * STEPS)
        return {f"bpm.{k}.{f}": v for f, v in per_step(r, n * STEPS).items()}

    return f"bpm K={k}", run


def chain_part(k: int) -> Part:
    def run(b: Bench) -> Round:
        n = b.sizes.dist_instances
        r = dist.run_plain(k, n, b.env, b.logs, b.broker)
        return {f"chain.{k}.{f}": v for f, v in per_step(r, n * STEPS).items()}

    return f"chain K={k}", run


def one_task_part(b: Bench) -> Round:
    """Start → one service task → end, sent to the most workers asked for."""
    n, k = b.sizes.one_task_instances, max(b.workers)
    r = workers_transactions(
        b, lambda: dist.run_bpm(k, n, b.env, b.logs, b.dist_db, b.broker, ONE_TASK_KEY, 1)
    )
    return {
        "one_task.instances_per_s": r["instances_per_s"],
        "one_task.tx_per_instance": r["transactions"] / n,
    }


def dbos_part(b: Bench) -> Round:
    from bench.peers.dbos import runner as dbos

    try:
        r = dbos.run(b.sizes.peer_instances, DBOS_URL)
    except dbos.PeerUnavailable as exc:
        print(f"  DBOS peer left out: {exc}", file=sys.stderr)
        return {}
    return {"peer.dbos.steps_per_s": r["steps_per_s"]}


def parts(workers: list[int], peers: list[str]) -> list[Part]:
    out = [
        engine_part(process_key, name, steps)
        for (_, process_key, steps), (name, _) in zip(eng.SHAPES, ENGINE_SHAPES, strict=True)
    ]
    out += [bpm_part(k) for k in workers] + [chain_part(k) for k in workers]
    out.append(("one service task", one_task_part))
    if "dbos" in peers:
        out.append(("DBOS", dbos_part))
    return out


def rotated(items: list[Part], round_no: int) -> list[Part]:
    """The parts in round ``round_no``'s order: each round starts one part further on."""
    shift = round_no % len(items)
    return items[shift:] + items[:shift]


def set_up(sizes: Sizes, workers: list[int], logs: Path) -> Bench:
    engine_db, registry, counters = eng.prepare(ENGINE_URL, 1)
    eng.fresh_database(DIST_URL)
    dist_db = Database(DIST_URL)
    dist_counters = eng.count_sql(dist_db)
    upgrade(dist_db)
    boot = Engine(dist_db, InProcessDispatcher())
    boot.deploy(dist.bench_step_doc(eng.sequential()))
    boot.deploy(dist.bench_step_doc({**eng.sequential(1), "key": ONE_TASK_KEY}))
    broker = redis.Redis.from_url(dist.REDIS_URL)
    env = dist.worker_env(DIST_URL)
    return Bench(
        sizes, workers, engine_db, registry, counters, dist_db, dist_counters, broker, env, logs
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--workers", default="1,2,4", help="the worker counts K, comma-separated")
    parser.add_argument("--peers", default="", help="peers to add, comma-separated: dbos")
    args = parser.parse_args()
    workers = [int(x) for x in args.workers.split(",")]
    peers = [p for p in args.peers.split(",") if p]
    sizes = QUICK if args.quick else FULL
    all_parts = parts(workers, peers)
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        b = set_up(sizes, workers, Path(tmp))
        machine = describe(ENGINE_URL, b.broker)
        machine["PostgreSQL autovacuum"] = (
            f"{eng.autovacuum(ENGINE_URL)} (the suite vacuums and analyzes its databases "
            f"before each part, as autovacuum would)"
        )
        try:
            for n in range(args.rounds):
                one: Round = {}
                for name, run in rotated(all_parts, n):
                    print(f"round {n + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                    for url in (ENGINE_URL, DIST_URL):  # what autovacuum would have done
                        eng.settle(url)
                    one |= run(b)
                rounds.append(one)
        finally:
            b.broker.flushdb()  # the bench's own Redis database: its step records
            b.engine_db.dispose()
            b.dist_db.dispose()
    print(table(rounds, workers))
    print()
    print("\n".join(machine_lines(machine)))


if __name__ == "__main__":
    main()
