"""Conditional events in embedded mode on SQLite: the same engine code as on PostgreSQL (a
catch that waits, a non-interrupting boundary firing on each true change, one that passes)."""

from __future__ import annotations

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from tests.helpers.runtime import Calls

DOC = (
    ProcessBuilder("conditions")
    .start()
    .conditional_event("ready", condition="${stock > 0}", variable_name="stock")
    .user_task("pack")
    .conditional_boundary("low", attached_to="pack", condition="${stock < 3}", interrupting=False)
    .service_task("reorder", handler="reorder")
    .end()
    .end("reordered")
    .sequence("start", "ready", "pack", "end")
    .sequence("low", "reorder", "reordered")
    .build()
)


def test_conditional_catch_and_boundary_on_sqlite(embedded: EmbeddedRuntime, calls: Calls) -> None:
    calls.add("reorder")
    engine = embedded.engine
    engine.deploy(DOC)
    iid = engine.start("conditions", {"stock": 0}).id
    embedded.run_until_idle(timeout=5)
    assert [s["event_type"] for s in engine.event_subscriptions(iid)] == ["conditional"]
    engine.set_variables(iid, {"other": 1})  # not the variable it names
    embedded.run_until_idle(timeout=5)
    assert engine.user_tasks(instance_id=iid) == []
    engine.set_variables(iid, {"stock": 5})
    embedded.run_until_idle(timeout=5)
    assert len(engine.user_tasks(instance_id=iid)) == 1 and calls.count("reorder") == 0
    for stock in (2, 1, 9):
        engine.set_variables(iid, {"stock": stock})
        embedded.run_until_idle(timeout=5)
    assert calls.count("reorder") == 2
    (task,) = engine.user_tasks(instance_id=iid)
    engine.complete_user_task(task["id"])
    embedded.run_until_idle(timeout=5)
    assert embedded.state(iid) == "COMPLETED"
