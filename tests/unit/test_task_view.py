"""A task listener's ``task``: the methods on the allowlist (checked at deploy), its getters
and setters in JUEL, JavaScript and Python, the edits they record, and bad calls refused
naming the call."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bpm.errors import ExpressionEvalError, InvalidExpression
from bpm.expressions import compile_expression
from bpm.juel_methods import (
    TASK_METHODS,
    CallScope,
    ExecutionView,
    Facts,
    Invocation,
    MethodError,
    check_call,
)
from bpm.scripts import ScriptFailed, run_script
from bpm.task_view import TaskFacts, TaskView

NOW = datetime(2026, 3, 14, 15, 9, tzinfo=UTC)
VARIABLES: dict[str, Any] = {"approver": "kim"}
TASK = TaskFacts(
    id="t-1",
    name="Review",
    definition_key="Activity_review",
    event="create",
    assignee="ann",
    candidate_groups=("sales",),
    priority=50,
)


def _invocation(task: TaskFacts = TASK) -> tuple[Invocation, TaskView]:
    facts = Facts(instance_id="i-1", activity_id="Activity_review", event=task.event)
    execution = ExecutionView(VARIABLES, facts, writable=True)
    view = TaskView(VARIABLES, facts, task, execution.writes)
    return Invocation(execution, view, now=NOW), view


def run(source: str, invocation: Invocation) -> Any:
    expr = compile_expression(source, where="task listener 'L'", scope=CallScope.TASK)
    return expr.evaluate(VARIABLES, invocation)


@pytest.mark.parametrize("method", sorted(TASK_METHODS))
def test_every_task_method_is_allowed_in_a_task_listener(method: str) -> None:
    assert check_call("task", method, CallScope.TASK) is None


@pytest.mark.parametrize("method", ["setOwner", "getDescription", "setName", "setDescription"])
def test_what_bpm_tasks_do_not_have_is_refused_at_deploy_saying_so(method: str) -> None:
    reason = check_call("task", method, CallScope.TASK)
    assert reason is not None and "have no" in reason
    with pytest.raises(InvalidExpression, match=f"task.{method}"):
        compile_expression(f"${{task.{method}('x')}}", where="l", scope=CallScope.TASK)


def test_task_setters_are_refused_where_no_task_listener_runs() -> None:
    assert check_call("task", "setAssignee", CallScope.INLINE) is not None
    assert "not one bpm offers" in str(check_call("task", "delegate", CallScope.TASK))


def test_juel_getters_see_the_setters_and_edits_are_recorded() -> None:
    invocation, view = _invocation()
    assert run("${task.getAssignee()}", invocation) == "ann"
    run("${task.setAssignee(approver)}", invocation)
    run("${task.addCandidateGroup('accounting')}", invocation)
    run("${task.addCandidateGroup('sales')}", invocation)  # moved last, not doubled
    run("${task.deleteCandidateGroup('accounting')}", invocation)
    run("${task.addCandidateUser('lee')}", invocation)
    run("${task.setDueDate(dateTime().plusDays(2))}", invocation)
    run("${task.setFollowUpDate('2026-03-15T08:00:00Z')}", invocation)
    run("${task.setPriority(task.getPriority() + 5)}", invocation)
    run("${task.setVariable('who', task.assignee)}", invocation)
    assert run("${task.getDueDate().isAfter(dateTime())}", invocation) is True
    assert run("${task.getCandidates().size()}", invocation) == 2
    assert view.edits == {
        "assignee": "kim",
        "candidate_users": ["lee"],
        "candidate_groups": ["sales"],
        "due_date": datetime(2026, 3, 16, 15, 9, tzinfo=UTC),
        "follow_up_date": datetime(2026, 3, 15, 8, tzinfo=UTC),
        "priority": 55,
    }
    assert invocation.execution.writes == {"who": "kim"}
    assert run("${task.getTaskDefinitionKey()}", invocation) == "Activity_review"
    assert run("${task.getEventName()}", invocation) == "create"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("${task.setPriority('high')}", r"task.setPriority\('high'\): a priority is a whole"),
        ("${task.setDueDate('not a date')}", r"task.setDueDate\('not a date'\): a date is"),
        ("${task.addCandidateGroup('')}", r"task.addCandidateGroup\(''\): a user or group"),
        ("${task.setAssignee(12)}", r"task.setAssignee\(12\)"),
        ("${task.setPriority()}", r"task.setPriority\(\)"),
    ],
)
def test_a_bad_call_fails_naming_it_and_records_no_edit(source: str, message: str) -> None:
    invocation, view = _invocation()
    with pytest.raises(ExpressionEvalError, match=message):
        run(source, invocation)
    assert view.edits == {}


def test_setters_are_refused_where_bpm_cannot_apply_them() -> None:
    invocation, _ = _invocation(TaskFacts(event="delete", refusal="not in a delete listener"))
    with pytest.raises(ExpressionEvalError, match="not in a delete listener"):
        run("${task.setAssignee('x')}", invocation)
    assert run("${task.getEventName()}", invocation) == "delete"


def test_a_python_delegate_calls_camundas_names() -> None:
    _, view = _invocation()
    view.setAssignee(None)
    view.addCandidateUsers(["a", "b"])
    assert view.getCandidateUsers() == ["a", "b"] and view.getAssignee() is None
    with pytest.raises(MethodError, match="whole number"):
        view.setPriority("9")
    assert view.edits == {"assignee": None, "candidate_users": ["a", "b"]}
    with pytest.raises(AttributeError):
        view.getOwner  # noqa: B018


def test_a_script_changes_the_task_through_the_same_checks() -> None:
    invocation, view = _invocation()
    value = run_script(
        "task.setAssignee('lee'); task.addCandidateGroup('ops'); task.setPriority(70);"
        "task.setDueDate(new Date(Date.UTC(2026, 2, 20, 9)));"
        "task.getAssignee() + ':' + task.getCandidateGroups().join() + ':' + task.getPriority()",
        "task listener 'L'",
        dict(VARIABLES),
        invocation,
    )
    assert value == "lee:sales,ops:70"
    assert view.edits["due_date"] == datetime(2026, 3, 20, 9, tzinfo=UTC)
    assert set(view.edits) == {"assignee", "candidate_groups", "priority", "due_date"}


def test_a_bad_call_in_a_script_fails_it_naming_the_call() -> None:
    invocation, view = _invocation()
    with pytest.raises(ScriptFailed, match=r"task listener 'L'.*task.setPriority\('high'\)"):
        run_script("task.setPriority('high')", "task listener 'L'", dict(VARIABLES), invocation)
    assert view.edits == {}
