"""``bpm demo``: run the example processes on a fresh SQLite file and keep the result.

Everything happens in this process (embedded mode), so the demo needs no database server, no
broker and no worker: it runs the order fulfilment orders, then the order saga (from the JSON
file, then drawn as BPMN), whose external tasks (topics ``payments`` and ``refunds``) the demo
fetches and completes itself, as an external worker would. The database file is new for every
run, in the temp folder, and kept afterwards so the instances can be explored with ``bpm show``
/ ``bpm trace``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bpm.cli import paths
from bpm.definitions import load_document
from bpm.embedded import EmbeddedRuntime
from bpm.engine.operations.external import LockedTask, TopicRequest
from bpm.engine.operations.lifecycle import Deployed
from bpm.handlers import registry
from bpm.history_reading import HistoryEvent, HistoryTable
from bpm.states import EngineEvent, TaskEvent

RUN_LIMIT = 30.0
#: The demo acts as the external worker of the saga's card payments and refunds.
WORKER_ID = "demo-worker"
LOCK = timedelta(minutes=1)
#: Fetch, complete, run: one round for the charge, one for the refund (and a spare).
WORKER_ROUNDS = 5


@dataclass(frozen=True)
class DemoOrder:
    business_key: str
    variables: dict[str, Any]
    shows: str


ORDERS = (
    DemoOrder(
        "ORDER-1001",
        {"total": 249.0, "items": ["desk lamp", "armchair"]},
        "total > 100: express shipping",
    ),
    DemoOrder(
        "ORDER-1002", {"total": 35.5, "items": ["paperback"]}, "default flow: standard shipping"
    ),
    DemoOrder(
        "ORDER-1003",
        {"total": 62.0, "items": ["teapot", "mugs"], "payment_glitch": True},
        "payment fails once, retried after 0.2 s",
    ),
    DemoOrder(
        "ORDER-1004",
        {"total": 480.0, "items": ["bookshelf", "rug", "vase"]},
        "three items, express shipping",
    ),
    DemoOrder(
        "ORDER-1005",
        {"total": 20.0, "items": ["unobtainium"]},
        "out of stock: BPMN error, incident",
    ),
)

#: Run through each saga file in turn, as ORDER-2001, ORDER-2002, ...
SAGA_ORDER = DemoOrder(
    "ORDER-2001",
    {"total": 99.0, "items": ["bicycle"], "ship_fails": True},
    "shipping fails: refund the card, then release the stock",
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
class SagaRun:
    """The saga order's outcome: what the demo's worker did, and what the history says."""

    order: DemoOrder
    definition_file: Path
    deployed: Deployed
    instance: dict[str, Any]
    events: list[dict[str, Any]]
    #: (topic, node id) of every external task the demo completed, in order.
    worked: list[tuple[str, str]]

    @property
    def compensated(self) -> list[str]:
        """The activities whose compensation completed, in the order it happened."""
        return [
            str(e["node_id"])
            for e in self.events
            if e["kind"] == HistoryTable.ENGINE and e["type"] == EngineEvent.COMPENSATION_COMPLETED
        ]

    @property
    def undo_handlers(self) -> dict[str, str]:
        """Activity -> how it was undone (``handler:NAME`` or ``topic:NAME``): what its
        compensation task ran, also when the compensation names a handler activity
        (``{"node": ID}``, as a BPMN compensation boundary does)."""
        undo, found = self._undo_tokens(), {}
        for e in self.events:
            if (
                e["kind"] == HistoryTable.TASK
                and e["type"] == TaskEvent.CREATED
                and e.get("token_id") in undo
            ):
                data = e.get("data", {})
                kind = "topic" if "topic" in data else "handler"
                found[str(e["node_id"])] = f"{kind}:{data.get(kind, '?')}"
        return found

    @property
    def failed_at(self) -> str | None:
        """Where the saga started: the node of the forward token that failed."""
        failed = self._failed()
        return str(failed["node_id"]) if failed else None

    @property
    def failure(self) -> str | None:
        """Why the saga started: the error of the forward token that failed."""
        failed = self._failed()
        return str(failed.get("data", {}).get("error", "")) if failed else None

    def _failed(self) -> dict[str, Any] | None:
        return next(
            (
                e
                for e in self.events
                if e["kind"] == HistoryTable.ENGINE and e["type"] == EngineEvent.TOKEN_FAILED
            ),
            None,
        )

    @property
    def forward(self) -> paths.PathTree:
        """The path of the forward tokens (compensation tokens are listed apart)."""
        undo = self._undo_tokens()
        return paths.build(e for e in self.events if e.get("token_id") not in undo)

    def _undo_tokens(self) -> set[Any]:
        return {e.get("token_id") for e in self.events if HistoryEvent.of_view(e).runs_backward}


@dataclass
class DemoResult:
    database: Path
    definition_file: Path
    deployed: Deployed
    runs: list[DemoRun]
    seconds: float
    sagas: list[SagaRun] = field(default_factory=list)


def new_database() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bpm-demo-"))
    return folder / "demo.db"


def run_demo(database: Path, definition_file: Path, *saga_files: Path) -> DemoResult:
    """Deploy the example and run each demo order to its end, one after the other; then deploy
    each saga file (JSON or BPMN) and run the saga order through it."""
    # Importing them registers the demo's handlers.
    import bpm.demo.order_handlers
    import bpm.demo.saga_handlers  # noqa: F401

    began = time.perf_counter()
    rt = EmbeddedRuntime(f"sqlite:///{database}", handlers=registry)
    try:
        deployed = _deploy(rt, definition_file)
        runs = [_run_order(rt, deployed.key, order) for order in ORDERS]
        sagas = [
            _run_saga(rt, file, replace(SAGA_ORDER, business_key=f"ORDER-{2001 + n}"))
            for n, file in enumerate(saga_files)
        ]
    finally:
        rt.close()
    return DemoResult(database, definition_file, deployed, runs, time.perf_counter() - began, sagas)


def _deploy(rt: EmbeddedRuntime, definition_file: Path) -> Deployed:
    source = definition_file.read_text(encoding="utf-8")
    if definition_file.suffix == ".bpmn":
        (deployed,) = rt.engine.deploy_bpmn(source)  # one process in the file
        return deployed
    return rt.engine.deploy(load_document(definition_file), source=source)


def _run_order(rt: EmbeddedRuntime, key: str, order: DemoOrder) -> DemoRun:
    started = rt.engine.start(key, order.variables, business_key=order.business_key)
    rt.run_until_idle(timeout=RUN_LIMIT)
    return DemoRun(order, rt.engine.show(started.id), rt.engine.trace(started.id))


def _run_saga(rt: EmbeddedRuntime, definition_file: Path, order: DemoOrder) -> SagaRun:
    """Start the saga order; complete its external tasks as a worker would, between runs."""
    from bpm.demo.saga_handlers import charge_card, refund_card

    work: Mapping[str, Callable[[LockedTask], Mapping[str, Any] | None]] = {
        "payments": charge_card,
        "refunds": refund_card,
    }
    deployed = _deploy(rt, definition_file)
    started = rt.engine.start(
        deployed.key, order.variables, business_key=order.business_key, version=deployed.version
    )
    rt.run_until_idle(timeout=RUN_LIMIT)
    worked: list[tuple[str, str]] = []
    for _ in range(WORKER_ROUNDS):
        fetched = rt.engine.fetch_and_lock(WORKER_ID, [TopicRequest(t, LOCK) for t in work])
        if not fetched:
            break
        for task in fetched:
            rt.engine.complete(task.id, WORKER_ID, dict(work[task.topic](task) or {}))
            worked.append((task.topic, task.node_id))
        rt.run_until_idle(timeout=RUN_LIMIT)
    return SagaRun(
        order,
        definition_file,
        deployed,
        rt.engine.show(started.id),
        rt.engine.trace(started.id),
        worked,
    )
