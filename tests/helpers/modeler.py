"""BPMN files as Camunda Modeler saves them: ``bpmn:`` prefixes, the modeler's execution
platform attributes, and a BPMNDI diagram with a shape for every node and an edge for every
flow, so the tests read the same files a user brings."""

from __future__ import annotations

import itertools
import re

HEADER = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" \
xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" \
xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" \
xmlns:di="http://www.omg.org/spec/DD/20100524/DI" \
xmlns:camunda="http://camunda.org/schema/1.0/bpmn" \
xmlns:modeler="http://camunda.org/schema/modeler/1.0" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
xmlns:bpm="https://bpm.dev/schema/1.0" \
id="Definitions_{key}" targetNamespace="http://bpmn.io/schema/bpmn" \
exporter="Camunda Modeler" exporterVersion="5.31.0" \
modeler:executionPlatform="Camunda Platform" modeler:executionPlatformVersion="7.22.0">
"""
_NODE = re.compile(r"<bpmn:(\w+) id=\"([^\"]+)\"")
_FLOW = re.compile(r"<bpmn:sequenceFlow id=\"([^\"]+)\"")
_NOT_SHAPES = {
    "sequenceFlow",
    "conditionExpression",
    "process",
    "message",
    "error",
    "signal",
    "escalation",
    "documentation",
    "extensionElements",
}


def modeler_file(key: str, body: str, *, declarations: str = "", attrs: str = "") -> str:
    """A file with process ``key`` holding ``body`` (``bpmn:`` elements) and its diagram."""
    return (
        HEADER.format(key=key)
        + declarations
        + f'  <bpmn:process id="{key}" isExecutable="true"{attrs}>\n{body}\n  </bpmn:process>\n'
        + _diagram(key, body)
        + "</bpmn:definitions>\n"
    )


def modeler_processes(processes: dict[str, str]) -> str:
    """A file of several processes (key -> body), each with its diagram."""
    first = next(iter(processes))
    return (
        HEADER.format(key=first)
        + "".join(
            f'  <bpmn:process id="{key}" isExecutable="true">\n{body}\n  </bpmn:process>\n'
            for key, body in processes.items()
        )
        + "".join(_diagram(key, body) for key, body in processes.items())
        + "</bpmn:definitions>\n"
    )


def _diagram(key: str, body: str) -> str:
    shapes, edges = [], []
    x = 150
    for kind, element_id in _NODE.findall(body):
        if kind in _NOT_SHAPES or kind.endswith("EventDefinition"):
            continue
        shapes.append(
            f'      <bpmndi:BPMNShape id="{element_id}_di" bpmnElement="{element_id}">\n'
            f'        <dc:Bounds x="{x}" y="80" width="100" height="80" />\n'
            f"      </bpmndi:BPMNShape>\n"
        )
        x += 160
    for flow_id in _FLOW.findall(body):
        edges.append(
            f'      <bpmndi:BPMNEdge id="{flow_id}_di" bpmnElement="{flow_id}">\n'
            f'        <di:waypoint x="200" y="120" />\n        <di:waypoint x="260" y="120" />\n'
            f"      </bpmndi:BPMNEdge>\n"
        )
    return (
        f'  <bpmndi:BPMNDiagram id="BPMNDiagram_1">\n'
        f'    <bpmndi:BPMNPlane id="BPMNPlane_1" bpmnElement="{key}">\n'
        + "".join(shapes)
        + "".join(edges)
        + "    </bpmndi:BPMNPlane>\n  </bpmndi:BPMNDiagram>\n"
    )


def flow(flow_id: str, source: str, target: str, condition: str | None = None) -> str:
    if condition is None:
        return f'    <bpmn:sequenceFlow id="{flow_id}" sourceRef="{source}" targetRef="{target}" />'
    return (
        f'    <bpmn:sequenceFlow id="{flow_id}" sourceRef="{source}" targetRef="{target}">\n'
        f'      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">{condition}'
        f"</bpmn:conditionExpression>\n    </bpmn:sequenceFlow>"
    )


def chain(*ids: str) -> str:
    """Flows ``Flow_<a>_<b>`` linking ``ids`` in order."""
    return "\n".join(flow(f"Flow_{a}_{b}", a, b) for a, b in itertools.pairwise(ids))
