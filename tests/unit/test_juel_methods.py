"""JUEL method calls on the allowlist: each family evaluated, everything else refused at
deploy naming the expression and the column."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bpm.beans import BeanRegistry
from bpm.errors import ExpressionEvalError, InvalidExpression
from bpm.expressions import compile_expression
from bpm.juel_methods import CallScope, ExecutionView, Facts, Invocation

NOW = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
PAYLOAD = '{"id": "A1", "items": [{"n": 1}, {"n": 2}], "ok": true, "total": 12.5}'
VARIABLES: dict[str, Any] = {
    "name": "  Alice ",
    "status": "APPROVED",
    "order": {"items": [1, 2, 3], "customer": "c1"},
    "tags": ["a", "b"],
    "payload": PAYLOAD,
    "count": 7,
}


def run(
    source: str, scope: CallScope = CallScope.INLINE, invocation: Invocation | None = None
) -> Any:
    expr = compile_expression(source, where="flow 'f'", scope=scope)
    if invocation is None:
        invocation = Invocation(ExecutionView(VARIABLES), now=NOW)
    return expr.evaluate(VARIABLES, invocation)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("${status.equals('APPROVED')}", True),
        ("${status.equalsIgnoreCase('approved')}", True),
        ("${status.contains('PROV')}", True),
        ("${status.startsWith('APP') && status.endsWith('ED')}", True),
        ("${name.trim().toLowerCase()}", "alice"),
        ("${status.toLowerCase().toUpperCase()}", "APPROVED"),
        ("${status.substring(0, 3)}", "APP"),
        ("${status.substring(3)}", "ROVED"),
        ("${status.length()}", 8),
        ("${status.indexOf('R')}", 3),
        ("${status.replace('APP', 'DIS')}", "DISROVED"),
        ("${status.isEmpty()}", False),
        ("${order.items.size()}", 3),
        ("${order.items.contains(2)}", True),
        ("${order.items.get(0)}", 1),
        ("${order.containsKey('customer')}", True),
        ("${order.get('customer')}", "c1"),
        ("${tags.isEmpty()}", False),
        ("${count.toString()}", "7"),
    ],
)
def test_string_list_and_map_methods(source: str, expected: Any) -> None:
    assert run(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("${dateTime().plusDays(2).toDate()}", "2026-03-16T15:09:26.000+00:00"),
        ("${now().minusHours(3)}", "2026-03-14T12:09:26.000+00:00"),
        ("${dateTime().plusMonths(11).plusWeeks(1)}", "2027-02-21T15:09:26.000+00:00"),
        ("${dateTime().withTimeAtStartOfDay()}", "2026-03-14T00:00:00.000+00:00"),
        ("${dateTime().plusDays(4).toDateTimeISO().toString()}", "2026-03-18T15:09:26.000+00:00"),
        ("${dateTime().toString('yyyy-MM-dd HH:mm')}", "2026-03-14 15:09"),
        ("${dateTime().isBefore(dateTime().plusMinutes(1))}", True),
        ("${dateTime().isAfter('2027-01-01T00:00:00Z')}", False),
    ],
)
def test_date_time_as_camunda(source: str, expected: Any) -> None:
    assert run(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("${S(payload).prop('id').stringValue()}", "A1"),
        ("${JSON(payload).prop('items').elements().size()}", 2),
        ("${S(payload).prop('items').elements().get(1).prop('n').numberValue()}", 2),
        ("${S(payload).prop('ok').boolValue()}", True),
        ("${S(payload).hasProp('missing')}", False),
        ("${S(payload).prop('total').numberValue() > 10}", True),
        ("${S(order).prop('customer').toString()}", '"c1"'),
        ("${S(payload).prop('items')}", [{"n": 1}, {"n": 2}]),
    ],
)
def test_spin_json(source: str, expected: Any) -> None:
    assert run(source) == expected


def test_spin_json_methods_are_not_xml_methods() -> None:
    with pytest.raises(ExpressionEvalError, match="Spin XML element has no method 'prop'"):
        run("${S('<a/>').prop('x')}")


def test_execution_reads_and_facts() -> None:
    facts = Facts(instance_id="i-1", business_key="bk-9", activity_id="Task_1")
    execution = ExecutionView(VARIABLES, facts)
    invocation = Invocation(execution, now=NOW)
    assert run("${execution.getVariable('status')}", invocation=invocation) == "APPROVED"
    assert run("${execution.hasVariable('nope')}", invocation=invocation) is False
    assert run("${execution.getProcessInstanceId()}", invocation=invocation) == "i-1"
    assert run("${execution.getProcessBusinessKey()}", invocation=invocation) == "bk-9"
    assert run("${execution.processBusinessKey}", invocation=invocation) == "bk-9"
    assert run("${execution.getCurrentActivityId()}", invocation=invocation) == "Task_1"


def test_execution_writes_only_where_the_expression_runs_as_a_task() -> None:
    execution = ExecutionView(VARIABLES, writable=True)
    source = "${execution.setVariable('orderStatus', 'FAILED')}"
    run(source, CallScope.TASK, Invocation(execution))
    run(
        "${execution.setVariable('due', dateTime().plusDays(1))}",
        CallScope.TASK,
        Invocation(execution, now=NOW),
    )
    run("${execution.removeVariable('count')}", CallScope.TASK, Invocation(execution))
    assert execution.writes == {
        "orderStatus": "FAILED",
        "due": "2026-03-15T15:09:26.000+00:00",
        "count": None,
    }
    with pytest.raises(InvalidExpression, match="only a service task's or a listener's"):
        compile_expression(source, where="flow 'f'")


def test_task_listener_task_methods() -> None:
    facts = Facts(activity_instance_id="t-1", task_name="Review", assignee="kermit")
    execution = ExecutionView(VARIABLES, facts, writable=True)
    task = ExecutionView(VARIABLES, facts, writable=True, writes=execution.writes)
    invocation = Invocation(execution, task=task)
    assert run("${task.getName()}", CallScope.TASK, invocation) == "Review"
    assert run("${task.assignee}", CallScope.TASK, invocation) == "kermit"
    run("${task.setVariable('seen', true)}", CallScope.TASK, invocation)
    assert execution.writes == {"seen": True}


def test_beans_are_called_in_task_expressions_only() -> None:
    registry = BeanRegistry()

    class OrderService:
        def isValid(self, order: dict[str, Any]) -> bool:
            return len(order["items"]) > 2

        def total_of(self, order: dict[str, Any]) -> int:
            return sum(order["items"])

    registry.register("orderService", OrderService())
    invocation = Invocation(ExecutionView(VARIABLES, writable=True), beans=registry)
    expr = compile_expression("${orderService.isValid(order)}", where="t", scope=CallScope.TASK)
    assert expr.beans == frozenset({"orderService"})
    assert expr.evaluate(VARIABLES, invocation) is True
    assert run("${orderService.totalOf(order)}", CallScope.TASK, invocation) == 6
    with pytest.raises(ExpressionEvalError, match="no method 'delete'"):
        run("${orderService.delete(order)}", CallScope.TASK, invocation)
    with pytest.raises(ExpressionEvalError, match="not registered"):
        run("${mailer.send(order)}", CallScope.TASK, invocation)


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("${status.getClass().forName('java.lang.Runtime')}", "'forName', a reflection"),
        ("${java.lang.Runtime.getRuntime().exec('rm')}", "'exec', which is not a method"),
        ("${java.lang.Runtime.getRuntime()}", "'getRuntime', a reflection"),
        ("${T(java.lang.System).exit(0)}", "'exit', which is not a method"),
        ("${new java.io.File('x')}", "does not parse"),
        ("${execution.getProcessEngineServices()}", "engine API method"),
        ("${execution.getProcessInstance()}", "not one bpm offers"),
        ("${status.__class__}", "names starting with '_'"),
        ("${orderService.isValid(order)}", "calls 'orderService.isValid'"),
    ],
)
def test_anything_else_is_refused_at_deploy(source: str, why: str) -> None:
    with pytest.raises(InvalidExpression) as caught:
        compile_expression(source, where="flow 'f'")
    assert why in str(caught.value)
    assert "flow 'f'" in str(caught.value)


def test_refusal_names_the_column() -> None:
    with pytest.raises(InvalidExpression, match="at column 8"):
        compile_expression("${status.getClass()}", where="flow 'f'")


def test_results_are_bounded_in_size() -> None:
    variables = {"big": "x" * 60_000}
    expr = compile_expression("${big.concat(big)}", where="t")
    with pytest.raises(ExpressionEvalError, match="longer than"):
        expr.evaluate(variables)


def test_getters_read_a_json_objects_fields() -> None:
    """A Java object is a JSON object in bpm: ``getTotal()`` / ``isPaid()`` read its keys
    (inline too: a read, no bean)."""
    variables = {"invoice": {"total": 12, "paid": True, "lines": [1, 2]}}
    expr = compile_expression("${invoice.getTotal() > 10 && invoice.isPaid()}", where="f")
    assert expr.beans == frozenset()
    assert expr.evaluate(variables) is True
    assert compile_expression("${invoice.getLines().size()}", where="f").evaluate(variables) == 2
    with pytest.raises(ExpressionEvalError, match="no field 'due'"):
        compile_expression("${invoice.getDue()}", where="f").evaluate(variables)


def test_a_bean_uses_execution_with_camundas_names() -> None:
    """A bean written as a JavaDelegate is: ``execution.getVariable`` / ``setVariable``."""
    registry = BeanRegistry()

    class Delegate:
        def run(self, execution: Any) -> None:
            execution.setVariable("doubled", execution.getVariable("count") * 2)
            execution.removeVariable("count")

    registry.register("delegate", Delegate())
    execution = ExecutionView(VARIABLES, writable=True)
    run("${delegate.run(execution)}", CallScope.TASK, Invocation(execution, beans=registry))
    assert execution.writes == {"doubled": 14, "count": None}
    assert execution.has("doubled") and not execution.has("count")
