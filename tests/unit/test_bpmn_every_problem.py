"""A refused BPMN file names every problem of every process at once: the importer's
refusals and the structural checks' problems together, each with its line, and a refused
node never makes its neighbours look dangling or unreachable."""

from __future__ import annotations

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.modeler import chain, modeler_processes

#: A: an importer refusal (a complex gateway) in the middle of its flow, and a task nobody
#: reaches (a structural problem of the same process). B: two structural problems of two
#: nodes (a second start event, a gateway leading nowhere). C: two importer refusals.
SEVERAL = modeler_processes(
    {
        "A": '    <bpmn:startEvent id="A_s" />\n'
        '    <bpmn:complexGateway id="A_g" />\n'
        '    <bpmn:endEvent id="A_e" />\n'
        '    <bpmn:task id="A_lost" />\n' + chain("A_s", "A_g", "A_e"),
        "B": '    <bpmn:startEvent id="B_s" />\n'
        '    <bpmn:startEvent id="B_s2" />\n'
        '    <bpmn:exclusiveGateway id="B_g" />\n'
        '    <bpmn:endEvent id="B_e" />\n' + chain("B_s", "B_e") + "\n" + chain("B_s2", "B_e"),
        "C": '    <bpmn:startEvent id="C_s" />\n'
        '    <bpmn:serviceTask id="C_t" camunda:class="a.B" camunda:nonsense="1" />\n'
        '    <bpmn:endEvent id="C_e"><bpmn:signalEventDefinition /></bpmn:endEvent>\n'
        + chain("C_s", "C_t", "C_e"),
    }
)


def problems(xml: str) -> list[str]:
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(xml)
    return str(info.value).splitlines()


def test_every_problem_of_every_process_is_listed_once() -> None:
    found = problems(SEVERAL)
    assert len(found) == 6, found
    assert all(line.startswith("line ") for line in found)
    text = "\n".join(found)
    assert "complexGateway 'A_g' is not supported yet" in text
    assert "process 'A': node 'A_lost': unreachable" in text
    assert "process 'B'" in text and "second startEvent" in text
    assert "node 'B_g' (exclusiveGateway): a gateway needs at least one outgoing flow" in text
    assert "camunda:nonsense" in text
    assert "endEvent 'C_e' has a signalEventDefinition without signalRef" in text


def test_a_refused_node_does_not_make_its_flows_dangle() -> None:
    found = problems(SEVERAL)
    text = "\n".join(found)
    assert "dangling" not in text and "'A_e': unreachable" not in text
    assert "C_e" not in text.replace("endEvent 'C_e' has a signalEventDefinition", "")


def test_each_problem_carries_the_line_of_its_element() -> None:
    lines = SEVERAL.splitlines()
    for problem in problems(SEVERAL):
        number = int(problem.split(":")[0].removeprefix("line "))
        ids = [w.strip("'") for w in problem.split() if w.startswith("'")]
        assert any(i.rstrip(":'") in lines[number - 1] for i in ids), problem
