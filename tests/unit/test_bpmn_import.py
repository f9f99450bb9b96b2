"""BPMN 2.0 XML import: the mapping of each element, rejections with line numbers, safety."""

from __future__ import annotations

import random
import re
from itertools import pairwise
from typing import Any

import pytest

from bpm.definitions import compile_definition, load_document
from bpm.definitions.bpmn import compile_bpmn, handler_name
from bpm.definitions.bpmn_feel import FeelUnsupported, feel_to_condition
from bpm.definitions.bpmn_xml import MAX_BYTES
from bpm.demo import ORDER_SAGA, ORDER_SAGA_BPMN
from bpm.errors import InvalidDefinition
from tests.helpers.shared import CONFORMANCE as SHARED_CONFORMANCE

CONFORMANCE = SHARED_CONFORMANCE / "public"

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"\n'
    '  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"\n'
    '  xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"\n'
    '  xmlns:bpm="https://bpm.dev/schema/1.0"\n'
    '  xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"\n'
    '  targetNamespace="t">\n'
)


def xml(body: str, extra: str = "", key: str = "p") -> str:
    return (
        f'{HEAD}{extra}<process id="{key}" isExecutable="true">\n{body}\n</process>\n'
        f"</definitions>\n"
    )


def linear(*middle: str, extra: str = "") -> str:
    """start -> each middle element (ids n0, n1, ...) -> end."""
    ids = ["s", *(re.findall(r'id="([^"]+)"', m)[0] for m in middle), "e"]
    flows = "\n".join(
        f'<sequenceFlow id="f{i}" sourceRef="{a}" targetRef="{b}"/>'
        for i, (a, b) in enumerate(pairwise(ids))
    )
    return xml(
        '<startEvent id="s"/>\n' + "\n".join(middle) + '\n<endEvent id="e"/>\n' + flows, extra
    )


def one(text: str) -> dict[str, Any]:
    docs = compile_bpmn(text)
    assert len(docs) == 1
    return docs[0]


def node(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    def walk(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
        for n in nodes:
            if n["id"] == node_id:
                return n
            found = walk(n.get("nodes", []))
            if found is not None:
                return found
        return None

    found = walk(doc["nodes"])
    assert found is not None, node_id
    return found


def rejected(text: str | bytes) -> str:
    with pytest.raises(InvalidDefinition) as info:
        compile_bpmn(text)
    return str(info.value)


# --- mapping -----------------------------------------------------------------------------------


def test_minimal_process__key_name_and_flows() -> None:
    doc = one(
        xml(
            '<startEvent id="s"/><endEvent id="e"/>'
            '<sequenceFlow id="f" sourceRef="s" targetRef="e"/>'
        ).replace('id="p"', 'id="p" name="Pay" camunda:historyTimeToLive="30"')
    )
    assert doc == {
        "key": "p",
        "name": "Pay",
        "historyTimeToLive": "30",
        "nodes": [{"id": "s", "type": "startEvent"}, {"id": "e", "type": "endEvent"}],
        "flows": [{"id": "f", "source": "s", "target": "e"}],
    }


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        (
            '<serviceTask id="t" camunda:type="external" camunda:topic="charge"/>',
            {"topic": "charge"},
        ),
        (
            '<sendTask id="t"><extensionElements><zeebe:taskDefinition type="mail" retries="3"/>'
            "</extensionElements></sendTask>",
            {"topic": "mail", "retry": {"max_attempts": 3}},
        ),
        ('<serviceTask id="t" bpm:handler="charge_card"/>', {"handler": "charge_card"}),
        ('<businessRuleTask id="t" bpm:topic="rules"/>', {"topic": "rules"}),
        ('<serviceTask id="t" camunda:class="org.example.ChargeCard"/>', {"handler": "ChargeCard"}),
        (
            '<serviceTask id="t" camunda:expression="${bean.run(execution)}"/>',
            {"expression": "${bean.run(execution)}"},
        ),
        (
            '<serviceTask id="t" camunda:delegateExpression="${chargeDelegate}" '
            'camunda:async="true"/>',
            {"delegateExpression": "${chargeDelegate}"},
        ),
    ],
)
def test_service_task_implementations(element: str, expected: dict[str, Any]) -> None:
    assert node(one(linear(element)), "t") == {"id": "t", "type": "serviceTask", **expected}


def test_service_task_without_implementation_is_rejected() -> None:
    message = rejected(linear('<serviceTask id="t"/>'))
    assert message.startswith("line 10: serviceTask 't' has no implementation")


def test_service_task_with_two_implementations_is_rejected() -> None:
    assert "several implementations" in rejected(
        linear('<serviceTask id="t" bpm:handler="a" camunda:class="B"/>')
    )


def test_handler_name_normalisation() -> None:
    assert handler_name("${true}") == "true"
    assert handler_name("#{a.b}") == "a.b"
    assert handler_name("${1 + x}") == "_1_x"


def test_user_receive_manual_and_plain_tasks() -> None:
    doc = one(
        linear(
            '<userTask id="u" camunda:assignee="kim" camunda:candidateGroups="ops, finance"/>',
            '<receiveTask id="r" messageRef="m1"/>',
            '<receiveTask id="r2"/>',
            '<manualTask id="m"/>',
            '<task id="t"/>',
            extra='<message id="m1" name="paid"/>',
        )
    )
    assert node(doc, "u") == {
        "id": "u",
        "type": "userTask",
        "assignee": "kim",
        "candidate_groups": ["ops", "finance"],
    }
    assert node(doc, "r") == {"id": "r", "type": "receiveTask", "message": "paid"}
    assert node(doc, "r2")["message"] == "r2"
    assert node(doc, "m")["type"] == "manualTask" and node(doc, "t")["type"] == "task"


def test_end_events() -> None:
    body = (
        '<startEvent id="s"/><parallelGateway id="g"/>'
        '<endEvent id="e1"><terminateEventDefinition/></endEvent>'
        '<endEvent id="e2"><errorEventDefinition errorRef="err"/></endEvent>'
        '<endEvent id="e3"><compensateEventDefinition/></endEvent>'
        '<sequenceFlow id="f0" sourceRef="s" targetRef="g"/>'
        '<sequenceFlow id="f1" sourceRef="g" targetRef="e1"/>'
        '<sequenceFlow id="f2" sourceRef="g" targetRef="e2"/>'
        '<sequenceFlow id="f3" sourceRef="g" targetRef="e3"/>'
    )
    doc = one(xml(body, '<error id="err" errorCode="DECLINED"/>'))
    assert node(doc, "e1")["terminate"] is True
    assert node(doc, "e2")["error"] == "DECLINED"
    assert node(doc, "e3")["compensate"] is True
    assert node(doc, "g")["type"] == "parallelGateway"


def test_exclusive_gateway_default_and_conditions() -> None:
    body = (
        '<startEvent id="s"/><exclusiveGateway id="g" default="fd"/>'
        '<endEvent id="a"/><endEvent id="b"/><endEvent id="c"/><endEvent id="d"/>'
        '<sequenceFlow id="f0" sourceRef="s" targetRef="g"/>'
        '<sequenceFlow id="fa" sourceRef="g" targetRef="a"><conditionExpression>'
        "${x &gt; 1 &amp;&amp; !b}</conditionExpression></sequenceFlow>"
        '<sequenceFlow id="fb" sourceRef="g" targetRef="b"><conditionExpression>'
        '=a = "b" and not(done)</conditionExpression></sequenceFlow>'
        '<sequenceFlow id="fc" sourceRef="g" targetRef="c"><conditionExpression>'
        "choice == 'No'</conditionExpression></sequenceFlow>"
        '<sequenceFlow id="fd" sourceRef="g" targetRef="d"/>'
    )
    doc = one(xml(body))
    assert node(doc, "g")["default"] == "fd"
    conditions = {f["id"]: f.get("condition") for f in doc["flows"]}
    assert conditions == {
        "f0": None,
        "fa": "${x > 1 && !b}",
        "fb": 'a == "b" and not ( done )',
        "fc": "choice == 'No'",
        "fd": None,
    }


@pytest.mark.parametrize(
    ("feel", "python"),
    [
        ("=x > 5", "x > 5"),
        ("= order.total >= 10 or vip", "order.total >= 10 or vip"),
        ('=status != "done"', 'status != "done"'),
        ("=true", "true"),
    ],
)
def test_feel_translation(feel: str, python: str) -> None:
    assert feel_to_condition(feel) == python


@pytest.mark.parametrize(
    "feel",
    ["=x in [1, 2]", "=count(items) > 1", "=x between 1 and 3", "=not x", "=(x > 1", "=a + b > 1"],
)
def test_feel_outside_the_subset_is_refused(feel: str) -> None:
    with pytest.raises(FeelUnsupported):
        feel_to_condition(feel)


def test_feel_condition_rejection_names_the_flow_and_line() -> None:
    body = (
        '<startEvent id="s"/><exclusiveGateway id="g"/><endEvent id="a"/>\n'
        '<sequenceFlow id="f0" sourceRef="s" targetRef="g"/>\n'
        '<sequenceFlow id="fa" sourceRef="g" targetRef="a"><conditionExpression>'
        "=count(x) > 1</conditionExpression></sequenceFlow>"
    )
    message = rejected(xml(body))
    assert message.startswith("line 11: sequenceFlow 'fa' has a FEEL condition")


def test_intermediate_events() -> None:
    doc = one(
        linear(
            '<intermediateCatchEvent id="t1"><timerEventDefinition><timeDuration>PT5M'
            "</timeDuration></timerEventDefinition></intermediateCatchEvent>",
            '<intermediateCatchEvent id="t2"><timerEventDefinition><timeDate>'
            "2030-01-01T00:00:00Z</timeDate></timerEventDefinition></intermediateCatchEvent>",
            '<intermediateCatchEvent id="t3"><timerEventDefinition><timeDuration>${wait}'
            "</timeDuration></timerEventDefinition></intermediateCatchEvent>",
            '<intermediateCatchEvent id="m"><messageEventDefinition messageRef="m1"/>'
            "</intermediateCatchEvent>",
            '<intermediateThrowEvent id="n"/>',
            extra='<message id="m1" name="approved"/>',
        )
    )
    assert node(doc, "t1") == {"id": "t1", "type": "timerEvent", "duration": "PT5M"}
    assert node(doc, "t2")["date"] == "2030-01-01T00:00:00Z"
    assert node(doc, "t3")["duration"] == "${wait}"
    assert node(doc, "m") == {"id": "m", "type": "messageEvent", "message": "approved"}
    assert node(doc, "n")["type"] == "task"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("due_time", {"date": "${due_time}"}),
        ("order.ship_by", {"date": "${order.ship_by}"}),
        ('"2030-01-01T00:00:00Z"', {"date": "2030-01-01T00:00:00Z"}),
        ("'PT1H'", {"duration": "PT1H"}),
        ("PT5M", {"duration": "PT5M"}),
    ],
)
def test_spiff_timer_bodies_are_python_expressions(body: str, expected: dict[str, str]) -> None:
    kind = "timeDate" if "date" in expected else "timeDuration"
    doc = one(
        linear(
            f'<intermediateCatchEvent id="t"><timerEventDefinition><{kind}>{body}'
            f"</{kind}></timerEventDefinition></intermediateCatchEvent>"
        )
    )
    assert node(doc, "t") == {"id": "t", "type": "timerEvent", **expected}


@pytest.mark.parametrize(
    ("kind", "body", "expected"),
    [
        ("timeDuration", '="PT5M"', {"duration": "PT5M"}),
        ("timeDuration", '=duration("PT1H")', {"duration": "PT1H"}),
        ("timeDate", '=date and time("2030-01-01T00:00:00Z")', {"date": "2030-01-01T00:00:00Z"}),
        ("timeDate", "=order.ship_by", {"date": "${order.ship_by}"}),
    ],
)
def test_zeebe_feel_timers_in_their_simple_forms(
    kind: str, body: str, expected: dict[str, str]
) -> None:
    doc = one(
        linear(
            f'<intermediateCatchEvent id="t"><timerEventDefinition><{kind}>{body}'
            f"</{kind}></timerEventDefinition></intermediateCatchEvent>"
        )
    )
    assert node(doc, "t") == {"id": "t", "type": "timerEvent", **expected}


def test_other_feel_timers_are_refused_naming_the_event() -> None:
    message = rejected(
        linear(
            '<intermediateCatchEvent id="t"><timerEventDefinition><timeDate>=now() + '
            'duration("P1D")</timeDate></timerEventDefinition></intermediateCatchEvent>'
        )
    )
    assert "line 10: intermediateCatchEvent 't' has the FEEL timer" in message
    assert "only a variable name" in message


def test_a_year_duration_is_not_taken_for_a_variable_name() -> None:
    assert "P1Y" in rejected(
        linear(
            '<intermediateCatchEvent id="t"><timerEventDefinition><timeDuration>P1Y'
            "</timeDuration></timerEventDefinition></intermediateCatchEvent>"
        )
    )


def test_listeners_the_modeler_left_empty_are_ignored() -> None:
    doc = one(
        linear(
            '<userTask id="u"><extensionElements><camunda:taskListener class="" event="create"/>'
            '<camunda:executionListener event="end" expression=" "/></extensionElements>'
            "</userTask>"
        )
    )
    assert node(doc, "u") == {"id": "u", "type": "userTask"}


def test_boundary_events_timer_and_error() -> None:
    body = (
        '<startEvent id="s"/><userTask id="u"/><endEvent id="e"/>'
        '<boundaryEvent id="b1" attachedToRef="u" cancelActivity="false">'
        "<timerEventDefinition><timeDuration>PT1H</timeDuration></timerEventDefinition>"
        "</boundaryEvent>"
        '<boundaryEvent id="b2" attachedToRef="u"><errorEventDefinition errorRef="err"/>'
        "</boundaryEvent>"
        '<boundaryEvent id="b3" attachedToRef="u"><errorEventDefinition/></boundaryEvent>'
        '<endEvent id="e1"/><endEvent id="e2"/><endEvent id="e3"/>'
        '<sequenceFlow id="f0" sourceRef="s" targetRef="u"/>'
        '<sequenceFlow id="f1" sourceRef="u" targetRef="e"/>'
        '<sequenceFlow id="f2" sourceRef="b1" targetRef="e1"/>'
        '<sequenceFlow id="f3" sourceRef="b2" targetRef="e2"/>'
        '<sequenceFlow id="f4" sourceRef="b3" targetRef="e3"/>'
    )
    doc = one(xml(body, '<error id="err" errorCode="LATE"/>'))
    assert node(doc, "b1") == {
        "id": "b1",
        "type": "boundaryEvent",
        "attachedTo": "u",
        "timer": {"duration": "PT1H"},
        "interrupting": False,
    }
    assert node(doc, "b2")["error"] == "LATE"
    assert node(doc, "b3")["error"] == "*"


COMPENSATION = (
    '<startEvent id="s"/><serviceTask id="book" bpm:handler="book"/>'
    '<boundaryEvent id="cb" attachedToRef="book"><compensateEventDefinition/></boundaryEvent>'
    '<serviceTask id="undo" bpm:handler="unbook" isForCompensation="true"/>'
    '<intermediateThrowEvent id="throw"><compensateEventDefinition activityRef="book"/>'
    '</intermediateThrowEvent><endEvent id="e"/>'
    '<sequenceFlow sourceRef="s" targetRef="book"/>'
    '<sequenceFlow sourceRef="book" targetRef="throw"/>'
    '<sequenceFlow sourceRef="throw" targetRef="e"/>'
    '<association sourceRef="cb" targetRef="undo"/>'
)


def test_compensation_boundary_and_throw() -> None:
    doc = one(xml(COMPENSATION))
    assert node(doc, "book")["compensation"] == {"node": "undo"}
    assert node(doc, "undo") == {"id": "undo", "type": "serviceTask", "handler": "unbook"}
    assert node(doc, "throw") == {"id": "throw", "type": "compensationThrow", "activity": "book"}
    assert [n["id"] for n in doc["nodes"]] == ["s", "book", "undo", "throw", "e"]
    assert [f["id"] for f in doc["flows"]] == ["s__book", "book__throw", "throw__e"]


def test_compensation_boundary_without_association_is_rejected() -> None:
    message = rejected(
        xml(COMPENSATION.replace('<association sourceRef="cb" targetRef="undo"/>', ""))
    )
    assert "boundaryEvent 'cb' is a compensation boundary without an association" in message


def test_embedded_subprocess_and_several_processes() -> None:
    sub = (
        '<startEvent id="s"/><subProcess id="sub"><startEvent id="ss"/>'
        '<task id="inner"/><endEvent id="se"/>'
        '<sequenceFlow id="sf1" sourceRef="ss" targetRef="inner"/>'
        '<sequenceFlow id="sf2" sourceRef="inner" targetRef="se"/></subProcess>'
        '<endEvent id="e"/><sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>'
        '<sequenceFlow id="f2" sourceRef="sub" targetRef="e"/>'
    )
    second = (
        '<process id="q" isExecutable="false"><startEvent id="qs"/><endEvent id="qe"/>'
        '<sequenceFlow id="qf" sourceRef="qs" targetRef="qe"/></process>'
        '<collaboration id="c"><participant id="pp" processRef="p"/></collaboration>'
        '<bpmndi:BPMNDiagram id="d"><bpmndi:BPMNPlane id="pl" bpmnElement="p"/>'
        "</bpmndi:BPMNDiagram>"
    )
    text = xml(sub).replace("</definitions>", second + "</definitions>")
    docs = compile_bpmn(text.replace('isExecutable="false"', 'isExecutable="true"'))
    assert [d["key"] for d in docs] == ["p", "q"]
    # Beside an executable process, a non-executable one is documentation, as in Camunda 7.
    assert [d["key"] for d in compile_bpmn(text)] == ["p"]
    subprocess = node(docs[0], "sub")
    assert [n["id"] for n in subprocess["nodes"]] == ["ss", "inner", "se"]
    assert [f["id"] for f in subprocess["flows"]] == ["sf1", "sf2"]
    for doc in docs:
        compile_definition(doc)


@pytest.mark.parametrize("saga", ["none", "local", "global"])
def test_bpm_saga_on_process_and_subprocess(saga: str) -> None:
    sub = (
        '<startEvent id="s"/><subProcess id="sub" bpm:saga="SAGA"><startEvent id="ss"/>'
        '<endEvent id="se"/><sequenceFlow id="sf" sourceRef="ss" targetRef="se"/>'
        '</subProcess><endEvent id="e"/><sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>'
        '<sequenceFlow id="f2" sourceRef="sub" targetRef="e"/>'
    ).replace("SAGA", saga)
    doc = one(xml(sub).replace('id="p"', f'id="p" bpm:saga="{saga}"'))
    assert doc["saga"] == saga
    assert node(doc, "sub")["saga"] == saga
    assert "saga" not in one(xml(sub.replace(f' bpm:saga="{saga}"', "")))


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            '<process id="p"',
            "line 8: process 'p' has bpm:saga='partial'; use none, local or global",
        ),
        (
            '<subProcess id="sub"',
            "line 10: subProcess 'sub' has bpm:saga='partial'; use none, local or global",
        ),
    ],
)
def test_bpm_saga_with_an_unknown_value_is_refused(where: str, expected: str) -> None:
    text = xml(
        '<startEvent id="s"/>\n<subProcess id="sub"><startEvent id="ss"/></subProcess>'
        '<sequenceFlow id="f" sourceRef="s" targetRef="sub"/>'
    )
    assert rejected(text.replace(where, f'{where} bpm:saga="partial"')) == expected


def _behaviour(doc: dict[str, Any]) -> dict[str, Any]:
    """What the engine runs: the process keys, the flows, and each node of the flow with how it
    is undone, a compensation handler activity (``{"node": ID}``) resolved to its handler or
    topic; names are left out (the diagram's may differ)."""
    by_id = {n["id"]: n for n in doc["nodes"]}

    def undo(comp: dict[str, Any]) -> dict[str, Any]:
        target = by_id[comp["node"]] if "node" in comp else comp
        return {k: target[k] for k in ("handler", "topic") if k in target}

    handlers = {
        n["compensation"]["node"] for n in doc["nodes"] if "node" in n.get("compensation", {})
    }
    nodes = {
        n["id"]: {
            "type": n["type"],
            **{k: n[k] for k in ("handler", "topic") if k in n},
            **({"undo": undo(n["compensation"])} if "compensation" in n else {}),
        }
        for n in doc["nodes"]
        if n["id"] not in handlers
    }
    flows = [(f["id"], f["source"], f["target"], f.get("condition")) for f in doc["flows"]]
    return {"key": doc["key"], "saga": doc.get("saga", "none"), "nodes": nodes, "flows": flows}


def test_the_order_saga_example_in_bpmn_behaves_like_the_json_one() -> None:
    bpmn = one(ORDER_SAGA_BPMN.read_text(encoding="utf-8"))
    json_doc = load_document(ORDER_SAGA)
    assert _behaviour(bpmn) == _behaviour(json_doc)
    assert bpmn["name"] == json_doc["name"]
    assert _behaviour(bpmn)["nodes"]["charge"]["undo"] == {"topic": "refunds"}
    # the handler activities are kept, with no flows, and only compensate
    assert {n["id"] for n in bpmn["nodes"]} - {n["id"] for n in json_doc["nodes"]} == {
        "release",
        "refund",
    }
    assert node(bpmn, "release") == {
        "id": "release",
        "name": "Release stock",
        "type": "serviceTask",
        "handler": "release_stock",
    }
    compile_definition(bpmn)


# --- rejections --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        (
            '<callActivity id="ca" calledElement="x" camunda:calledElementTenantId="t"/>',
            "line 10: callActivity 'ca' has camunda:calledElementTenantId; bpm has no tenants",
        ),
        ('<callActivity id="ca"/>', "line 10: callActivity 'ca' has no calledElement"),
        (
            '<userTask id="u"><standardLoopCharacteristics/></userTask>',
            "line 10: standardLoopCharacteristics in userTask 'u' (loop) is not supported yet",
        ),
        (
            '<task id="u"><standardLoopCharacteristics/></task>',
            "line 10: standardLoopCharacteristics in task 'u' (loop) is not supported yet",
        ),
        (
            '<userTask id="u"><multiInstanceLoopCharacteristics behavior="None"/></userTask>',
            "line 10: multiInstanceLoopCharacteristics in userTask 'u' has behavior='None'",
        ),
        (
            '<subProcess id="es" triggeredByEvent="true"><startEvent id="es_s">'
            "<signalEventDefinition/></startEvent></subProcess>",
            "startEvent 'es_s' has a signalEventDefinition without signalRef",
        ),
        (
            '<intermediateThrowEvent id="sig"><signalEventDefinition/></intermediateThrowEvent>',
            "line 10: intermediateThrowEvent 'sig' has a signalEventDefinition without signalRef",
        ),
        (
            '<intermediateThrowEvent id="esc"><escalationEventDefinition/>'
            "</intermediateThrowEvent>",
            "line 10: intermediateThrowEvent 'esc' throws an escalation without a code",
        ),
        (
            '<userTask id="u" camunda:formHandlerClass="org.acme.Forms"/>',
            "line 10: userTask 'u' has the attribute camunda:formHandlerClass='org.acme.Forms', "
            "which is not supported yet",
        ),
        (
            '<userTask id="u"><extensionElements><camunda:taskListener event="timeout" '
            'class="org.example.Notify"/></extensionElements></userTask>',
            "line 10: camunda:taskListener in userTask 'u' listens to 'timeout' but holds no "
            "timerEventDefinition; add one with a timeDuration or timeDate",
        ),
        (
            '<userTask id="u"><extensionElements><camunda:executionListener event="start">'
            '<camunda:script scriptFormat="groovy">x</camunda:script></camunda:executionListener>'
            "</extensionElements></userTask>",
            "line 10: camunda:executionListener in userTask 'u' runs an inline groovy script, "
            "which bpm never runs",
        ),
        (
            '<scriptTask id="sc" scriptFormat="groovy"><script>x = 1</script></scriptTask>',
            "line 10: scriptTask 'sc' holds a groovy script, which bpm never runs; register a "
            "handler named 'sc'",
        ),
        (
            '<intermediateCatchEvent id="t"><timerEventDefinition><timeCycle>soon</timeCycle>'
            "</timerEventDefinition></intermediateCatchEvent>",
            "timeCycle 'soon' is neither an ISO 8601 repeating interval",
        ),
    ],
)
def test_unsupported_elements_are_rejected_with_line_type_and_id(
    element: str, expected: str
) -> None:
    assert expected in rejected(linear(element))


def test_validator_errors_carry_the_line() -> None:
    message = rejected(
        xml(
            '<startEvent id="s"/><endEvent id="e"/>\n'
            '<sequenceFlow id="f" sourceRef="s" targetRef="nowhere"/>'
        )
    )
    assert message.startswith("line 10: process 'p': flow 'f'")


def test_not_bpmn_and_no_process() -> None:
    assert "not BPMN 2.0 'definitions'" in rejected("<definitions/>")
    assert "has no process" in rejected(HEAD + "</definitions>")


# --- safety ------------------------------------------------------------------------------------


def test_malformed_xml_names_line_and_column() -> None:
    message = rejected(HEAD + "<process id='p'>\n<startEvent id='s'>\n</process>")
    assert re.match(r"line 10: not well-formed XML \(column \d+\): mismatched tag", message)


BOMB = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n'
    "<definitions>&lol2;</definitions>"
)
EXTERNAL = (
    '<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
    "<definitions>&x;</definitions>"
)


@pytest.mark.parametrize("text", [BOMB, EXTERNAL, '<!DOCTYPE d SYSTEM "http://x/d.dtd"><d/>'])
def test_dtds_and_entities_are_refused(text: str) -> None:
    message = rejected(text)
    assert "refused" in message and "passwd" not in message


def test_size_limit() -> None:
    text = xml("<!--" + "x" * MAX_BYTES + "-->")
    assert "at most" in rejected(text)


def test_deep_nesting_is_refused() -> None:
    assert "nested deeper" in rejected(HEAD + "<a>" * 500 + "</a>" * 500 + "</definitions>")


def _mutations(text: bytes, rng: random.Random) -> list[bytes]:
    out = [text[: rng.randrange(len(text))] for _ in range(3)]
    for _ in range(4):
        data = bytearray(text)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        out.append(bytes(data))
    tags = [m.span() for m in re.finditer(rb"<[^<>]+>", text)]
    for _ in range(4):
        start, end = tags[rng.randrange(len(tags))]
        out.append(text[:start] + text[end:])
    for _ in range(2):  # drop an attribute
        attrs = [m.span() for m in re.finditer(rb'\s[\w:]+="[^"]*"', text)]
        if attrs:
            start, end = attrs[rng.randrange(len(attrs))]
            out.append(text[:start] + text[end:])
    out.append(BOMB.encode() + text)
    out.append(EXTERNAL.encode())
    out.append(text.replace(b"?>", b"?>" + BOMB.split("\n")[1].encode(), 1))
    return out


def _models() -> list[bytes]:
    models = [linear('<userTask id="u"/>').encode(), xml(COMPENSATION).encode()]
    if CONFORMANCE.is_dir():
        models += [p.read_bytes() for p in sorted(CONFORMANCE.glob("*.bpmn"))]
    return models


def test_fuzz__every_mutation_compiles_or_is_rejected_cleanly() -> None:
    rng = random.Random(8)
    outcomes = {"compiled": 0, "rejected": 0}
    for model in _models():
        for mutated in _mutations(model, rng):
            try:
                for doc in compile_bpmn(mutated):
                    compile_definition(doc)
            except InvalidDefinition as exc:
                assert str(exc)
                outcomes["rejected"] += 1
            else:
                outcomes["compiled"] += 1
    assert outcomes["rejected"] > 0


# --- models from the peers' suites that once compiled to something else -------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # A second boundary would have replaced the first one's handler.
        (
            (
                '<association sourceRef="cb" targetRef="undo"/>',
                '<association sourceRef="cb" targetRef="undo"/>'
                '<boundaryEvent id="cb2" attachedToRef="book"><compensateEventDefinition/>'
                "</boundaryEvent>"
                '<association sourceRef="cb2" targetRef="undo"/>',
            ),
            "boundaryEvent 'cb2' is a second compensation boundary on 'book'",
        ),
        # A handler nobody points to would have run in the normal flow.
        (
            (
                '<association sourceRef="cb" targetRef="undo"/>',
                '<association sourceRef="cb" targetRef="undo"/>'
                '<serviceTask id="stray" bpm:handler="x" isForCompensation="true"/>',
            ),
            "activity 'stray' is marked isForCompensation=\"true\" but no compensation boundary",
        ),
    ],
)
def test_compensation_boundaries_that_would_change_meaning_are_refused(
    change: tuple[str, str], expected: str
) -> None:
    assert expected in rejected(xml(COMPENSATION.replace(*change)))


def test_an_empty_condition_is_refused_not_dropped() -> None:
    body = (
        '<startEvent id="s"/><exclusiveGateway id="g"/><endEvent id="e"/>'
        '<sequenceFlow id="f0" sourceRef="s" targetRef="g"/>'
        '<sequenceFlow id="f1" sourceRef="g" targetRef="e"><conditionExpression '
        'xsi:type="tFormalExpression"/></sequenceFlow>'
    )
    head = ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
    text = xml(body).replace('targetNamespace="t"', f'targetNamespace="t"{head}')
    assert "sequenceFlow 'f1' has an empty conditionExpression" in rejected(text)


def test_feel_in_assignments_is_refused_and_juel_kept() -> None:
    assert "has the FEEL expression '=owner' as its assignee" in rejected(
        linear(
            '<userTask id="u"><extensionElements><zeebe:assignmentDefinition '
            'assignee="=owner"/></extensionElements></userTask>'
        )
    )
    task = node(one(linear('<userTask id="u" camunda:candidateGroups="#{groups}, ops"/>')), "u")
    assert task["candidate_groups"] == ["${groups}", "ops"]


def test_references_written_as_qualified_names() -> None:
    body = (
        '<startEvent id="s"/><receiveTask id="r" messageRef="tns:m1"/><endEvent id="e"/>'
        '<boundaryEvent id="b" attachedToRef="r"><errorEventDefinition errorRef="tns:e1"/>'
        "</boundaryEvent>"
        '<sequenceFlow id="f0" sourceRef="s" targetRef="r"/>'
        '<sequenceFlow id="f1" sourceRef="r" targetRef="e"/>'
        '<sequenceFlow id="f2" sourceRef="b" targetRef="e"/>'
    )
    doc = one(xml(body, extra='<message id="m1" name="paid"/><error id="e1" errorCode="42"/>'))
    assert node(doc, "r")["message"] == "paid"
    assert node(doc, "b")["error"] == "42"


def test_a_black_box_pool_compiles_to_nothing() -> None:
    text = linear('<task id="t"/>').replace(
        "</definitions>", '<process id="partner" isExecutable="false"/></definitions>'
    )
    assert [d["key"] for d in compile_bpmn(text)] == ["p"]
    assert "all empty (black-box pools)" in rejected(
        f'{HEAD}<process id="partner" isExecutable="false"/></definitions>'
    )


def test_durations_too_long_for_a_timer_are_refused_not_crashing() -> None:
    for value in ("P99999999999D", "P40000D"):
        assert "is too long (at most 100 years)" in rejected(
            linear(
                f'<intermediateCatchEvent id="t"><timerEventDefinition><timeDuration>{value}'
                "</timeDuration></timerEventDefinition></intermediateCatchEvent>"
            )
        )


def test_an_implementation_in_an_unknown_namespace_is_named() -> None:
    text = linear('<serviceTask id="a" ext:class="org.example.Charge"/>').replace(
        'targetNamespace="t"', 'targetNamespace="t" xmlns:ext="http://example.com/bpmn-ext"'
    )
    message = rejected(text)
    assert (
        "serviceTask 'a' has class='org.example.Charge' ({http://example.com/bpmn-ext})" in message
    )
    assert "Camunda 7's is http://camunda.org/schema/1.0/bpmn" in message


@pytest.mark.parametrize(
    "namespace",
    ["http://activiti.org/bpmn", "http://camunda.org/bpmn", "http://operaton.org/schema/1.0/bpmn"],
)
def test_activiti_operaton_and_the_older_camunda_namespace_read_as_camunda(namespace: str) -> None:
    """Camunda 7 reads Activiti's namespace as its own, Operaton its own: so does bpm."""
    text = linear(
        '<serviceTask id="a" x:class="org.example.Charge" x:asyncBefore="true"/>'
    ).replace('targetNamespace="t"', f'targetNamespace="t" xmlns:x="{namespace}"')
    [doc] = compile_bpmn(text)
    [task] = [n for n in doc["nodes"] if n["id"] == "a"]
    assert task["handler"] == "Charge"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (" Love Letter", "named ' Love Letter', which is not a name the engine"),
        ("Love&#10;Letter", "which is not a name the engine"),
        ("invoice-${id}", "expressions in message names are not supported yet"),
    ],
)
def test_message_names_the_engine_cannot_correlate_by_are_refused_with_the_name(
    name: str, expected: str
) -> None:
    message = rejected(
        linear('<receiveTask id="r" messageRef="m1"/>', extra=f'<message id="m1" name="{name}"/>')
    )
    assert "line 10: receiveTask 'r' refers to message 'm1'" in message
    assert expected in message


def test_a_refused_event_definition_names_its_event() -> None:
    message = rejected(
        linear(
            '<intermediateCatchEvent id="t"><timerEventDefinition camunda:x="1"><timeDuration>PT1S'
            "</timeDuration></timerEventDefinition></intermediateCatchEvent>"
        )
    )
    assert (
        "timerEventDefinition in intermediateCatchEvent 't' has the attribute camunda:x='1'"
        in message
    )


# --- the shape of a refusal --------------------------------------------------------------------


def test_a_refusal_lists_every_problem_in_the_file_each_on_a_line_of_its_own() -> None:
    message = rejected(
        linear(
            '<complexGateway id="g"/>',
            '<serviceTask id="a"/>',
            '<userTask id="u"><extensionElements><camunda:field name="x"/>'
            "</extensionElements></userTask>",
        )
    )
    lines = message.splitlines()
    assert lines == [
        "line 10: complexGateway 'g' is not supported yet",
        "line 11: serviceTask 'a' has no implementation; give bpm:handler, bpm:topic, "
        'camunda:type="external" with camunda:topic, zeebe:taskDefinition, camunda:class, '
        "camunda:expression or camunda:delegateExpression",
        "line 12: camunda:field in userTask 'u' is not supported yet",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "<definitions>\n<process>\n</definitions>",
        BOMB,
        "<definitions/>",
        HEAD + "</definitions>",
        xml('<startEvent id="s"/><endEvent id="e"/><sequenceFlow id="f" sourceRef="s"/>'),
        linear('<serviceTask id="a" camunda:bar="1" bpm:handler="h"/>'),
        linear('<task id="t" undeclared:x="1"/>'),
    ],
)
def test_every_refusal_has_one_shape(text: str) -> None:
    for line in rejected(text).splitlines():
        assert re.match(r"line \d+: \S", line), line


def test_an_undeclared_well_known_prefix_is_read_as_declared() -> None:
    """Other engines tolerate ``xsi:type`` without ``xmlns:xsi``; so does the importer."""
    text = linear(
        '<intermediateCatchEvent id="t"><timerEventDefinition><timeDuration xsi:type='
        '"tFormalExpression">PT1S</timeDuration></timerEventDefinition></intermediateCatchEvent>'
    )
    assert node(one(text), "t")["duration"] == "PT1S"


def test_an_undeclared_unknown_prefix_names_the_declaration_to_add() -> None:
    message = rejected(linear('<task id="t" acme:x="1"/>'))
    assert message.startswith("line 10: the namespace prefix 'acme' (column ")
    assert 'declare it on the root element (xmlns:acme="…")' in message
