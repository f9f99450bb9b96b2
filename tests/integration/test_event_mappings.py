"""Input and output mappings on intermediate and end events, as Camunda 7 runs them: a catch
event's inputs are local variables while its token waits there (a timer reads them for its
due date), its outputs copy out when the event fires; an end event takes inputs but no
outputs; start and boundary events take none."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.errors import InvalidDefinition
from bpm.store import Database
from tests.helpers.invariants import assert_history_consistent
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness

MESSAGES = '  <bpmn:message id="Message_paid" name="PaymentReceived" />\n'


def io(inputs: dict[str, str], outputs: dict[str, str] | None = None) -> str:
    params = "".join(
        f'<camunda:inputParameter name="{k}">{v}</camunda:inputParameter>'
        for k, v in inputs.items()
    ) + "".join(
        f'<camunda:outputParameter name="{k}">{v}</camunda:outputParameter>'
        for k, v in (outputs or {}).items()
    )
    return (
        "<bpmn:extensionElements><camunda:inputOutput>"
        f"{params}</camunda:inputOutput></bpmn:extensionElements>"
    )


def deploy(rt: Harness, body: str) -> None:
    rt.engine.deploy_bpmn(modeler_file("payment", body, declarations=MESSAGES))


def locals_of(rt: Harness, iid: Any) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = rt.engine.show(iid).get("local_variables", [])
    return shown


def test_a_message_catch_maps_in_while_waiting_and_out_when_it_fires(
    rt: Harness, pg_db: Database
) -> None:
    deploy(
        rt,
        '    <bpmn:startEvent id="S" />\n'
        '    <bpmn:intermediateCatchEvent id="Wait" name="Payment received">'
        + io({"corrKey": "${orderId}"}, {"paidAmount": "${amount}"})
        + '<bpmn:messageEventDefinition id="Def_1" messageRef="Message_paid" />'
        "</bpmn:intermediateCatchEvent>\n"
        '    <bpmn:endEvent id="E">'
        + io({"state": "DONE"})
        + "</bpmn:endEvent>\n"
        + chain("S", "Wait", "E"),
    )
    iid = rt.engine.start("payment", {"orderId": "A-7"}).id
    rt.drain()
    [scope] = locals_of(rt, iid)
    assert (scope["node_id"], scope["variables"]) == ("Wait", {"corrKey": "A-7"})
    assert "corrKey" not in rt.engine.show(iid)["variables"]

    rt.engine.correlate("PaymentReceived", instance_id=iid, variables={"amount": 30})
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED"
    assert shown["variables"] == {"orderId": "A-7", "amount": 30, "paidAmount": 30}
    assert locals_of(rt, iid) == []
    assert_history_consistent(pg_db, iid)


def test_a_timer_catch_reads_its_own_inputs_for_its_due_date(rt: Harness) -> None:
    deploy(
        rt,
        '    <bpmn:startEvent id="S" />\n'
        '    <bpmn:intermediateCatchEvent id="Pause">'
        + io({"pause": "PT${hours}H"})
        + '<bpmn:timerEventDefinition id="Def_t"><bpmn:timeDuration xsi:type='
        '"bpmn:tFormalExpression">${pause}</bpmn:timeDuration></bpmn:timerEventDefinition>'
        "</bpmn:intermediateCatchEvent>\n"
        '    <bpmn:endEvent id="E" />\n' + chain("S", "Pause", "E"),
    )
    iid = rt.engine.start("payment", {"hours": 2}).id
    rt.drain()
    rt.pass_time(timedelta(minutes=119))
    assert rt.engine.show(iid)["state"] == "RUNNING"
    rt.pass_time(timedelta(minutes=2))
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED" and "pause" not in shown["variables"]


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        (
            '<bpmn:endEvent id="E">' + io({}, {"x": "1"}) + "</bpmn:endEvent>",
            "an end event takes no 'outputs'",
        ),
        (
            '<bpmn:endEvent id="E" /><bpmn:boundaryEvent id="B" attachedToRef="T">'
            + io({"x": "1"})
            + '<bpmn:messageEventDefinition messageRef="Message_paid" /></bpmn:boundaryEvent>',
            "camunda:inputOutput in boundaryEvent 'B'",
        ),
    ],
)
def test_mappings_where_camunda_refuses_them_are_refused(
    rt: Harness, element: str, expected: str
) -> None:
    body = f'    <bpmn:startEvent id="S" />\n    <bpmn:userTask id="T" />\n    {element}\n' + chain(
        "S", "T", "E"
    )
    with pytest.raises(InvalidDefinition) as info:
        deploy(rt, body)
    assert expected in str(info.value)


def test_a_timer_written_with_text_around_an_expression_reads_it_as_text(rt: Harness) -> None:
    """``PT${hours}H``: a JUEL composite, as Camunda 7 evaluates it when the timer starts."""
    deploy(
        rt,
        '    <bpmn:startEvent id="S" />\n'
        '    <bpmn:intermediateCatchEvent id="Pause"><bpmn:timerEventDefinition id="Def_c">'
        '<bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT${hours}H</bpmn:timeDuration>'
        "</bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>\n"
        '    <bpmn:endEvent id="E" />\n' + chain("S", "Pause", "E"),
    )
    iid = rt.engine.start("payment", {"hours": 3}).id
    rt.drain()
    rt.pass_time(timedelta(minutes=179))
    assert rt.engine.show(iid)["state"] == "RUNNING"
    rt.pass_time(timedelta(minutes=2))
    assert rt.engine.show(iid)["state"] == "COMPLETED"
