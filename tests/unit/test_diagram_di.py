"""The modeler's layout (BPMNDI): shapes at their bounds, edges along their waypoints, pools,
lanes and artifacts drawn, BPMN's markers, and the marks of an instance or a heatmap on the
right nodes. Models in ``tests/fixtures/diagrams`` are written as Camunda Modeler writes them;
no database is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

import pytest
from defusedxml.ElementTree import fromstring

from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.model import ProcessGraph
from bpm.definitions.requirements import compile_for_deploy
from bpm.diagram_di import Bounds, Loop, Shape, Trigger, read_diagram
from bpm.diagram_di_svg import render_di
from bpm.diagram_overlay import HeatCounts, Overlay
from bpm.diagram_views import definition_svg, instance_svg, modeler_layout

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "diagrams"


def source(name: str) -> str:
    return (FIXTURES / f"{name}.bpmn").read_text(encoding="utf-8")


def graph_of(name: str, key: str) -> ProcessGraph:
    docs = compile_bpmn(source(name))
    return compile_for_deploy(next(d for d in docs if d["key"] == key))


def parse(svg: str) -> Element:
    root: Element = fromstring(svg.encode("utf-8"))
    return root


def local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def group(root: Element, attr: str, value: str) -> Element:
    found = [e for e in root.iter() if e.get(attr) == value]
    assert len(found) == 1, f"{attr}={value!r}: {len(found)} elements"
    return found[0]


def first(el: Element, tag: str) -> Element:
    found = next((c for c in el if local(c.tag) == tag), None)
    assert found is not None, f"no <{tag}> in {el.attrib}"
    return found


def plain(name: str, key: str) -> Element:
    diagram = read_diagram(source(name), key)
    assert diagram is not None
    return parse(render_di(diagram, Overlay({}, {}), name=key))


def test_reader_types_the_elements() -> None:
    diagram = read_diagram(source("collaboration_lanes"), "shop")
    assert diagram is not None
    shapes = {s.element.id: s for s in diagram.shapes}
    assert shapes["Participant_Shop"].element.shape is Shape.POOL
    assert shapes["Participant_Customer"].element.shape is Shape.POOL
    assert shapes["Lane_Sales"].element.shape is Shape.LANE
    assert shapes["StartEvent_Order"].element.trigger is Trigger.MESSAGE
    assert shapes["StartEvent_Order"].label == Bounds(213, 185, 75, 14)
    assert shapes["TextAnnotation_1"].element.name == "Checked by the sales team within a day"
    edges = {e.id: e for e in diagram.edges}
    assert edges["Flow_Yes"].waypoints == ((500, 185), (500, 320), (580, 320))
    assert edges["Flow_Message"].tag == "messageFlow"
    assert edges["Association_1"].tag == "association"


def test_shapes_land_at_their_bounds_and_edges_follow_their_waypoints() -> None:
    root = plain("collaboration_lanes", "shop")
    rect = first(group(root, "data-node", "Activity_Check"), "rect")
    assert [rect.get(k) for k in ("x", "y", "width", "height")] == ["320", "120", "100", "80"]
    circle = first(group(root, "data-node", "Event_Shipped"), "circle")
    assert (circle.get("cx"), circle.get("cy"), circle.get("r")) == ("760", "320", "18")
    diamond = first(group(root, "data-node", "Gateway_Stock"), "polygon")
    assert diamond.get("points") == "500,135 525,160 500,185 475,160"
    line = first(group(root, "data-flow", "Flow_Yes"), "polyline")
    assert line.get("points") == "500,185 500,320 580,320"


def test_the_view_box_fits_the_diagram() -> None:
    diagram = read_diagram(source("collaboration_lanes"), "shop")
    assert diagram is not None
    extent = diagram.extent()
    assert extent == Bounds(160, 0, 760, 600)  # the annotation on top, the other pool below
    x, y, w, h = (
        float(v) for v in str(plain("collaboration_lanes", "shop").get("viewBox")).split()
    )
    assert x < extent.x and y < extent.y
    assert x + w > extent.x + extent.w and y + h > extent.y + extent.h


def test_pools_lanes_and_artifacts_are_drawn() -> None:
    root = plain("collaboration_lanes", "shop")
    classes = {e.get("data-element"): e.get("class") for e in root.iter() if e.get("data-element")}
    assert classes["Participant_Shop"] == "pool"
    assert classes["Participant_Customer"] == "pool other-pool"  # another pool, drawn empty
    assert classes["Lane_Sales"] == classes["Lane_Warehouse"] == "lane"
    assert classes["TextAnnotation_1"] == "annotation"
    assert classes["Association_1"] == "association"
    assert classes["DataObjectReference_Order"] == "data-object"
    assert classes["DataStoreReference_Stock"] == "data-store"
    assert classes["Flow_Message"] == "message-flow"
    texts = {t.text for t in root.iter() if local(t.tag) == "text"}
    assert {"Sales", "Warehouse", "Shop", "Order received", "In stock?", "yes", "no"} <= texts
    assert "Customer & <partner>" in texts  # escaped in the file, read back as it was written


def markers(root: Element, node: str) -> set[str]:
    el = group(root, "data-node", node)
    return {str(g.get("class")) for g in el.iter() if "marker" in str(g.get("class"))}


def test_activity_markers() -> None:
    root = plain("multi_instance", "dispatch")
    assert markers(root, "Activity_Ship") == {"marker marker-parallel"}
    assert markers(root, "Activity_Sign") == {"marker marker-sequential"}
    call = first(group(root, "data-node", "Activity_Ship"), "rect")
    assert call.get("stroke-width") == "4"  # a call activity's thick border
    symbols = plain("symbols", "symbols")
    assert markers(symbols, "Task_Loop") == {f"marker marker-{Loop.STANDARD.value}"}
    assert markers(symbols, "Task_Comp") == {"marker marker-compensation"}
    assert markers(symbols, "Sub_AdHoc") == {"marker marker-adhoc"}
    assert markers(symbols, "Sub_Collapsed") == {"marker marker-collapsed"}


def test_event_symbols_and_borders() -> None:
    root = plain("symbols", "symbols")
    drawn = {
        node: len(list(group(root, "data-node", node).iter()))
        for node in ("Event_Msg", "Event_Comp", "Event_Term", "Event_Multi", "Event_Timer")
    }
    assert all(count > 4 for count in drawn.values()), drawn  # title, two circles and an icon
    boundary = first(group(root, "data-node", "Event_NonInterrupting"), "circle")
    assert boundary.get("stroke-dasharray")  # a non-interrupting boundary: dashed
    end = first(group(root, "data-node", "Event_Term"), "circle")
    assert end.get("stroke-width") == "4"
    events = plain("subprocess_events", "claims")
    sub = first(group(events, "data-node", "Activity_Notes"), "rect")
    assert sub.get("stroke-dasharray")  # an event subprocess: dotted
    start = first(group(events, "data-node", "Event_NoteStart"), "circle")
    assert start.get("stroke-dasharray")  # its non-interrupting start


def test_gateways_of_every_kind() -> None:
    root = plain("gateways", "routing")
    kinds = {
        node: str(group(root, "data-node", node).get("data-type"))
        for node in ("Gateway_Route", "Gateway_Fork", "Gateway_Some", "Gateway_Wait")
    }
    assert kinds == {
        "Gateway_Route": "exclusiveGateway",
        "Gateway_Fork": "parallelGateway",
        "Gateway_Some": "inclusiveGateway",
        "Gateway_Wait": "eventBasedGateway",
    }
    inner = [local(c.tag) for c in group(root, "data-node", "Gateway_Some")]
    assert "circle" in inner  # the inclusive gateway's O
    complex_gw = plain("symbols", "symbols")
    assert len(list(group(complex_gw, "data-node", "Gateway_Complex").iter())) > 3


def tokens_at(*placed: tuple[str, str]) -> list[dict[str, Any]]:
    return [
        {"id": f"t{n}", "node_id": node, "state": state, "mode": "FORWARD"}
        for n, (node, state) in enumerate(placed)
    ]


def test_an_instance_marks_failed_and_active_nodes_with_the_reason() -> None:
    graph = graph_of("collaboration_lanes", "shop")
    events: list[dict[str, Any]] = [
        {"kind": "token", "type": "CREATED", "node_id": "StartEvent_Order", "token_id": "t0"},
        {"kind": "token", "type": "MOVED", "node_id": "Activity_Check", "token_id": "t0",
         "data": {"flow": "Flow_1"}},
    ]  # fmt: skip
    svg = instance_svg(
        graph,
        (source("collaboration_lanes"), "bpmn"),
        events,
        tokens_at(("Activity_Check", "WAITING"), ("Activity_Pack", "FAILED")),
        incidents=[("Activity_Pack", "the <warehouse> API said 503 & gave up")],
        title="shop v1",
    )
    root = parse(svg)
    assert "bpmn-diagram" in str(root.get("class"))
    failed = group(root, "data-node", "Activity_Pack")
    assert "failed" in str(failed.get("class")).split()
    assert "the <warehouse> API said 503 & gave up" in str(first(failed, "title").text)
    reason = [g for g in failed.iter() if g.get("class") == "reason"]
    assert reason and "the <warehouse> API" in "".join(str(t.text) for t in reason[0].iter())
    active = group(root, "data-node", "Activity_Check")
    assert "active" in str(active.get("class")).split()
    assert active.get("data-tokens") == "1"
    assert "not-visited" in str(group(root, "data-node", "Event_Shipped").get("class"))
    taken = group(root, "data-flow", "Flow_1")
    assert taken.get("data-count") == "1" and "taken" in str(taken.get("class")).split()


def test_multi_instance_iterations_are_shown() -> None:
    graph = graph_of("multi_instance", "dispatch")
    events = [
        {"kind": "token", "type": "CREATED", "node_id": "Activity_Ship", "token_id": f"i{n}",
         "data": {"scope": "Activity_Ship"}}
        for n in range(3)
    ]  # fmt: skip
    svg = instance_svg(
        graph,
        (source("multi_instance"), "bpmn"),
        events,
        tokens_at(("Activity_Ship", "WAITING")),
        instances={"Activity_Ship": 5},
    )
    node = group(parse(svg), "data-node", "Activity_Ship")
    pills = {g.get("class"): "".join(str(t.text) for t in g.iter() if local(t.tag) == "text")
             for g in node if local(g.tag) == "g"}  # fmt: skip
    assert pills["iterations"] == "3/5"


def test_heatmap_counts_and_where_instances_are() -> None:
    graph = graph_of("gateways", "routing")
    counts = HeatCounts(
        instances=10,
        entered={"StartEvent_1": 10, "Gateway_Route": 10, "Activity_All": 4, "Event_Timer": 6},
        flows={"Flow_1": 10, "Flow_ToFork": 4},
        live={"Activity_All": 2},
        failed={"Event_Timer": 1},
        reasons={"Event_Timer": ("timer could not be parsed",)},
    )
    root = parse(definition_svg(graph, (source("gateways"), "bpmn"), counts))
    assert "heatmap" in str(root.get("class"))
    start = group(root, "data-node", "StartEvent_1")
    assert start.get("data-entered") == "10" and "visited" in str(start.get("class"))
    assert group(root, "data-node", "Activity_All").get("data-tokens") == "2"
    assert "failed" in str(group(root, "data-node", "Event_Timer").get("class"))
    assert group(root, "data-flow", "Flow_ToFork").get("data-count") == "4"
    hottest = first(start, "circle").get("fill")
    cooler = first(group(root, "data-node", "Activity_All"), "rect").get("fill")
    assert hottest != cooler


def test_without_di_or_with_partial_di_the_automatic_layout_is_used() -> None:
    graph = graph_of("gateways", "routing")
    assert modeler_layout(graph, None) is None
    assert modeler_layout(graph, ("{}", "json")) is None
    partial = source("gateways").replace('bpmnElement="Activity_All"', 'bpmnElement="Nothing"')
    assert modeler_layout(graph, (partial, "bpmn")) is None
    svg = instance_svg(graph, (partial, "bpmn"), [], [])
    assert "bpmn-diagram" not in svg and 'data-node="Activity_All"' in svg
    assert modeler_layout(graph, (source("gateways"), "bpmn")) is not None


def test_other_planes_of_the_file_are_not_mixed_in() -> None:
    diagram = read_diagram(source("multi_instance"), "lineItem")
    assert diagram is not None
    assert diagram.ids() == {"StartEvent_Item", "Activity_Pick", "Event_ItemEnd"}


CONFORMANCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "public"


def conformance_files() -> list[Path]:
    if not CONFORMANCE.is_dir():
        return []
    return sorted(p for p in CONFORMANCE.glob("*.bpmn") if b"BPMNShape" in p.read_bytes())


@pytest.mark.skipif(
    not conformance_files(), reason="../shared/conformance (the shared BPMN corpus) is absent"
)
@pytest.mark.parametrize("path", conformance_files(), ids=lambda p: p.name)
def test_every_conformance_model_with_di_renders(path: Path) -> None:
    xml = path.read_text(encoding="utf-8")
    in_file = sum(1 for e in parse(xml).iter() if local(e.tag) == "BPMNShape")
    drawn: list[str] = []
    for doc in compile_bpmn(xml):
        graph = compile_for_deploy(doc)
        assert modeler_layout(graph, (xml, "bpmn")) is not None, f"{graph.key}: DI not used"
        root = parse(instance_svg(graph, (xml, "bpmn"), [], []))
        drawn += [
            str(e.get("data-node") or e.get("data-element"))
            for e in root.iter()
            if local(e.tag) == "g"
            and (e.get("data-node") or e.get("data-element"))
            and e.get("class") not in CONNECTORS
        ]
    assert len(drawn) == in_file  # one drawn element per DI shape
    assert len(set(drawn)) == len(drawn)


CONNECTORS = ("message-flow", "association")


def test_a_default_flow_starts_with_a_slash() -> None:
    root = plain("gateways", "routing")
    default = first(group(root, "data-flow", "Flow_ToEvent"), "polyline")
    assert default.get("marker-start") == "url(#default-untaken)"
    assert first(group(root, "data-flow", "Flow_ToFork"), "polyline").get("marker-start") is None


def test_coordinates_that_are_not_numbers_are_left_out() -> None:
    broken = (
        source("gateways")
        .replace(
            '<dc:Bounds x="470" y="80" width="100" height="80" />',
            '<dc:Bounds x="nan" y="80" width="100" height="80" />',
        )
        .replace('<di:waypoint x="415" y="120" />', '<di:waypoint x="inf" y="120" />')
    )
    diagram = read_diagram(broken, "routing")
    assert diagram is not None
    assert "Activity_All" not in diagram.ids()  # no shape: the automatic layout draws it
    [flow] = [e for e in diagram.edges if e.id == "Flow_P"]
    assert flow.waypoints == ((470, 120),)
    assert "nan" not in render_di(diagram, Overlay({}, {}), name="routing")
