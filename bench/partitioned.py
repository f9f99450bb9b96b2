"""bpm's schema as it is against a partitioned layout (``bench/partition_layout.py``: runtime
tables hashed by instance id, history by day), for docs/scaling.md.

First says whether Citus installs from the machine's package sources (the experiment uses
PostgreSQL's own partitions either way). Builds both databases (migrations, then the
conversion of one), parks instances at an external task and at a message wait in each (with
business keys), then runs the engine's sequential shape against both, interleaved round by
round, and prints steps/s, PostgreSQL CPU, statements, WAL, index entries and full-page
images per step with medians. Then runs the hot-path statements alone under EXPLAIN
(ANALYZE, BUFFERS) on both layouts, as the engine sends them and with an instance-id
predicate added: execution and planning time, shared buffers (hit or read) and relations
scanned; and each prepared, run a thousand times, with the CPU its backend spent per run.

    python -m bench.partitioned [--instances 200] [--rounds 3] [--partitions 16]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from bench.engine_throughput import SHAPES, Counters, plain_dsn, prepare
from bench.partition_layout import convert
from bench.partition_queries import Explained, backend_cpu_us, explain, hot_paths
from bench.step_cost import StepCost, measure
from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerRegistry
from bpm.store import Database

BASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_scale_"
TOPIC = "scale_work"
MESSAGE = "scale_go"


@dataclass(frozen=True)
class Layout:
    db: Database
    registry: HandlerRegistry
    counters: Counters
    url: str


def citus_packages() -> str:
    """What the machine's package sources offer for Citus (no repository is added)."""
    try:
        policy = subprocess.run(
            ["apt-cache", "policy", "postgresql-15-citus", "postgresql-15-citus-12.1"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        found = subprocess.run(
            ["apt-cache", "search", "--names-only", "citus"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except FileNotFoundError:
        return "no apt-cache: not a Debian system"
    if not policy and not found:
        return "not in the configured Debian sources (apt-cache policy and search find nothing)"
    return (policy + "\n" + found).strip()


def waiting_processes() -> list[dict[str, object]]:
    """A process parked at an external task, and one parked at a message wait."""
    ext = ProcessBuilder("scale_external").start().service_task("work", topic=TOPIC).end()
    msg = ProcessBuilder("scale_message").start().receive_task("wait", message=MESSAGE).end()
    return [
        ext.sequence("start", "work", "end").build(),
        msg.sequence("start", "wait", "end").build(),
    ]


def build(url: str, partitions: int | None, waiting: int) -> Layout:
    """A fresh database at ``url`` (partitioned when ``partitions`` is given) with the bench
    shapes deployed and ``waiting`` instances parked at each wait."""
    db, registry, counters = prepare(url, 1)
    if partitions is not None:
        with psycopg.connect(plain_dsn(url), autocommit=True) as conn:
            done = convert(conn, partitions)
        print(f"\nconverted {url.rsplit('/', 1)[1]} ({partitions} hash partitions):")
        for line in done.widened:
            print(f"  key widened: {line}")
        for line in done.dropped_unique:
            print(f"  unique dropped: {line}")
        for line in done.dropped_foreign:
            print(f"  foreign key dropped: {line}")
        print(f"  foreign keys kept: {done.kept_foreign}")
    dispatcher = InProcessDispatcher()
    engine = Engine(db, dispatcher, handlers=registry)
    for doc in waiting_processes():
        engine.deploy(doc)
    for i in range(waiting):
        engine.start("scale_external", {"n": i}, business_key=f"ext-{i}")
        engine.start("scale_message", {"n": i}, business_key=f"order-{i}")
        while (job := dispatcher.pop(engine.clock.now())) is not None:
            engine.run_job(job)
    db.dispose()
    return Layout(db, registry, counters, url)


def _median(costs: list[StepCost], of: Callable[[StepCost], float]) -> float:
    return statistics.median(of(c) for c in costs)


def _own_wal(c: StepCost) -> float:
    return c.own_wal.bytes / c.steps if c.own_wal else float("nan")


def _own_index(c: StepCost) -> float:
    return c.own_wal.index_inserts / c.steps if c.own_wal else float("nan")


def _own_pages(c: StepCost) -> float:
    return c.own_wal.full_pages / c.steps if c.own_wal else float("nan")


def run_rounds(layouts: dict[str, Layout], instances: int, rounds: int) -> None:
    _, key, steps = SHAPES[0]
    print(f"\nsequential shape, {instances} instances a run, 1 client, {rounds} rounds")
    header = f"{'round':>5} {'layout':12} {'steps/s':>8} {'PG ms/step':>10} {'stmt/step':>9}"
    print(header + f" {'WAL B/step':>10} {'idx/step':>8} {'FPI/step':>8}")
    costs: dict[str, list[StepCost]] = {name: [] for name in layouts}
    for r in range(rounds):
        for name, at in layouts.items():
            c = measure(at.db, at.registry, at.counters, at.url, (key, steps), instances, 1)
            costs[name].append(c)
            print(
                f"{r + 1:5d} {name:12} {c.steps_per_s:8.0f} {c.pg_cpu_ms:10.3f} "
                f"{c.statements:9.2f} {_own_wal(c):10.0f} {_own_index(c):8.1f} "
                f"{_own_pages(c):8.2f}"
            )
    print("medians:")
    for name, runs in costs.items():
        print(
            f"{'':5} {name:12} {_median(runs, lambda c: c.steps_per_s):8.0f} "
            f"{_median(runs, lambda c: c.pg_cpu_ms):10.3f} "
            f"{_median(runs, lambda c: c.statements):9.2f} {_median(runs, _own_wal):10.0f} "
            f"{_median(runs, _own_index):8.1f} {_median(runs, _own_pages):8.2f}"
        )


def run_explains(urls: dict[str, str], repeat: int) -> None:
    print(f"\nhot-path statements alone, EXPLAIN (ANALYZE, BUFFERS), median of {repeat}:")
    print(
        f"{'statement':34} {'layout':12} {'exec ms':>7} {'plan ms':>7} {'buffers':>8} "
        f"{'relations':>9}"
    )
    found: dict[str, list[tuple[str, Explained]]] = {}
    for layout, url in urls.items():
        with psycopg.connect(plain_dsn(url)) as conn:
            found[layout] = [
                (name, explain(conn, sql, params, repeat))
                for name, sql, params in hot_paths(conn, TOPIC)
            ]
    for rows in zip(*found.values(), strict=True):
        for j, (layout, (name, e)) in enumerate(zip(found, rows, strict=True)):
            label = name if j == 0 else ""
            print(
                f"{label:34} {layout:12} {e.ms:7.3f} {e.planning_ms:7.3f} {e.buffers:8d} "
                f"{e.partitions:9d}"
            )


def run_prepared(urls: dict[str, str], runs: int) -> None:
    """Each statement prepared and run ``runs`` times: the backend's CPU per run."""
    print(f"\nhot-path statements prepared, backend CPU per run (us), {runs} runs each:")
    print(f"{'statement':34} " + " ".join(f"{layout:>12}" for layout in urls))
    found: dict[str, list[tuple[str, float]]] = {}
    for layout, url in urls.items():
        with psycopg.connect(plain_dsn(url)) as conn:
            found[layout] = [
                (name, backend_cpu_us(conn, sql, params, runs))
                for name, sql, params in [
                    ("SELECT 1 (BEGIN/ROLLBACK baseline)", "SELECT 1", {}),
                    *hot_paths(conn, TOPIC),
                ]
            ]
    for rows in zip(*found.values(), strict=True):
        print(f"{rows[0][0]:34} " + " ".join(f"{us:12.0f}" for _, us in rows))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--waiting", type=int, default=200, help="parked instances per wait")
    parser.add_argument("--repeat", type=int, default=7, help="EXPLAIN runs per statement")
    parser.add_argument("--runs", type=int, default=1000, help="prepared runs per statement")
    parser.add_argument("--url-prefix", default=BASE_URL)
    args = parser.parse_args()
    print(f"Citus from Debian's packages: {citus_packages()}")
    urls = {"plain": args.url_prefix + "plain", "partitioned": args.url_prefix + "partitioned"}
    layouts = {
        name: build(url, args.partitions if name == "partitioned" else None, args.waiting)
        for name, url in urls.items()
    }
    run_rounds(layouts, args.instances, args.rounds)
    for at in layouts.values():
        at.db.dispose()
    run_explains(urls, args.repeat)
    run_prepared(urls, args.runs)


if __name__ == "__main__":
    main()
