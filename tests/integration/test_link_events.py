"""Link events: a throw link event goes on at the catch link event of the same name in the
same scope, as if one sequence flow joined them; a link that leads nowhere is refused at
deploy with the line of the event."""

from __future__ import annotations

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from bpm.store import Database
from tests.helpers import db as rows
from tests.helpers.invariants import assert_finished_cleanly
from tests.helpers.runtime import Calls, Harness

HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
"""


def model(catch_name: str = "toShipping", extra: str = "") -> str:
    return (
        HEAD
        + f"""  <bpmn:process id="linked" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:serviceTask id="pack" camunda:class="pack" />
    <bpmn:intermediateThrowEvent id="goShip" name="to shipping">
      <bpmn:linkEventDefinition id="l1" name="toShipping" />
    </bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="shipHere" name="shipping">
      <bpmn:linkEventDefinition id="l2" name="{catch_name}" />
    </bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="ship" camunda:class="ship" />
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="pack" />
    <bpmn:sequenceFlow id="f2" sourceRef="pack" targetRef="goShip" />
    <bpmn:sequenceFlow id="f3" sourceRef="shipHere" targetRef="ship" />
    <bpmn:sequenceFlow id="f4" sourceRef="ship" targetRef="e" />
    {extra}
  </bpmn:process>
</bpmn:definitions>
"""
    )


def test_a_throw_link_goes_on_at_its_catch(rt: Harness, calls: Calls, pg_db: Database) -> None:
    calls.add("pack")
    calls.add("ship")
    rt.engine.deploy_bpmn(model())
    iid = rt.start("linked")
    rt.drain()
    assert (calls.count("pack"), calls.count("ship")) == (1, 1)
    assert_finished_cleanly(pg_db, iid)
    visited = [e["node_id"] for e in rows.token_events_of(pg_db, iid)]
    assert visited.index("goShip") < visited.index("shipHere") < visited.index("ship")


def test_the_link_is_a_flow_in_the_compiled_definition() -> None:
    (doc,) = compile_bpmn(model())
    (link,) = [f for f in doc["flows"] if f["source"] == "goShip"]
    assert link == {
        "id": "goShip__link",
        "source": "goShip",
        "target": "shipHere",
        "name": "toShipping",
    }


@pytest.mark.parametrize(
    ("xml", "says"),
    [
        (model(catch_name="elsewhere"), "names link 'toShipping', which no link catch event"),
        (
            model(extra='<bpmn:sequenceFlow id="f5" sourceRef="pack" targetRef="shipHere" />'),
            "enters link catch event 'shipHere'",
        ),
        (
            model(extra='<bpmn:sequenceFlow id="f5" sourceRef="goShip" targetRef="ship" />'),
            "leaves link throw event 'goShip'",
        ),
    ],
)
def test_a_link_that_does_not_join_is_refused_with_its_line(xml: str, says: str) -> None:
    with pytest.raises(InvalidDefinition) as caught:
        compile_bpmn(xml)
    assert says in str(caught.value)
    assert "line " in str(caught.value)
