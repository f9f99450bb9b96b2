"""The SVG diagram draws what triggers an event and an event-based gateway's mark, as BPMN
draws them: an escalation is an arrowhead, filled where it is thrown and hollow where it is
caught; an event-based gateway is a pentagon in a double circle."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bpm.definitions import ProcessBuilder
from bpm.definitions.parse import compile_definition
from bpm.diagram import render

SVG = "{http://www.w3.org/2000/svg}"


def _node_groups(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)
    return {g.attrib["data-node"]: g for g in root.iter(f"{SVG}g") if "data-node" in g.attrib}


def _polygons(group: ET.Element) -> list[ET.Element]:
    return list(group.iter(f"{SVG}polygon"))


def test_escalations_and_an_event_gateway_have_their_symbols() -> None:
    inner = ProcessBuilder("inner").start("s_start")
    inner._node("escalate", "escalationThrow", escalation="LATE")
    inner.end("s_end").sequence("s_start", "escalate", "s_end")
    b = ProcessBuilder("p").start().sub_process("sub", inner)
    b._node("late", "boundaryEvent", attachedTo="sub", escalation="LATE", interrupting=False)
    b.end("notified")
    b._node("gw", "eventBasedGateway")
    b._node("paid", "messageEvent", message="paid")
    b._node("later", "timerEvent", duration="PT1H")
    b.end("e2").end("e3")
    b.sequence("start", "sub", "gw", "paid", "e2").sequence("gw", "later", "e3").flow(
        "late", "notified"
    )
    svg = render(compile_definition(b.build()), [], [], fmt="svg")
    groups = _node_groups(svg)
    (thrown,) = _polygons(groups["escalate"])
    (caught,) = _polygons(groups["late"])
    assert thrown.attrib["fill"] != "none" and caught.attrib["fill"] == "none"
    pentagons = [p for p in _polygons(groups["gw"]) if len(p.attrib["points"].split()) == 5]
    assert len(pentagons) == 1


def test_a_conditional_event_is_a_sheet_with_lines() -> None:
    b = ProcessBuilder("p").start()
    b._node("ready", "conditionalEvent", condition="${ready}")
    b.end().sequence("start", "ready", "end")
    svg = render(compile_definition(b.build()), [], [], fmt="svg")
    sheet = list(_node_groups(svg)["ready"].iter(f"{SVG}rect"))
    assert len(sheet) == 1
