"""The JavaScript sandbox: what a script sees and sets, its last value, and that runaway,
greedy or escaping scripts fail cleanly naming the script, with the context reusable after."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions.bpmn import compile_bpmn
from bpm.errors import InvalidDefinition
from bpm.juel_methods import ExecutionView, Facts, Invocation
from bpm.scripts import ScriptFailed, run_script

VARIABLES: dict[str, Any] = {"amount": 150, "items": [1, 2, 3], "payload": '{"id": "A-1"}'}


def run(source: str, *, task: bool = False) -> tuple[Any, dict[str, Any]]:
    facts = Facts(instance_id="i-1", business_key="bk-1", activity_id="T")
    execution = ExecutionView(VARIABLES, facts, writable=True)
    shared = ExecutionView(VARIABLES, facts, writable=True, writes=execution.writes)
    invocation = Invocation(execution, task=shared if task else None)
    return run_script(source, "scriptTask 'T'", VARIABLES, invocation), execution.writes


def test_variables_execution_and_last_value() -> None:
    value, writes = run(
        "var total = amount * 2;\n"
        "execution.setVariable('total', total);\n"
        "execution.setVariable('seen', execution.getVariable('total') + items.length);\n"
        "total > 100"
    )
    assert value is True
    assert writes == {"total": 300, "seen": 303}


def test_facts_spin_and_functions() -> None:
    value, _ = run(
        "function label(id) { return id + '@' + execution.getProcessBusinessKey(); }\n"
        "label(S(payload).prop('id').stringValue())"
    )
    assert value == "A-1@bk-1"
    assert run("execution.getProcessInstanceId() + execution.getCurrentActivityId()")[0] == "i-1T"
    assert run("({a: [1, 'x', null]})")[0] == {"a": [1, "x", None]}


def test_task_in_task_listeners() -> None:
    value, writes = run("task.setVariable('checked', true); typeof task.getId", task=True)
    assert value == "function" and writes == {"checked": True}
    with pytest.raises(ScriptFailed, match="'task' is not defined"):
        run("task.getId()")


def test_print_goes_to_the_log_and_an_unknown_method_is_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO", logger="bpm.scripts"):
        assert run("print('total', amount); amount")[0] == 150
    assert "scriptTask 'T': print: total 150" in caplog.text
    with pytest.raises(ScriptFailed) as info:
        run("execution.setBusinessKey('x')")
    assert "execution.setBusinessKey is not a method scripts may call" in str(info.value)
    assert "getProcessInstanceId" in str(info.value)


def test_a_script_leaves_nothing_for_the_next() -> None:
    run("leaked = 5; var mine = 6; Array.prototype.evil = 1; JSON.stringify = null; 1")
    assert run("typeof leaked + typeof mine + typeof [].evil + typeof JSON.stringify")[0] == (
        "undefinedundefinedundefinedfunction"
    )


def test_a_script_that_loops_forever_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPM_SCRIPT_TIMEOUT_MS", "100")
    with pytest.raises(ScriptFailed, match=r"scriptTask 'T'.*longer than 100 ms"):
        run("while (true) {}")
    assert run("1 + 1")[0] == 2  # the next script runs in a fresh context


def test_a_script_that_allocates_without_bound_fails_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BPM_SCRIPT_TIMEOUT_MS", "20000")  # the memory limit, not the time's
    with pytest.raises(ScriptFailed, match=r"scriptTask 'T'.*more than 64 MB"):
        run("var a = []; while (true) { a.push(new Array(100000).fill(1)); }")
    with pytest.raises(ScriptFailed, match="recursed too deep"):
        run("function f() { return f(); } f()")
    assert run("2 + 2")[0] == 4


@pytest.mark.parametrize(
    "source",
    [
        "require('fs').readFileSync('/etc/passwd')",
        "std.loadFile('/etc/passwd')",
        "os.exec(['sh', '-c', 'id'])",
        "fetch('http://127.0.0.1/')",
        "new XMLHttpRequest()",
        "java.lang.Runtime.getRuntime().exec('id')",
        "Java.type('java.lang.System').exit(0)",
        "process.exit(1)",
        "Function('return this')().std.open('/etc/passwd')",
    ],
)
def test_no_file_network_or_process_access(source: str) -> None:
    with pytest.raises(ScriptFailed, match=r"scriptTask 'T': javascript script failed"):
        run(source)


def test_a_module_import_loads_nothing() -> None:
    with pytest.raises(ScriptFailed):
        run("import * as os from 'os'; os")
    assert run("import('os'); 1")[0] == 1  # a promise nobody runs


SCRIPT_TASK = """<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d" targetNamespace="t">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:scriptTask id="T" scriptFormat="{fmt}" camunda:resultVariable="r">
      <bpmn:script>amount * 2</bpmn:script>
    </bpmn:scriptTask>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="T" />
    <bpmn:sequenceFlow id="f2" sourceRef="T" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>
"""


@pytest.mark.parametrize("fmt", ["javascript", "JavaScript", "ECMAScript", "js"])
def test_a_javascript_script_task_becomes_a_script(fmt: str) -> None:
    [doc] = compile_bpmn(SCRIPT_TASK.format(fmt=fmt))
    [task] = [n for n in doc["nodes"] if n["id"] == "T"]
    assert task["script"] == {"format": fmt, "source": "amount * 2"}
    assert task["resultVariable"] == "r"


def test_a_juel_script_is_an_expression_and_groovy_stays_refused() -> None:
    [doc] = compile_bpmn(SCRIPT_TASK.format(fmt="juel"))
    [task] = [n for n in doc["nodes"] if n["id"] == "T"]
    assert task["expression"] == "amount * 2"
    [doc] = compile_bpmn(SCRIPT_TASK.format(fmt="groovy"))  # a handler runs in its place
    assert next(n for n in doc["nodes"] if n["id"] == "T")["handler"] == "T"
    without_result = SCRIPT_TASK.replace(' camunda:resultVariable="r"', "")
    with pytest.raises(InvalidDefinition, match="holds a groovy script, which bpm never runs"):
        compile_bpmn(without_result.format(fmt="groovy"))


def test_a_script_without_a_format_is_juel_as_camunda_reads_it() -> None:
    [doc] = compile_bpmn(SCRIPT_TASK.replace(' scriptFormat="{fmt}"', ""))
    [task] = [n for n in doc["nodes"] if n["id"] == "T"]
    assert task["expression"] == "amount * 2"


def test_scripts_off_refuses_them_at_deploy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BPM_SCRIPTS", "off")
    without_result = SCRIPT_TASK.replace(' camunda:resultVariable="r"', "")
    with pytest.raises(InvalidDefinition, match=r"BPM_SCRIPTS=off"):
        compile_bpmn(without_result.format(fmt="javascript"))
