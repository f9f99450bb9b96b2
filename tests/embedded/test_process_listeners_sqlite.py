"""The process's own end listeners in embedded mode on SQLite, as the instance completes and
as it is cancelled: the same engine code as on PostgreSQL
(tests/integration/test_process_listeners.py)."""

from __future__ import annotations

from bpm.embedded import EmbeddedRuntime
from tests.helpers.modeler import chain, modeler_file

OWN = (
    '<bpmn:extensionElements><camunda:executionListener event="end" '
    "expression=\"${execution.setVariable('closed', true)}\" /></bpmn:extensionElements>"
)


def test_process_end_listeners_on_sqlite(embedded: EmbeddedRuntime) -> None:
    engine = embedded.engine
    straight = '<bpmn:startEvent id="S" /><bpmn:endEvent id="E" />' + chain("S", "E")
    waiting = '<bpmn:startEvent id="S" /><bpmn:userTask id="U" /><bpmn:endEvent id="E" />' + chain(
        "S", "U", "E"
    )
    engine.deploy_bpmn(modeler_file("ends", OWN + straight))
    engine.deploy_bpmn(modeler_file("waits", OWN + waiting))
    ended = engine.start("ends").id
    embedded.run_until_idle(timeout=1)
    shown = engine.show(ended)
    assert shown["state"] == "COMPLETED" and shown["variables"]["closed"] is True
    cancelled = engine.start("waits").id
    embedded.run_until_idle(timeout=1)
    engine.cancel(cancelled)
    embedded.run_until_idle(timeout=1)
    shown = engine.show(cancelled)
    assert shown["state"] == "CANCELLED" and shown["variables"]["closed"] is True
