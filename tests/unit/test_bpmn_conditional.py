"""Conditional events from BPMN and in the JSON format: the ``conditionalEventDefinition``
(its ``condition``, ``camunda:variableName`` and ``camunda:variableEvents``) on intermediate
catch events, boundary events, event subprocess starts and after an event-based gateway; a
process's own conditional start event, and malformed conditions, refused naming the element."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.conditions import VariableEvent
from bpm.definitions.model import NodeType, ProcessGraph
from bpm.definitions.parse import compile_definition
from bpm.errors import InvalidDefinition

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
    'xmlns:camunda="http://camunda.org/schema/1.0/bpmn" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d" targetNamespace="x">\n'
    '<bpmn:process id="p" isExecutable="true">\n'
)
TAIL = "</bpmn:process></bpmn:definitions>"


def definition(condition: str = "${x > 1}", attrs: str = "") -> str:
    return (
        f"<bpmn:conditionalEventDefinition{attrs}>"
        f'<bpmn:condition xsi:type="bpmn:tFormalExpression">{condition}</bpmn:condition>'
        "</bpmn:conditionalEventDefinition>"
    )


def compiled(body: str) -> tuple[dict[str, Any], ProcessGraph]:
    [doc] = compile_bpmn(HEAD + body + TAIL)
    return doc, compile_definition(doc)


def catch_body(event_definition: str) -> str:
    return (
        '<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="c"/>'
        f'<bpmn:intermediateCatchEvent id="c">{event_definition}</bpmn:intermediateCatchEvent>'
        '<bpmn:sequenceFlow id="f2" sourceRef="c" targetRef="e"/><bpmn:endEvent id="e"/>'
    )


def test_an_intermediate_catch_with_its_filters() -> None:
    attrs = ' camunda:variableName="x" camunda:variableEvents="create, update"'
    doc, graph = compiled(catch_body(definition(attrs=attrs)))
    node = next(n for n in doc["nodes"] if n["id"] == "c")
    assert node == {
        "id": "c",
        "type": "conditionalEvent",
        "condition": {
            "expression": "${x > 1}",
            "variableName": "x",
            "variableEvents": ["create", "update"],
        },
    }
    condition = graph.node("c").condition
    assert condition is not None and graph.node("c").type is NodeType.CONDITIONAL
    assert condition.variable_events == {VariableEvent.CREATE, VariableEvent.UPDATE}
    assert graph.has_conditions
    assert condition.wants({"x": VariableEvent.UPDATE})
    assert not condition.wants({"x": VariableEvent.DELETE})
    assert not condition.wants({"y": VariableEvent.UPDATE})


def test_a_definition_without_conditional_events_has_no_conditions() -> None:
    _, graph = compiled(
        catch_body(
            "<bpmn:timerEventDefinition><bpmn:timeDuration>PT1M"
            "</bpmn:timeDuration></bpmn:timerEventDefinition>"
        )
    )
    assert not graph.has_conditions


@pytest.mark.parametrize("cancel", ["true", "false"])
def test_a_boundary_event(cancel: str) -> None:
    _, graph = compiled(
        '<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>'
        '<bpmn:userTask id="t"/><bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>'
        '<bpmn:endEvent id="e"/>'
        f'<bpmn:boundaryEvent id="b" attachedToRef="t" cancelActivity="{cancel}">'
        f"{definition()}</bpmn:boundaryEvent>"
        '<bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e2"/><bpmn:endEvent id="e2"/>'
    )
    assert graph.node("b").condition is not None
    assert graph.node("b").interrupting is (cancel == "true")


@pytest.mark.parametrize("interrupting", ["true", "false"])
def test_an_event_subprocess_start(interrupting: str) -> None:
    _, graph = compiled(
        '<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/>'
        '<bpmn:endEvent id="e"/><bpmn:subProcess id="esp" triggeredByEvent="true">'
        f'<bpmn:startEvent id="es" isInterrupting="{interrupting}">{definition()}'
        '</bpmn:startEvent><bpmn:sequenceFlow id="f2" sourceRef="es" targetRef="ee"/>'
        '<bpmn:endEvent id="ee"/></bpmn:subProcess>'
    )
    trigger = graph.trigger_of("esp")
    assert trigger.condition is not None
    assert trigger.interrupting is (interrupting == "true")


def test_after_an_event_based_gateway() -> None:
    _, graph = compiled(
        '<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>'
        '<bpmn:eventBasedGateway id="g"/>'
        '<bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="c"/>'
        '<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="t"/>'
        f'<bpmn:intermediateCatchEvent id="c">{definition()}</bpmn:intermediateCatchEvent>'
        '<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition><bpmn:timeDuration>'
        "PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"
        '<bpmn:sequenceFlow id="f4" sourceRef="c" targetRef="e"/>'
        '<bpmn:sequenceFlow id="f5" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>'
    )
    assert graph.node("c").type is NodeType.CONDITIONAL


def test_a_conditional_start_of_the_process() -> None:
    _, graph = compiled(
        f'<bpmn:startEvent id="s">{definition()}</bpmn:startEvent>'
        '<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/><bpmn:endEvent id="e"/>'
    )
    assert graph.conditional_starts == ("s",) and graph.start_of(None).id == "s"
    assert not graph.has_conditions  # no instance holds a subscription for it


def test_a_conditional_start_of_a_subprocess_is_refused_naming_it() -> None:
    body = (
        '<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>'
        f'<bpmn:subProcess id="sub"><bpmn:startEvent id="ss">{definition()}</bpmn:startEvent>'
        '<bpmn:sequenceFlow id="f2" sourceRef="ss" targetRef="se"/><bpmn:endEvent id="se"/>'
        '</bpmn:subProcess><bpmn:sequenceFlow id="f3" sourceRef="sub" targetRef="e"/>'
        '<bpmn:endEvent id="e"/>'
    )
    with pytest.raises(InvalidDefinition, match="startEvent 'ss' has a conditionalEventDefinition"):
        compile_bpmn(HEAD + body + TAIL)


@pytest.mark.parametrize(
    ("event_definition", "problem"),
    [
        ("<bpmn:conditionalEventDefinition/>", "without a condition"),
        (definition(""), "has an empty condition"),
        (definition("${x >"), "node 'c'"),
        (definition(attrs=' camunda:variableEvents="change"'), "'variableEvents' must be"),
        (
            '<bpmn:conditionalEventDefinition><bpmn:condition language="groovy">x</bpmn:condition>'
            "</bpmn:conditionalEventDefinition>",
            "language 'groovy'",
        ),
    ],
)
def test_a_malformed_condition_is_refused(event_definition: str, problem: str) -> None:
    with pytest.raises(InvalidDefinition, match=problem):
        compiled(catch_body(event_definition))


def test_the_json_format_and_the_builder() -> None:
    doc = (
        ProcessBuilder("p")
        .start()
        .conditional_event("c", condition="${ok}", variable_name="ok")
        .user_task("t")
        .conditional_boundary("b", attached_to="t", condition="${stop}", interrupting=False)
        .end()
        .end("e2")
        .sequence("start", "c", "t", "end")
        .sequence("b", "e2")
        .build()
    )
    c = next(n for n in doc["nodes"] if n["id"] == "c")
    assert c["condition"] == {"expression": "${ok}", "variableName": "ok"}
    graph = compile_definition(doc)
    assert graph.node("b").condition is not None and not graph.node("b").interrupting
    c["condition"] = {"expression": "${ok}", "when": "always"}
    with pytest.raises(InvalidDefinition, match="'condition' must be an expression"):
        compile_definition(doc)
    c["condition"] = 42
    with pytest.raises(InvalidDefinition, match="'condition'"):
        compile_definition(doc)
