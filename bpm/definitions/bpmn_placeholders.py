"""Stand-ins for the BPMN elements the importer refused, so the structural checks still run
over the rest of a process and every problem of a file is listed in one pass.

A refused node leaves a hole: without a stand-in, each flow to it would be "dangling" and
each node after it "unreachable", problems that only repeat the refusal. A stand-in keeps
the node's id and the shape its element has (a start stays a start, an end an end, a
boundary stays on its activity) and no behaviour; the importer never returns a document
holding one, since the file is refused anyway.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.bpmn_xml import XmlElement

Mapped = dict[str, Any]

#: The node type a refused element stands as, by its BPMN tag; any other stands as a task.
_AS = {"startEvent": "startEvent", "endEvent": "endEvent"}
#: A boundary event stands as a timer boundary on its activity: a boundary's shape, with
#: the simplest trigger the checks accept.
_BOUNDARY_TIMER = {"duration": "PT1H"}


def node(el: XmlElement) -> Mapped | None:
    """The stand-in for the refused flow node ``el``; None when it has no id to stand on."""
    node_id = el.attrib.get("id")
    if not node_id:
        return None
    attached = el.attrib.get("attachedToRef")
    if el.tag == "boundaryEvent" and attached:
        return {
            "id": node_id,
            "type": "boundaryEvent",
            "attachedTo": attached,
            "timer": dict(_BOUNDARY_TIMER),
        }
    return {"id": node_id, "type": _AS.get(el.tag, "task")}


def flow(el: XmlElement) -> Mapped | None:
    """The stand-in for a refused sequence flow: its two ends, no condition."""
    flow_id = el.attrib.get("id")
    source, target = el.attrib.get("sourceRef"), el.attrib.get("targetRef")
    if not (flow_id and source and target):
        return None
    return {"id": flow_id, "source": source, "target": target}
