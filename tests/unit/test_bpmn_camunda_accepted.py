"""What Camunda 7 accepts, the importer accepts, in Camunda Modeler's XML: with Camunda's
behaviour, or as metadata without behaviour; what Camunda ignores is listed as ignored."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import compile_definition
from bpm.definitions.bpmn import BpmnImport, import_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.modeler import chain, modeler_file

DATA = '<bpmn:dataObjectReference id="DO" dataObjectRef="DObj" /><bpmn:dataObject id="DObj" />'


def imported(task: str, declarations: str = "") -> BpmnImport:
    body = (
        '    <bpmn:startEvent id="S" />\n'
        + task
        + '\n    <bpmn:endEvent id="E" />\n'
        + chain("S", "T", "E")
    )
    found = import_bpmn(modeler_file("p", body, declarations=declarations))
    for doc in found.documents:
        compile_definition(doc)
    return found


def node(found: BpmnImport, node_id: str = "T") -> dict[str, Any]:
    [doc] = found.documents
    [got] = [n for n in doc["nodes"] if n["id"] == node_id]
    assert isinstance(got, dict)
    return got


COMPENSATED = (
    '<bpmn:serviceTask id="T" camunda:class="org.acme.Book" />'
    '<bpmn:boundaryEvent id="cb" attachedToRef="T">'
    '<bpmn:compensateEventDefinition id="ced"{attrs} /></bpmn:boundaryEvent>'
    '<bpmn:serviceTask id="undo" isForCompensation="true" camunda:class="org.acme.Cancel" />'
    '<bpmn:association id="as" associationDirection="One" sourceRef="cb" targetRef="undo" />'
)


def test_wait_for_completion_and_activity_ref_on_a_compensation_boundary_are_ignored() -> None:
    found = imported(COMPENSATED.format(attrs=' waitForCompletion="false" activityRef="T"'))
    assert node(found)["compensation"] == {"node": "undo"}
    assert len(found.ignored) == 2
    assert "waitForCompletion='false', which a catching event ignores" in found.ignored[0]
    assert "activityRef='T', which a catching event ignores" in found.ignored[1]


@pytest.mark.parametrize(
    ("task", "declarations"),
    [
        (  # data flow out of a subprocess and into an event
            '<bpmn:subProcess id="T"><bpmn:startEvent id="ss" /><bpmn:endEvent id="se" />'
            '<bpmn:sequenceFlow id="sf" sourceRef="ss" targetRef="se" />'
            '<bpmn:dataOutputAssociation id="doa"><bpmn:targetRef>DO</bpmn:targetRef>'
            f"</bpmn:dataOutputAssociation></bpmn:subProcess>{DATA}",
            "",
        ),
        (
            '<bpmn:intermediateThrowEvent id="T"><bpmn:dataInputAssociation id="dia">'
            "<bpmn:sourceRef>DO</bpmn:sourceRef></bpmn:dataInputAssociation>"
            f"</bpmn:intermediateThrowEvent>{DATA}",
            "",
        ),
        (
            '<bpmn:intermediateCatchEvent id="T"><bpmn:dataOutputAssociation id="doa">'
            "<bpmn:targetRef>DO</bpmn:targetRef></bpmn:dataOutputAssociation>"
            "<bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration>"
            f"</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>{DATA}",
            "",
        ),
        (  # dataState in a data store and in references
            '<bpmn:task id="T" /><bpmn:dataStoreReference id="DS" dataStoreRef="Store">'
            '<bpmn:dataState id="ds1" name="filled" /></bpmn:dataStoreReference>'
            '<bpmn:dataObjectReference id="DO" dataObjectRef="DObj">'
            '<bpmn:dataState id="ds2" name="draft" /></bpmn:dataObjectReference>'
            '<bpmn:dataObject id="DObj" />',
            '<bpmn:dataStore id="Store"><bpmn:dataState id="ds0" name="open" /></bpmn:dataStore>',
        ),
        (  # performer, on a task and on a user task
            '<bpmn:userTask id="T"><bpmn:performer id="pf"><bpmn:resourceAssignmentExpression>'
            "<bpmn:formalExpression>clerk</bpmn:formalExpression>"
            "</bpmn:resourceAssignmentExpression></bpmn:performer></bpmn:userTask>",
            "",
        ),
        ('<bpmn:task id="T"><bpmn:performer id="pf" /></bpmn:task>', ""),
        (  # a relationship, categories on a group and on a task
            '<bpmn:task id="T" categoryValueRef="cv" /><bpmn:group id="g" categoryValueRef="cv" />',
            '<bpmn:category id="c"><bpmn:categoryValue id="cv" value="sales" /></bpmn:category>'
            '<bpmn:relationship id="r" type="trace" direction="Forward">'
            "<bpmn:source>a</bpmn:source><bpmn:target>b</bpmn:target></bpmn:relationship>",
        ),
    ],
)
def test_metadata_is_accepted_without_behaviour(task: str, declarations: str) -> None:
    found = imported(task, declarations)
    assert node(found)["id"] == "T" and found.ignored == []


def test_people_on_a_task_that_is_not_a_user_task_are_ignored_as_camunda_ignores_them() -> None:
    found = imported(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge" camunda:assignee="ann" '
        'camunda:candidateGroups="sales" camunda:candidateUsers="bob" camunda:dueDate="P1D" />'
    )
    assert node(found) == {"id": "T", "type": "serviceTask", "handler": "Charge"}
    assert len(found.ignored) == 4
    assert all("which Camunda 7 reads on a user task only" in n for n in found.ignored)
    assert "camunda:assignee='ann'" in found.ignored[0]


CONNECTOR = (
    "<bpmn:extensionElements><camunda:connector>"
    "<camunda:connectorId>http-connector</camunda:connectorId>"
    "</camunda:connector></bpmn:extensionElements>"
)


@pytest.mark.parametrize(
    "attrs",
    [
        'camunda:class="org.acme.Charge"',
        'camunda:expression="${charge.run()}"',
        'camunda:delegateExpression="${charger}"',
        'camunda:type="external" camunda:topic="charge"',
    ],
)
def test_a_connector_wins_over_the_other_camunda_implementations(attrs: str) -> None:
    found = imported(f'<bpmn:serviceTask id="T" {attrs}>{CONNECTOR}</bpmn:serviceTask>')
    assert node(found)["connector"] == {"id": "http-connector"}
    [note] = found.ignored
    assert "which Camunda 7 ignores for camunda:connector" in note


def test_camunda_picks_class_then_delegate_expression_then_expression() -> None:
    found = imported(
        '<bpmn:serviceTask id="T" camunda:expression="${a.run()}" '
        'camunda:delegateExpression="${b}" camunda:class="org.acme.C" />'
    )
    assert node(found)["handler"] == "C"
    assert len(found.ignored) == 2
    found = imported(
        '<bpmn:serviceTask id="T" camunda:expression="${a.run()}" '
        'camunda:delegateExpression="${b}" />'
    )
    assert node(found)["delegateExpression"] == "${b}"


def test_bpm_and_camunda_implementations_together_are_still_refused() -> None:
    with pytest.raises(InvalidDefinition, match="several implementations"):
        imported('<bpmn:serviceTask id="T" bpm:handler="h" camunda:class="org.acme.C" />')


def test_a_topic_is_trimmed() -> None:
    found = imported(
        '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic=" charge\n" />'
    )
    assert node(found)["topic"] == "charge"


@pytest.mark.parametrize(
    "task",
    [
        '<bpmn:receiveTask id="T" messageRef="M" />',
        '<bpmn:intermediateCatchEvent id="T"><bpmn:messageEventDefinition messageRef="M" />'
        "</bpmn:intermediateCatchEvent>",
    ],
)
def test_message_names_with_spaces(task: str) -> None:
    found = imported(task, '<bpmn:message id="M" name="order placed by customer" />')
    assert node(found)["message"] == "order placed by customer"


def test_a_plain_task_with_a_compensation_boundary_is_undoable() -> None:
    found = imported(
        COMPENSATED.format(attrs="").replace(
            '<bpmn:serviceTask id="T" camunda:class="org.acme.Book" />', '<bpmn:task id="T" />'
        )
    )
    assert node(found) == {"id": "T", "type": "task", "compensation": {"node": "undo"}}


def test_another_vendors_extensions_are_listed_as_ignored() -> None:
    found = imported(
        '<bpmn:task id="T" xmlns:triso="http://www.trisotech.com/2015/triso/modeling" '
        'xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" '
        'triso:userConstraints="true"><bpmn:extensionElements>'
        '<zeebe:properties><zeebe:property name="a" value="b" /></zeebe:properties>'
        "</bpmn:extensionElements></bpmn:task>"
    )
    assert node(found) == {"id": "T", "type": "task"}
    assert "triso:userConstraints='true'" in found.ignored[0]
    assert "zeebe:properties in task 'T'" in found.ignored[1]


@pytest.mark.parametrize(
    ("kind", "literal"),
    [
        ("timeDuration", "PT7D"),  # days after the T: java's DatatypeFactory refuses it too
        ("timeDuration", "P5H"),  # hours need the T: refused by it as well
        ("timeDate", "2024-13-01T10:00:00Z"),  # no 13th month, for Joda either
        ("timeDate", "2024-01-01T24:00:00Z"),  # Joda's hours end at 23
    ],
)
def test_literals_camunda_refuses_stay_refused(kind: str, literal: str) -> None:
    with pytest.raises(InvalidDefinition, match=f"'{literal}' is not an ISO 8601"):
        imported(
            '<bpmn:intermediateCatchEvent id="T"><bpmn:timerEventDefinition>'
            f"<bpmn:{kind}>{literal}</bpmn:{kind}>"
            "</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"
        )


def test_a_task_listener_outside_a_user_task_is_ignored_as_camunda_ignores_it() -> None:
    found = imported(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge"><bpmn:extensionElements>'
        '<camunda:taskListener event="create" class="org.acme.Never" />'
        "</bpmn:extensionElements></bpmn:serviceTask>"
    )
    assert "listeners" not in node(found)
    [note] = found.ignored
    assert "camunda:taskListener in serviceTask 'T' is a task listener outside a user task" in note


def test_a_plain_attribute_camunda_does_not_define_on_its_extension_is_ignored() -> None:
    """A modeler plug-in's ``fields="[object Object]"`` on ``camunda:properties`` means
    nothing to Camunda 7; an attribute Camunda defines but bpm does not read is still
    refused."""
    found = imported(
        '<bpmn:userTask id="T"><bpmn:extensionElements>'
        '<camunda:properties fields="[object Object]"><camunda:property name="a" value="1" />'
        '</camunda:properties><camunda:formData type="camunda-form">'
        '<camunda:formField id="x" /></camunda:formData></bpmn:extensionElements></bpmn:userTask>'
    )
    assert node(found)["properties"] == {"a": "1"}
    ignored = sorted(found.ignored, key=lambda n: "formData" in n)
    assert len(ignored) == 2
    assert (
        "camunda:properties in userTask 'T' has the attribute fields='[object Object]'"
        in (ignored[0])
    )
    assert "type='camunda-form', which Camunda 7 does not define there either" in (ignored[1])
    with pytest.raises(InvalidDefinition) as info:
        imported(
            '<bpmn:userTask id="T"><bpmn:extensionElements><camunda:formData>'
            '<camunda:formField id="x" secret="y" /></camunda:formData>'
            "</bpmn:extensionElements></bpmn:userTask>"
        )
    assert "has the attribute secret='y', which is not supported yet" in str(info.value)


def test_a_node_no_start_leads_to_is_left_out_as_camunda_leaves_it() -> None:
    found = imported(
        '<bpmn:userTask id="T" /><bpmn:userTask id="Orphan" /><bpmn:task id="After" />'
        '<bpmn:boundaryEvent id="B" attachedToRef="Orphan"><bpmn:timerEventDefinition>'
        "<bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition>"
        "</bpmn:boundaryEvent>" + chain("Orphan", "After") + chain("B", "E")
    )
    [doc] = found.documents
    assert [n["id"] for n in doc["nodes"]] == ["S", "T", "E"]
    assert [f["id"] for f in doc["flows"]] == ["Flow_S_T", "Flow_T_E"]
    assert len(found.ignored) == 3
    assert "node 'B' is unreachable from the start event of its scope" in found.ignored[0]
    assert "'Orphan' is unreachable" in found.ignored[1]
    assert "'After' is unreachable" in found.ignored[2]


def test_an_unreachable_node_feeding_a_join_stays_refused() -> None:
    """Camunda 7 would wait at the join for that flow for ever."""
    with pytest.raises(InvalidDefinition) as info:
        imported(
            '<bpmn:parallelGateway id="F" /><bpmn:userTask id="T" /><bpmn:task id="Orphan" />'
            '<bpmn:parallelGateway id="J" />'
            + chain("S", "F", "T", "J", "E")
            + chain("F", "J").replace("Flow_F_J", "Flow_F_J2")
            + chain("Orphan", "J")
        )
    assert "node 'Orphan': unreachable" in str(info.value)


def test_a_category_value_on_a_flow_or_node_is_metadata() -> None:
    found = imported(
        '<bpmn:userTask id="T"><bpmn:categoryValueRef>cv1</bpmn:categoryValueRef></bpmn:userTask>',
        '<bpmn:category id="c"><bpmn:categoryValue id="cv1" value="Sales" /></bpmn:category>',
    )
    assert node(found)["type"] == "userTask" and found.ignored == []


@pytest.mark.parametrize("kind", ["task", "manualTask"])
def test_a_boundary_on_a_task_a_token_passes_at_once_deploys(kind: str) -> None:
    """It never fires: the token leaves the task in the step it arrives (as in Camunda 7)."""
    found = imported(
        f'<bpmn:{kind} id="T" /><bpmn:boundaryEvent id="B" attachedToRef="T">'
        '<bpmn:errorEventDefinition /></bpmn:boundaryEvent><bpmn:endEvent id="E2" />'
        + chain("B", "E2")
    )
    assert node(found, "B")["attachedTo"] == "T"


def test_a_caught_errors_variables_may_be_any_printable_name() -> None:
    found = imported(
        '<bpmn:userTask id="T" /><bpmn:boundaryEvent id="B" attachedToRef="T">'
        '<bpmn:errorEventDefinition camunda:errorMessageVariable="Error in risk model" />'
        '</bpmn:boundaryEvent><bpmn:endEvent id="E2" />' + chain("B", "E2")
    )
    assert node(found, "B")["errorMessageVariable"] == "Error in risk model"


@pytest.mark.parametrize("own", ["${execution.tenantId}", "${ execution.getTenantId() }"])
def test_the_callers_own_tenant_is_no_tenant_here(own: str) -> None:
    """An instance here has no tenant: naming the caller's own resolves as naming none."""
    found = imported(
        f'<bpmn:callActivity id="T" calledElement="c" camunda:calledElementTenantId="{own}" />'
    )
    assert node(found)["process"] == "c"
    with pytest.raises(InvalidDefinition, match="bpm has no tenants"):
        imported(
            '<bpmn:callActivity id="T" calledElement="c" camunda:calledElementTenantId="t1" />'
        )


def test_a_class_named_in_another_script_is_a_handler_of_that_name() -> None:
    found = imported('<bpmn:serviceTask id="T" camunda:class="loanapproval.Zielort_prüfen" />')
    assert node(found)["handler"] == "Zielort_prüfen"


def test_camunda_attributes_camunda_never_reads_are_listed_as_ignored() -> None:
    found = imported(
        '<bpmn:serviceTask id="T" camunda:class="org.acme.Pay" '
        'camunda:failedJobRetryTimeCycle="R3/PT0S" />'
    )
    assert node(found) == {"id": "T", "type": "serviceTask", "handler": "Pay"}
    [note] = found.ignored
    assert "failedJobRetryTimeCycle='R3/PT0S', which Camunda 7 reads only as an extension" in note


def test_a_connector_id_is_any_text_and_its_handler_has_that_name() -> None:
    found = imported(
        '<bpmn:serviceTask id="T"><bpmn:extensionElements><camunda:connector>'
        "<camunda:connectorId>Interview Scheduling</camunda:connectorId></camunda:connector>"
        "</bpmn:extensionElements></bpmn:serviceTask>"
    )
    [doc] = found.documents
    graph = compile_definition(doc)
    assert graph.node("T").handler == "Interview Scheduling"
