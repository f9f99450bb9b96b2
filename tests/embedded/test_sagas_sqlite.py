"""A saga in embedded mode on SQLite: the same engine code, records numbered max + 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import compensation
from tests.helpers.invariants import assert_history_consistent


def test_a_global_saga_on_sqlite(tmp_path: Path) -> None:
    ran: list[str] = []
    handlers = HandlerRegistry()

    def recorder(name: str, fail: bool = False) -> Any:
        def run(ctx: HandlerContext) -> None:
            ran.append(name)
            if fail:
                raise RuntimeError(f"{name} failed")

        return run

    for name in ("reserve", "charge", "release", "refund"):
        handlers.register(name, recorder(name))
    handlers.register("ship", recorder("ship", fail=True))
    b = ProcessBuilder("order_saga", saga="global").start()
    b._node("reserve", "serviceTask", handler="reserve", compensation={"handler": "release"})
    b._node("charge", "serviceTask", handler="charge", compensation={"handler": "refund"})
    b._node("ship", "serviceTask", handler="ship")
    doc = b.end().sequence("start", "reserve", "charge", "ship", "end").build()
    rt = EmbeddedRuntime(f"sqlite:///{tmp_path / 'saga.db'}", handlers=handlers)
    try:
        rt.engine.deploy(doc)
        iid = rt.engine.start("order_saga").id
        assert rt.wait_for(iid, timeout=10) == "TERMINATED"
        assert ran == ["reserve", "charge", "ship", "refund", "release"]
        with rt.db.transaction() as conn:
            recs = compensation.of_instance(conn, iid)
        assert [(r.node_id, r.seq, r.status) for r in recs] == [
            ("reserve", 1, "COMPLETED"),
            ("charge", 2, "COMPLETED"),
        ]
        assert_history_consistent(rt.db, iid)
    finally:
        rt.close()
