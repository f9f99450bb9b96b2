"""A call activity's variable mapping handler (Camunda's variableMappingClass): it runs as a
task before the call with the caller's variables and after it with the called instance's, and
what it returns crosses the call beside the in/out mappings."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select

from bpm.definitions import ProcessBuilder
from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from bpm.handlers import HandlerContext
from bpm.store import Database, variables
from bpm.store.schema import process_instances
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness, failing

MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:callActivity id="pay" calledElement="payment"
        camunda:variableMappingClass="com.shop.PaymentMapping">
      <bpmn:extensionElements>
        <camunda:in source="currency" target="currency" />
      </bpmn:extensionElements>
    </bpmn:callActivity>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="pay" />
    <bpmn:sequenceFlow id="f2" sourceRef="pay" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""

MAPPING = "com.shop.PaymentMapping"


def payment() -> dict[str, Any]:
    b = ProcessBuilder("payment").start().service_task("charge", handler="charge").end()
    return b.sequence("start", "charge", "end").build()


def mapping(seen: list[tuple[str | None, dict[str, Any]]]) -> Any:
    def run(ctx: HandlerContext) -> dict[str, Any]:
        seen.append((ctx.event, dict(ctx.variables)))
        if ctx.event == "mapInputVariables":
            return {"amount": ctx.variables["total"] * 100}
        return {"receipt": ctx.variables["receipt"], "paid": True}

    return run


def called(db: Database, iid: UUID) -> UUID:
    t = process_instances
    with db.transaction() as conn:
        found: UUID = conn.execute(select(t.c.id).where(t.c.super_instance_id == iid)).scalar_one()
    return found


def test_the_mapping_handler_maps_in_and_out_beside_the_in_and_out_mappings(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    seen: list[tuple[str | None, dict[str, Any]]] = []
    calls.add(MAPPING, mapping(seen))
    calls.add("charge", lambda ctx: {"receipt": f"r-{ctx.variables['amount']}"})
    rt.deploy(payment())
    rt.engine.deploy_bpmn(MODEL)
    iid = rt.start("order", {"total": 12, "currency": "EUR"})
    rt.drain()
    assert [event for event, _ in seen] == ["mapInputVariables", "mapOutputVariables"]
    assert seen[0][1] == {"total": 12, "currency": "EUR"}  # the caller's variables
    assert seen[1][1]["receipt"] == "r-1200"  # the called instance's
    child = called(pg_db, iid)
    with pg_db.transaction() as conn:
        assert variables.load(conn, child) == {
            "amount": 1200,
            "currency": "EUR",
            "receipt": "r-1200",
        }
        assert variables.load(conn, iid) == {
            "total": 12,
            "currency": "EUR",
            "receipt": "r-1200",
            "paid": True,
        }
    assert_finished_cleanly(pg_db, iid)


def test_a_failing_mapping_handler_is_an_incident_and_nothing_is_called(
    rt: Harness, calls: Calls, pg_db: Database
) -> None:
    calls.add(MAPPING, failing(1000, "no exchange rate"))
    rt.deploy(payment())
    rt.engine.deploy_bpmn(MODEL)
    iid = rt.start("order", {"total": 1, "currency": "XXX"})
    rt.drain()
    (incident,) = rows.incidents_of(pg_db, iid, only_open=True)
    assert "no exchange rate" in incident.message
    t = process_instances
    with pg_db.transaction() as conn:
        assert conn.execute(select(t.c.id).where(t.c.super_instance_id == iid)).first() is None


def test_the_importer_names_the_handler_and_refuses_both_kinds() -> None:
    (doc,) = compile_bpmn(MODEL)
    (pay,) = [n for n in doc["nodes"] if n["id"] == "pay"]
    assert pay["mapping"] == MAPPING
    both = MODEL.replace(
        'camunda:variableMappingClass="com.shop.PaymentMapping"',
        'camunda:variableMappingClass="a.B" camunda:variableMappingDelegateExpression="${m}"',
    )
    with pytest.raises(InvalidDefinition, match="both camunda:variableMappingClass"):
        compile_bpmn(both)
    bean = MODEL.replace(
        'camunda:variableMappingClass="com.shop.PaymentMapping"',
        'camunda:variableMappingDelegateExpression="${paymentMapping}"',
    )
    (doc,) = compile_bpmn(bean)
    assert next(n for n in doc["nodes"] if n["id"] == "pay")["mapping"] == "paymentMapping"
