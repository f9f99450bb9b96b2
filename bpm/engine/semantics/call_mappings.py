"""A call activity's variable mapping handler (Camunda 7's ``variableMappingClass`` or
``variableMappingDelegateExpression``, a ``mapping`` in JSON).

The handler is user code, so it runs as a task of its own with the token waiting, as a
listener does: before the call, with the caller's variables (``ctx.event`` is
``mapInputVariables``), and whatever it returns goes into the called instance beside the
``in`` mappings; after the called instance completed, with that instance's variables
(``mapOutputVariables``), and whatever it returns is written from the call activity beside
the ``out`` mappings. Retries, incidents and BPMN errors work as for a service task.

The task's ``topic`` column, unused by handler tasks, says which of the two it is.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from bpm.definitions.model import Node, ProcessGraph
from bpm.engine.core.tx import Next, RunTask, Tx
from bpm.engine.semantics import calls, scopes, task_moves
from bpm.engine.semantics.moves import move
from bpm.states import TaskKind, TokenEvent, TokenState, WaitKind
from bpm.store import instances, variables
from bpm.store.rows import TaskRow, TokenRow

PREFIX = "call-mapping:"


class Phase(StrEnum):
    """Which way the handler maps (the names of Camunda's two methods)."""

    IN = "mapInputVariables"
    OUT = "mapOutputVariables"


def phase_of(task: TaskRow) -> Phase | None:
    if task.kind != TaskKind.HANDLER or not task.topic or not task.topic.startswith(PREFIX):
        return None
    return Phase(task.topic.removeprefix(PREFIX))


def event_of(task: TaskRow) -> str | None:
    """``ctx.event`` of a mapping handler's run: which way it maps."""
    phase = phase_of(task)
    return phase.value if phase is not None else None


def enter(tx: Tx, g: ProcessGraph, tok: TokenRow, node: Node) -> Next:
    """The call activity's own work: its mapping handler first when it has one."""
    assert node.call is not None
    if node.call.mapping is None:
        return calls.enter(tx, g, tok, node)
    return run(tx, tok, node, Phase.IN)


def run(tx: Tx, tok: TokenRow, node: Node, phase: Phase) -> RunTask:
    """The token waits while the mapping handler runs."""
    assert node.call is not None and node.call.mapping is not None
    if tok.state != TokenState.WAITING or tok.wait_kind != WaitKind.TASK:
        move(
            tx,
            tok,
            state=TokenState.WAITING,
            event=TokenEvent.WAITING,
            wait_kind=WaitKind.TASK,
            data={"mapping": phase.value},
        )
    task = task_moves.new_task(
        tx,
        tok,
        node.id,
        TaskKind.HANDLER,
        handler=node.call.mapping,
        topic=f"{PREFIX}{phase.value}",
        retries=node.retry.max_attempts,
        priority=node.priority,
    )
    data = {"handler": node.call.mapping, "mapping": phase.value}
    task_moves.create(tx, task, {**data, "max_attempts": node.retry.max_attempts})
    return RunTask(task.id)


def seen_by(tx: Tx, g: ProcessGraph, task: TaskRow) -> dict[str, Any]:
    """The variables a handler task sees: for an output mapping, the called instance's."""
    if phase_of(task) is Phase.OUT:
        called = instances.called_by(tx.conn, task.token_id)
        if called is not None:
            return variables.load(tx.conn, called.id)
    return scopes.view_of_task(tx, g, task)
