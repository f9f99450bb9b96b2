"""``bpm demo``: run the order fulfilment example on a fresh SQLite file and keep the result.

Everything happens in this process (embedded mode), so the demo needs no database server, no
broker and no worker. The database file is new for every run, in the temp folder, and kept
afterwards so the instances can be explored with ``bpm show`` / ``bpm trace``.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bpm.cli import paths
from bpm.definitions import load_document
from bpm.embedded import EmbeddedRuntime
from bpm.engine.lifecycle import Deployed
from bpm.handlers import registry

RUN_LIMIT = 30.0


@dataclass(frozen=True)
class DemoOrder:
    business_key: str
    variables: dict[str, Any]
    shows: str


ORDERS = (
    DemoOrder("ORDER-1001", {"total": 249.0, "items": ["desk lamp", "armchair"]},
              "total > 100: express shipping"),
    DemoOrder("ORDER-1002", {"total": 35.5, "items": ["paperback"]},
              "default flow: standard shipping"),
    DemoOrder("ORDER-1003", {"total": 62.0, "items": ["teapot", "mugs"], "payment_glitch": True},
              "payment fails once, retried after 0.2 s"),
    DemoOrder("ORDER-1004", {"total": 480.0, "items": ["bookshelf", "rug", "vase"]},
              "three items, express shipping"),
    DemoOrder("ORDER-1005", {"total": 20.0, "items": ["unobtainium"]},
              "out of stock: BPMN error, incident"),
)


@dataclass
class DemoRun:
    """One order's outcome, read back from the engine after its jobs ran."""

    order: DemoOrder
    instance: dict[str, Any]
    events: list[dict[str, Any]]
    tree: paths.PathTree = field(init=False)

    def __post_init__(self) -> None:
        self.tree = paths.build(self.events)

    @property
    def duration(self) -> float:
        """From the first to the last event of the instance (its own timestamps)."""
        from datetime import datetime

        stamps = [datetime.fromisoformat(e["at"]) for e in self.events if e.get("at")]
        return (max(stamps) - min(stamps)).total_seconds() if stamps else 0.0


@dataclass
class DemoResult:
    database: Path
    definition_file: Path
    deployed: Deployed
    runs: list[DemoRun]
    seconds: float


def new_database() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bpm-demo-"))
    return folder / "demo.db"


def run_demo(database: Path, definition_file: Path) -> DemoResult:
    """Deploy the example and run each demo order to its end, one after the other."""
    import examples.order_handlers  # noqa: F401  (registers the example's handlers)

    began = time.perf_counter()
    rt = EmbeddedRuntime(f"sqlite:///{database}", handlers=registry)
    try:
        deployed = rt.engine.deploy(load_document(definition_file),
                                    source=definition_file.read_text(encoding="utf-8"))
        runs = [_run_order(rt, deployed.key, order) for order in ORDERS]
    finally:
        rt.close()
    return DemoResult(database, definition_file, deployed, runs, time.perf_counter() - began)


def _run_order(rt: EmbeddedRuntime, key: str, order: DemoOrder) -> DemoRun:
    started = rt.engine.start(key, order.variables, business_key=order.business_key)
    rt.run_until_idle(timeout=RUN_LIMIT)
    return DemoRun(order, rt.engine.show(started.id), rt.engine.trace(started.id))
