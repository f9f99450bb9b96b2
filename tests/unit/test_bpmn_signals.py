"""Signal events read from BPMN: ``signalRef`` resolved to the declared ``<signal name>`` on
every kind of event that carries a ``signalEventDefinition``; what bpm refuses is refused
naming the element (no signalRef, an undeclared signal, a FEEL name, an expression as a
process signal start event's name,
``camunda:async`` on the definition, a business key in ``camunda:in``); the JSON format's
``signal`` keys compile, and a signal start event or event subprocess start is one per name.
A catching event's name may be a JUEL template (``done-${execution.processBusinessKey}``),
kept as written in its subscriptions and evaluated when a signal is thrown."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import ProcessBuilder
from bpm.definitions.model import NodeType
from bpm.definitions.parse.document import compile_definition
from bpm.definitions.signal_names import could_give
from bpm.definitions.signals import subscriptions
from bpm.errors import InvalidDefinition
from bpm.states import SignalTarget
from tests.unit.test_bpmn_import import linear, node, one, rejected, xml

ALERT = '<signal id="alertSignal" name="alert"/>\n'


def catch(definition: str = '<signalEventDefinition signalRef="alertSignal"/>') -> str:
    return f'<intermediateCatchEvent id="c">{definition}</intermediateCatchEvent>'


def test_each_signal_event_reads_its_declared_name() -> None:
    body = (
        '<startEvent id="s"/>'
        + catch()
        + '<intermediateThrowEvent id="t"><signalEventDefinition signalRef="alertSignal"/>'
        "</intermediateThrowEvent>"
        '<userTask id="u"/>'
        '<boundaryEvent id="b" attachedToRef="u" cancelActivity="false">'
        '<signalEventDefinition signalRef="alertSignal"/></boundaryEvent>'
        '<endEvent id="e"><signalEventDefinition signalRef="alertSignal"/></endEvent>'
        '<endEvent id="be"/>'
        '<sequenceFlow id="f1" sourceRef="s" targetRef="c"/>'
        '<sequenceFlow id="f2" sourceRef="c" targetRef="t"/>'
        '<sequenceFlow id="f3" sourceRef="t" targetRef="u"/>'
        '<sequenceFlow id="f4" sourceRef="u" targetRef="e"/>'
        '<sequenceFlow id="f5" sourceRef="b" targetRef="be"/>'
    )
    doc = one(xml(body, ALERT))
    assert node(doc, "c") == {"id": "c", "type": "signalEvent", "signal": "alert"}
    assert node(doc, "t") == {"id": "t", "type": "signalThrow", "signal": "alert"}
    assert node(doc, "b")["signal"] == "alert" and node(doc, "b")["interrupting"] is False
    assert node(doc, "e") == {"id": "e", "type": "endEvent", "signal": "alert"}
    graph = compile_definition(doc)
    assert graph.node("c").type is NodeType.SIGNAL
    assert subscriptions(graph) == [
        ("alert", "c", SignalTarget.NODE),
        ("alert", "u", SignalTarget.NODE),
    ]


def test_a_signal_start_event_and_an_event_subprocess_start() -> None:
    body = (
        '<startEvent id="s"><signalEventDefinition signalRef="alertSignal"/></startEvent>'
        '<userTask id="u"/><endEvent id="e"/>'
        '<sequenceFlow id="f1" sourceRef="s" targetRef="u"/>'
        '<sequenceFlow id="f2" sourceRef="u" targetRef="e"/>'
        '<subProcess id="esp" triggeredByEvent="true">'
        '<startEvent id="es" isInterrupting="false">'
        '<signalEventDefinition signalRef="alertSignal"/></startEvent>'
        '<endEvent id="ee"/><sequenceFlow id="f3" sourceRef="es" targetRef="ee"/></subProcess>'
    )
    doc = one(xml(body, ALERT))
    assert node(doc, "s")["signal"] == "alert"
    assert node(doc, "es")["signal"] == "alert" and node(doc, "es")["interrupting"] is False
    graph = compile_definition(doc)
    assert graph.signal_starts == {"alert": "s"}
    assert subscriptions(graph) == [
        ("alert", "esp", SignalTarget.ROOT),
        ("alert", "s", SignalTarget.START),
    ]


def test_a_signal_after_an_event_based_gateway() -> None:
    body = (
        '<startEvent id="s"/><eventBasedGateway id="g"/>'
        + catch()
        + '<intermediateCatchEvent id="t"><timerEventDefinition><timeDuration>PT1H'
        "</timeDuration></timerEventDefinition></intermediateCatchEvent>"
        '<endEvent id="e1"/><endEvent id="e2"/>'
        '<sequenceFlow id="f1" sourceRef="s" targetRef="g"/>'
        '<sequenceFlow id="f2" sourceRef="g" targetRef="c"/>'
        '<sequenceFlow id="f3" sourceRef="g" targetRef="t"/>'
        '<sequenceFlow id="f4" sourceRef="c" targetRef="e1"/>'
        '<sequenceFlow id="f5" sourceRef="t" targetRef="e2"/>'
    )
    graph = compile_definition(one(xml(body, ALERT)))
    assert subscriptions(graph) == [
        ("alert", "c", SignalTarget.NODE),
        ("alert", "g", SignalTarget.NODE),
    ]


@pytest.mark.parametrize(
    ("element", "extra", "expected"),
    [
        (catch("<signalEventDefinition/>"), "", "has a signalEventDefinition without signalRef"),
        (
            catch('<signalEventDefinition signalRef="nope"/>'),
            "",
            "refers to signal 'nope', which the file does not declare",
        ),
        (
            catch('<signalEventDefinition signalRef="x"/>'),
            '<signal id="x" name="=region"/>',
            "expressions in signal names are not supported",
        ),
        (
            '<intermediateThrowEvent id="t"><signalEventDefinition signalRef="alertSignal" '
            'camunda:async="true"/></intermediateThrowEvent>',
            ALERT,
            "camunda:async",
        ),
        (
            '<intermediateThrowEvent id="t"><extensionElements><camunda:in businessKey="x"/>'
            '</extensionElements><signalEventDefinition signalRef="alertSignal"/>'
            "</intermediateThrowEvent>",
            ALERT,
            "sets a business key, which a signal does not carry",
        ),
    ],
)
def test_what_bpm_refuses_names_the_element(element: str, extra: str, expected: str) -> None:
    found = rejected(linear(element, extra=extra))
    assert expected in found and "line " in found


def _json(**start: Any) -> dict[str, Any]:
    return (
        ProcessBuilder("p")
        .start()
        ._node("s2", "startEvent", **start)
        .end()
        .end("e2")
        .sequence("start", "end")
        .sequence("s2", "e2")
        .build()
    )


def test_the_json_format_refuses_a_second_start_on_one_signal_and_expressions() -> None:
    doc = (
        ProcessBuilder("p")
        .signal_start("a", signal="go")
        .signal_start("b", signal="go")
        .end()
        .end("e2")
        .sequence("a", "end")
        .sequence("b", "e2")
        .build()
    )
    with pytest.raises(InvalidDefinition, match="already waits for 'go'"):
        compile_definition(doc)
    with pytest.raises(InvalidDefinition, match="needs a literal name"):
        compile_definition(_json(signal="${name}"))
    thrown = ProcessBuilder("p").start().signal_throw("t", signal="a-#{region}").end()
    graph = compile_definition(thrown.sequence("start", "t", "end").build())
    assert graph.node("t").signal_expression is not None  # a throw's is evaluated
    with pytest.raises(InvalidDefinition, match="'signal' must be a name"):
        compile_definition(_json(signal=" padded"))
    end = ProcessBuilder("p").start()._node("end", "endEvent", signal="go", terminate=True)
    with pytest.raises(InvalidDefinition, match="only one of them"):
        compile_definition(end.sequence("start", "end").build())


def test_a_throw_may_name_its_signal_with_an_expression() -> None:
    extra = '<signal id="x" name="alert-${region}"/>'
    throw = (
        '<intermediateThrowEvent id="t"><signalEventDefinition signalRef="x"/>'
        "</intermediateThrowEvent>"
    )
    assert node(one(linear(throw, extra=extra)), "t")["signal"] == "alert-${region}"


def test_camunda_in_on_a_throw_passes_variables() -> None:
    throw = (
        '<intermediateThrowEvent id="t"><extensionElements>'
        '<camunda:in source="a" target="b"/><camunda:in variables="all" local="true"/>'
        '</extensionElements><signalEventDefinition signalRef="alertSignal"/>'
        "</intermediateThrowEvent>"
    )
    found = node(one(linear(throw, extra=ALERT)), "t")
    assert found["in"] == [{"source": "a", "target": "b"}, {"all": True, "local": True}]
    graph = compile_definition(one(linear(throw, extra=ALERT)))
    assert len(graph.node("t").signal_inputs) == 2


def test_camunda_in_inside_the_signal_event_definition_as_the_modeler_writes_it() -> None:
    throw = (
        '<intermediateThrowEvent id="t"><signalEventDefinition signalRef="alertSignal">'
        '<extensionElements><camunda:in variables="all"/></extensionElements>'
        "</signalEventDefinition></intermediateThrowEvent>"
    )
    assert node(one(linear(throw, extra=ALERT)), "t")["in"] == [{"all": True}]


TEMPLATES = (
    "KundeAngelegtSignal-${execution.processBusinessKey}",
    "signal.verification.started.${execution.processBusinessKey}",
    "KontoAngelegtSignal-${execution.processBusinessKey}-${uvzPayload.kontoName}",
    "done-#{execution.getProcessBusinessKey()}",
)


@pytest.mark.parametrize("name", TEMPLATES)
def test_catching_events_accept_template_names(name: str) -> None:
    extra = f'<signal id="x" name="{name}"/>'
    ref = '<signalEventDefinition signalRef="x"/>'
    body = (
        f'<startEvent id="s"/><intermediateCatchEvent id="c">{ref}</intermediateCatchEvent>'
        f'<userTask id="u"/><boundaryEvent id="b" attachedToRef="u">{ref}</boundaryEvent>'
        '<endEvent id="e"/><endEvent id="be"/>'
        '<sequenceFlow id="f1" sourceRef="s" targetRef="c"/>'
        '<sequenceFlow id="f2" sourceRef="c" targetRef="u"/>'
        '<sequenceFlow id="f3" sourceRef="u" targetRef="e"/>'
        '<sequenceFlow id="f4" sourceRef="b" targetRef="be"/>'
        '<subProcess id="esp" triggeredByEvent="true">'
        f'<startEvent id="es" isInterrupting="false">{ref}</startEvent>'
        '<endEvent id="ee"/><sequenceFlow id="f5" sourceRef="es" targetRef="ee"/></subProcess>'
    )
    doc = one(xml(body, extra))
    for node_id in ("c", "b", "es"):
        assert node(doc, node_id)["signal"] == name
    graph = compile_definition(doc)
    assert subscriptions(graph) == [
        (name, "c", SignalTarget.NODE),
        (name, "esp", SignalTarget.ROOT),
        (name, "u", SignalTarget.NODE),
    ]


def test_a_template_is_refused_on_a_process_start_and_when_it_does_not_compile() -> None:
    body = (
        '<startEvent id="s"><signalEventDefinition signalRef="x"/></startEvent>'
        '<endEvent id="e"/><sequenceFlow id="f1" sourceRef="s" targetRef="e"/>'
    )
    found = rejected(xml(body, '<signal id="x" name="go-${key}"/>'))
    assert "not supported on a process's signal start event" in found and "line " in found
    bad = catch('<signalEventDefinition signalRef="x"/>')
    with pytest.raises(InvalidDefinition, match="reflection"):
        one(linear(bad, extra='<signal id="x" name="go-${execution.getClass()}"/>'))
    doc = ProcessBuilder("p").start().signal_event("w", signal="go-${a +}").end()
    with pytest.raises(InvalidDefinition):
        compile_definition(doc.sequence("start", "w", "end").build())


def test_a_throw_evaluates_only_templates_whose_text_fits_its_name() -> None:
    assert could_give("done-${execution.processBusinessKey}", "done-A")
    assert not could_give("done-${execution.processBusinessKey}", "alarm")
    assert could_give("K-${a}-${b}.x", "K-1-2.x") and not could_give("K-${a}-${b}.x", "K-1-2")
    assert could_give("#{a}", "anything") and not could_give("ab${x}ba", "aba")
