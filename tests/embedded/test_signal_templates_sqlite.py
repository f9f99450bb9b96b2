"""Template signal names (``done-${execution.processBusinessKey}``) in embedded mode on
SQLite: the snapshot's template read and the evaluation are the same code as on PostgreSQL."""

from __future__ import annotations

from bpm.definitions import ProcessBuilder
from bpm.embedded import EmbeddedRuntime

DOC = (
    ProcessBuilder("waiter")
    .start()
    .signal_event("wait", signal="done-${execution.processBusinessKey}")
    .end()
    .sequence("start", "wait", "end")
    .build()
)


def test_a_template_signal_moves_only_its_instance_on_sqlite(embedded: EmbeddedRuntime) -> None:
    engine = embedded.engine
    engine.deploy(DOC)
    a = engine.start("waiter", business_key="A").id
    b = engine.start("waiter", business_key="B").id
    assert embedded.run_until_idle(timeout=2)
    assert engine.throw_signal("done-A").recipients == 1
    assert embedded.run_until_idle(timeout=2)
    assert embedded.state(a) == "COMPLETED"
    assert embedded.state(b) == "RUNNING"
