"""Nothing with behaviour is dropped in silence: every element type the importer reads, given
an unknown attribute and an unknown extension element of Camunda's, is refused naming them,
unless docs/bpmn.md lists the element as accepted without behaviour (its content is not read);
another vendor's (a namespace bpm does not read) are ignored, as Camunda 7 ignores them, and
listed as ignored."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bpm.definitions.bpmn import compile_bpmn, import_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.modeler import chain, modeler_file

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bpmn.md"
ACME = 'xmlns:acme="urn:acme"'
#: ``{a}``: where the unknown attribute goes; ``{x}``: where the unknown child goes.
EXT = "<bpmn:extensionElements>{x}</bpmn:extensionElements>"
AROUND = '<bpmn:startEvent id="S" />{body}<bpmn:endEvent id="E" />'


def task(element: str) -> str:
    return AROUND.format(body=element) + chain("S", "T", "E")


CASES: dict[str, tuple[str, str]] = {
    # name: (process body, declarations); the element under test carries {a} and {x}
    "serviceTask": (
        task(f'<bpmn:serviceTask id="T" bpm:handler="h"{{a}}>{EXT}</bpmn:serviceTask>'),
        "",
    ),
    "sendTask": (task(f'<bpmn:sendTask id="T" bpm:handler="h"{{a}}>{EXT}</bpmn:sendTask>'), ""),
    "businessRuleTask": (
        task(
            f'<bpmn:businessRuleTask id="T" camunda:decisionRef="d"{{a}}>{EXT}'
            "</bpmn:businessRuleTask>"
        ),
        "",
    ),
    "scriptTask": (
        task(f'<bpmn:scriptTask id="T" bpm:handler="h"{{a}}>{EXT}</bpmn:scriptTask>'),
        "",
    ),
    "userTask": (task(f'<bpmn:userTask id="T"{{a}}>{EXT}</bpmn:userTask>'), ""),
    "callActivity": (
        task(f'<bpmn:callActivity id="T" calledElement="c"{{a}}>{EXT}</bpmn:callActivity>'),
        "",
    ),
    "receiveTask": (task(f'<bpmn:receiveTask id="T"{{a}}>{EXT}</bpmn:receiveTask>'), ""),
    "manualTask": (task(f'<bpmn:manualTask id="T"{{a}}>{EXT}</bpmn:manualTask>'), ""),
    "task": (task(f'<bpmn:task id="T"{{a}}>{EXT}</bpmn:task>'), ""),
    "exclusiveGateway": (
        task(f'<bpmn:exclusiveGateway id="T"{{a}}>{EXT}</bpmn:exclusiveGateway>'),
        "",
    ),
    "inclusiveGateway": (
        task(f'<bpmn:inclusiveGateway id="T"{{a}}>{EXT}</bpmn:inclusiveGateway>'),
        "",
    ),
    "parallelGateway": (
        task(f'<bpmn:parallelGateway id="T"{{a}}>{EXT}</bpmn:parallelGateway>'),
        "",
    ),
    "startEvent": (
        f'<bpmn:startEvent id="S"{{a}}>{EXT}</bpmn:startEvent><bpmn:endEvent id="E" />'
        + chain("S", "E"),
        "",
    ),
    "endEvent": (
        f'<bpmn:startEvent id="S" /><bpmn:endEvent id="E"{{a}}>{EXT}</bpmn:endEvent>'
        + chain("S", "E"),
        "",
    ),
    "terminateEventDefinition": (
        '<bpmn:startEvent id="S" /><bpmn:endEvent id="E"><bpmn:terminateEventDefinition{a}>'
        "{x}</bpmn:terminateEventDefinition></bpmn:endEvent>" + chain("S", "E"),
        "",
    ),
    "errorEventDefinition": (
        '<bpmn:startEvent id="S" /><bpmn:endEvent id="E"><bpmn:errorEventDefinition '
        'errorRef="Err"{a}>{x}</bpmn:errorEventDefinition></bpmn:endEvent>' + chain("S", "E"),
        '<bpmn:error id="Err" errorCode="E1" />',
    ),
    "timerEventDefinition": (
        task(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:timerEventDefinition{a}>{x}'
            "<bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>"
            "</bpmn:intermediateCatchEvent>"
        ),
        "",
    ),
    "timeDuration": (
        task(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:timerEventDefinition>'
            "<bpmn:timeDuration{a}>PT1M{x}</bpmn:timeDuration></bpmn:timerEventDefinition>"
            "</bpmn:intermediateCatchEvent>"
        ),
        "",
    ),
    "messageEventDefinition": (
        task(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:messageEventDefinition messageRef="M"{a}>'
            "{x}</bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>"
        ),
        '<bpmn:message id="M" name="paid" />',
    ),
    "conditionalEventDefinition": (
        task(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:conditionalEventDefinition{a}>{x}'
            '<bpmn:condition xsi:type="bpmn:tFormalExpression">${{ok}}</bpmn:condition>'
            "</bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>"
        ),
        "",
    ),
    "condition": (
        task(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:conditionalEventDefinition>'
            '<bpmn:condition xsi:type="bpmn:tFormalExpression"{a}>${{ok}}{x}</bpmn:condition>'
            "</bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>"
        ),
        "",
    ),
    "signalEventDefinition": (
        task(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:signalEventDefinition signalRef="Sg"{a}>'
            "{x}</bpmn:signalEventDefinition></bpmn:intermediateCatchEvent>"
        ),
        '<bpmn:signal id="Sg" name="alert" />',
    ),
    "intermediateThrowEvent": (
        task(f'<bpmn:intermediateThrowEvent id="T"{{a}}>{EXT}</bpmn:intermediateThrowEvent>'),
        "",
    ),
    "boundaryEvent": (
        task('<bpmn:serviceTask id="T" bpm:handler="h" />')
        + f'<bpmn:boundaryEvent id="B" attachedToRef="T"{{a}}>{EXT}<bpmn:timerEventDefinition>'
        "<bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition>"
        '</bpmn:boundaryEvent><bpmn:endEvent id="E2" />' + chain("B", "E2"),
        "",
    ),
    "subProcess": (
        task(
            f'<bpmn:subProcess id="T"{{a}}>{EXT}<bpmn:startEvent id="SS" />'
            '<bpmn:endEvent id="SE" />' + chain("SS", "SE") + "</bpmn:subProcess>"
        ),
        "",
    ),
    "transaction": (
        task(
            f'<bpmn:transaction id="T"{{a}}>{EXT}<bpmn:startEvent id="TS" />'
            '<bpmn:endEvent id="TE"><bpmn:cancelEventDefinition /></bpmn:endEvent>'
            + chain("TS", "TE")
            + "</bpmn:transaction>"
        )
        + '<bpmn:boundaryEvent id="B" attachedToRef="T"><bpmn:cancelEventDefinition />'
        '</bpmn:boundaryEvent><bpmn:endEvent id="E2" />' + chain("B", "E2"),
        "",
    ),
    "cancelEventDefinition": (
        task(
            '<bpmn:transaction id="T"><bpmn:startEvent id="TS" />'
            '<bpmn:endEvent id="TE"><bpmn:cancelEventDefinition{a}>{x}'
            "</bpmn:cancelEventDefinition></bpmn:endEvent>"
            + chain("TS", "TE")
            + "</bpmn:transaction>"
        )
        + '<bpmn:boundaryEvent id="B" attachedToRef="T"><bpmn:cancelEventDefinition />'
        '</bpmn:boundaryEvent><bpmn:endEvent id="E2" />' + chain("B", "E2"),
        "",
    ),
    "multiInstanceLoopCharacteristics": (
        task(
            '<bpmn:userTask id="T"><bpmn:multiInstanceLoopCharacteristics{a}>'
            f"{EXT}<bpmn:loopCardinality>2</bpmn:loopCardinality>"
            "</bpmn:multiInstanceLoopCharacteristics></bpmn:userTask>"
        ),
        "",
    ),
    "zeebe:loopCharacteristics": (
        task(
            '<bpmn:userTask id="T"><bpmn:multiInstanceLoopCharacteristics>'
            '<bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=xs"{a}>{x}'
            "</zeebe:loopCharacteristics></bpmn:extensionElements>"
            "</bpmn:multiInstanceLoopCharacteristics></bpmn:userTask>"
        ),
        "",
    ),
    "sequenceFlow": (
        '<bpmn:startEvent id="S" /><bpmn:endEvent id="E" />'
        f'<bpmn:sequenceFlow id="F" sourceRef="S" targetRef="E"{{a}}>{EXT}</bpmn:sequenceFlow>',
        "",
    ),
    "conditionExpression": (
        '<bpmn:startEvent id="S" /><bpmn:exclusiveGateway id="G" default="F2" />'
        '<bpmn:endEvent id="E" />'
        + chain("S", "G")
        + '<bpmn:sequenceFlow id="F" sourceRef="G" targetRef="E"><bpmn:conditionExpression '
        'xsi:type="bpmn:tFormalExpression"{a}>${{ok}}{x}</bpmn:conditionExpression>'
        '</bpmn:sequenceFlow><bpmn:sequenceFlow id="F2" sourceRef="G" targetRef="E" />',
        "",
    ),
    "dataObjectReference": (
        task('<bpmn:task id="T" />')
        + f'<bpmn:dataObjectReference id="R" dataObjectRef="O"{{a}}>{EXT}'
        '</bpmn:dataObjectReference><bpmn:dataObject id="O" />',
        "",
    ),
    "message": (
        task('<bpmn:task id="T" />'),
        f'<bpmn:message id="M" name="m"{{a}}>{EXT}</bpmn:message>',
    ),
    "error": (
        task('<bpmn:task id="T" />'),
        f'<bpmn:error id="Er" errorCode="x"{{a}}>{EXT}</bpmn:error>',
    ),
    "signal": (
        task('<bpmn:task id="T" />'),
        f'<bpmn:signal id="Sg" name="s"{{a}}>{EXT}</bpmn:signal>',
    ),
    "escalation": (
        task('<bpmn:task id="T" />'),
        f'<bpmn:escalation id="Es" escalationCode="c"{{a}}>{EXT}</bpmn:escalation>',
    ),
    "itemDefinition": (
        task('<bpmn:task id="T" />'),
        f'<bpmn:itemDefinition id="I" structureRef="x"{{a}}>{EXT}</bpmn:itemDefinition>',
    ),
    "camunda:properties": (
        task(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:properties{a}>{x}'
            "</camunda:properties></bpmn:extensionElements></bpmn:task>"
        ),
        "",
    ),
    "camunda:property": (
        task(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:properties><camunda:property '
            'name="p" value="v"{a}>{x}</camunda:property></camunda:properties>'
            "</bpmn:extensionElements></bpmn:task>"
        ),
        "",
    ),
    "camunda:inputOutput": (
        task(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:inputOutput{a}>{x}'
            "</camunda:inputOutput></bpmn:extensionElements></bpmn:task>"
        ),
        "",
    ),
    "camunda:inputParameter": (
        task(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:inputOutput>'
            '<camunda:inputParameter name="p"{a}>{x}</camunda:inputParameter>'
            "</camunda:inputOutput></bpmn:extensionElements></bpmn:task>"
        ),
        "",
    ),
    "camunda:field": (
        task(
            '<bpmn:serviceTask id="T" bpm:handler="h"><bpmn:extensionElements><camunda:field '
            'name="f" stringValue="v"{a}>{x}</camunda:field></bpmn:extensionElements>'
            "</bpmn:serviceTask>"
        ),
        "",
    ),
    "camunda:executionListener": (
        task(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:executionListener event="start" '
            'class="a.B"{a}>{x}</camunda:executionListener></bpmn:extensionElements></bpmn:task>'
        ),
        "",
    ),
    "camunda:taskListener": (
        task(
            '<bpmn:userTask id="T"><bpmn:extensionElements><camunda:taskListener event="create" '
            'class="a.B"{a}>{x}</camunda:taskListener></bpmn:extensionElements></bpmn:userTask>'
        ),
        "",
    ),
    "camunda:connector": (
        task(
            '<bpmn:serviceTask id="T"><bpmn:extensionElements><camunda:connector{a}>{x}'
            "<camunda:connectorId>c</camunda:connectorId></camunda:connector>"
            "</bpmn:extensionElements></bpmn:serviceTask>"
        ),
        "",
    ),
    "camunda:failedJobRetryTimeCycle": (
        task(
            '<bpmn:serviceTask id="T" bpm:handler="h"><bpmn:extensionElements>'
            "<camunda:failedJobRetryTimeCycle{a}>R2/PT1M{x}</camunda:failedJobRetryTimeCycle>"
            "</bpmn:extensionElements></bpmn:serviceTask>"
        ),
        "",
    ),
}
#: Elements docs/bpmn.md lists as accepted without behaviour: their content is not read.
IGNORED: dict[str, tuple[str, str]] = {
    "textAnnotation": (
        task('<bpmn:task id="T" />')
        + '<bpmn:textAnnotation id="N"{a}>{x}<bpmn:text>note</bpmn:text></bpmn:textAnnotation>',
        "",
    ),
    "documentation": (
        task('<bpmn:task id="T"><bpmn:documentation{a}>text{x}</bpmn:documentation></bpmn:task>'),
        "",
    ),
}


def _build(case: tuple[str, str], attr: str, child: str) -> str:
    body, declarations = case
    fill = {"a": attr, "x": child}
    text = modeler_file("p", body.format(**fill), declarations=declarations.format(**fill)).replace(
        "<bpmn:definitions ", f"<bpmn:definitions {ACME} ", 1
    )
    return text


def test_every_case_is_valid_without_the_unknown_content() -> None:
    for name, case in {**CASES, **IGNORED}.items():
        try:
            compile_bpmn(_build(case, "", ""), handlers={"h"})
        except InvalidDefinition as exc:
            # A business rule task's decision is found at run time, so it compiles too.
            raise AssertionError(f"{name}: {exc}") from exc


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unknown_attribute_is_refused_naming_it(name: str) -> None:
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(_build(CASES[name], ' camunda:flag="1"', ""), handlers={"h"})
    assert "camunda:flag='1'" in str(info.value), str(info.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unknown_extension_element_is_refused_naming_it(name: str) -> None:
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(_build(CASES[name], "", "<camunda:rule />"), handlers={"h"})
    assert re.search(r"camunda:rule in \S+", str(info.value)), str(info.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_another_vendors_attribute_and_element_are_listed_as_ignored(name: str) -> None:
    imported = import_bpmn(_build(CASES[name], ' acme:flag="1"', "<acme:rule />"), handlers={"h"})
    ignored = "\n".join(imported.ignored)
    assert "acme:flag='1'" in ignored and "'urn:acme'" in ignored, ignored
    assert re.search(r"acme:rule in \S+", ignored), ignored


@pytest.mark.parametrize("name", sorted(IGNORED))
def test_what_is_accepted_without_reading_it_is_listed_in_the_docs(name: str) -> None:
    compile_bpmn(_build(IGNORED[name], ' acme:flag="1"', "<acme:rule />"), handlers={"h"})
    accepted = DOCS.read_text().split("## Accepted without behaviour", 1)[1].split("\n## ", 1)[0]
    assert f"`{name}`" in accepted
