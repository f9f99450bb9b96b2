"""Camunda 7 extensions in Camunda Modeler's XML: what each compiles to, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import compile_definition
from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from tests.helpers.modeler import chain, modeler_file


def one(body: str, **kw: str) -> dict[str, Any]:
    [doc] = compile_bpmn(modeler_file("p", body, **kw))
    compile_definition(doc)
    return doc


def node(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    [found] = [n for n in doc["nodes"] if n["id"] == node_id]
    assert isinstance(found, dict)
    return found


def refused(body: str, **kw: str) -> str:
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(modeler_file("p", body, **kw))
    return str(info.value)


def around(task: str) -> str:
    """start -> ``task`` (id ``T``) -> end."""
    return (
        '    <bpmn:startEvent id="S" />\n'
        + task
        + '\n    <bpmn:endEvent id="E" />\n'
        + chain("S", "T", "E")
    )


def test_properties_and_documentation_are_kept_on_process_and_node() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:class="org.acme.Charge">'
            "<bpmn:documentation>Charges the card.</bpmn:documentation>"
            "<bpmn:extensionElements><camunda:properties>"
            '<camunda:property name="sla" value="PT1H" />'
            '<camunda:property name="team" value="pay" />'
            "</camunda:properties></bpmn:extensionElements></bpmn:serviceTask>"
        ).replace(
            '<bpmn:startEvent id="S" />',
            "<bpmn:documentation>Order flow</bpmn:documentation>"
            "<bpmn:extensionElements><camunda:properties>"
            '<camunda:property name="owner" value="shop" /></camunda:properties>'
            '</bpmn:extensionElements><bpmn:startEvent id="S" />',
        ),
        attrs=' camunda:versionTag="1.4" camunda:isStartableInTasklist="false"'
        ' camunda:candidateStarterGroups="sales, admin" camunda:candidateStarterUsers="ann"',
    )
    assert doc["properties"] == {"owner": "shop"}
    assert doc["documentation"] == "Order flow"
    assert doc["versionTag"] == "1.4"
    assert doc["startableInTasklist"] is False
    assert doc["candidate_starter_groups"] == ["sales", "admin"]
    assert doc["candidate_starter_users"] == ["ann"]
    task = node(doc, "T")
    assert task["properties"] == {"sla": "PT1H", "team": "pay"}
    assert task["documentation"] == "Charges the card."


def test_data_objects_and_stores_are_kept_and_have_no_behaviour() -> None:
    doc = one(
        around(
            '<bpmn:userTask id="T"><bpmn:dataOutputAssociation id="A1">'
            "<bpmn:targetRef>Ref1</bpmn:targetRef></bpmn:dataOutputAssociation></bpmn:userTask>"
        )
        + '\n<bpmn:dataObjectReference id="Ref1" name="Invoice" dataObjectRef="Obj1" />'
        '<bpmn:dataObject id="Obj1" /><bpmn:dataStoreReference id="Db" name="CRM" />',
    )
    assert [(o["kind"], o["id"]) for o in doc["dataObjects"]] == [
        ("dataObjectReference", "Ref1"),
        ("dataObject", "Obj1"),
        ("dataStoreReference", "Db"),
    ]
    assert doc["dataObjects"][0]["name"] == "Invoice"


@pytest.mark.parametrize(
    ("cycle", "attempts", "delays"),
    [
        ("R3/PT5M", 3, ["PT5M"]),
        ("R1/PT1S", 1, ["PT1S"]),
        ("PT1M,PT5M,PT1H", 4, ["PT1M", "PT5M", "PT1H"]),
        ("PT10S", 2, ["PT10S"]),
    ],
)
def test_failed_job_retry_time_cycle_maps_to_the_retry_policy(
    cycle: str, attempts: int, delays: list[str]
) -> None:
    for ns, extra in (("camunda", ""), ("fox", ' xmlns:fox="http://www.camunda.com/fox"')):
        doc = one(
            around(
                f'<bpmn:serviceTask id="T" camunda:class="x.Y"{extra}><bpmn:extensionElements>'
                f"<{ns}:failedJobRetryTimeCycle>{cycle}</{ns}:failedJobRetryTimeCycle>"
                "</bpmn:extensionElements></bpmn:serviceTask>"
            )
        )
        assert node(doc, "T")["retry"] == {"max_attempts": attempts, "delays": delays}


def test_a_retry_cycle_on_a_step_that_runs_no_code_is_accepted_and_ignored() -> None:
    doc = one(
        around(
            '<bpmn:userTask id="T" camunda:asyncBefore="true"><bpmn:extensionElements>'
            "<camunda:failedJobRetryTimeCycle>R5/PT1M</camunda:failedJobRetryTimeCycle>"
            "</bpmn:extensionElements></bpmn:userTask>"
        )
    )
    assert "retry" not in node(doc, "T")


@pytest.mark.parametrize(
    ("cycle", "expected"),
    [
        ("${retryCycle}", "is the expression '${retryCycle}'"),
        ("R0/PT1M", "repeats 0 times"),
        ("", "is empty"),
        ("R3/P1M", "uses years or months"),
        ("soon", "is not an ISO 8601 duration"),
    ],
)
def test_a_bad_retry_cycle_is_refused_naming_it(cycle: str, expected: str) -> None:
    message = refused(
        around(
            '<bpmn:serviceTask id="T" camunda:class="x.Y"><bpmn:extensionElements>'
            f"<camunda:failedJobRetryTimeCycle>{cycle}</camunda:failedJobRetryTimeCycle>"
            "</bpmn:extensionElements></bpmn:serviceTask>"
        )
    )
    assert expected in message
    assert "serviceTask 'T'" in message or "node 'T' (serviceTask)" in message


def test_bpm_retry_backoff_timeout_and_priorities() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="charge" '
            'bpm:retry="4" bpm:backoff="PT2S" bpm:timeout="PT30S" camunda:taskPriority="7" />'
        )
    )
    task = node(doc, "T")
    assert task["retry"] == {"max_attempts": 4, "backoff": "PT2S"}
    assert task["timeout"] == "PT30S"
    assert task["priority"] == 7
    doc = one(around('<bpmn:sendTask id="T" camunda:class="x.Notify" camunda:jobPriority="-3" />'))
    assert node(doc, "T")["priority"] == -3
    message = refused(around('<bpmn:serviceTask id="T" bpm:handler="h" bpm:retry="zero" />'))
    assert "has bpm:retry='zero'; give the number of runs, 1 to 1000" in message
    message = refused(
        around('<bpmn:serviceTask id="T" bpm:handler="h" camunda:taskPriority="${p}" />')
    )
    assert "priority expressions are not supported yet" in message


def test_input_output_mappings_compile_to_inputs_and_outputs() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:delegateExpression="${charge}">'
            "<bpmn:extensionElements><camunda:inputOutput>"
            '<camunda:inputParameter name="amount">${order.total}</camunda:inputParameter>'
            '<camunda:inputParameter name="currency">EUR</camunda:inputParameter>'
            '<camunda:inputParameter name="empty" />'
            '<camunda:inputParameter name="lines"><camunda:list><camunda:value>${first}'
            "</camunda:value><camunda:value>fee</camunda:value></camunda:list>"
            "</camunda:inputParameter>"
            '<camunda:inputParameter name="headers"><camunda:map>'
            '<camunda:entry key="x-id">#{orderId}</camunda:entry>'
            '<camunda:entry key="kind">card</camunda:entry></camunda:map></camunda:inputParameter>'
            '<camunda:outputParameter name="receipt">${receiptId}</camunda:outputParameter>'
            "</camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>"
        )
    )
    task = node(doc, "T")
    assert task["inputs"] == {
        "amount": "${order.total}",
        "currency": "EUR",
        "empty": None,
        "lines": ["${first}", "fee"],
        "headers": {"x-id": "${orderId}", "kind": "card"},
    }
    assert task["outputs"] == {"receipt": "${receiptId}"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            '<camunda:script scriptFormat="groovy">1 + 1</camunda:script>',
            "camunda:inputParameter in serviceTask 'T' has a camunda:script value, an inline "
            "groovy script, which bpm never runs",
        ),
        ("${bean.compute(x)}", "calls 'bean.compute'"),
    ],
)
def test_input_values_that_would_run_code_or_lose_text_are_refused(
    value: str, expected: str
) -> None:
    message = refused(
        around(
            '<bpmn:serviceTask id="T" camunda:class="x.Y"><bpmn:extensionElements>'
            f'<camunda:inputOutput><camunda:inputParameter name="p">{value}'
            "</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements>"
            "</bpmn:serviceTask>"
        )
    )
    assert expected in message


def test_fields_reach_the_node_as_text_or_expressions() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:class="org.acme.Mail"><bpmn:extensionElements>'
            '<camunda:field name="to" stringValue="ops@example.com" />'
            '<camunda:field name="subject"><camunda:expression>${subject}</camunda:expression>'
            '</camunda:field><camunda:field name="body"><camunda:string>Hello</camunda:string>'
            "</camunda:field></bpmn:extensionElements></bpmn:serviceTask>"
        )
    )
    assert node(doc, "T")["fields"] == {
        "to": "ops@example.com",
        "subject": "${subject}",
        "body": "Hello",
    }
    message = refused(
        around(
            '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t">'
            '<bpmn:extensionElements><camunda:field name="to" stringValue="x" />'
            "</bpmn:extensionElements></bpmn:serviceTask>"
        )
    )
    assert "camunda:field on an external task" in message


def test_result_variable_and_initiator() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:expression="${pricing.quote(order)}" '
            'camunda:resultVariable="quote" />'
        ).replace(
            '<bpmn:startEvent id="S" />', '<bpmn:startEvent id="S" camunda:initiator="who" />'
        )
    )
    assert node(doc, "T")["resultVariable"] == "quote"
    assert node(doc, "T")["expression"] == "${pricing.quote(order)}"
    assert node(doc, "S")["initiator"] == "who"
    message = refused(
        around(
            '<bpmn:serviceTask id="T" camunda:type="external" camunda:topic="t" '
            'camunda:resultVariable="r" />'
        )
    )
    assert "camunda:resultVariable on an external task" in message


def test_modeler_template_and_web_service_implementation_are_accepted() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:class="x.Y" implementation="##WebService" '
            'camunda:modelerTemplate="com.acme.Rest" camunda:modelerTemplateVersion="2" />'
        )
    )
    assert node(doc, "T")["handler"] == "Y"


def test_a_script_task_runs_the_handler_named_like_it_and_never_its_script() -> None:
    script = (
        '<bpmn:scriptTask id="T" name="Sum up" scriptFormat="groovy"{attrs}>'
        "<bpmn:script>execution.setVariable('total', 1)</bpmn:script></bpmn:scriptTask>"
    )
    [doc] = compile_bpmn(modeler_file("p", around(script.format(attrs=""))), handlers={"T"})
    assert node(doc, "T") == {"id": "T", "name": "Sum up", "type": "serviceTask", "handler": "T"}
    [doc] = compile_bpmn(
        modeler_file(
            "p",
            around(
                script.format(
                    attrs=' camunda:resultVariable="total" '
                    'camunda:resource="deployment://scripts/sum-up.groovy"'
                )
            ),
        )
    )
    assert node(doc, "T")["handler"] == "sum-up"
    assert node(doc, "T")["resultVariable"] == "total"
    message = refused(around(script.format(attrs="")))
    assert "scriptTask 'T' holds a groovy script, which bpm never runs" in message
    assert "register a handler named 'T'" in message


def test_conditions_reading_execution_variables_compile_and_method_calls_are_refused() -> None:
    body = (
        '    <bpmn:startEvent id="S" />\n<bpmn:exclusiveGateway id="T" default="Flow_T_E" />'
        '<bpmn:endEvent id="E" /><bpmn:endEvent id="E2" />'
        + chain("S", "T", "E")
        + '<bpmn:sequenceFlow id="F2" sourceRef="T" targetRef="E2"><bpmn:conditionExpression '
        'xsi:type="bpmn:tFormalExpression">{cond}</bpmn:conditionExpression></bpmn:sequenceFlow>'
    )
    doc = one(body.format(cond="${execution.getVariable('x') == 1}"))
    assert next(f for f in doc["flows"] if f["id"] == "F2")["condition"] == (
        "${execution.getVariable('x') == 1}"
    )
    message = refused(body.format(cond="${approvalService.isApproved(execution)}"))
    assert "calls 'approvalService.isApproved'" in message


def test_a_connector_maps_to_the_handler_of_its_id() -> None:
    doc = one(
        around(
            '<bpmn:serviceTask id="T"><bpmn:extensionElements><camunda:connector>'
            "<camunda:inputOutput>"
            '<camunda:inputParameter name="url">https://api.example.com/${id}</camunda:inputParameter>'
            '<camunda:inputParameter name="method">GET</camunda:inputParameter>'
            '<camunda:outputParameter name="status">${statusCode}</camunda:outputParameter>'
            "</camunda:inputOutput><camunda:connectorId>http-connector</camunda:connectorId>"
            "</camunda:connector></bpmn:extensionElements></bpmn:serviceTask>"
        ).replace("https://api.example.com/${id}", "${url}")
    )
    assert node(doc, "T")["connector"] == {
        "id": "http-connector",
        "inputs": {"url": "${url}", "method": "GET"},
        "outputs": {"status": "${statusCode}"},
    }


def test_a_property_name_given_twice_keeps_both_values_in_order() -> None:
    doc = one(
        around(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:properties>'
            '<camunda:property name="tag" value="a" /><camunda:property name="tag" value="b" />'
            "</camunda:properties></bpmn:extensionElements></bpmn:task>"
        )
    )
    assert node(doc, "T")["properties"] == {"tag": ["a", "b"]}


@pytest.mark.parametrize(
    "task",
    [
        '<bpmn:serviceTask id="T" bpm:handler="h" bpm:retry="²" />',
        '<bpmn:serviceTask id="T" bpm:handler="h" camunda:taskPriority="١٢" />',
        '<bpmn:serviceTask id="T" bpm:handler="h" camunda:taskPriority="99999999999999999999" />',
        '<bpmn:businessRuleTask id="T" camunda:decisionRef="d" '
        'camunda:decisionRefBinding="version" camunda:decisionRefVersion="²" />',
        '<bpmn:businessRuleTask id="T" camunda:decisionRef="d" '
        'camunda:decisionRefBinding="version" '
        'camunda:decisionRefVersion="99999999999999999999999" />',
    ],
)
def test_numbers_that_are_not_plain_bounded_digits_are_refused_cleanly(task: str) -> None:
    assert refused(around(task)).startswith("line ")


def test_a_camunda_list_keeps_its_items_in_document_order() -> None:
    doc = one(
        around(
            '<bpmn:task id="T"><bpmn:extensionElements><camunda:inputOutput>'
            '<camunda:inputParameter name="p"><camunda:list><camunda:map>'
            '<camunda:entry key="a">1</camunda:entry></camunda:map><camunda:value>${y}'
            "</camunda:value></camunda:list></camunda:inputParameter></camunda:inputOutput>"
            "</bpmn:extensionElements></bpmn:task>"
        )
    )
    assert node(doc, "T")["inputs"] == {"p": [{"a": "1"}, "${y}"]}


def test_text_around_expressions_is_a_composite_value() -> None:
    from bpm.definitions.mappings import evaluate, parse_mappings

    doc = one(
        around(
            '<bpmn:serviceTask id="T" camunda:class="x.Y"><bpmn:extensionElements>'
            '<camunda:inputOutput><camunda:inputParameter name="url">'
            "https://api.example.com/repos/${owner}/#{repo}?open=${open}"
            "</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements>"
            "</bpmn:serviceTask>"
        )
    )
    inputs = node(doc, "T")["inputs"]
    assert inputs == {"url": "https://api.example.com/repos/${owner}/${repo}?open=${open}"}
    mappings = parse_mappings(inputs, "inputs", "node 'T'", "T")
    assert evaluate(mappings, {"owner": "acme", "repo": "bpm", "open": True}) == {
        "url": "https://api.example.com/repos/acme/bpm?open=true"
    }
