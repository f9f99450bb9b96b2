"""A definition's heatmap in embedded mode on SQLite: the same aggregate queries as on
PostgreSQL (JSON fields of the history read with SQLite's ``json_extract``)."""

from __future__ import annotations

from pathlib import Path

from defusedxml.ElementTree import fromstring

from bpm.embedded import EmbeddedRuntime

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "diagrams" / "gateways.bpmn"


def test_the_heatmap_counts_on_sqlite(embedded: EmbeddedRuntime) -> None:
    engine = embedded.engine
    [deployed] = engine.deploy_bpmn(MODEL.read_bytes())
    for way in ("all", "all", "some"):
        engine.start("routing", {"way": way})
    embedded.run_until_idle(timeout=5)
    root = fromstring(engine.definition_diagram(deployed.id).encode("utf-8"))
    entered = {e.get("data-node"): e.get("data-entered") for e in root.iter() if e.get("data-node")}
    tokens = {e.get("data-node"): e.get("data-tokens") for e in root.iter() if e.get("data-node")}
    taken = {e.get("data-flow"): e.get("data-count") for e in root.iter() if e.get("data-flow")}
    assert entered["Gateway_Route"] == "3" and entered["Activity_All"] == "2"
    assert tokens["Activity_All"] == "2" and tokens["Activity_Some"] == "1"
    assert taken["Flow_ToFork"] == "2" and taken["Flow_ToSome"] == "1"
    assert taken["Flow_ToEvent"] == "0"
