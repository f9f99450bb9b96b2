"""What a diagram costs: drawing a BPMN file in its modeler's layout, and a definition's heatmap.

First reads and draws each model of ``tests/fixtures/diagrams`` (and of ``../shared/conformance``
when it is there) in its BPMNDI layout, and prints ms per drawing. Then starts N instances of
the fixture ``collaboration_lanes`` on PostgreSQL (half of them get past the user task, to the
external task) beside instances of another definition, and prints ms per
``Engine.definition_diagram`` and per instance ``diagram``, with the plan PostgreSQL picks for
finding the definition's instances.

    python -m bench.diagram_cost [--instances 2000] [--others 4000] [--rounds 5] [--url URL]

The database at ``--url`` is dropped and made again: give it a database of its own.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from sqlalchemy import text

from bench.engine_throughput import fresh_database
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.requirements import compile_for_deploy
from bpm.diagram_views import instance_svg, modeler_layout
from bpm.dispatch import InProcessDispatcher
from bpm.engine.engine import Engine
from bpm.handlers import HandlerRegistry
from bpm.store import Database
from bpm.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "diagrams"
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "public"
DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/bpm_bench_diagram"


def median_ms(work: object, rounds: int) -> float:
    assert callable(work)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def drawings(rounds: int) -> None:
    files = sorted(FIXTURES.glob("*.bpmn"))
    if CONFORMANCE.is_dir():
        files += sorted(p for p in CONFORMANCE.glob("*.bpmn") if b"BPMNShape" in p.read_bytes())
    costs = []
    for path in files:
        xml = path.read_text(encoding="utf-8")
        try:
            graphs = [compile_for_deploy(d) for d in compile_bpmn(xml)]
        except Exception:  # a picture-only fixture (symbols.bpmn) is not a runnable process
            continue
        for graph in graphs:
            if modeler_layout(graph, (xml, "bpmn")) is None:
                continue
            ms = median_ms(lambda g=graph, x=xml: instance_svg(g, (x, "bpmn"), [], []), rounds)
            costs.append((ms, f"{path.name} {graph.key} ({len(graph.nodes)} nodes)"))
    print(f"read BPMNDI and draw the SVG, median of {rounds}:")
    for ms, name in sorted(costs, reverse=True)[:5]:
        print(f"  {ms:7.2f} ms  {name}")
    print(f"  {statistics.median(c for c, _ in costs):7.2f} ms  median over {len(costs)} models")


def heatmap(url: str, instances: int, others: int, rounds: int) -> None:
    fresh_database(url)
    db = Database(url, pool_size=3)
    upgrade(db)
    dispatcher = InProcessDispatcher()
    engine = Engine(db, dispatcher, handlers=HandlerRegistry(), worker_id="diagram-bench")
    [deployed] = engine.deploy_bpmn((FIXTURES / "collaboration_lanes.bpmn").read_bytes())
    engine.deploy_bpmn((FIXTURES / "gateways.bpmn").read_bytes())
    for _ in range(others):  # another definition's instances, which the heatmap must skip
        engine.start("routing", {"way": "all"})
        while (job := dispatcher.pop(engine.clock.now())) is not None:
            engine.run_job(job)
    started = []
    for _ in range(instances):
        started.append(engine.start("shop").id)
        while (job := dispatcher.pop(engine.clock.now())) is not None:
            engine.run_job(job)
    for iid in started[: instances // 2]:
        [task] = engine.user_tasks(instance_id=iid)
        engine.complete_user_task(task["id"], {"inStock": True})
        while (job := dispatcher.pop(engine.clock.now())) is not None:
            engine.run_job(job)
    with db.transaction() as conn:
        conn.execute(text("ANALYZE"))
        plan = conn.execute(
            text("EXPLAIN SELECT id FROM process_instances WHERE process_def_id = :d"),
            {"d": deployed.id},
        ).first()
    heat = median_ms(lambda: engine.definition_diagram(deployed.id), rounds)
    one = median_ms(lambda: engine.diagram(started[0], "svg"), rounds)
    print(
        f"definition heatmap over {instances} instances (beside {others} of another "
        f"definition), median of {rounds}, {db.safe_url}:"
    )
    print(f"  {heat:7.2f} ms  Engine.definition_diagram (SVG)")
    print(f"  {one:7.2f} ms  Engine.diagram of one instance (SVG)")
    print(f"  plan for the definition's instances: {plan[0] if plan else '?'}")
    db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--others", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    drawings(args.rounds)
    heatmap(args.url, args.instances, args.others, args.rounds)


if __name__ == "__main__":
    main()
