"""Multi-instance activities in embedded mode on SQLite: the same engine code as on
PostgreSQL (the body's lock is SQLite's one writer at a time)."""

from __future__ import annotations

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls

DOC = (
    ProcessBuilder("mi")
    .start()
    .service_task(
        "each",
        handler="work",
        multi_instance={
            "collection": "items",
            "elementVariable": "item",
            "outputCollection": "doubled",
            "outputElement": "${twice}",
        },
    )
    .user_task("review", multi_instance={"sequential": True, "cardinality": 2})
    .end()
    .sequence("start", "each", "review", "end")
    .build()
)


def test_parallel_and_sequential_iterations_on_sqlite(
    embedded: EmbeddedRuntime, calls: Calls
) -> None:
    calls.add("work", lambda ctx: {"twice": ctx.variables["item"] * 2})
    engine = embedded.engine
    engine.deploy(DOC)
    iid = engine.start("mi", {"items": [1, 2, 3]}).id
    embedded.run_until_idle(timeout=5)
    assert calls.count("work") == 3
    for counter in (0, 1):
        (task,) = engine.user_tasks(instance_id=iid)
        assert engine.user_task_variables(task["id"])["loopCounter"] == counter
        engine.complete_user_task(task["id"])
        embedded.run_until_idle(timeout=5)
    assert engine.show(iid)["variables"]["doubled"] == [2, 4, 6]
    assert_finished_cleanly(embedded.db, iid)
