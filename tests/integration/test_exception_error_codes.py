"""An error code naming an exception class catches a handler's exception as a BPMN error, as
Camunda 7 catches a delegate's exception whose class (or a base class) the code names: at
once, without retries, with the exception's text as the error message."""

from __future__ import annotations

import pytest

from bpm.handlers import HandlerContext, HandlerRegistry
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness


class PaymentRefused(Exception):
    pass


class CardExpired(PaymentRefused):
    pass


def model(code: str) -> str:
    return modeler_file(
        "pay",
        '    <bpmn:startEvent id="S" />\n'
        '    <bpmn:serviceTask id="Charge" camunda:class="org.acme.Charge" />\n'
        '    <bpmn:boundaryEvent id="Refused" attachedToRef="Charge">'
        '<bpmn:errorEventDefinition errorRef="Error_refused" '
        'camunda:errorMessageVariable="why" /></bpmn:boundaryEvent>\n'
        '    <bpmn:endEvent id="Paid" /><bpmn:endEvent id="NotPaid" />\n'
        + chain("S", "Charge", "Paid")
        + chain("Refused", "NotPaid"),
        declarations=f'  <bpmn:error id="Error_refused" name="refused" errorCode="{code}" />\n',
    )


@pytest.mark.parametrize(
    "code", ["com.acme.PaymentRefused", "PaymentRefused", "java.lang.Exception"]
)
def test_the_exception_or_a_base_named_by_the_code_is_caught(
    rt: Harness, handlers: HandlerRegistry, code: str
) -> None:
    calls: list[int] = []

    def charge(ctx: HandlerContext) -> None:
        calls.append(1)
        raise CardExpired("card expired in 2025")

    handlers.register("Charge", charge)
    rt.engine.deploy_bpmn(model(code))
    iid = rt.engine.start("pay").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "COMPLETED" and calls == [1]
    assert "card expired in 2025" in shown["variables"]["why"]
    visited = {e.get("node_id") for e in rt.engine.history(instance_id=iid)}
    assert "NotPaid" in visited and "Paid" not in visited


def test_an_exception_no_code_names_fails_as_before(rt: Harness, handlers: HandlerRegistry) -> None:
    def charge(ctx: HandlerContext) -> None:
        raise ValueError("bad amount")

    handlers.register("Charge", charge)
    rt.engine.deploy_bpmn(model("com.acme.PaymentRefused"))
    iid = rt.engine.start("pay").id
    rt.drain()
    shown = rt.engine.show(iid)
    assert shown["state"] == "FAILED"
    [incident] = shown["incidents"]
    assert "ValueError: bad amount" in incident["message"]


def test_a_catch_all_takes_bpmn_errors_only_not_exceptions(
    rt: Harness, handlers: HandlerRegistry
) -> None:
    def charge(ctx: HandlerContext) -> None:
        raise CardExpired("card expired in 2025")

    handlers.register("Charge", charge)
    catch_all = model("x").replace(' errorRef="Error_refused"', "")
    rt.engine.deploy_bpmn(catch_all)
    iid = rt.engine.start("pay").id
    rt.drain()
    assert rt.engine.show(iid)["state"] == "FAILED"
