"""A cancelled transaction in embedded mode on SQLite: the same engine code end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from bpm.handlers import HandlerContext, HandlerRegistry
from bpm.store import compensation
from tests.helpers.invariants import assert_history_consistent


def test_a_cancel_end_compensates_and_leaves_by_the_boundary_on_sqlite(tmp_path: Path) -> None:
    ran: list[str] = []
    handlers = HandlerRegistry()

    def recorder(name: str) -> Any:
        def run(ctx: HandlerContext) -> None:
            ran.append(name)

        return run

    for name in ("reserve", "charge", "release", "refund", "apologise"):
        handlers.register(name, recorder(name))
    body = ProcessBuilder("body").start("t_start")
    body._node("reserve", "serviceTask", handler="reserve", compensation={"handler": "release"})
    body._node("charge", "serviceTask", handler="charge", compensation={"handler": "refund"})
    body.cancel_end("t_cancel").sequence("t_start", "reserve", "charge", "t_cancel")
    b = ProcessBuilder("order_tx").start().sub_process("tx", body, transaction=True)
    b.cancel_boundary("on_cancel", attached_to="tx").service_task("sorry", handler="apologise")
    b.end().end("never").sequence("start", "tx", "never").sequence("on_cancel", "sorry", "end")
    rt = EmbeddedRuntime(f"sqlite:///{tmp_path / 'tx.db'}", handlers=handlers)
    try:
        rt.engine.deploy(b.build())
        iid = rt.engine.start("order_tx").id
        assert rt.wait_for(iid, timeout=10) == "COMPLETED"
        assert ran == ["reserve", "charge", "refund", "release", "apologise"]
        with rt.db.transaction() as conn:
            recs = compensation.of_instance(conn, iid)
        assert [(r.node_id, r.status) for r in recs] == [
            ("reserve", "COMPLETED"),
            ("charge", "COMPLETED"),
        ]
        assert_history_consistent(rt.db, iid)
    finally:
        rt.close()
