"""Business rule tasks with ``camunda:decisionRef``: DMN decisions deployed with
``deploy_dmn`` and evaluated in the token's transaction, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bpm.engine.operations.deployments import Resource, kind_of
from bpm.errors import DecisionFailed
from bpm.states import EngineEvent
from tests.helpers.clock import FakeClock
from tests.helpers.dmn import definitions, model, table_decision
from tests.helpers.modeler import chain, modeler_file
from tests.helpers.runtime import Harness


def dinner(attrs: str) -> str:
    return modeler_file(
        "dinner",
        '    <bpmn:startEvent id="S" />\n'
        f'<bpmn:businessRuleTask id="Decide" camunda:decisionRef="dish" {attrs} />'
        '<bpmn:endEvent id="E" />' + chain("S", "Decide", "E"),
    )


def run(rt: Harness, variables: dict[str, Any]) -> dict[str, Any]:
    iid = rt.engine.start("dinner", variables).id
    rt.drain()
    return rt.engine.show(iid)


def test_the_decision_result_is_mapped_stored_and_audited(rt: Harness) -> None:
    assert [d.created for d in rt.engine.deploy_dmn(model("dish.dmn"))] == [True, True]
    rt.engine.deploy_bpmn(
        dinner('camunda:mapDecisionResult="singleEntry" camunda:resultVariable="dish"')
    )
    shown = run(rt, {"season": "Spring", "guestCount": 6})
    assert shown["state"] == "COMPLETED"
    assert shown["variables"]["dish"] == "Steak"
    [row] = [
        e
        for e in rt.engine.history(instance_id=shown["id"])
        if e["type"] == EngineEvent.DECISION_EVALUATED
    ]
    assert row["node_id"] == "Decide"
    assert row["data"]["decision"] == "dish" and row["data"]["version"] == 1
    assert row["data"]["inputs"] == {"Input_season": "Spring", "Input_guests": 6}
    assert (
        row["data"]["matched_rules"] == ["DecisionRule_spring_mid"] or row["data"]["matched_rules"]
    )
    assert row["data"]["result"] == "Steak"


def test_result_list_is_the_default_mapping(rt: Harness) -> None:
    rt.engine.deploy_dmn(model("dish.dmn"))
    rt.engine.deploy_bpmn(dinner('camunda:resultVariable="all"'))
    shown = run(rt, {"season": "Summer", "guestCount": 2})
    assert shown["variables"]["all"] == [{"desiredDish": "Light Salad and a nice Steak"}]


def test_the_same_dmn_file_deployed_again_makes_no_new_version(rt: Harness) -> None:
    first = rt.engine.deploy_dmn(model("dish.dmn"))
    again = rt.engine.deploy_dmn(model("dish.dmn"))
    assert [(d.key, d.version, d.created) for d in again] == [
        (d.key, d.version, False) for d in first
    ]
    changed = model("dish.dmn").replace('"Stew"', '"Goulash"')
    assert [d.version for d in rt.engine.deploy_dmn(changed)] == [2, 2]


def test_a_broken_hit_policy_is_an_incident_naming_the_decision_and_inputs(rt: Harness) -> None:
    rows = [(["> 1"], ['"a"']), (["> 2"], ['"b"'])]
    xml = definitions(
        table_decision([("Amount", "amount", "integer")], [("level", "string")], rows, key="risk")
    )
    rt.engine.deploy_dmn(xml)
    rt.engine.deploy_bpmn(dinner('camunda:resultVariable="x"').replace("dish", "risk"))
    shown = run(rt, {"amount": 5})
    assert shown["state"] == "FAILED"
    [incident] = shown["incidents"]
    assert "task 'Decide'" in incident["message"] and "'risk'" in incident["message"]
    assert "amount" in incident["message"] or "5" in incident["message"]


def test_a_decision_nobody_deployed_is_an_incident_saying_how_to_deploy_it(rt: Harness) -> None:
    rt.engine.deploy_bpmn(dinner('camunda:resultVariable="x"'))
    shown = run(rt, {"season": "Spring", "guestCount": 6})
    [incident] = shown["incidents"]
    assert "no decision 'dish' (any version) is deployed" in incident["message"]
    rt.engine.deploy_dmn(model("dish.dmn"))
    rt.engine.retry(incident["token_id"])
    rt.drain()
    assert rt.engine.show(shown["id"])["state"] == "COMPLETED"


def test_a_version_binding_evaluates_that_version(rt: Harness) -> None:
    rt.engine.deploy_dmn(model("dish.dmn"))
    rt.engine.deploy_dmn(model("dish.dmn").replace('"Steak"', '"Tofu"'))
    rt.engine.deploy_bpmn(
        dinner(
            'camunda:decisionRefBinding="version" camunda:decisionRefVersion="1" '
            'camunda:mapDecisionResult="singleEntry" camunda:resultVariable="dish"'
        )
    )
    assert run(rt, {"season": "Spring", "guestCount": 6})["variables"]["dish"] == "Steak"
    assert rt.engine.decide("dish", {"season": "Spring", "guestCount": 6})["result"] == [
        {"desiredDish": "Tofu"}
    ]


def test_decide_evaluates_without_storing_and_fails_with_a_decision_error(rt: Harness) -> None:
    rt.engine.deploy_dmn(model("dish.dmn"))
    doc = rt.engine.decide(
        "beverages", {"season": "Fall", "guestCount": 4, "guestsWithChildren": True}
    )
    assert doc["decision"] == "beverages" and doc["hit_policy"] == "COLLECT"
    with pytest.raises(DecisionFailed) as info:
        rt.engine.decide("dish", {"season": "Fall"})
    assert "guestCount" in str(info.value)


def _files(*pairs: tuple[str, str]) -> list[Resource]:
    return [Resource(name, text.encode(), kind_of(name)) for name, text in pairs]


def test_deployment_binding_evaluates_the_decision_deployed_with_the_process(
    rt: Harness, clock: FakeClock
) -> None:
    """A process bound to its deployment keeps the decision it was deployed with; a version
    deployed with the process alone (the DMN file unchanged, so left out) uses the decision
    that was the latest then."""
    process = dinner(
        'camunda:decisionRefBinding="deployment" camunda:mapDecisionResult="singleEntry"'
        ' camunda:resultVariable="dish"'
    )
    spring = {"season": "Spring", "guestCount": 6}
    first = rt.engine.deploy_files(
        _files(("dinner.bpmn", process), ("dish.dmn", model("dish.dmn")))
    )
    assert first.created and [p.version for p in first.processes] == [1]
    clock.advance(timedelta(seconds=1))
    stew = model("dish.dmn").replace('<text>"Steak"</text>', '<text>"Stew"</text>', 1)
    (dish2,) = [d for d in rt.engine.deploy_dmn(stew, resource="dish.dmn") if d.key == "dish"]
    assert dish2.version == 2
    assert run(rt, spring)["variables"]["dish"] == "Steak"  # v1, deployed with the process

    clock.advance(timedelta(seconds=1))
    renamed = process.replace('id="Decide"', 'id="Decide" name="Decide"')
    second = rt.engine.deploy_files(
        _files(("dinner.bpmn", renamed), ("dish.dmn", stew)), name="again"
    )
    assert [p.version for p in second.processes] == [2]
    assert not any(d.created for d in second.decisions)  # the DMN file had not changed
    clock.advance(timedelta(seconds=1))
    rt.engine.deploy_dmn(stew.replace('<text>"Stew"</text>', '<text>"Soup"</text>', 1))
    assert run(rt, spring)["variables"]["dish"] == "Stew"  # the latest when v2 was deployed


def test_deployment_binding_without_a_decision_is_an_incident(rt: Harness) -> None:
    rt.engine.deploy_bpmn(dinner('camunda:decisionRefBinding="deployment"'))
    shown = run(rt, {"season": "Spring", "guestCount": 6})
    [incident] = shown["incidents"]
    assert "no decision 'dish' (deployed with the process)" in incident["message"]


def test_output_mappings_read_the_whole_result_as_decision_result(rt: Harness) -> None:
    """Camunda 7 sets ``decisionResult`` (local) before a business rule task's output
    mappings: ``getSingleResult()``, ``getSingleEntry()``, ``getResultList()``,
    ``collectEntries(name)``."""
    rt.engine.deploy_dmn(model("dish.dmn"))
    outputs = {
        "meal": "${decisionResult.getSingleResult().desiredDish}",
        "entry": "${decisionResult.getSingleEntry()}",
        "count": "${decisionResult.getResultList().size()}",
        "dishes": "${decisionResult.collectEntries('desiredDish')}",
    }
    params = "".join(
        f'<camunda:outputParameter name="{k}">{v}</camunda:outputParameter>'
        for k, v in outputs.items()
    )
    rt.engine.deploy_bpmn(
        modeler_file(
            "dinner",
            '    <bpmn:startEvent id="S" />\n'
            '<bpmn:businessRuleTask id="Decide" camunda:decisionRef="dish">'
            f"<bpmn:extensionElements><camunda:inputOutput>{params}</camunda:inputOutput>"
            "</bpmn:extensionElements></bpmn:businessRuleTask>"
            '<bpmn:endEvent id="E" />' + chain("S", "Decide", "E"),
        )
    )
    shown = run(rt, {"season": "Summer", "guestCount": 2})
    assert shown["state"] == "COMPLETED"
    dish = "Light Salad and a nice Steak"
    assert {k: shown["variables"][k] for k in outputs} == {
        "meal": dish,
        "entry": dish,
        "count": 1,
        "dishes": [dish],
    }
    assert "decisionResult" not in shown["variables"] and not shown.get("local_variables")
