"""A refusal names the construct bpm does not support (the script's language, the
expression), never a supported element around it such as the listener or the input/output
that holds it, and never a supported sibling left unread after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bpm.definitions import bpmn_names
from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.modeler import chain, modeler_file

GROOVY = '<camunda:script scriptFormat="groovy">x = 1</camunda:script>'
LISTENER = '<camunda:executionListener event="start" class="org.acme.Audit" />'
TASK_LISTENER = '<camunda:taskListener event="create" class="org.acme.Notify" />'
IO = (
    "<camunda:inputOutput>"
    '<camunda:inputParameter name="amount">${order.amount}</camunda:inputParameter>'
    "</camunda:inputOutput>"
)


def refused(task: str) -> list[str]:
    body = (
        '    <bpmn:startEvent id="S" />\n'
        + task
        + '\n    <bpmn:endEvent id="E" />\n'
        + chain("S", "T", "E")
    )
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(modeler_file("p", body))
    return str(info.value).splitlines()


def only(problems: list[str], *needles: str) -> str:
    assert len(problems) == 1, problems
    assert "not supported yet" not in problems[0]
    for needle in needles:
        assert needle in problems[0], problems[0]
    return problems[0]


def test_a_groovy_script_task_names_its_script_not_its_listener_or_mappings() -> None:
    found = refused(
        f'<bpmn:scriptTask id="T" scriptFormat="groovy"><bpmn:extensionElements>{LISTENER}'
        f"{IO}</bpmn:extensionElements><bpmn:script>x = 1</bpmn:script></bpmn:scriptTask>"
    )
    only(found, "scriptTask 'T' holds a groovy script")


def test_a_task_listener_names_its_groovy_script_and_its_siblings_are_read() -> None:
    found = refused(
        '<bpmn:userTask id="T"><bpmn:extensionElements>'
        f'<camunda:taskListener event="create">{GROOVY}</camunda:taskListener>'
        f"{TASK_LISTENER}{IO}</bpmn:extensionElements></bpmn:userTask>"
    )
    only(found, "camunda:taskListener in userTask 'T'", "inline groovy script")


def test_an_execution_listener_names_its_script_language() -> None:
    found = refused(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
        f'<camunda:executionListener event="end">{GROOVY}</camunda:executionListener>'
        f"{IO}</bpmn:extensionElements></bpmn:serviceTask>"
    )
    only(found, "camunda:executionListener in serviceTask 'T'", "inline groovy script")


def test_an_input_parameter_names_its_script_language() -> None:
    found = refused(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
        '<camunda:inputOutput><camunda:inputParameter name="x">'
        f"{GROOVY}</camunda:inputParameter></camunda:inputOutput>{LISTENER}"
        "</bpmn:extensionElements></bpmn:serviceTask>"
    )
    only(found, "camunda:inputParameter in serviceTask 'T'", "inline groovy script")


def test_an_output_parameter_of_a_user_task_names_its_script_language() -> None:
    found = refused(
        '<bpmn:userTask id="T"><bpmn:extensionElements><camunda:inputOutput>'
        f'<camunda:outputParameter name="x">{GROOVY}</camunda:outputParameter>'
        f"</camunda:inputOutput>{TASK_LISTENER}</bpmn:extensionElements></bpmn:userTask>"
    )
    only(found, "camunda:outputParameter in userTask 'T'", "inline groovy script")


def test_an_expression_in_a_listener_is_named_with_the_method_it_calls() -> None:
    found = refused(
        '<bpmn:userTask id="T"><bpmn:extensionElements>'
        '<camunda:taskListener event="create" expression="${a.getClass()}" />'
        "</bpmn:extensionElements></bpmn:userTask>"
    )
    only(found, "create listener", "'getClass'")


def test_a_completion_condition_names_its_language() -> None:
    found = refused(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge">'
        '<bpmn:multiInstanceLoopCharacteristics camunda:collection="${xs}" '
        'camunda:elementVariable="x"><bpmn:completionCondition language="groovy">done'
        "</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>"
    )
    only(found, "completionCondition in serviceTask 'T' is written in groovy")


def test_a_field_names_its_script() -> None:
    found = refused(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
        f'<camunda:field name="x">{GROOVY}</camunda:field>'
        "</bpmn:extensionElements></bpmn:serviceTask>"
    )
    only(found, "camunda:script in serviceTask 'T' is a groovy script as a field's value")


def test_a_refused_listener_and_a_refused_mapping_are_both_named() -> None:
    found = refused(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
        f'<camunda:executionListener event="end">{GROOVY}</camunda:executionListener>'
        '<camunda:inputOutput><camunda:inputParameter name="x">'
        '<camunda:script scriptFormat="python">1</camunda:script></camunda:inputParameter>'
        "</camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>"
    )
    assert len(found) == 2, found
    assert "groovy" in found[0] and "python" in found[1]


@pytest.mark.parametrize(
    ("task", "cause"),
    [
        (
            '<bpmn:serviceTask id="T" camunda:type="mail"><bpmn:extensionElements>'
            "<camunda:connector><camunda:connectorId>mail</camunda:connectorId>"
            "</camunda:connector></bpmn:extensionElements></bpmn:serviceTask>",
            "camunda:type='mail'",
        ),
        (
            '<bpmn:callActivity id="T" calledElement="x" camunda:calledElementBinding="bogus">'
            '<bpmn:extensionElements><camunda:in variables="all" /><camunda:out variables="all" />'
            "</bpmn:extensionElements></bpmn:callActivity>",
            "camunda:calledElementBinding='bogus'",
        ),
        (
            '<bpmn:userTask id="T" camunda:formRef="f" camunda:formRefBinding="bogus">'
            '<bpmn:extensionElements><camunda:formData><camunda:formField id="a" type="string" />'
            "</camunda:formData></bpmn:extensionElements></bpmn:userTask>",
            "camunda:formRefBinding='bogus'",
        ),
    ],
)
def test_extensions_a_refused_element_did_not_come_to_read_are_not_named(
    task: str, cause: str
) -> None:
    only(refused(task), cause)


def test_every_extension_a_mapper_reads_is_known_as_read() -> None:
    """``READ_EXTENSIONS`` must hold every tag a mapper reads with ``Reader.extension(s)``,
    else a refused element's unread extension would be named as unsupported."""
    source = Path(bpmn_names.__file__).parent
    read = {
        tag
        for path in source.glob("*.py")
        for tag in re.findall(r"\.extensions?\(\s*\"(\w+)\"", path.read_text())
    }
    assert read <= bpmn_names.READ_EXTENSIONS, read - bpmn_names.READ_EXTENSIONS
