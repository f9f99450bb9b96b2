"""``bpm trace ID --diagram [--out FILE]``: Mermaid on stdout, or an SVG / Mermaid file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bpm.definitions.parse.document import compile_definition, load_document
from bpm.demo import ORDER_FULFILMENT
from tests.cli.conftest import Bpm, start_order

UNKNOWN_ID = "3f2c9a4e-7b1d-4c55-9a0e-2d8f6b1c0a77"


@pytest.fixture
def order_id(bpm: Bpm, deployed: dict[str, object]) -> str:
    """A completed order fulfilment, shipped by post (total 10: not express)."""
    started = start_order(bpm, "--var", "total=10")
    assert started["state"] == "COMPLETED"
    return str(started["id"])


def test_diagram_prints_mermaid_with_the_path_marked(bpm: Bpm, order_id: str) -> None:
    result = bpm.ok("trace", order_id, "--diagram")
    out = result.stdout
    assert "flowchart LR" in out and order_id in out
    assert 'subgraph n_pack ["Pack the parcel<br/>pack<br/>1x"]' in out
    assert "n_shipping ==>|1x| n_ship_standard" in out
    assert "n_shipping --> n_ship_express" in out
    assert "class n_ship_express not_visited" in out
    visited = next(
        line
        for line in out.splitlines()
        if line.strip().endswith(" visited") and line.strip().startswith("class ")
    )
    assert "n_ship_standard" in visited and "n_pick" in visited
    assert result.stderr == ""


def test_out_svg_writes_an_svg_and_says_where(bpm: Bpm, order_id: str, tmp_path: Path) -> None:
    target = tmp_path / "order.svg"
    out = bpm.ok("trace", order_id, "--diagram", "--out", str(target)).stdout
    assert out.strip() == f"wrote the diagram of instance {order_id} to {target} (SVG)"
    root = ET.fromstring(target.read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    drawn = {e.get("data-node"): e.get("data-status") for e in root.iter() if e.get("data-node")}
    assert drawn["ship_standard"] == "visited" and drawn["ship_express"] == "not visited"
    assert drawn["charge"] == "visited"
    assert set(drawn) == set(compile_definition(load_document(ORDER_FULFILMENT)).nodes)


def test_out_mmd_writes_mermaid_and_out_alone_implies_diagram(
    bpm: Bpm, order_id: str, tmp_path: Path
) -> None:
    target = tmp_path / "order.mmd"
    out = bpm.ok("trace", order_id, "--out", str(target)).stdout
    assert out.strip().endswith(f"to {target} (Mermaid)")
    assert target.read_text(encoding="utf-8") == bpm.ok("trace", order_id, "--diagram").stdout


def test_diagram_refusals_are_one_line(bpm: Bpm, order_id: str, tmp_path: Path) -> None:
    line = bpm.error("trace", order_id, "--diagram", "--json")
    assert "--json prints the events, --diagram draws them" in line
    assert bpm("trace", order_id, "--diagram", "--json").exit_code == 2
    assert "name an .svg file" in bpm.error("trace", order_id, "--out", str(tmp_path / "order.png"))
    missing = tmp_path / "no" / "such" / "order.svg"
    assert f"cannot write {missing}" in bpm.error("trace", order_id, "--out", str(missing))
    assert "does not exist" in bpm.error("trace", UNKNOWN_ID, "--diagram")


def test_json_still_prints_the_events(bpm: Bpm, order_id: str) -> None:
    events = bpm.json("trace", order_id)
    assert isinstance(events, list) and events[0]["type"] == "InstanceStarted"


def test_a_bpmn_file_with_di_is_drawn_in_its_modeler_layout(bpm: Bpm, tmp_path: Path) -> None:
    model = Path(__file__).resolve().parents[1] / "fixtures" / "diagrams" / "subprocess_events.bpmn"
    bpm.ok("deploy", str(model))
    started = bpm.json("start", "claims")
    assert isinstance(started, dict)
    target = tmp_path / "claims.svg"
    bpm.ok("trace", str(started["id"]), "--out", str(target))
    root = ET.fromstring(target.read_bytes())
    assert root.get("class") == "bpmn-diagram"
    drawn = {e.get("data-node"): e for e in root.iter() if e.get("data-node")}
    assert drawn["Activity_Assess"].get("data-status") == "active"
    box = next(c for c in drawn["Activity_Review"] if c.tag.endswith("rect"))
    assert (box.get("x"), box.get("y"), box.get("width")) == ("250", "80", "420")
