"""Multi-instance loop characteristics from BPMN, as Camunda Modeler (7 and 8) writes them:
Camunda's attributes, BPMN's standard data references, Zeebe's extension; what bpm does not
run is refused at deploy naming the element."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.parse import compile_definition
from bpm.errors import InvalidDefinition

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
    'xmlns:camunda="http://camunda.org/schema/1.0/bpmn" '
    'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d" targetNamespace="x">\n'
    '<bpmn:process id="p" isExecutable="true">\n'
    '<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="A"/>\n'
)
TAIL = (
    '<bpmn:sequenceFlow id="f2" sourceRef="A" targetRef="e"/><bpmn:endEvent id="e"/>\n'
    "</bpmn:process></bpmn:definitions>"
)


def imported(activity: str) -> dict[str, Any]:
    [doc] = compile_bpmn(HEAD + activity + TAIL)
    compile_definition(doc)
    nodes: list[dict[str, Any]] = [n for n in doc["nodes"] if n["id"] == "A"]
    return nodes[0]


def test_camunda_modelers_user_task_over_a_list_of_reviewers() -> None:
    node = imported(
        '<bpmn:userTask id="A" name="Review" camunda:assignee="${reviewer}">'
        '<bpmn:multiInstanceLoopCharacteristics camunda:collection="${reviewers}" '
        'camunda:elementVariable="reviewer">'
        '<bpmn:completionCondition xsi:type="bpmn:tFormalExpression">'
        "${nrOfCompletedInstances/nrOfInstances &gt;= 0.6}</bpmn:completionCondition>"
        "</bpmn:multiInstanceLoopCharacteristics></bpmn:userTask>"
    )
    assert node["multiInstance"] == {
        "collection": "${reviewers}",
        "elementVariable": "reviewer",
        "completionCondition": "${nrOfCompletedInstances/nrOfInstances >= 0.6}",
    }


def test_a_call_activity_over_a_spin_list_reads_the_variable() -> None:
    node = imported(
        '<bpmn:callActivity id="A" calledElement="order-card">'
        '<bpmn:multiInstanceLoopCharacteristics camunda:collection="${cards.elements()}" '
        'camunda:elementVariable="card"/></bpmn:callActivity>'
    )
    assert node["multiInstance"] == {"collection": "cards", "elementVariable": "card"}


def test_a_sequential_subprocess_with_async_and_a_retry_cycle_on_its_loop() -> None:
    node = imported(
        '<bpmn:subProcess id="A"><bpmn:multiInstanceLoopCharacteristics isSequential="true" '
        'camunda:asyncBefore="true" camunda:exclusive="false">'
        "<bpmn:extensionElements><camunda:failedJobRetryTimeCycle>R3/PT5M"
        "</camunda:failedJobRetryTimeCycle></bpmn:extensionElements>"
        '<bpmn:loopCardinality xsi:type="bpmn:tFormalExpression">${regions}</bpmn:loopCardinality>'
        '</bpmn:multiInstanceLoopCharacteristics><bpmn:startEvent id="ss"/>'
        '<bpmn:sequenceFlow id="sf" sourceRef="ss" targetRef="se"/><bpmn:endEvent id="se"/>'
        "</bpmn:subProcess>"
    )
    assert node["multiInstance"] == {"sequential": True, "cardinality": "${regions}"}


def test_the_standard_data_input_and_item() -> None:
    node = imported(
        '<bpmn:userTask id="A"><bpmn:multiInstanceLoopCharacteristics>'
        "<bpmn:loopDataInputRef>approvers</bpmn:loopDataInputRef>"
        '<bpmn:inputDataItem name="approver"/></bpmn:multiInstanceLoopCharacteristics>'
        "</bpmn:userTask>"
    )
    assert node["multiInstance"] == {"collection": "approvers", "elementVariable": "approver"}


def test_zeebes_loop_characteristics_with_an_output_collection() -> None:
    node = imported(
        '<bpmn:serviceTask id="A"><bpmn:extensionElements><zeebe:taskDefinition type="score"/>'
        "</bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics>"
        '<bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="= order.items" '
        'inputElement="item" outputCollection="scores" outputElement="= score"/>'
        "</bpmn:extensionElements><bpmn:completionCondition>= numberOfCompletedInstances "
        "&gt;= 2</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics>"
        "</bpmn:serviceTask>"
    )
    assert node["multiInstance"] == {
        "collection": "${order.items}",
        "elementVariable": "item",
        "outputCollection": "scores",
        "outputElement": "score",
        "completionCondition": "numberOfCompletedInstances >= 2",
    }


@pytest.mark.parametrize(
    ("loop", "expected"),
    [
        (
            '<bpmn:multiInstanceLoopCharacteristics behavior="One">'
            "<bpmn:loopCardinality>2</bpmn:loopCardinality>"
            "</bpmn:multiInstanceLoopCharacteristics>",
            "multiInstanceLoopCharacteristics in userTask 'A' has behavior='One'",
        ),
        (
            "<bpmn:multiInstanceLoopCharacteristics><bpmn:loopCardinality>2"
            "</bpmn:loopCardinality><bpmn:loopDataOutputRef>out</bpmn:loopDataOutputRef>"
            "</bpmn:multiInstanceLoopCharacteristics>",
            "loopDataOutputRef in userTask 'A' is not supported yet",
        ),
        (
            "<bpmn:multiInstanceLoopCharacteristics><bpmn:loopCardinality>2"
            "</bpmn:loopCardinality><bpmn:complexBehaviorDefinition/>"
            "</bpmn:multiInstanceLoopCharacteristics>",
            "complexBehaviorDefinition in userTask 'A' is not supported yet",
        ),
        (
            '<bpmn:multiInstanceLoopCharacteristics camunda:collection="xs">'
            "<bpmn:loopDataInputRef>ys</bpmn:loopDataInputRef>"
            "</bpmn:multiInstanceLoopCharacteristics>",
            "has both camunda:collection and loopDataInputRef",
        ),
        (
            "<bpmn:multiInstanceLoopCharacteristics/>",
            "needs exactly one of 'cardinality' and 'collection'",
        ),
        (
            '<bpmn:multiInstanceLoopCharacteristics isSequential="yes">'
            "<bpmn:loopCardinality>2</bpmn:loopCardinality>"
            "</bpmn:multiInstanceLoopCharacteristics>",
            "has isSequential='yes'",
        ),
    ],
)
def test_what_bpm_does_not_run_is_refused_naming_the_element(loop: str, expected: str) -> None:
    with pytest.raises(InvalidDefinition) as err:
        imported(f'<bpmn:userTask id="A">{loop}</bpmn:userTask>')
    assert expected in str(err.value)
