"""Running a model's own code (an expression, a bean, a script) as a handler task's work.

It runs where a registered handler would (outside any transaction, its outcome committed
with the task, so the variables it sets are written with their history in that one
transaction), and it fails the same way: an error retries, then becomes an incident naming
the expression or script. It is handed to ``handler_runs.invoke`` as a registry of one, so
results, BPMN errors and failures take the handlers' one path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bpm.beans import BeanRegistry
from bpm.definitions.code import Code, CodeKind
from bpm.definitions.model import ListenerEvent
from bpm.handlers import HandlerContext, HandlerRegistry, HandlerResult
from bpm.juel_methods import ExecutionView, Facts, Invocation, bean_method
from bpm.scripts import run_script
from bpm.store.rows import TaskRow
from bpm.task_view import TaskFacts, TaskView

#: The events of a task listener, whose code sees ``task`` as well as ``execution``.
TASK_EVENTS = frozenset(
    {
        ListenerEvent.CREATE,
        ListenerEvent.ASSIGNMENT,
        ListenerEvent.COMPLETE,
        ListenerEvent.DELETE,
        ListenerEvent.UPDATE,
        ListenerEvent.TIMEOUT,
    }
)


class CodeFailed(Exception):
    """The model's code failed; the message names it (the incident shows it)."""


@dataclass(frozen=True)
class RunsCode:
    """What running model code needs from the engine: beans (and handlers, which a
    ``delegateExpression`` names when no bean has its name), the time, the result variable."""

    beans: BeanRegistry
    handlers: HandlerRegistry
    now: datetime
    result_variable: str | None
    #: The node's name: a task listener's ``task.getName()``.
    node_name: str | None = None
    #: A task listener's user task (``engine/semantics/task_edits.facts``).
    task: TaskFacts | None = None
    #: What the run's ``task`` setters changed (``TaskView.edits``), once it ran.
    edits: dict[str, Any] = field(default_factory=dict)

    def as_registry(self, task: TaskRow, code: Code) -> HandlerRegistry:
        registry = HandlerRegistry()
        registry.register(task.handler or code.kind.value, lambda ctx: self.run(code, ctx))
        return registry

    def run(self, code: Code, ctx: HandlerContext) -> HandlerResult:
        if code.bean is not None and code.bean not in self.beans:
            handler = self.handlers.get(code.bean)
            if handler is not None:  # a handler is Python's delegate: it runs as before
                result = handler(ctx)
                return {self.result_variable: result} if self.result_variable else result
        execution, task = views(ctx, self.node_name, self.task)
        invocation = Invocation(execution, task, self.beans, self.now)
        value = self._value(code, ctx, invocation)
        if isinstance(task, TaskView):
            self.edits.clear()
            self.edits.update(task.edits)
        result = dict(execution.writes)
        if self.result_variable is not None:
            result[self.result_variable] = value
        return result

    def _value(self, code: Code, ctx: HandlerContext, invocation: Invocation) -> Any:
        if code.expression is not None:
            return code.expression.evaluate(ctx.variables, invocation)
        if code.script is not None:
            script = code.script
            return run_script(script.source, script.where, ctx.variables, invocation)
        assert code.kind is CodeKind.DELEGATE and code.bean is not None
        bean = self.beans.get(code.bean)
        if bean is None:
            raise CodeFailed(
                f"delegateExpression ${{{code.bean}}}: no bean (nor handler) is registered so"
            )
        if code.factory is not None:
            bean = _made_delegate(bean, code)
        method = "notify" if ctx.event is not None else "execute"
        fn = getattr(bean, method, None)
        if not callable(fn) and code.factory is not None and callable(bean):
            fn = bean  # the method gave a function: the delegate itself
        if not callable(fn):
            raise CodeFailed(f"bean {code.bean!r} has no {method}() method to run as a delegate")
        given = invocation.task if invocation.task is not None else invocation.execution
        return fn(given)


def _made_delegate(bean: Any, code: Code) -> Any:
    """What ``${bean.method()}`` gives: the delegate to run (an object with ``execute`` or
    ``notify``, or a function of the execution)."""
    factory = bean_method(bean, code.factory or "")
    if factory is None:
        raise CodeFailed(f"bean {code.bean!r} has no {code.factory}() method")
    return factory()


def views(
    ctx: HandlerContext, node_name: str | None = None, task: TaskFacts | None = None
) -> tuple[ExecutionView, ExecutionView | None]:
    """The ``execution`` (and a task listener's ``task``, sharing its writes) of a run;
    ``task``: the user task as the listener sees it (else only what the context knows)."""
    facts = Facts(
        instance_id=str(ctx.instance_id),
        business_key=ctx.business_key,
        activity_id=ctx.node_id,
        activity_instance_id=str(ctx.task_id),
        definition_id=ctx.process_key,
        event=ctx.event,
        task_name=node_name,
    )
    execution = ExecutionView(ctx.variables, facts, writable=True)
    if ctx.event not in TASK_EVENTS:
        return execution, None
    if task is None:
        task = TaskFacts(
            id=str(ctx.task_id),
            name=node_name,
            definition_key=ctx.node_id,
            event=ctx.event,
            refusal="bpm does not know the user task here",
        )
    return execution, TaskView(ctx.variables, facts, task, execution.writes)
