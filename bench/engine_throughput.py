"""Engine throughput on PostgreSQL through the in-process dispatcher.

Runs N instances of a 10-step sequential process, of a fork/join process, of a process
whose call activity calls a 5-step process and of one with a 10-iteration parallel
multi-instance task (no-op handlers), prints instances/s, steps/s
(service-task nodes completed per second) and SQL transactions and statements per step, and
compares steps/s with pgbench running a 4-statement transaction
(select for update, update, two inserts) at the same client count.

    python -m bench.engine_throughput [--instances 300] [--clients 1] [--url URL]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import event
from sqlalchemy.engine import make_url

from bench.threads import run_concurrently
from bpm.definitions import ProcessBuilder
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.observe import NO_OBSERVER, Observer
from bpm.store import Database
from bpm.store.migrate import upgrade

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench"
#: The observer the bench's engines report to (``--prometheus``: Prometheus's).
OBSERVER: list[Observer] = [NO_OBSERVER]


def sequential(steps: int = 10) -> dict[str, Any]:
    b = ProcessBuilder("bench_sequential").start()
    names = [f"s{i}" for i in range(steps)]
    for name in names:
        b.service_task(name, handler="noop")
    return b.end().sequence("start", *names, "end").build()


def fork_join(branches: int = 4) -> dict[str, Any]:
    b = ProcessBuilder("bench_fork_join").start().parallel_gateway("fork")
    b.parallel_gateway("join").service_task("before", handler="noop")
    b.service_task("after", handler="noop").end()
    b.sequence("start", "before", "fork").sequence("join", "after", "end")
    for i in range(branches):
        b.service_task(f"b{i}", handler="noop").flow("fork", f"b{i}").flow(f"b{i}", "join")
    return b.build()


def called(steps: int = 5) -> dict[str, Any]:
    """The process the call-activity shape calls: ``steps`` service tasks in a row."""
    doc = sequential(steps)
    return {**doc, "key": "bench_called"}


def call_activity() -> dict[str, Any]:
    """A task, a call activity whose called process has 5 tasks, a task: 7 steps."""
    b = ProcessBuilder("bench_call").start().service_task("before", handler="noop")
    b.call_activity("call", process="bench_called", inputs=[{"all": True}])
    b.service_task("after", handler="noop").end()
    return b.sequence("start", "before", "call", "after", "end").build()


def multi_instance(iterations: int = 10) -> dict[str, Any]:
    """A task, a parallel multi-instance task of ``iterations`` iterations, a task."""
    b = ProcessBuilder("bench_multi_instance").start().service_task("before", handler="noop")
    b.service_task("each", handler="noop", multi_instance={"cardinality": iterations})
    b.service_task("after", handler="noop").end()
    return b.sequence("start", "before", "each", "after", "end").build()


def noop(ctx: HandlerContext) -> None:
    return None


@dataclass
class Counters:
    statements: int = 0
    commits: int = 0


def count_sql(db: Database) -> Counters:
    counters = Counters()
    lock = threading.Lock()

    @event.listens_for(db.engine, "before_cursor_execute")
    def _stmt(*_: Any) -> None:
        with lock:
            counters.statements += 1

    @event.listens_for(db.engine, "commit")
    def _commit(*_: Any) -> None:
        with lock:
            counters.commits += 1

    @event.listens_for(db.engine, "connect")
    def _raw_statements(dbapi_connection: Any, _record: Any) -> None:
        # The store's hot statements go to the driver's connection directly (bpm.store.db's
        # raw_one), past SQLAlchemy's events: count them where they are sent.
        execute = dbapi_connection.execute

        def counted(*args: Any, **kwargs: Any) -> Any:
            with lock:
                counters.statements += 1
            return execute(*args, **kwargs)

        dbapi_connection.execute = counted

    return counters


def plain_dsn(url: str) -> str:
    """A SQLAlchemy URL as the connection string psycopg itself takes."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def fresh_database(url: str) -> None:
    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        name = sql.Identifier(parsed.database or "")
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(name))


def settle(url: str) -> None:
    """Vacuum and analyze the bench database, as autovacuum does on a server that runs it.

    Without statistics the plans the server caches per connection (its foreign-key checks
    among them) are made for the empty tables of the warm-up and kept as the tables grow, and
    every step leaves dead row versions behind: a server with autovacuum off (as the machine
    this was found on) then gets slower run after run, which measures the server's setting,
    not the engine."""
    with psycopg.connect(plain_dsn(url), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


def autovacuum(url: str) -> str:
    """The server's ``autovacuum`` setting, for the bench's report."""
    with psycopg.connect(plain_dsn(url), autocommit=True) as conn:
        row = conn.execute("SHOW autovacuum").fetchone()
    return str(row[0]) if row else "unknown"


def drive(db: Database, registry: HandlerRegistry, key: str, count: int, clients: int) -> float:
    """Start and finish ``count`` instances with ``clients`` threads; return seconds taken."""

    def client(n: int) -> None:
        dispatcher = InProcessDispatcher()
        engine = Engine(
            db, dispatcher, handlers=registry, worker_id=f"bench-{n}", observer=OBSERVER[0]
        )
        for _ in range(count // clients):
            engine.start(key, {"n": 1})
            while (job := dispatcher.pop(engine.clock.now())) is not None:
                engine.run_job(job)

    return run_concurrently(client, clients)


def run_shape(
    db: Database,
    registry: HandlerRegistry,
    counters: Counters,
    key: str,
    steps_per_instance: int,
    count: int,
    clients: int,
) -> dict[str, float]:
    drive(db, registry, key, max(clients, count // 10), clients)  # warm caches and pool
    settle(db.url)
    before = Counters(counters.statements, counters.commits)
    seconds = drive(db, registry, key, count, clients)
    done = (count // clients) * clients
    steps = done * steps_per_instance
    return {
        "instances_per_s": done / seconds,
        "steps_per_s": steps / seconds,
        "tx_per_step": (counters.commits - before.commits) / steps,
        "stmts_per_step": (counters.statements - before.statements) / steps,
        "seconds": seconds,
    }


#: The shapes measured: a name, the process key, the service-task steps one instance runs.
SHAPES = (
    ("sequential (10 service tasks)", "bench_sequential", 10),
    ("fork/join (4 branches + 2)", "bench_fork_join", 6),
    ("call activity (1 + 5 called + 1)", "bench_call", 7),
    ("multi-instance (1 + 10 parallel + 1)", "bench_multi_instance", 12),
)


def prepare(url: str, clients: int) -> tuple[Database, HandlerRegistry, Counters]:
    """A fresh database at ``url`` with every shape deployed, the no-op handler, and the
    statement and commit counters of its connections."""
    fresh_database(url)
    db = Database(url, pool_size=clients + 2)
    counters = count_sql(db)  # before any connection is made, so that every one is counted
    upgrade(db)
    registry = HandlerRegistry()
    registry.register("noop", noop)
    boot = Engine(db, InProcessDispatcher(), handlers=registry)
    for doc in (sequential(), fork_join(), called(), call_activity(), multi_instance()):
        boot.deploy(doc)
    return db, registry, counters


PGBENCH_SETUP = """
DROP TABLE IF EXISTS bench_accounts, bench_history;
CREATE TABLE bench_accounts (id int PRIMARY KEY, balance bigint NOT NULL, version int NOT NULL);
CREATE TABLE bench_history (id bigserial PRIMARY KEY, aid int NOT NULL, delta int NOT NULL,
                            at timestamptz NOT NULL);
INSERT INTO bench_accounts SELECT g, 0, 0 FROM generate_series(1, 100000) g;
"""

PGBENCH_SCRIPT = """\\set aid random(1, 100000)
BEGIN;
SELECT balance, version FROM bench_accounts WHERE id = :aid FOR UPDATE;
UPDATE bench_accounts SET balance = balance + 1, version = version + 1 WHERE id = :aid;
INSERT INTO bench_history (aid, delta, at) VALUES (:aid, 1, now());
INSERT INTO bench_history (aid, delta, at) VALUES (:aid, 1, now());
END;
"""


def pgbench_tps(url: str, clients: int, seconds: int) -> float | None:
    """The 4-statement transaction's rate at ``clients`` clients, or None without pgbench."""
    exe = shutil.which("pgbench")
    if exe is None:
        return None
    parsed = make_url(url)
    with psycopg.connect(
        parsed.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
    ) as conn:
        conn.execute(PGBENCH_SETUP)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "tx.sql"
        script.write_text(PGBENCH_SCRIPT)
        out = subprocess.run(
            [
                exe,
                "-n",
                "-c",
                str(clients),
                "-j",
                str(clients),
                "-T",
                str(seconds),
                "-f",
                str(script),
                "-h",
                parsed.host or "127.0.0.1",
                "-p",
                str(parsed.port or 5432),
                "-U",
                parsed.username or "postgres",
                parsed.database or "",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    match = re.search(r"tps = ([0-9.]+)", out)
    return float(match.group(1)) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--pgbench-seconds", type=int, default=10)
    parser.add_argument(
        "--prometheus",
        action="store_true",
        help="the engines count into Prometheus (bpm_metrics' observer), as a worker's do",
    )
    args = parser.parse_args()
    if args.prometheus:
        from bpm_metrics.observer import process_observer

        OBSERVER[0] = process_observer()

    db, registry, counters = prepare(args.url, args.clients)

    print(
        f"bpm engine throughput: {args.instances} instances per shape, {args.clients} "
        f"client(s), PostgreSQL {db.safe_url}"
    )
    results = {
        name: run_shape(db, registry, counters, key, steps, args.instances, args.clients)
        for name, key, steps in SHAPES
    }
    tps = pgbench_tps(args.url, args.clients, args.pgbench_seconds)
    header = f"{'shape':32} {'inst/s':>8} {'steps/s':>9} {'tx/step':>8} {'stmt/step':>10}"
    print(header + (f" {'vs pgbench':>11}" if tps else ""))
    for name, r in results.items():
        line = (
            f"{name:32} {r['instances_per_s']:8.1f} {r['steps_per_s']:9.1f} "
            f"{r['tx_per_step']:8.2f} {r['stmts_per_step']:10.2f}"
        )
        if tps:
            line += f" {r['steps_per_s'] / tps:10.1%}"
        print(line)
    if tps:
        print(
            f"pgbench 4-statement transaction at {args.clients} client(s): {tps:.0f} tx/s "
            f"(target: steps/s >= 25% of it)"
        )
    else:
        print("pgbench not found: no comparison")
    db.dispose()


if __name__ == "__main__":
    main()
