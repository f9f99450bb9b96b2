"""The conformance harness itself (tests/integration/conformance) on small models of its own:
the steps of the corpus's newer cases that the engine can already run, and how the harness
fails on what it cannot run or does not understand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bpm.handlers import HandlerRegistry
from tests.helpers.runtime import Harness
from tests.integration.conformance.checks import problems
from tests.integration.conformance.corpus import Manifest, Scenario, scenarios_of
from tests.integration.conformance.deployment import Compiled, compile_case, refused
from tests.integration.conformance.differences import OUTCOMES
from tests.integration.conformance.runner import run_scenario
from tests.integration.conformance.steps import NotUnderstood, parse

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" targetNamespace="t">\n'
)
#: start -> review (user task) -> wait (receive task, message "go") -> after -> end.
MAIN = (
    f'{HEAD}<message id="go" name="go"/>\n<process id="harnessMain" isExecutable="true">\n'
    '<startEvent id="start"/><userTask id="review"/><receiveTask id="wait" messageRef="go"/>\n'
    '<userTask id="after"/><endEvent id="end"/>\n'
    '<sequenceFlow id="f1" sourceRef="start" targetRef="review"/>\n'
    '<sequenceFlow id="f2" sourceRef="review" targetRef="wait"/>\n'
    '<sequenceFlow id="f3" sourceRef="wait" targetRef="after"/>\n'
    '<sequenceFlow id="f4" sourceRef="after" targetRef="end"/>\n'
    "</process>\n</definitions>\n"
)
#: A companion process whose ids repeat the main one's: start -> help -> end.
HELPER = (
    f'{HEAD}<process id="harnessHelper" isExecutable="true">\n'
    '<startEvent id="start"/><userTask id="help"/><endEvent id="end"/>\n'
    '<sequenceFlow id="f1" sourceRef="start" targetRef="help"/>\n'
    '<sequenceFlow id="f2" sourceRef="help" targetRef="end"/>\n'
    "</process>\n</definitions>\n"
)
#: A flow to a node that is not there: the importer refuses it.
BROKEN = (
    f'{HEAD}<process id="harnessMain" isExecutable="true">\n<startEvent id="start"/>\n'
    '<sequenceFlow id="f1" sourceRef="start" targetRef="nowhere"/>\n</process>\n</definitions>\n'
)
STEPS = [
    'start with business key "order-7"',
    "expect_business_key harnessMain order-7",
    "expect_active [review]",
    'complete review with {"approved": true}',
    'expect_variables {"approved": true, "amount": 5}',
    'set_variables {"amount": 6}',
    "expect_active [wait]",
    "correlate go",
    "start_process harnessHelper",
    "start_process harnessHelper",
    "expect_process_instances harnessHelper 2",
    "expect_instances harnessHelper/help 2",
    "expect_active [after, harnessHelper/help]",
    'complete harnessHelper/help with {"note": "first"}',
    "expect_instances harnessHelper/help 1",
    'set_variables in harnessHelper {"x": 1}',
    'expect_variables in harnessHelper {"x": 1}',
    "expect_instance_variable after amount == 6",
    "expect 0 timer jobs",
    "complete after",
    "complete harnessHelper/help",
    "expect_process_instances harnessHelper 0",
    "expect_ended",
]
LOG = [
    "review",
    "wait",
    "harnessHelper/help",
    "harnessHelper/end",
    "after",
    "end",
    "harnessHelper/help",
    "harnessHelper/end",
]
SELF_TEST = Manifest("self-test.json", "self-test", pinned=False)


def _case(tmp_path: Path, main: str = MAIN, **fields: Any) -> dict[str, Any]:
    (tmp_path / "main.bpmn").write_text(main, encoding="utf-8")
    (tmp_path / "helper.bpmn").write_text(HELPER, encoding="utf-8")
    companion = {"process_id": "harnessHelper", "public_copy": str(tmp_path / "helper.bpmn")}
    return {
        "id": "harness-self-test",
        "process_id": "harnessMain",
        "public_copy": str(tmp_path / "main.bpmn"),
        "companion_models": [companion],
        "inputs": {"amount": 5},
        "failing_tasks": [],
        "harness": STEPS,
        **fields,
    }


def _scenario(tmp_path: Path, **fields: Any) -> Scenario:
    [scenario] = scenarios_of(SELF_TEST, _case(tmp_path, **fields))
    return scenario


def _run(rt: Harness, handlers: HandlerRegistry, scenario: Scenario) -> list[str]:
    compiled = compile_case(scenario.case)
    assert isinstance(compiled, Compiled)
    return problems(scenario.id, run_scenario(rt, handlers, scenario, compiled))


def test_the_newer_steps_drive_the_engine_across_instances(
    rt: Harness, handlers: HandlerRegistry, tmp_path: Path
) -> None:
    scenario = _scenario(
        tmp_path, expected_completed_in_order=LOG, expected_final_state="completed"
    )
    assert _run(rt, handlers, scenario) == []


def test_a_disagreeing_step_or_expectation_is_reported(
    rt: Harness, handlers: HandlerRegistry, tmp_path: Path
) -> None:
    steps = ["start", 'expect_variables {"amount": 7}', "expect_instances review 2"]
    scenario = _scenario(tmp_path, harness=steps, expected_final_state="completed")
    assert _run(rt, handlers, scenario) == [
        "step 2: expect_variables {\"amount\": 7}: peer {'amount': 7}, engine {'amount': 5}",
        "step 3: expect_instances review 2: peer 2, engine 1",
        "final_state: peer 'completed', engine 'waiting'",
    ]


def test_a_message_nobody_receives_ends_the_run_in_error(
    rt: Harness, handlers: HandlerRegistry, tmp_path: Path
) -> None:
    error = {"message_contains": "waits for message 'nothing'"}
    expected = _scenario(
        tmp_path,
        harness=["start", "correlate nothing"],
        expected_final_state="error",
        expected_error=error,
    )
    assert _run(rt, handlers, expected) == []
    unexpected = _scenario(tmp_path, harness=["start", "correlate nothing", "expect_ended"])
    assert _run(rt, handlers, unexpected) == [
        "step 2: correlate nothing: peer 'no error', engine \"NoMatchingWait: no instance of "
        "the scenario waits for message 'nothing'\"",
        "step 3: expect_ended: peer 'run', engine 'not run: step 2 raised'",
    ]


def test_a_broadcast_nobody_listens_for_is_no_error(
    rt: Harness, handlers: HandlerRegistry, tmp_path: Path
) -> None:
    """As Camunda's ``signalEventReceived``: a signal without subscriptions reaches nothing."""
    scenario = _scenario(tmp_path, harness=["start", "broadcast alert"])
    assert _run(rt, handlers, scenario) == []


def test_an_unknown_step_annotation_or_field_fails(tmp_path: Path) -> None:
    for text in ("wiggle review", "complete review (now or never)", "expect_active [a] inside"):
        with pytest.raises(NotUnderstood):
            parse(text)
    scenario = _scenario(tmp_path, service_results={"review": {}}, expected_final_data={})
    assert scenario.problems == [
        "case: field 'service_results' is not understood by the harness",
        "case: field 'expected_final_data' is not understood by the harness",
    ]
    extra = {"name": "again", "expected_error": {"at": "review", "code": "E1"}}
    [_, again] = scenarios_of(SELF_TEST, _case(tmp_path, additional_scenarios=[extra]))
    unknown = "scenario expected_error: field 'code' is not understood by the harness"
    assert again.problems == [unknown]


def test_a_refusal_is_read_at_run_time_or_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal = refused(SELF_TEST, {}, compile_case(_case(tmp_path, main=BROKEN)))
    assert refusal is not None
    assert refusal.startswith("rejected at deploy: line 5: process 'harnessMain': flow 'f1'")
    pinned = Manifest("self-test.json", "", pinned=True)
    case = _case(tmp_path)
    assert refused(pinned, case, compile_case(case)) is None
    monkeypatch.setitem(OUTCOMES, "harness-self-test", "callActivity")
    with pytest.raises(AssertionError, match="compiles now; remove it from OUTCOMES"):
        refused(pinned, case, compile_case(case))
