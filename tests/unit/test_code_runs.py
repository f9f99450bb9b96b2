"""A model's code run as a handler task's work: a delegate bean's ``execute`` (a task) or
``notify`` (a listener, with ``task`` in a task listener), the handler fallback, and the
variables an expression sets becoming the task's result."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from bpm.beans import BeanRegistry
from bpm.definitions.code import parse_code
from bpm.engine.semantics.code_runs import CodeFailed, RunsCode
from bpm.handlers import HandlerContext, HandlerRegistry

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def context(event: str | None = None) -> HandlerContext:
    return HandlerContext({"amount": 5}, "key", 1, uuid4(), "bk", "p", "T", uuid4(), {}, event)


class Audit:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def execute(self, execution: Any) -> None:
        self.seen.append("execute")
        execution.setVariable("executed", execution.getVariable("amount"))

    def notify(self, given: Any) -> None:
        self.seen.append(f"notify:{given.getEventName()}")
        given.setVariable("notified", True)


def test_a_delegate_bean_executes_as_a_task_and_notifies_as_a_listener() -> None:
    beans, audit = BeanRegistry(), Audit()
    beans.register("audit", audit)
    code = parse_code({"delegateExpression": "${audit}"}, "node 'T'", "T")
    assert code is not None
    runs = RunsCode(beans, HandlerRegistry(), NOW, None)
    assert runs.run(code, context()) == {"executed": 5}
    assert runs.run(code, context("end")) == {"notified": True}
    assert runs.run(code, context("create")) == {"notified": True}  # given the task
    assert audit.seen == ["execute", "notify:end", "notify:create"]


def test_a_delegate_without_a_bean_runs_the_handler_of_its_name() -> None:
    handlers = HandlerRegistry()
    handlers.register("charge", lambda ctx: {"charged": ctx.variables["amount"]})
    code = parse_code({"delegateExpression": "#{charge}"}, "node 'T'", "T")
    assert code is not None
    assert RunsCode(BeanRegistry(), handlers, NOW, None).run(code, context()) == {"charged": 5}
    try:
        RunsCode(BeanRegistry(), HandlerRegistry(), NOW, None).run(code, context())
    except CodeFailed as exc:
        assert "no bean (nor handler) is registered" in str(exc)
    else:
        raise AssertionError("a missing delegate must fail")


def test_an_expression_task_returns_its_writes_and_result_variable() -> None:
    code = parse_code(
        {"expression": "${execution.setVariable('due', dateTime().plusDays(1)) == null}"},
        "node 'T'",
        "T",
    )
    assert code is not None
    result = RunsCode(BeanRegistry(), HandlerRegistry(), NOW, "ok").run(code, context())
    assert result == {"due": "2026-01-03T03:04:05.000+00:00", "ok": True}
