"""The read side at a million instances: the cockpit's instance searches and Camunda's
statistics, timed through the engine's facade on PostgreSQL.

Fills its own database with ``--instances`` instances of five deployed definitions
(``--live`` percent of them running or failed, the rest completed), one variable each, a
token for each instance (completed, waiting at a user task, or failed at a service task with an
open incident), then times each read as the median of ``--rounds`` runs and prints it with
the query's plan root.

    python -m bench.read_side [--instances 1000000] [--live 10] [--rounds 5] [--url URL]

The rows are written by SQL (``generate_series``), not by running the processes: a million
instances through the engine would take an hour, and the reads depend on the rows, not on
how they came to be.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from bench.engine_throughput import fresh_database
from bpm.api import (
    Engine,
    InstanceHistoryQuery,
    InstanceState,
    LiveInstanceQuery,
    Page,
    VariableCondition,
    VariableOp,
)
from bpm.dispatch import InProcessDispatcher
from bpm.store import Database
from bpm.store.migrate import upgrade

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_read"
KEYS = [f"order_{n}" for n in range(5)]
BPMN = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="{key}" isExecutable="true" camunda:historyTimeToLive="P30D">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="review" camunda:candidateGroups="clerks" />
    <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="charge" />
    <bpmn:endEvent id="done" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="charge" />
    <bpmn:sequenceFlow id="f3" sourceRef="charge" targetRef="done" />
  </bpmn:process>
</bpmn:definitions>
"""
#: The rows, by SQL: instance n is of definition n % 5, started n seconds after T0; the first
#: ``live`` in every hundred are live (one in seven of them FAILED), the rest COMPLETED.
FILL = [
    """
    INSERT INTO process_instances (id, process_def_id, process_key, business_key, state,
        version, started_at, updated_at, ended_at)
    SELECT md5('i' || n)::uuid, d.id, d.key, 'order-' || n,
        CASE WHEN n % 100 >= :live THEN 'COMPLETED' WHEN n % 7 = 0 THEN 'FAILED'
             ELSE 'RUNNING' END,
        1, :t0 + n * interval '1 second', :t0 + n * interval '1 second',
        CASE WHEN n % 100 >= :live THEN :t0 + (n + 60) * interval '1 second' END
    FROM generate_series(0, :n - 1) AS n
    JOIN (SELECT id, key, row_number() OVER (ORDER BY key) - 1 AS k
          FROM process_definitions) d ON d.k = n % 5
    """,
    """
    INSERT INTO variables (instance_id, name, value, version, updated_at)
    SELECT md5('i' || n)::uuid, 'amount', to_jsonb(n % 10000), 1, :t0
    FROM generate_series(0, :n - 1) AS n
    """,
    """
    INSERT INTO tokens (id, instance_id, node_id, state, mode, concurrent, wait_kind,
        version, created_at, updated_at)
    SELECT md5('t' || p.id)::uuid, p.id,
        CASE p.state WHEN 'FAILED' THEN 'charge' ELSE 'review' END,
        CASE p.state WHEN 'FAILED' THEN 'FAILED' ELSE 'WAITING' END, 'FORWARD', false,
        CASE p.state WHEN 'FAILED' THEN NULL ELSE 'USER' END, 1, p.started_at, p.started_at
    FROM process_instances p WHERE p.state IN ('RUNNING', 'FAILED')
    """,
    """
    INSERT INTO tokens (id, instance_id, node_id, state, mode, concurrent, version,
        created_at, updated_at)
    SELECT md5('t' || p.id)::uuid, p.id, 'done', 'COMPLETED', 'FORWARD', false, 1,
        p.started_at, p.ended_at
    FROM process_instances p WHERE p.state = 'COMPLETED'
    """,
    """
    INSERT INTO incidents (id, instance_id, token_id, node_id, kind, message, state, version,
        created_at)
    SELECT md5('x' || p.id)::uuid, p.id, md5('t' || p.id)::uuid, 'charge', 'handler',
        'card declined', 'OPEN', 1, p.started_at
    FROM process_instances p WHERE p.state = 'FAILED'
    """,
]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def fill(db: Database, engine: Engine, instances: int, live: int) -> None:
    for key in KEYS:
        engine.deploy_bpmn(BPMN.format(key=key))
    with db.transaction() as conn:
        for stmt in FILL:
            conn.execute(text(stmt), {"n": instances, "live": live, "t0": T0})
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))


def timed(call: Callable[[], Any], rounds: int) -> tuple[float, float, Any]:
    """Median and spread (max - min) in milliseconds, and the last answer."""
    seconds: list[float] = []
    answer: Any = None
    for _ in range(rounds):
        begun = time.perf_counter()
        answer = call()
        seconds.append(time.perf_counter() - begun)
    return (
        statistics.median(seconds) * 1000,
        (max(seconds) - min(seconds)) * 1000,
        answer,
    )


def reads(engine: Engine, instances: int) -> dict[str, Callable[[], Any]]:
    definition = engine.process_definition(key=KEYS[0]).id
    middle = T0 + timedelta(seconds=instances // 2)
    window = InstanceHistoryQuery(started_after=middle, started_before=middle + timedelta(hours=1))
    failed = InstanceHistoryQuery(process_keys=[KEYS[1]], states=[InstanceState.FAILED])
    amount = VariableCondition("amount", VariableOp.EQ, 4205)
    page = Page(limit=50)
    return {
        "statistics by definition": engine.definition_statistics,
        "instances of every version by state (cockpit)": lambda: engine.instance_counts(
            [d.definition.id for d in engine.definition_statistics()]
        ),
        "statistics by node (one definition)": lambda: engine.node_statistics(definition),
        "instances by business key": lambda: engine.find_instance_history(
            InstanceHistoryQuery(business_key=f"order-{instances // 3}"), page
        ),
        "instances of a process, failed, page 1": lambda: engine.find_instance_history(
            failed, page
        ),
        "  count of the same": lambda: engine.count_instance_history(failed),
        "instances started in one hour": lambda: engine.find_instance_history(window, page),
        "instances with an open incident, page 1": lambda: engine.find_instance_history(
            InstanceHistoryQuery(with_open_incidents=True), page
        ),
        "newest instances, page 1": lambda: engine.find_instance_history(
            InstanceHistoryQuery(), Page(limit=50, order=(("started", True),))
        ),
        "newest instances, page 1000": lambda: engine.find_instance_history(
            InstanceHistoryQuery(), Page(offset=50_000, limit=50, order=(("started", True),))
        ),
        "live instances by variable (amount = 4205)": lambda: engine.find_live_instances(
            LiveInstanceQuery(variables=(amount,)), page
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=10, help="percent of instances live")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--keep", action="store_true", help="reuse a filled database")
    args = parser.parse_args()
    if not args.keep:
        fresh_database(args.url)
    db = Database(args.url)
    upgrade(db)
    engine = Engine(db, InProcessDispatcher())
    if not args.keep:
        begun = time.perf_counter()
        fill(db, engine, args.instances, args.live)
        print(f"filled {args.instances:,} instances in {time.perf_counter() - begun:.0f} s")
    print(f"{'read':45} {'median ms':>10} {'spread':>8} {'rows':>6}")
    for name, call in reads(engine, args.instances).items():
        median, spread, answer = timed(call, args.rounds)
        rows = answer if isinstance(answer, int) else len(getattr(answer, "by_state", answer))
        print(f"{name:45} {median:10.1f} {spread:8.1f} {rows:6}")
    db.dispose()


if __name__ == "__main__":
    main()
