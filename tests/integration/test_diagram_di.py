"""``Engine.diagram(..., "svg")`` in the modeler's layout of the deployed BPMN file, and
``Engine.definition_diagram``: a definition's heatmap over its instances, on a real database."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID
from xml.etree.ElementTree import Element

import pytest
from defusedxml.ElementTree import fromstring

from bpm.definitions import ProcessBuilder
from bpm.errors import UnknownProcess
from tests.helpers.runtime import Harness

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "diagrams"


def deploy(rt: Harness, name: str) -> dict[str, UUID]:
    xml = (FIXTURES / f"{name}.bpmn").read_bytes()
    return {d.key: d.id for d in rt.engine.deploy_bpmn(xml, resource=f"{name}.bpmn")}


def nodes(svg: str) -> dict[str, dict[str, str]]:
    root: Element = fromstring(svg.encode("utf-8"))
    return {str(e.get("data-node")): dict(e.attrib) for e in root.iter() if e.get("data-node")}


def flows(svg: str) -> dict[str, int]:
    root: Element = fromstring(svg.encode("utf-8"))
    return {
        str(e.get("data-flow")): int(str(e.get("data-count")))
        for e in root.iter()
        if e.get("data-flow")
    }


def node_text(svg: str, node_id: str) -> str:
    root: Element = fromstring(svg.encode("utf-8"))
    [el] = [e for e in root.iter() if e.get("data-node") == node_id]
    return " ".join(str(t.text) for t in el.iter() if t.text)


def check_order(rt: Harness, iid: UUID, in_stock: bool) -> None:
    [task] = rt.engine.user_tasks(instance_id=iid)
    rt.engine.complete_user_task(task["id"], {"inStock": in_stock})
    rt.drain()


def test_an_instance_is_drawn_in_the_modeler_layout_with_its_failure(rt: Harness) -> None:
    deploy(rt, "collaboration_lanes")
    iid = rt.start("shop")
    rt.drain()
    check_order(rt, iid, True)
    rt.fail_for_good("pack", "the <warehouse> said no & closed")
    svg = rt.engine.diagram(iid, "svg")
    assert 'class="bpmn-diagram"' in svg
    drawn = nodes(svg)
    assert "failed" in drawn["Activity_Pack"]["class"].split()
    assert "the <warehouse> said no & closed" in node_text(svg, "Activity_Pack")
    assert drawn["Activity_Check"]["data-status"] == "visited"
    assert drawn["Event_Rejected"]["data-status"] == "not visited"
    assert flows(svg)["Flow_Yes"] == 1 and flows(svg)["Flow_No"] == 0
    assert 'data-element="Lane_Warehouse"' in svg and 'data-element="Participant_Customer"' in svg


def test_a_running_multi_instance_call_shows_its_iterations(rt: Harness) -> None:
    deploy(rt, "multi_instance")
    iid = rt.start("dispatch")
    rt.drain()
    svg = rt.engine.diagram(iid, "svg")
    ship = nodes(svg)["Activity_Ship"]
    assert ship["data-status"] == "active"
    assert "3/3" in node_text(svg, "Activity_Ship")


def test_the_heatmap_counts_every_instance_of_the_definition(rt: Harness) -> None:
    ids = deploy(rt, "collaboration_lanes")
    started = [rt.start("shop") for _ in range(3)]
    rt.drain()
    check_order(rt, started[0], True)
    check_order(rt, started[1], False)
    svg = rt.engine.definition_diagram(ids["shop"])
    assert "heatmap" in svg.split("\n")[1]
    drawn = nodes(svg)
    assert drawn["StartEvent_Order"]["data-entered"] == "3"
    assert drawn["Activity_Check"]["data-tokens"] == "1"  # the third still waits there
    assert drawn["Activity_Pack"]["data-tokens"] == "1"  # the first waits for its worker
    assert drawn["Event_Rejected"]["data-entered"] == "1"
    assert flows(svg)["Flow_1"] == 3
    assert flows(svg)["Flow_Yes"] == 1 and flows(svg)["Flow_No"] == 1
    text = rt.engine.definition_diagram(str(ids["shop"]), fmt="mermaid")
    assert "flowchart LR" in text and "==>|3x|" in text


def test_definitions_without_di_keep_the_automatic_layout(rt: Harness) -> None:
    builder = ProcessBuilder("plain").start("s").user_task("u").end("e")
    doc: dict[str, Any] = builder.sequence("s", "u", "e").build()  # JSON: no DI
    def_id = rt.deploy(doc)
    iid = rt.start("plain")
    rt.drain()
    svg = rt.engine.diagram(iid, "svg")
    assert "bpmn-diagram" not in svg and nodes(svg)["u"]["data-status"] == "active"
    heat = rt.engine.definition_diagram(def_id)
    assert nodes(heat)["s"]["data-entered"] == "1"


def test_an_unknown_definition_is_refused(rt: Harness) -> None:
    with pytest.raises(UnknownProcess, match="no process definition"):
        rt.engine.definition_diagram("00000000-0000-0000-0000-000000000000")
